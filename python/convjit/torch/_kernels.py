"""convjit's C API on torch tensors: each function allocates its output with
torch (in the input's memory format, so channels_last runs channels-last)
and calls convjit on the tensors' own memory and, on CUDA, torch's current
stream.  No autograd here: see _autograd.py and _custom_ops.py.

A trainer calls a handful of geometries thousands of times, so each
function keeps the ctypes arguments of a geometry (the parameter struct,
the tensor descriptors, the output's shape and format) in a plan built on
the geometry's first call; a later call only allocates its output and
passes pointers.  functools.lru_cache holds the plans: bounded, and safe
across threads."""

import ctypes as C
import functools
from types import SimpleNamespace

import torch

from .. import _library
from ..core import conv_params, pool_params
from ..errors import InvalidArgumentError, check

_lib = _library.lib
_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
           torch.float64: "float64"}
_PLANS_KEPT = 4096  # geometries per op; far more than any model has
_HOST = _library.Exec()  # read-only: every host call's execution context
_HOST.device.kind = _library.DEVICE_HOST
_HOST_REF = C.byref(_HOST)


def _desc(t, name):
    """t's descriptor; t is a tensor, or a (shape, strides, dtype) triple."""
    shape, strides, dtype = _tensor_key(t) if isinstance(t, torch.Tensor) else t
    if dtype not in _DTYPES:
        raise InvalidArgumentError(f"{name} is {dtype}; convjit takes float32, float16, "
                                   "bfloat16 and float64")
    d = _library.TensorDesc()
    d.dtype, d.rank = _library.DTYPES[_DTYPES[dtype]], len(shape)
    for i, (size, stride) in enumerate(zip(shape, strides)):
        d.dims[i], d.strides[i] = size, stride
    return d


def _exec(*tensors):
    """The call's execution context (by reference): the operands' one
    device, torch's current stream there."""
    if all(t is None or t.is_cpu for t in tensors):
        return _HOST_REF
    device = tensors[0].device
    if any(t is not None and t.device != device for t in tensors[1:]):
        devices = ", ".join(str(t.device) for t in tensors if t is not None)
        raise InvalidArgumentError(f"the operands are on different devices ({devices}); move "
                                   "them to one")
    if device.type != "cuda":
        raise InvalidArgumentError(f"tensors on {device} are not served; convjit takes CPU and "
                                   "CUDA tensors")
    e = _library.Exec()
    e.device.kind, e.device.ordinal = _library.DEVICE_CUDA, device.index or 0
    e.stream = torch.cuda.current_stream(device).cuda_stream
    return C.byref(e)


def _channels_last_format(t):
    """torch's channels-last memory format t is dense in, or None."""
    format = {4: torch.channels_last, 5: torch.channels_last_3d}.get(t.dim())
    return format if format is not None and t.is_contiguous(memory_format=format) else None


def dense(t):
    """t, or a contiguous copy where its strides overlap or leave gaps (an
    output in its layout would too)."""
    return t if t.is_contiguous() or _channels_last_format(t) else t.contiguous()


def contiguous(t):
    """t.contiguous(), without its dispatch where t already is."""
    return t if t.is_contiguous() else t.contiguous()


def _format(like):
    """The memory format of an output like `like`: channels-last stays channels-last."""
    return (None if like.is_contiguous() else _channels_last_format(like)) or \
        torch.contiguous_format


def _empty(shape, like):
    return torch.empty(shape, dtype=like.dtype, device=like.device, memory_format=_format(like))


def _output(shape, like_key):
    """An output's (shape, strides, format) for an input of like_key's
    layout, from torch's own rules on a meta tensor."""
    like = torch.empty_strided(like_key[0], like_key[1], dtype=like_key[2], device="meta")
    format = _format(like)
    strides = torch.empty(shape, device="meta", memory_format=format).stride()
    return tuple(shape), strides, format


def _tensor_key(t):
    """What a plan knows of a tensor: (shape, strides, dtype)."""
    return t.shape, _strides(t), t.dtype


def _strides(t):
    """t's strides, a size-1 dim's made dense.  Such a stride addresses
    nothing, and torch keeps a view's there (a channel slice of a batch of
    one, as autograd passes a concatenation's gradient): it would name a
    layout of its own, and oneDNN may serve that with a slower kernel."""
    strides = t.stride()
    if 1 not in t.shape:
        return strides
    if t.is_contiguous():
        return _dense_strides(t.shape, range(t.dim() - 1, -1, -1))
    if _channels_last_format(t) is not None:
        return _dense_strides(t.shape, [1] + list(range(t.dim() - 1, 1, -1)) + [0])
    return strides


def _dense_strides(shape, innermost_first):
    strides, running = [0] * len(shape), 1
    for dim in innermost_first:
        strides[dim] = running
        running *= shape[dim]
    return tuple(strides)


def _rank(t):
    return len(t.shape if isinstance(t, torch.Tensor) else t[0])


def conv_output_shape(x, w, params):
    out = (C.c_int64 * _library.MAX_RANK)()
    check(_lib.convjit_conv_output_dims(C.byref(params), C.byref(_desc(x, "input")),
                                        C.byref(_desc(w, "weight")), out))
    return [out[i] for i in range(_rank(x))]


class _Plan(SimpleNamespace):
    """One geometry's ctypes arguments (the parameter struct and the
    descriptors, by reference) and the output's layout; read-only once built."""


def _refs(**structs):
    """C.byref of each struct (a byref holds its object alive)."""
    return {name: C.byref(s) for name, s in structs.items()}


def _conv_geometry(like, stride, pad_begin, pad_end, dilation, groups):
    """The parameter struct of a conv whose operands have like's rank."""
    return conv_params(len(like[0]) - 2, stride, list(zip(pad_begin, pad_end)), dilation, groups)


def _pool_geometry(like, mode, window, stride, pad_begin, pad_end, dilation):
    return pool_params(len(like[0]) - 2, mode, window, stride, list(zip(pad_begin, pad_end)),
                       dilation)


@functools.lru_cache(maxsize=_PLANS_KEPT)
def _conv_forward_plan(x, w, stride, pad_begin, pad_end, dilation, groups):
    params = _conv_geometry(x, stride, pad_begin, pad_end, dilation, groups)
    y_shape, y_strides, y_format = _output(conv_output_shape(x, w, params), x)
    return _Plan(y_shape=y_shape, y_format=y_format,
                 **_refs(params=params, x=_desc(x, "input"), w=_desc(w, "weight"),
                         y=_desc((y_shape, y_strides, x[2]), "output")))


def conv_forward(x, w, bias, stride, pad_begin, pad_end, dilation, groups, activation=None):
    """y = act(conv(x, w) + bias); bias may be None."""
    plan = _conv_forward_plan(_tensor_key(x), _tensor_key(w), tuple(stride), tuple(pad_begin),
                              tuple(pad_end), tuple(dilation), groups)
    y = torch.empty(plan.y_shape, dtype=x.dtype, device=x.device, memory_format=plan.y_format)
    e = _exec(x, w, bias)
    if bias is None and activation is None:
        check(_lib.convjit_conv_forward(plan.params, plan.x, x.data_ptr(), plan.w, w.data_ptr(),
                                        plan.y, y.data_ptr(), 1.0, 0.0, e))
        return y
    epilogue = _library.Epilogue()
    epilogue.activation = _library.ACTIVATIONS[activation or "identity"]
    if bias is not None:
        bias = contiguous(bias)
        if bias.dtype != x.dtype or bias.numel() != w.shape[0]:
            raise InvalidArgumentError(f"bias is {bias.dtype} of {bias.numel()} elements; it "
                                       f"needs {x.dtype}, one per filter ({w.shape[0]})")
        epilogue.bias = bias.data_ptr()
    check(_lib.convjit_conv_forward_fused(plan.params, plan.x, x.data_ptr(), plan.w,
                                          w.data_ptr(), C.byref(epilogue), plan.y, y.data_ptr(),
                                          1.0, 0.0, e))
    return y


@functools.lru_cache(maxsize=_PLANS_KEPT)
def _conv_backward_data_plan(dy, w, x_shape, stride, pad_begin, pad_end, dilation, groups):
    params = _conv_geometry(dy, stride, pad_begin, pad_end, dilation, groups)
    dx_shape, dx_strides, dx_format = _output(x_shape, dy)
    return _Plan(dx_shape=dx_shape, dx_format=dx_format,
                 **_refs(params=params, dy=_desc(dy, "grad_output"), w=_desc(w, "weight"),
                         dx=_desc((dx_shape, dx_strides, dy[2]), "grad_input")))


def conv_backward_data(dy, w, x_shape, stride, pad_begin, pad_end, dilation, groups):
    """dx of shape x_shape, in dy's memory format."""
    plan = _conv_backward_data_plan(_tensor_key(dy), _tensor_key(w), tuple(x_shape),
                                    tuple(stride), tuple(pad_begin), tuple(pad_end),
                                    tuple(dilation), groups)
    dx = torch.empty(plan.dx_shape, dtype=dy.dtype, device=dy.device,
                     memory_format=plan.dx_format)
    check(_lib.convjit_conv_backward_data(plan.params, plan.dy, dy.data_ptr(), plan.w,
                                          w.data_ptr(), plan.dx, dx.data_ptr(), 1.0, 0.0,
                                          _exec(dy, w)))
    return dx


@functools.lru_cache(maxsize=_PLANS_KEPT)
def _conv_backward_filter_plan(x, dy, w_shape, stride, pad_begin, pad_end, dilation, groups):
    params = _conv_geometry(x, stride, pad_begin, pad_end, dilation, groups)
    w_strides = torch.empty(w_shape, device="meta").stride()
    return _Plan(dw_shape=w_shape,
                 **_refs(params=params, x=_desc(x, "input"), dy=_desc(dy, "grad_output"),
                         dw=_desc((w_shape, w_strides, x[2]), "grad_weight")))


def conv_backward_filter(x, dy, w_shape, stride, pad_begin, pad_end, dilation, groups):
    """dw of shape w_shape, contiguous like nn.Conv's weights."""
    plan = _conv_backward_filter_plan(_tensor_key(x), _tensor_key(dy), tuple(w_shape),
                                      tuple(stride), tuple(pad_begin), tuple(pad_end),
                                      tuple(dilation), groups)
    dw = torch.empty(plan.dw_shape, dtype=x.dtype, device=x.device)
    check(_lib.convjit_conv_backward_filter(plan.params, plan.x, x.data_ptr(), plan.dy,
                                            dy.data_ptr(), plan.dw, dw.data_ptr(), 1.0, 0.0,
                                            _exec(x, dy)))
    return dw


@functools.lru_cache(maxsize=_PLANS_KEPT)
def _bias_grad_plan(dy):
    return _Plan(**_refs(dy=_desc(dy, "grad_output")))


def bias_grad(dy):
    plan = _bias_grad_plan(_tensor_key(dy))
    db = torch.empty(dy.shape[1], dtype=dy.dtype, device=dy.device)
    check(_lib.convjit_conv_backward_bias(plan.dy, dy.data_ptr(), db.data_ptr(), 1.0, 0.0,
                                          _exec(dy)))
    return db


def pool_output_shape(x, params, ceil_mode):
    out = (C.c_int64 * _library.MAX_RANK)()
    check(_lib.convjit_pool_output_dims(C.byref(params), C.byref(_desc(x, "input")),
                                        int(ceil_mode), out))
    return [out[i] for i in range(_rank(x))]


@functools.lru_cache(maxsize=_PLANS_KEPT)
def _pool_forward_plan(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode):
    params = _pool_geometry(x, mode, window, stride, pad_begin, pad_end, dilation)
    y_shape, y_strides, y_format = _output(pool_output_shape(x, params, ceil_mode), x)
    return _Plan(y_shape=y_shape, y_format=y_format,
                 **_refs(params=params, x=_desc(x, "input"),
                         y=_desc((y_shape, y_strides, x[2]), "output")))


def pool_forward(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode):
    plan = _pool_forward_plan(_tensor_key(x), mode, tuple(window), tuple(stride),
                              tuple(pad_begin), tuple(pad_end), tuple(dilation), bool(ceil_mode))
    y = torch.empty(plan.y_shape, dtype=x.dtype, device=x.device, memory_format=plan.y_format)
    check(_lib.convjit_pool_forward(plan.params, plan.x, x.data_ptr(), plan.y, y.data_ptr(),
                                    1.0, 0.0, _exec(x)))
    return y


@functools.lru_cache(maxsize=_PLANS_KEPT)
def _pool_backward_plan(x, dy, mode, window, stride, pad_begin, pad_end, dilation):
    params = _pool_geometry(x, mode, window, stride, pad_begin, pad_end, dilation)
    return _Plan(**_refs(params=params, x=_desc(x, "input"), dy=_desc(dy, "grad_output")))


def pool_backward(x, dy, mode, window, stride, pad_begin, pad_end, dilation):
    """dx with x's shape and strides (the C API's contract)."""
    x, dy = dense(x), dense(dy)  # a broadcast dy (from y.sum()) runs at oneDNN's speed dense
    plan = _pool_backward_plan(_tensor_key(x), _tensor_key(dy), mode, tuple(window),
                               tuple(stride), tuple(pad_begin), tuple(pad_end), tuple(dilation))
    dx = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
    check(_lib.convjit_pool_backward(plan.params, plan.x,
                                     x.data_ptr() if mode == "max" else None, plan.dy,
                                     dy.data_ptr(), dx.data_ptr(), 1.0, 0.0,
                                     _exec(x, dy)))
    return dx


# The kernels with the custom ops' signatures: the custom ops' bodies, the
# eager calls' fast path (_autograd.py), and the ops themselves on torch
# 2.1 to 2.3, which has no custom ops.
def _conv_op(x, w, bias, stride, pad_begin, pad_end, dilation, groups):
    return conv_forward(dense(x), contiguous(w), bias, stride, pad_begin, pad_end, dilation,
                        groups)


def _conv_backward_data_op(dy, w, x_shape, stride, pad_begin, pad_end, dilation, groups):
    return conv_backward_data(dy, contiguous(w), x_shape, stride, pad_begin, pad_end, dilation,
                              groups)


def _conv_transpose_op(x, w, out_shape, stride, padding, dilation, groups):
    return conv_backward_data(dense(x), contiguous(w), out_shape, stride, padding, padding,
                              dilation, groups)


PLAIN_OPS = SimpleNamespace(conv=_conv_op, conv_backward_data=_conv_backward_data_op,
                            conv_backward_filter=conv_backward_filter, bias_grad=bias_grad,
                            conv_transpose=_conv_transpose_op, pool=pool_forward,
                            pool_backward=pool_backward)
