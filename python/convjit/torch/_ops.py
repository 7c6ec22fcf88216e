"""Which implementation the functions call: torch.library custom ops where
torch has them (2.4 or newer), else autograd.Functions."""

from . import _autograd, _custom_ops

if _custom_ops.AVAILABLE:
    conv = _custom_ops.conv
    conv_transpose = _custom_ops.conv_transpose
    pool = _custom_ops.pool
else:
    conv = _autograd.Conv.apply

    def conv_transpose(x, w, out_shape, stride, padding, dilation, groups):
        return _autograd.ConvTranspose.apply(x, w, out_shape, stride, padding, dilation, groups)

    pool = _autograd.Pool.apply

REGISTERED_AS_CUSTOM_OPS = _custom_ops.AVAILABLE
