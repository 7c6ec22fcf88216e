"""Resize with jax.image.resize's signature, for the nearest and linear methods: the same
output coordinates (half-pixel centres), differentiable through convjit's deterministic resize
backward, vmappable."""

import functools
from dataclasses import dataclass

import jax

from .. import core
from ..errors import InvalidArgumentError
from . import _ffi
from ._batching import batched_over_n
from ._layout import layout

# jax.image.resize's methods -> convjit's (mode, coordinates).  jax's nearest takes input
# floor((o + 0.5) in / out): PyTorch's nearest-exact.
_METHODS = {"nearest": ("nearest-round-prefer-ceil", "half-pixel"),
            "linear": ("linear", "half-pixel"), "bilinear": ("linear", "half-pixel"),
            "trilinear": ("linear", "half-pixel")}


@dataclass(frozen=True)
class ResizeSpec:
    order: tuple  # convjit's (N, C, spatial...) axes
    out_spatial: tuple  # the output's spatial sizes, in convjit's order
    mode: str
    coordinates: str

    def y_shape(self, x_shape):
        shape = list(x_shape)
        for axis, size in zip(self.order[2:], self.out_spatial):
            shape[axis] = size
        return tuple(shape)


def _name(spec, direction, x_shape, y_shape, dtype):
    return core.resize_descriptor_name(
        layout(x_shape, spec.order, dtype, "x"), layout(y_shape, spec.order, dtype, "y"),
        direction=direction, mode=spec.mode, coordinates=spec.coordinates)


@functools.lru_cache(maxsize=None)
def _resizing(spec, x_shape_without_batch):
    def forward_op(x):
        y_shape = spec.y_shape(x.shape)
        return tuple(_ffi.call(_name(spec, "fwd", x.shape, y_shape, x.dtype), [x], ["x"],
                               [jax.ShapeDtypeStruct(y_shape, x.dtype)], ["out"]))

    def backward_op(dy):
        dx_shape = (dy.shape[0],) + x_shape_without_batch
        return tuple(_ffi.call(_name(spec, "bwd", dx_shape, dy.shape, dy.dtype), [dy], ["dy"],
                               [jax.ShapeDtypeStruct(dx_shape, dy.dtype)], ["out"]))

    forward = batched_over_n(forward_op, [0], [0])
    backward = batched_over_n(backward_op, [0], [0])

    @jax.custom_vjp
    def resize(x):
        return forward(x)[0]

    resize.defvjp(lambda x: (resize(x), None), lambda _, g: (backward(g)[0],))
    return resize


def resize(image, shape, method, antialias=True, precision=None, *, channel_axis=-1):
    """jax.image.resize on convjit for method nearest and linear (bilinear, trilinear): image is
    (batch, ..., channels) with channel_axis saying where the channels are (-1, or 1 for
    NCHW); shape keeps the batch and channels and gives 1 to 3 spatial sizes.  jax antialiases
    a linear downsample, convjit does not: that raises unless antialias=False."""
    del precision  # convjit computes coordinates in f32 and blends in f32 (f64 for f64)
    name = str(getattr(method, "name", method)).lower()
    if name not in _METHODS:
        raise NotImplementedError(
            f"method {method!r} is not a convjit resize: give nearest or linear (bilinear, "
            "trilinear)")
    shape = tuple(int(s) for s in shape)
    channel = channel_axis % image.ndim
    if len(shape) != image.ndim or not 3 <= image.ndim <= 5 or channel == 0:
        raise InvalidArgumentError(
            f"image {image.shape} to shape {shape}: give (batch, ..., channels) arrays of the "
            "same rank with 1 to 3 spatial dims, the channels at channel_axis (not 0)")
    if shape[0] != image.shape[0] or shape[channel] != image.shape[channel]:
        raise InvalidArgumentError(
            f"shape {shape} changes the batch or the channels of image {image.shape}; convjit "
            "resizes spatial dims only")
    order = (0, channel) + tuple(a for a in range(1, image.ndim) if a != channel)
    if (antialias and _METHODS[name][0] == "linear" and
            any(shape[a] < image.shape[a] for a in order[2:])):
        raise NotImplementedError(
            "jax.image.resize antialiases a linear downsample and convjit does not: pass "
            "antialias=False for plain linear interpolation")
    spec = ResizeSpec(order, tuple(shape[a] for a in order[2:]), *_METHODS[name])
    return _resizing(spec, tuple(image.shape[1:]))(image)
