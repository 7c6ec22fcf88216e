"""Pooling with flax.linen.max_pool's and avg_pool's signatures: channels-last inputs (batch,
window dims..., features), or channels at channel_axis; differentiable through convjit's pool
backward, vmappable."""

import functools
from dataclasses import dataclass

import jax

from .. import core
from ..errors import InvalidArgumentError
from . import _ffi
from ._batching import batched_over_n
from ._conv import _pads, _tuple
from ._layout import layout, shape_in


@dataclass(frozen=True)
class PoolSpec:
    order: tuple  # convjit's (N, C, spatial...) axes
    mode: str  # core's: max, avg, avg_include_pad
    window: tuple
    stride: tuple
    pads: tuple

    def y_shape(self, x_shape):
        x = [x_shape[a] for a in self.order]
        spatial = [(size + lo + hi - k) // s + 1 for size, k, s, (lo, hi) in
                   zip(x[2:], self.window, self.stride, self.pads)]
        return shape_in(self.order, x[:2] + spatial)


def _name(spec, direction, x_shape, y_shape, dtype):
    return core.pool_descriptor_name(
        layout(x_shape, spec.order, dtype, "x"), layout(y_shape, spec.order, dtype, "y"),
        window=spec.window, direction=direction, mode=spec.mode, stride=spec.stride,
        padding=spec.pads)


@functools.lru_cache(maxsize=None)
def _pooling(spec):
    def forward_op(x):
        y_shape = spec.y_shape(x.shape)
        return tuple(_ffi.call(_name(spec, "fwd", x.shape, y_shape, x.dtype), [x], ["x"],
                               [jax.ShapeDtypeStruct(y_shape, x.dtype)], ["out"]))

    def backward_op(x, dy):
        arrays, roles = ([x, dy], ["x", "dy"]) if spec.mode == "max" else ([dy], ["dy"])
        return tuple(_ffi.call(_name(spec, "bwd", x.shape, dy.shape, dy.dtype), arrays, roles,
                               [jax.ShapeDtypeStruct(x.shape, dy.dtype)], ["out"]))

    forward = batched_over_n(forward_op, [0], [0])  # N leads: order[0] is 0
    backward = batched_over_n(backward_op, [0, 0], [0])

    @jax.custom_vjp
    def pool(x):
        return forward(x)[0]

    pool.defvjp(lambda x: (pool(x), x), lambda x, g: (backward(x, g)[0],))
    return pool


def _pool(mode, inputs, window_shape, strides, padding, channel_axis):
    window = tuple(int(k) for k in window_shape)
    unbatched = inputs.ndim == len(window) + 1  # flax adds the batch dim
    x = inputs[None] if unbatched else inputs
    channel = channel_axis % x.ndim if x.ndim == len(window) + 2 else 0
    if channel == 0 or not 1 <= len(window) <= 3:
        raise InvalidArgumentError(
            f"inputs has shape {inputs.shape} for a {len(window)}-D window: give (batch, "
            "window dims..., features) (or the features at channel_axis, not 0), 1 to 3 "
            "window dims")
    order = (0, channel) + tuple(a for a in range(1, x.ndim) if a != channel)
    stride = _tuple(strides, len(window), "strides")
    spec = PoolSpec(order, mode, window, stride,
                    _pads(padding, [x.shape[a] for a in order[2:]], window, stride,
                          (1,) * len(window)))
    y = _pooling(spec)(x)
    return y[0] if unbatched else y


def max_pool(inputs, window_shape, strides=None, padding="VALID", *, channel_axis=-1):
    """flax.linen.max_pool on convjit: padding never wins a window.  channel_axis: where the
    features are (-1, as flax, or 1 for NCHW)."""
    return _pool("max", inputs, window_shape, strides, padding, channel_axis)


def avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True, *,
             channel_axis=-1):
    """flax.linen.avg_pool on convjit: count_include_pad=True divides by the whole window (as
    flax), False by its values inside the input."""
    return _pool("avg_include_pad" if count_include_pad else "avg", inputs, window_shape,
                 strides, padding, channel_axis)
