"""convjit's C API on torch tensors: each function allocates its output with
torch (in the input's memory format, so channels_last runs channels-last)
and calls convjit on the tensors' own memory and, on CUDA, torch's current
stream.  No autograd here: see _autograd.py and _custom_ops.py."""

import ctypes as C
from types import SimpleNamespace

import torch

from .. import _library
from ..core import conv_params, pool_params
from ..errors import InvalidArgumentError, check

_lib = _library.lib
_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
           torch.float64: "float64"}


def _desc(t, name):
    if t.dtype not in _DTYPES:
        raise InvalidArgumentError(f"{name} is {t.dtype}; convjit takes float32, float16, "
                                   "bfloat16 and float64")
    d = _library.TensorDesc()
    d.dtype, d.rank = _library.DTYPES[_DTYPES[t.dtype]], t.dim()
    for i, (size, stride) in enumerate(zip(t.shape, t.stride())):
        d.dims[i], d.strides[i] = size, stride
    return d


def _exec(*tensors):
    devices = {t.device for t in tensors if t is not None}
    if len(devices) > 1:
        raise InvalidArgumentError(f"the operands are on different devices ({devices}); move "
                                   "them to one")
    device = devices.pop()
    e = _library.Exec()
    if device.type == "cuda":
        e.device.kind, e.device.ordinal = _library.DEVICE_CUDA, device.index or 0
        e.stream = torch.cuda.current_stream(device).cuda_stream
    elif device.type == "cpu":
        e.device.kind = _library.DEVICE_HOST
    else:
        raise InvalidArgumentError(f"tensors on {device} are not served; convjit takes CPU and "
                                   "CUDA tensors")
    return e


def _channels_last_format(t):
    """torch's channels-last memory format t is dense in, or None."""
    format = {4: torch.channels_last, 5: torch.channels_last_3d}.get(t.dim())
    return format if format is not None and t.is_contiguous(memory_format=format) else None


def dense(t):
    """t, or a contiguous copy where its strides overlap or leave gaps (an
    output in its layout would too)."""
    return t if t.is_contiguous() or _channels_last_format(t) else t.contiguous()


def _pointer(t):
    return None if t is None else C.c_void_p(t.data_ptr())


def _empty(shape, like):
    """An output in like's memory format (channels-last stays channels-last)."""
    format = None if like.is_contiguous() else _channels_last_format(like)
    return torch.empty(shape, dtype=like.dtype, device=like.device,
                       memory_format=format or torch.contiguous_format)


def _byref(t, name):
    return C.byref(_desc(t, name))


def conv_output_shape(x, w, params):
    out = (C.c_int64 * _library.MAX_RANK)()
    check(_lib.convjit_conv_output_dims(C.byref(params), _byref(x, "input"), _byref(w, "weight"),
                                        out))
    return [out[i] for i in range(x.dim())]


def conv_forward(x, w, bias, stride, pad_begin, pad_end, dilation, groups, activation=None):
    """y = act(conv(x, w) + bias); bias may be None."""
    params = conv_params(x.dim() - 2, stride, list(zip(pad_begin, pad_end)), dilation, groups)
    y = _empty(conv_output_shape(x, w, params), x)
    if bias is not None:
        bias = bias.contiguous()
    e = _exec(x, w, bias)
    if bias is None and activation is None:
        check(_lib.convjit_conv_forward(C.byref(params), _byref(x, "input"), _pointer(x),
                                        _byref(w, "weight"), _pointer(w), _byref(y, "output"),
                                        _pointer(y), 1.0, 0.0, C.byref(e)))
        return y
    epilogue = _library.Epilogue()
    epilogue.activation = _library.ACTIVATIONS[activation or "identity"]
    epilogue.bias = None if bias is None else bias.data_ptr()
    if bias is not None and (bias.dtype != x.dtype or bias.numel() != w.shape[0]):
        raise InvalidArgumentError(f"bias is {bias.dtype} of {bias.numel()} elements; it needs "
                                   f"{x.dtype}, one per filter ({w.shape[0]})")
    check(_lib.convjit_conv_forward_fused(C.byref(params), _byref(x, "input"), _pointer(x),
                                          _byref(w, "weight"), _pointer(w), C.byref(epilogue),
                                          _byref(y, "output"), _pointer(y), 1.0, 0.0,
                                          C.byref(e)))
    return y


def conv_backward_data(dy, w, x_shape, stride, pad_begin, pad_end, dilation, groups):
    """dx of shape x_shape, in dy's memory format."""
    params = conv_params(dy.dim() - 2, stride, list(zip(pad_begin, pad_end)), dilation, groups)
    dx = _empty(x_shape, dy)
    e = _exec(dy, w)
    check(_lib.convjit_conv_backward_data(C.byref(params), _byref(dy, "grad_output"),
                                          _pointer(dy), _byref(w, "weight"), _pointer(w),
                                          _byref(dx, "grad_input"), _pointer(dx), 1.0, 0.0,
                                          C.byref(e)))
    return dx


def conv_backward_filter(x, dy, w_shape, stride, pad_begin, pad_end, dilation, groups):
    """dw of shape w_shape, contiguous like nn.Conv's weights."""
    params = conv_params(x.dim() - 2, stride, list(zip(pad_begin, pad_end)), dilation, groups)
    dw = torch.empty(w_shape, dtype=x.dtype, device=x.device)
    e = _exec(x, dy)
    check(_lib.convjit_conv_backward_filter(C.byref(params), _byref(x, "input"), _pointer(x),
                                            _byref(dy, "grad_output"), _pointer(dy),
                                            _byref(dw, "grad_weight"), _pointer(dw), 1.0, 0.0,
                                            C.byref(e)))
    return dw


def bias_grad(dy):
    db = torch.empty(dy.shape[1], dtype=dy.dtype, device=dy.device)
    e = _exec(dy)
    check(_lib.convjit_conv_backward_bias(_byref(dy, "grad_output"), _pointer(dy), _pointer(db),
                                          1.0, 0.0, C.byref(e)))
    return db


_POOL_MODES = ("max", "avg", "avg_include_pad")


def pool_output_shape(x, params, ceil_mode):
    out = (C.c_int64 * _library.MAX_RANK)()
    check(_lib.convjit_pool_output_dims(C.byref(params), _byref(x, "input"), int(ceil_mode),
                                        out))
    return [out[i] for i in range(x.dim())]


def pool_forward(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode):
    params = pool_params(x.dim() - 2, mode, window, stride, list(zip(pad_begin, pad_end)),
                         dilation)
    y = _empty(pool_output_shape(x, params, ceil_mode), x)
    e = _exec(x)
    check(_lib.convjit_pool_forward(C.byref(params), _byref(x, "input"), _pointer(x),
                                    _byref(y, "output"), _pointer(y), 1.0, 0.0, C.byref(e)))
    return y


def pool_backward(x, dy, mode, window, stride, pad_begin, pad_end, dilation):
    """dx with x's shape and strides (the C API's contract)."""
    x, dy = dense(x), dense(dy)  # a broadcast dy (from y.sum()) runs at oneDNN's speed dense
    params = pool_params(x.dim() - 2, mode, window, stride, list(zip(pad_begin, pad_end)),
                         dilation)
    dx = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
    e = _exec(x, dy)
    check(_lib.convjit_pool_backward(C.byref(params), _byref(x, "input"),
                                     _pointer(x) if mode == "max" else None,
                                     _byref(dy, "grad_output"), _pointer(dy), _pointer(dx), 1.0,
                                     0.0, C.byref(e)))
    return dx


# The kernels with the custom ops' signatures: the custom ops' bodies, and
# the ops themselves on torch 2.1 to 2.3, which has no custom ops.
def _conv_op(x, w, bias, stride, pad_begin, pad_end, dilation, groups):
    return conv_forward(dense(x), w.contiguous(), bias, stride, pad_begin, pad_end, dilation,
                        groups)


def _conv_backward_data_op(dy, w, x_shape, stride, pad_begin, pad_end, dilation, groups):
    return conv_backward_data(dy, w.contiguous(), x_shape, stride, pad_begin, pad_end, dilation,
                              groups)


def _conv_transpose_op(x, w, out_shape, stride, padding, dilation, groups):
    return conv_backward_data(dense(x), w.contiguous(), out_shape, stride, padding, padding,
                              dilation, groups)


PLAIN_OPS = SimpleNamespace(conv=_conv_op, conv_backward_data=_conv_backward_data_op,
                            conv_backward_filter=conv_backward_filter, bias_grad=bias_grad,
                            conv_transpose=_conv_transpose_op, pool=pool_forward,
                            pool_backward=pool_backward)
