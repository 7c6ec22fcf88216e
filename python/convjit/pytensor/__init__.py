"""convjit's ops as PyTensor Ops: conv2d and conv3d with the signature of PyTensor's former
pytensor.tensor.conv.abstract_conv.conv2d/conv3d (removed in PyTensor 2.37), pool_2d and
pool_3d with Theano's, batch_normalization_train/test with Theano's (spatial axes), and
resize.  Each Op runs convjit's C API when PyTensor runs it (perform), builds convjit's
backward Ops for pytensor.grad, and lowers to convjit.jax under mode="JAX", where the whole
graph compiles with jax.jit.

Activations are channels first (N, C, spatial...), filters (K, C/groups, spatial...)."""

import numpy as np
import pytensor.tensor as pt

from ..errors import InvalidArgumentError
from . import _jax  # noqa: F401  (registers the JAX dispatch)
from ._ops import (BatchNormInference, BatchNormTrain, Conv, ConvGradFilter, ConvGradInput,
                   Pool, PoolGrad, Resize, ResizeGrad, BatchNormGrad)


def _per_dim(value, count, name):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * count
    value = tuple(int(v) for v in value)
    if len(value) != count:
        raise InvalidArgumentError(f"{name} = {value!r}: give {count} values, one per spatial dim")
    return value


def _border_pads(border_mode, count):
    """(begin, end) per spatial dim for PyTensor's border modes; "full" and "half" as they are
    (the Op sizes them for its filters)."""
    if border_mode == "valid":
        return ((0, 0),) * count
    if border_mode in ("full", "half"):
        return border_mode
    if isinstance(border_mode, (int, np.integer)):
        return ((int(border_mode),) * 2,) * count
    if isinstance(border_mode, tuple) and len(border_mode) == count:
        return tuple((int(p), int(p)) if isinstance(p, (int, np.integer)) else
                     (int(p[0]), int(p[1])) for p in border_mode)
    raise InvalidArgumentError(
        f"border_mode = {border_mode!r}: give 'valid', 'full', 'half', an int, or one int or "
        f"(begin, end) pair per spatial dim ({count})")


def _conv(input, filters, border_mode, subsample, filter_flip, filter_dilation, num_groups,
          count):
    input, filters = pt.as_tensor_variable(input), pt.as_tensor_variable(filters)
    if input.ndim != count + 2 or filters.ndim != count + 2:
        raise InvalidArgumentError(
            f"a {count}D convolution takes (N, C) + {count} spatial dims and (K, C/groups) + "
            f"{count}; got {input.ndim}D input and {filters.ndim}D filters")
    dilation = _per_dim(filter_dilation, count, "filter_dilation")
    pads = _border_pads(border_mode, count)
    if filter_flip:  # a true convolution; convjit correlates
        filters = filters[(slice(None), slice(None)) + (slice(None, None, -1),) * count]
    return Conv(_per_dim(subsample, count, "subsample"), pads, dilation, num_groups)(input,
                                                                                   filters)


def conv2d(input, filters, input_shape=None, filter_shape=None, border_mode="valid",
           subsample=(1, 1), filter_flip=True, filter_dilation=(1, 1), num_groups=1,
           unshared=False, **kwargs):
    """PyTensor's conv2d on convjit: border_mode 'valid', 'full', 'half', an int, or per-dim
    ints or (begin, end) pairs; filter_flip=True (the default) flips the filters, a true
    convolution, as PyTensor did.  input_shape and filter_shape are hints, not needed.
    unshared filters are not a convjit op."""
    if unshared:
        raise NotImplementedError("unshared (locally connected) filters are not a convjit op")
    del input_shape, filter_shape, kwargs
    return _conv(input, filters, border_mode, subsample, filter_flip, filter_dilation,
                 num_groups, 2)


def conv3d(input, filters, input_shape=None, filter_shape=None, border_mode="valid",
           subsample=(1, 1, 1), filter_flip=True, filter_dilation=(1, 1, 1), num_groups=1,
           **kwargs):
    """PyTensor's conv3d on convjit (see conv2d)."""
    del input_shape, filter_shape, kwargs
    return _conv(input, filters, border_mode, subsample, filter_flip, filter_dilation,
                 num_groups, 3)


_POOL_MODES = {"max": "max", "average_inc_pad": "avg_include_pad", "average_exc_pad": "avg"}


def _pool(input, ws, ignore_border, stride, pad, mode, count):
    if mode not in _POOL_MODES:
        raise NotImplementedError(f"pool mode {mode!r}: convjit pools max, average_inc_pad and "
                                  "average_exc_pad")
    if ignore_border is False:
        raise NotImplementedError("ignore_border=False (partial windows at the end) is not "
                                  "served here; pad the input, or use ignore_border=True")
    window = _per_dim(ws, count, "ws")
    stride = window if stride is None else _per_dim(stride, count, "stride")
    pads = tuple((p, p) for p in _per_dim(pad, count, "pad"))
    return Pool(_POOL_MODES[mode], window, stride, pads)(pt.as_tensor_variable(input))


def pool_2d(input, ws=None, ignore_border=True, stride=None, pad=(0, 0), mode="max"):
    """Theano's pool_2d on convjit's pooling: modes max, average_inc_pad, average_exc_pad;
    stride defaults to ws; pad is symmetric."""
    return _pool(input, ws, ignore_border, stride, pad, mode, 2)


def pool_3d(input, ws=None, ignore_border=True, stride=None, pad=(0, 0, 0), mode="max"):
    return _pool(input, ws, ignore_border, stride, pad, mode, 3)


def _channel_vector(value):
    value = pt.as_tensor_variable(value)
    return value.flatten() if value.ndim != 1 else value


def _spatial_axes(axes):
    if axes not in ("spatial", None):
        raise NotImplementedError(
            f"axes = {axes!r}: convjit normalises over every axis but the channels' (1), "
            "Theano's 'spatial'")


def batch_normalization_train(inputs, gamma, beta, axes="spatial", epsilon=1e-4,
                              running_average_factor=0.1, running_mean=None, running_var=None,
                              activation=None):
    """Theano's batch_normalization_train (spatial axes) on convjit: returns (out, mean,
    invstd), plus the new running mean and variance when they are given (updated with the
    unbiased variance, as Theano and PyTorch do).  activation: None, "relu" or "silu",
    fused."""
    _spatial_axes(axes)
    inputs = pt.as_tensor_variable(inputs)
    gamma, beta = _channel_vector(gamma), _channel_vector(beta)
    keep = running_mean is not None
    if keep != (running_var is not None):
        raise InvalidArgumentError("give running_mean and running_var together, or neither")
    if not keep:
        running_mean, running_var = pt.zeros_like(gamma), pt.ones_like(gamma)
    out, mean, invstd, new_mean, new_var = BatchNormTrain(epsilon, running_average_factor,
                                                          activation)(
        inputs, gamma, beta, _channel_vector(running_mean),
        _channel_vector(running_var))
    return (out, mean, invstd, new_mean, new_var) if keep else (out, mean, invstd)


def batch_normalization_test(inputs, gamma, beta, mean, var, axes="spatial", epsilon=1e-4,
                             activation=None):
    """Theano's batch_normalization_test (spatial axes) on convjit."""
    _spatial_axes(axes)
    return BatchNormInference(epsilon, activation)(
        pt.as_tensor_variable(inputs), _channel_vector(gamma),
        _channel_vector(beta), _channel_vector(mean), _channel_vector(var))


# PyTorch's interpolate modes -> convjit's (mode, coordinates).
_RESIZE_MODES = {"nearest": ("nearest", "asymmetric"),
                 "nearest-exact": ("nearest-round-prefer-ceil", "half-pixel"),
                 "linear": ("linear", "half-pixel")}


def resize(x, size=None, scale_factor=None, mode="nearest", align_corners=False):
    """torch.nn.functional.interpolate's nearest, nearest-exact and linear (any rank) on
    convjit: size (the spatial sizes) or an integer scale_factor; the backward is convjit's
    deterministic gather."""
    if mode not in _RESIZE_MODES:
        raise NotImplementedError(f"resize mode {mode!r}: give one of {', '.join(_RESIZE_MODES)}")
    x = pt.as_tensor_variable(x)
    count = x.ndim - 2
    if (size is None) == (scale_factor is None):
        raise InvalidArgumentError("give one of size and scale_factor")
    resize_mode, coordinates = _RESIZE_MODES[mode]
    if align_corners:
        if mode != "linear":
            raise InvalidArgumentError("align_corners belongs to the linear mode")
        coordinates = "align-corners"
    if size is not None:
        return Resize(resize_mode, coordinates, sizes=_per_dim(size, count, "size"))(x)
    scales = _per_dim(scale_factor, count, "scale_factor")
    if any(float(s) != s for s in np.atleast_1d(scale_factor)):
        raise InvalidArgumentError(f"scale_factor = {scale_factor!r}: give integer factors, or "
                                   "size")
    return Resize(resize_mode, coordinates, scales=scales)(x)


__all__ = ["BatchNormGrad", "BatchNormInference", "BatchNormTrain", "Conv", "ConvGradFilter",
           "ConvGradInput", "Pool", "PoolGrad", "Resize", "ResizeGrad",
           "batch_normalization_test", "batch_normalization_train", "conv2d", "conv3d",
           "pool_2d", "pool_3d", "resize"]
