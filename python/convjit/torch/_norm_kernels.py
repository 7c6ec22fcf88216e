"""convjit's batchnorm and resize on torch tensors: each function allocates
its outputs with torch (in the input's memory format) and calls the C API on
the tensors' own memory and, on CUDA, torch's current stream.  No autograd
here: see _norm_autograd.py and _custom_ops.py."""

import ctypes as C

import torch

from .. import _library
from ..core import batch_norm_params, resize_params
from ..errors import InvalidArgumentError, check
from ._kernels import _desc, _empty, _exec, dense

_lib = _library.lib


def _param_dtype(x):
    """The dtype of batchnorm statistics and parameters for x's (cuDNN's rule)."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _channel_vector(t, name, x):
    """t as C contiguous elements of the parameter dtype (a converted copy where it is not),
    or None."""
    if t is None:
        return None
    if t.numel() != x.shape[1]:
        raise InvalidArgumentError(f"{name} has {t.numel()} elements; it needs C = {x.shape[1]}, "
                                   "one per channel of input")
    if t.device != x.device:
        raise InvalidArgumentError(f"{name} is on {t.device}, input on {x.device}; move them to one")
    return t.detach().to(_param_dtype(x)).contiguous()


def _pointer(t):
    return None if t is None else t.data_ptr()


def _check_values_per_channel(x):
    """torch.nn.functional.batch_norm's rule, with its message."""
    values = x.numel() // x.shape[1] if x.shape[1] else 0
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{list(x.shape)}")


def batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps,
               activation=None):
    """(y, mean, invstd, new running mean, new running var): training normalises with the
    batch's statistics (mean and invstd are them) and returns the updated running statistics
    (empty where not kept); inference uses the running ones (the other four are empty)."""
    x = dense(x)
    if training:
        _check_values_per_channel(x)
    w, b = _channel_vector(weight, "weight", x), _channel_vector(bias, "bias", x)
    # Copies: the function is functional, the caller's statistics are never written here.
    rm, rv = (None if t is None else _channel_vector(t, name, x).clone()
              for t, name in ((running_mean, "running_mean"), (running_var, "running_var")))
    y = _empty(x.shape, x)
    params = batch_norm_params(eps, momentum, False, activation)
    e = _exec(x, w, b, rm, rv)
    if not training:
        if rm is None or rv is None:
            raise InvalidArgumentError("running_mean and running_var are needed when not "
                                       "training")
        check(_lib.convjit_batchnorm_forward_inference(
            C.byref(params), C.byref(_desc(x, "input")), x.data_ptr(), _pointer(w), _pointer(b),
            rm.data_ptr(), rv.data_ptr(), C.byref(_desc(y, "output")), y.data_ptr(), 1.0, 0.0, e))
        return (y, *(x.new_empty(0, dtype=_param_dtype(x)) for _ in range(4)))
    mean = x.new_empty(x.shape[1], dtype=_param_dtype(x))
    invstd = torch.empty_like(mean)
    check(_lib.convjit_batchnorm_forward_training(
        C.byref(params), C.byref(_desc(x, "input")), x.data_ptr(), _pointer(w), _pointer(b),
        C.byref(_desc(y, "output")), y.data_ptr(), _pointer(rm), _pointer(rv), mean.data_ptr(),
        invstd.data_ptr(), 1.0, 0.0, e))
    return (y, mean, invstd, *(x.new_empty(0, dtype=_param_dtype(x)) if t is None else t
                               for t in (rm, rv)))


def batch_norm_backward(x, dy, weight, bias, mean, var_or_invstd, training, eps, activation,
                        mask):
    """(dx, dweight, dbias) for mask's True entries, empty tensors for the others; dweight
    and dbias in the parameter dtype."""
    x, dy = dense(x), dense(dy)
    w, b = _channel_vector(weight, "weight", x), _channel_vector(bias, "bias", x)
    stats = [_channel_vector(t, name, x) for t, name in ((mean, "mean"),
                                                         (var_or_invstd, "var_or_invstd"))]
    dx = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device) \
        if mask[0] else None
    dw = x.new_empty(x.shape[1], dtype=_param_dtype(x)) if mask[1] else None
    db = x.new_empty(x.shape[1], dtype=_param_dtype(x)) if mask[2] else None
    grad_mask = sum(bit for bit, wanted in zip((_library.GRAD_INPUT, _library.GRAD_WEIGHT,
                                                _library.GRAD_BIAS), mask) if wanted)
    if grad_mask:
        params = batch_norm_params(eps, 0.0, False, activation)
        check(_lib.convjit_batchnorm_backward(
            C.byref(params), int(bool(training)), C.byref(_desc(x, "input")), x.data_ptr(),
            C.byref(_desc(dy, "grad_output")), dy.data_ptr(), _pointer(w), _pointer(b),
            stats[0].data_ptr(), stats[1].data_ptr(), grad_mask, _pointer(dx), _pointer(dw),
            _pointer(db), 1.0, 0.0, _exec(x, dy, w, b, *stats)))
    def returned(grad, like):  # distinct tensors: a custom op's outputs may not alias
        if grad is None:
            return x.new_empty(0)
        return grad if like is None else grad.to(like.dtype)
    return returned(dx, None), returned(dw, weight), returned(db, bias)


def resize(x, out_size, mode, coordinates, scales):
    """x resized to out_size (spatial sizes); scales: the caller's out / in per dim (0: from
    the sizes)."""
    x = dense(x)
    y = _empty(list(x.shape[:2]) + list(out_size), x)
    params = resize_params(x.dim() - 2, mode, coordinates, scales)
    check(_lib.convjit_resize_forward(C.byref(params), C.byref(_desc(x, "input")), x.data_ptr(),
                                      C.byref(_desc(y, "output")), y.data_ptr(), 1.0, 0.0,
                                      _exec(x)))
    return y


def resize_backward(dy, x_shape, mode, coordinates, scales):
    """dx of shape x_shape, in dy's memory format."""
    dy = dense(dy)
    dx = _empty(x_shape, dy)
    params = resize_params(dy.dim() - 2, mode, coordinates, scales)
    check(_lib.convjit_resize_backward(C.byref(params), C.byref(_desc(dy, "grad_output")),
                                       dy.data_ptr(), C.byref(_desc(dx, "grad_input")),
                                       dx.data_ptr(), 1.0, 0.0, _exec(dy)))
    return dx
