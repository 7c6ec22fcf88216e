"""Convolution: jax.lax.conv_general_dilated's signature, and conv with a fused epilogue (bias,
residual, activation), differentiable through convjit's backward ops."""

import dataclasses
import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from .. import core
from ..errors import InvalidArgumentError
from . import _ffi
from ._batching import batched_over_n
from ._layout import layout, shape_in


@dataclass(frozen=True)
class ConvSpec:
    """What a convolution's calls share: the axis orders of x, w and y (convjit's order, from
    the dimension numbers), the x shape (bwddata's dx), the w shape (bwdfilt's dw), the window
    parameters and the epilogue."""
    lhs: tuple
    rhs: tuple
    out: tuple
    x_shape: tuple
    w_shape: tuple
    stride: tuple
    pads: tuple
    dilation: tuple
    groups: int
    activation: str = None
    bias: bool = False
    residual: bool = False

    def y_shape(self, n):
        """y's shape in its layout for a batch of n."""
        x = [self.x_shape[a] for a in self.lhs]
        w = [self.w_shape[a] for a in self.rhs]
        spatial = [(size + lo + hi - (k - 1) * d - 1) // s + 1 for size, k, (lo, hi), d, s in
                   zip(x[2:], w[2:], self.pads, self.dilation, self.stride)]
        return shape_in(self.out, [n, w[0]] + spatial)

    def with_batch(self, shape, order, n_axis_value):
        shape = list(shape)
        shape[order[0]] = n_axis_value
        return tuple(shape)


def _name(spec, direction, x_shape, y_shape, dtype):
    return core.conv_descriptor_name(
        layout(x_shape, spec.lhs, dtype, "x"), layout(spec.w_shape, spec.rhs, dtype, "w"),
        layout(y_shape, spec.out, dtype, "y"), direction=direction, stride=spec.stride,
        padding=spec.pads, dilation=spec.dilation, groups=spec.groups,
        activation=spec.activation if direction == "fwd" else None,
        bias=True if spec.bias and direction == "fwd" else None,
        residual=True if spec.residual and direction == "fwd" else None)


@functools.lru_cache(maxsize=None)
def _forward(spec):
    """(x, w[, bias][, residual]) -> (y,)"""
    roles = ["x", "w"] + (["bias"] if spec.bias else []) + (["residual"] if spec.residual else [])

    def op(*arrays):
        x = arrays[0]
        y_shape = spec.y_shape(x.shape[spec.lhs[0]])
        name = _name(spec, "fwd", x.shape, y_shape, x.dtype)
        return tuple(_ffi.call(name, arrays, roles, [jax.ShapeDtypeStruct(y_shape, x.dtype)],
                               ["out"]))

    n_axes = [spec.lhs[0], None] + ([None] if spec.bias else []) + \
        ([spec.out[0]] if spec.residual else [])
    return batched_over_n(op, n_axes, [spec.out[0]])


@functools.lru_cache(maxsize=None)
def _backward_data(spec):
    """(w, dy) -> (dx,)"""
    def op(w, dy):
        dx_shape = spec.with_batch(spec.x_shape, spec.lhs, dy.shape[spec.out[0]])
        name = _name(spec, "bwddata", dx_shape, dy.shape, dy.dtype)
        return tuple(_ffi.call(name, [w, dy], ["w", "dy"],
                               [jax.ShapeDtypeStruct(dx_shape, dy.dtype)], ["out"]))

    return batched_over_n(op, [None, spec.out[0]], [spec.lhs[0]])


@functools.lru_cache(maxsize=None)
def _backward_filter(spec):
    """(x, dy) -> (dw,)"""
    def op(x, dy):
        name = _name(spec, "bwdfilt", x.shape, dy.shape, x.dtype)
        return tuple(_ffi.call(name, [x, dy], ["x", "dy"],
                               [jax.ShapeDtypeStruct(spec.w_shape, x.dtype)], ["out"]))

    return batched_over_n(op, [spec.lhs[0], spec.out[0]], [None])


@functools.lru_cache(maxsize=None)
def _bias_gradient(spec):
    """(dy,) -> (db,): dy summed over all but its channel axis."""
    def op(dy):
        name = core.bias_grad_descriptor_name(layout(dy.shape, spec.out, dy.dtype, "dy"))
        channels = dy.shape[spec.out[1]]
        return tuple(_ffi.call(name, [dy], ["dy"], [jax.ShapeDtypeStruct((channels,), dy.dtype)],
                               ["out"]))

    return batched_over_n(op, [spec.out[0]], [None])


def _activation_slope(activation, z):
    if activation == "relu":
        return (z > 0).astype(z.dtype)
    s = jax.nn.sigmoid(z)
    if activation == "silu":
        return s * (1 + z * (1 - s))
    return s * (1 - s)  # sigmoid


@functools.lru_cache(maxsize=None)
def _convolution(spec):
    """The differentiable op: (x, w[, bias][, residual]) -> y."""
    plain = dataclasses.replace(spec, activation=None, bias=False, residual=False)

    @jax.custom_vjp
    def convolution(*arrays):
        return _forward(spec)(*arrays)[0]

    def forward(*arrays):
        return convolution(*arrays), arrays

    def backward(arrays, g):
        x, w = arrays[0], arrays[1]
        if spec.activation is not None:  # through the activation, at its recomputed input
            z = _forward(plain)(x, w)[0]
            if spec.bias:
                z = z + jnp.reshape(arrays[2], [-1 if a == spec.out[1] else 1
                                                for a in range(z.ndim)])
            if spec.residual:
                z = z + arrays[-1]
            g = g * _activation_slope(spec.activation, z)
        grads = [_backward_data(plain)(w, g)[0], _backward_filter(plain)(x, g)[0]]
        if spec.bias:
            grads.append(_bias_gradient(plain)(g)[0])
        if spec.residual:
            grads.append(g)
        return tuple(grads)

    convolution.defvjp(forward, backward)
    return convolution


def _pads(padding, in_spatial, window, stride, dilation):
    if isinstance(padding, str):
        effective = [(k - 1) * d + 1 for k, d in zip(window, dilation)]
        return tuple(tuple(p) for p in jax.lax.padtype_to_pads(in_spatial, effective, stride,
                                                               padding))
    pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    if len(pads) != len(in_spatial):
        raise InvalidArgumentError(f"padding = {padding!r}: give 'SAME', 'VALID' or "
                                   f"{len(in_spatial)} (low, high) pairs")
    return pads


def _tuple(value, count, name):
    if value is None:
        return (1,) * count
    if isinstance(value, int):
        return (value,) * count
    value = tuple(int(v) for v in value)
    if len(value) != count:
        raise InvalidArgumentError(f"{name} = {value!r}: give {count} values, one per spatial dim")
    return value


def _spec(lhs, rhs, window_strides, padding, rhs_dilation, dimension_numbers, groups, **epilogue):
    if lhs.ndim != rhs.ndim or not 3 <= lhs.ndim <= 5:
        raise InvalidArgumentError(
            f"lhs has {lhs.ndim} dimensions and rhs {rhs.ndim}: convjit takes 1 to 3 spatial "
            "dims, the same in both")
    dn = jax.lax.conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    count = lhs.ndim - 2
    stride = _tuple(window_strides, count, "window_strides")
    dilation = _tuple(rhs_dilation, count, "rhs_dilation")
    in_spatial = [lhs.shape[a] for a in dn.lhs_spec[2:]]
    window = [rhs.shape[a] for a in dn.rhs_spec[2:]]
    return ConvSpec(tuple(dn.lhs_spec), tuple(dn.rhs_spec), tuple(dn.out_spec),
                    tuple(lhs.shape), tuple(rhs.shape), stride,
                    _pads(padding, in_spatial, window, stride, dilation), dilation, int(groups),
                    **epilogue)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision=None, preferred_element_type=None):
    """jax.lax.conv_general_dilated on convjit: 1 to 3 spatial dims, any dimension_numbers
    (strides, no transposes), SAME/VALID or explicit padding, rhs_dilation, feature groups.
    Differentiable (convjit's bwddata and bwdfilt) and vmappable.  lhs_dilation (a transposed
    convolution) and batch_group_count are not convjit ops and raise; precision is convjit's
    (f32 accumulation)."""
    if lhs_dilation is not None and any(d != 1 for d in lhs_dilation):
        raise NotImplementedError(
            f"lhs_dilation = {tuple(lhs_dilation)} (a transposed convolution) is not a convjit op; "
            "its gradient is: use jax.vjp of convjit.jax.conv_general_dilated")
    if batch_group_count != 1:
        raise NotImplementedError("batch_group_count != 1 is not a convjit op")
    if preferred_element_type is not None and jnp.dtype(preferred_element_type) != lhs.dtype:
        raise NotImplementedError(
            f"preferred_element_type = {jnp.dtype(preferred_element_type)}: convjit writes the "
            "inputs' dtype")
    del precision  # convjit accumulates in f32 (f64 for f64)
    spec = _spec(lhs, rhs, window_strides, padding, rhs_dilation, dimension_numbers,
                 feature_group_count)
    return _convolution(spec)(lhs, rhs)


_ACTIVATIONS = (None, "relu", "silu", "sigmoid")


def conv(x, w, *, stride=1, padding="VALID", dilation=1, groups=1, bias=None, residual=None,
         activation=None, dimension_numbers=("NCHW", "OIHW", "NCHW")):
    """act(conv(x, w) + bias + residual) in one call (convjit's fused epilogue), differentiable:
    the backward recomputes the activation's input.  bias: the output channels' (K,);
    residual: y's shape; activation: None, "relu", "silu" or "sigmoid"."""
    if activation not in _ACTIVATIONS:
        raise InvalidArgumentError(f"activation = {activation!r}: give one of {_ACTIVATIONS}")
    count = x.ndim - 2
    if dimension_numbers == ("NCHW", "OIHW", "NCHW") and count != 2:
        dimension_numbers = None  # lax's default order for any rank
    spec = _spec(x, w, _tuple(stride, count, "stride"), padding, _tuple(dilation, count,
                                                                        "dilation"),
                 dimension_numbers, groups, activation=activation, bias=bias is not None,
                 residual=residual is not None)
    arrays = [x, w] + ([bias] if bias is not None else []) + \
        ([residual] if residual is not None else [])
    return _convolution(spec)(*arrays)
