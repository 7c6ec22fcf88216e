"""The differentiable ops the functions call: _autograd's Functions over
the torch.library custom ops where torch has them (2.4 or newer), else
over the plain kernels."""

from types import SimpleNamespace

from . import _autograd, _custom_ops
from . import _kernels as K


def _plain_ops():
    """The kernels with the custom ops' signatures (torch 2.1 to 2.3)."""
    def conv(x, w, bias, stride, pad_begin, pad_end, dilation, groups):
        return K.conv_forward(K.dense(x), w.contiguous(), bias, stride, pad_begin, pad_end,
                              dilation, groups)

    def conv_backward_data(dy, w, x_shape, *params):
        return K.conv_backward_data(dy, w.contiguous(), x_shape, *params)

    def conv_transpose(x, w, out_shape, stride, padding, dilation, groups):
        return K.conv_backward_data(K.dense(x), w.contiguous(), out_shape, stride, padding,
                                    padding, dilation, groups)

    return SimpleNamespace(conv=conv, conv_backward_data=conv_backward_data,
                           conv_backward_filter=K.conv_backward_filter, bias_grad=K.bias_grad,
                           conv_transpose=conv_transpose, pool=K.pool_forward,
                           pool_backward=K.pool_backward)


REGISTERED_AS_CUSTOM_OPS = _custom_ops.AVAILABLE
FUNCTIONS = _custom_ops.FUNCTIONS if REGISTERED_AS_CUSTOM_OPS else \
    _autograd.make_functions(_plain_ops())
conv = FUNCTIONS.Conv.apply
conv_transpose = FUNCTIONS.ConvTranspose.apply
pool = FUNCTIONS.Pool.apply
