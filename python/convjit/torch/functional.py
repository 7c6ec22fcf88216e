"""torch.nn.functional's convolutions, pools, batch_norm and interpolate,
served by convjit, with the same signatures and semantics, and
differentiable."""

import math

import torch

from ..errors import InvalidArgumentError, UnsupportedError
from . import _kernels as K
from . import _ops


def _tuple(value, n, name):
    if isinstance(value, int):
        return [value] * n
    values = list(value)
    if len(values) == 1:
        values *= n
    if len(values) != n or not all(isinstance(v, int) for v in values):
        raise InvalidArgumentError(f"{name} = {value!r}: give an int or {n} ints")
    return values


def _conv_padding(padding, n, weight, dilation, stride):
    """(begins, ends): ints, or 'valid', or 'same' (the extra pixel at the end, as torch)."""
    if padding == "valid":
        return [0] * n, [0] * n
    if padding == "same":
        if any(s != 1 for s in stride):
            raise InvalidArgumentError("padding='same' is not supported for strided "
                                       "convolutions (as in torch)")
        total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
        begins = [t // 2 for t in total]
        return begins, [t - b for t, b in zip(total, begins)]
    if isinstance(padding, str):
        raise InvalidArgumentError(f"padding = {padding!r}: give an int, a tuple, 'valid' or "
                                   "'same'")
    pads = _tuple(padding, n, "padding")
    return pads, pads


def _batched(n, input, call):
    """Runs call on a batch; an unbatched input (C, spatial...) is one."""
    if input.dim() == n + 1:
        return call(input.unsqueeze(0)).squeeze(0)
    if input.dim() != n + 2:
        raise InvalidArgumentError(f"expected a {n + 1}D (unbatched) or {n + 2}D (batched) "
                                   f"input, got {input.dim()}D")
    return call(input)


def _conv(n, input, weight, bias, stride, padding, dilation, groups):
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    begins, ends = _conv_padding(padding, n, weight, dilation, stride)
    return _batched(n, input, lambda x: _ops.conv(x, weight, bias, stride, begins, ends, dilation,
                                                  groups))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(n, input, weight, bias, stride, padding, output_padding, groups, dilation):
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    padding = _tuple(padding, n, "padding")
    output_padding = _tuple(output_padding, n, "output_padding")
    for o, s, d in zip(output_padding, stride, dilation):
        if o >= max(s, d):
            raise InvalidArgumentError(f"output_padding {o} must be smaller than either stride "
                                       f"{s} or dilation {d} (as in torch)")

    # convjit's conv takes padding below the dilated filter's extent and
    # outputs the stride leaves no input for; a transposed conv's padding
    # only crops its output, and output padding past the stride only adds
    # zeros: those parts are done here, and the bias after them.
    kept = [min(p, d * (k - 1)) for p, d, k in zip(padding, dilation, weight.shape[2:])]
    inner = [min(o, s - 1) for o, s in zip(output_padding, stride)]

    def call(x):
        shape = [x.shape[0], weight.shape[1] * groups] + [
            (i - 1) * s - 2 * p + d * (k - 1) + o + 1
            for i, s, p, d, k, o in zip(x.shape[2:], stride, kept, dilation, weight.shape[2:],
                                        inner)]
        y = _ops.conv_transpose(x, weight, shape, stride, kept, dilation, groups)
        extra = [o - i for o, i in zip(output_padding, inner)]
        if any(extra):
            y = torch.nn.functional.pad(y, [e for size in reversed(extra) for e in (0, size)])
        crop = [p - q for p, q in zip(padding, kept)]
        if any(crop):
            y = y[(slice(None), slice(None)) + tuple(slice(c, size - c) for c, size in
                                                     zip(crop, y.shape[2:]))]
        return y if bias is None else y + bias.reshape([1, -1] + [1] * n)

    return _batched(n, input, call)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def _pool(n, input, mode, kernel_size, stride, padding, dilation, ceil_mode):
    window = _tuple(kernel_size, n, "kernel_size")
    stride = window if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _tuple(stride, n, "stride")
    padding, dilation = _tuple(padding, n, "padding"), _tuple(dilation, n, "dilation")
    return _batched(n, input, lambda x: _ops.pool(x, mode, window, stride, padding, padding,
                                                  dilation, ceil_mode))


def _no_indices(return_indices):
    if return_indices:
        raise UnsupportedError("return_indices=True: convjit's max pooling keeps no index "
                               "tensor (its backward recomputes each window's winner); use "
                               "torch.nn.functional for the indices")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    _no_indices(return_indices)
    return _pool(1, input, "max", kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    _no_indices(return_indices)
    return _pool(2, input, "max", kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    _no_indices(return_indices)
    return _pool(3, input, "max", kernel_size, stride, padding, dilation, ceil_mode)


def _avg_mode(count_include_pad, divisor_override):
    if divisor_override is not None:
        raise UnsupportedError("divisor_override: convjit's average pools divide by the window's "
                               "element count, with or without padding (count_include_pad)")
    return "avg_include_pad" if count_include_pad else "avg"


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return _pool(1, input, _avg_mode(count_include_pad, None), kernel_size, stride, padding, 1,
                 ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _pool(2, input, _avg_mode(count_include_pad, divisor_override), kernel_size, stride,
                 padding, 1, ceil_mode)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _pool(3, input, _avg_mode(count_include_pad, divisor_override), kernel_size, stride,
                 padding, 1, ceil_mode)


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """aten::convolution_backward: (grad_input, grad_weight, grad_bias), None where
    output_mask is False."""
    del output_padding  # the shapes come from input and weight
    n = input.dim() - 2
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    padding = _tuple(padding, n, "padding")
    params = (stride, padding, padding, dilation, groups)
    dy = grad_output
    if transposed:  # input is the transposed conv's x (the conv's dy), its output the conv's x
        dx = K.conv_forward(dy, weight.contiguous(), None, *params) if output_mask[0] else None
        dw = K.conv_backward_filter(dy, input, weight.shape, *params) if output_mask[1] else None
    else:
        dx = K.conv_backward_data(dy, weight.contiguous(), input.shape, *params) \
            if output_mask[0] else None
        dw = K.conv_backward_filter(input, dy, weight.shape, *params) if output_mask[1] else None
    db = None
    if output_mask[2]:
        if bias_sizes is not None and list(bias_sizes) != [dy.shape[1]]:
            raise InvalidArgumentError(f"bias_sizes {list(bias_sizes)} do not match "
                                       f"grad_output's {dy.shape[1]} channels")
        db = K.bias_grad(dy)
    return dx, dw, db


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05, activation=None):
    """torch.nn.functional.batch_norm; training updates running_mean and running_var in
    place (where given), as torch does.  activation ("relu" or "silu") is applied after the
    shift, fused (YOLO's Conv-BN-SiLU), and differentiated with it."""
    if input.dim() < 2:
        raise ValueError(f"batch_norm expects an input of at least 2 dimensions (N, C, ...), "
                         f"got {input.dim()}D")
    if input.dim() > 5:
        raise InvalidArgumentError(f"batch_norm takes (N, C) and 1 to 3 spatial dims, got "
                                   f"{input.dim()}D")
    x = input.unsqueeze(-1) if input.dim() == 2 else input  # (N, C) as (N, C, 1)
    y, _, _, new_mean, new_var = _ops.batch_norm(x, weight, bias, running_mean, running_var,
                                                 bool(training), float(momentum), float(eps),
                                                 activation)
    if training and running_mean is not None:
        with torch.no_grad():
            running_mean.copy_(new_mean)
            running_var.copy_(new_var)
    return y.squeeze(-1) if input.dim() == 2 else y


# torch's interpolate mode -> convjit's (mode, coordinates, the input rank it needs or None).
_RESIZE_MODES = {"nearest": ("nearest", "asymmetric", None),
                 "nearest-exact": ("nearest-round-prefer-ceil", "half-pixel", None),
                 "linear": ("linear", None, 3), "bilinear": ("linear", None, 4),
                 "trilinear": ("linear", None, 5)}


def _resize_sizes(input, n, size, scale_factor, recompute_scale_factor):
    """(output sizes, the scales torch maps with, 0 where it uses the sizes)."""
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = [size] * n if isinstance(size, int) else list(size)
        if len(sizes) != n:
            raise ValueError(f"Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(input.shape[2:])} and output size of {size}.")
        return [int(v) for v in sizes], [0.0] * n
    scales = [float(scale_factor)] * n if isinstance(scale_factor, (int, float)) else \
        [float(v) for v in scale_factor]
    if len(scales) != n:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of "
                         f"{list(input.shape[2:])} and scale_factor of shape {scale_factor}.")
    sizes = [math.floor(float(s) * f) for s, f in zip(input.shape[2:], scales)]
    return sizes, [0.0] * n if recompute_scale_factor else scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate for the nearest, nearest-exact and (bi/tri)linear modes,
    with torch's coordinates (including the scale it was given); the backward is
    deterministic."""
    if mode not in _RESIZE_MODES:
        raise UnsupportedError(f"interpolate mode {mode!r}: convjit serves "
                               f"{', '.join(_RESIZE_MODES)}; use torch.nn.functional there")
    if antialias:
        raise UnsupportedError("interpolate with antialias=True: convjit's resize does not "
                               "low-pass filter; use torch.nn.functional there")
    resize_mode, coordinates, rank = _RESIZE_MODES[mode]
    if rank is None and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if rank is not None and input.dim() != rank:
        raise InvalidArgumentError(f"mode {mode!r} needs a {rank}D input, got {input.dim()}D")
    if not 3 <= input.dim() <= 5:
        raise InvalidArgumentError(f"interpolate takes (N, C) and 1 to 3 spatial dims, got "
                                   f"{input.dim()}D")
    n = input.dim() - 2
    sizes, scales = _resize_sizes(input, n, size, scale_factor, recompute_scale_factor)
    if coordinates is None:
        coordinates = "align-corners" if align_corners else "half-pixel"
    # torch reads a dim whose size is kept (or doubled, nearest) without its scale.
    for i, (s, out) in enumerate(zip(input.shape[2:], sizes)):
        if out == s or (mode == "nearest" and out == 2 * s) or coordinates == "align-corners":
            scales[i] = 0.0
    return _ops.resize(input, sizes, resize_mode, coordinates, scales)


__all__ = ["batch_norm", "interpolate", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
           "avg_pool2d", "avg_pool3d", "convolution_backward"]
