"""Batch normalisation over every axis but the channels', training (the batch's statistics,
PyTorch's running update) and inference (the running statistics), with an optional fused
ReLU or SiLU, differentiable in x, scale and shift through convjit's batchnorm backward.

A training call returns the running statistics updated; XLA hands convjit buffers holding the
old values (input_output_aliases), which it updates in place.  vmap folds an inference into
the batch; a training BatchNorm's statistics belong to each vmapped element, so it runs once
per element."""

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from .. import core
from ..errors import InvalidArgumentError
from . import _ffi
from ._batching import batched_over_n
from ._layout import layout


@dataclass(frozen=True)
class NormSpec:
    order: tuple  # convjit's (N, C, spatial...) axes of x
    training: bool
    scale: bool
    shift: bool
    running: bool  # a training call keeps running statistics
    momentum: float
    epsilon: float
    activation: str

    def name(self, direction, x_shape, dtype):
        x = layout(x_shape, self.order, dtype, "x")
        grads = ("dx",) + (("dscale",) if self.scale else ()) + (("dshift",) if self.shift else ())
        return core.batch_norm_descriptor_name(
            x, x, direction=direction, training=self.training, scale=self.scale,
            shift=self.shift, grads=grads if direction == "bwd" else (), epsilon=self.epsilon,
            activation=self.activation)


def _channels(c, dtype):
    return jax.ShapeDtypeStruct((c,), jnp.float64 if dtype == jnp.float64 else jnp.float32)


def _forward_op(spec):
    """(x[, scale][, shift][, running_mean, running_var]) -> (y, saved_mean, saved_invstd
    [, running_mean, running_var]) in training; -> (y,) in inference."""
    roles = ["x"] + (["scale"] if spec.scale else []) + (["shift"] if spec.shift else [])
    keeps = not spec.training or spec.running
    roles += ["running_mean", "running_var"] if keeps else []

    def op(*arrays):
        x = arrays[0]
        c = x.shape[spec.order[1]]
        results = [jax.ShapeDtypeStruct(x.shape, x.dtype)]
        ret_roles = ["out"]
        aliases = None
        if spec.training:
            results += [_channels(c, x.dtype)] * 2
            ret_roles += ["saved_mean", "saved_invstd"]
            if spec.running:  # updated in place: the last two arguments
                results += [_channels(c, x.dtype)] * 2
                ret_roles += ["running_mean", "running_var"]
                aliases = {len(arrays) - 2: 3, len(arrays) - 1: 4}
        return tuple(_ffi.call(spec.name("fwd", x.shape, x.dtype), arrays, roles, results,
                               ret_roles, momentum=spec.momentum, aliases=aliases))

    n_out = [spec.order[0]] + ([None] * (4 if spec.running else 2) if spec.training else [])
    return batched_over_n(op, [spec.order[0]] + [None] * (len(roles) - 1), n_out)


def _backward_op(spec):
    """(x, dy[, scale][, shift], mean, var_or_invstd) -> (dx[, dscale][, dshift])"""
    roles = ["x", "dy"] + (["scale"] if spec.scale else []) + (["shift"] if spec.shift else [])
    roles += ["saved_mean", "saved_invstd"] if spec.training else ["running_mean", "running_var"]
    ret_roles = ["out"] + (["scale_grad"] if spec.scale else []) + \
        (["shift_grad"] if spec.shift else [])

    def op(*arrays):
        x = arrays[0]
        c = x.shape[spec.order[1]]
        results = [jax.ShapeDtypeStruct(x.shape, x.dtype)] + \
            [_channels(c, x.dtype)] * (len(ret_roles) - 1)
        return tuple(_ffi.call(spec.name("bwd", x.shape, x.dtype), arrays, roles, results,
                               ret_roles))

    n_out = [spec.order[0]] + [None] * (len(ret_roles) - 1)
    return batched_over_n(op, [spec.order[0]] * 2 + [None] * (len(roles) - 2), n_out)


@functools.lru_cache(maxsize=None)
def _normalization(spec):
    forward, backward = _forward_op(spec), _backward_op(spec)
    params = int(spec.scale) + int(spec.shift)

    @jax.custom_vjp
    def norm(x, *rest):
        return forward(x, *rest)

    def norm_forward(x, *rest):
        outs = norm(x, *rest)
        stats = outs[1:3] if spec.training else rest[params:params + 2]
        return outs, (x, rest[:params], stats, rest[params:])

    def norm_backward(saved, cotangents):
        x, parameters, stats, running = saved
        grads = backward(x, cotangents[0].astype(x.dtype), *parameters, *stats)
        return (grads[0],) + tuple(g.astype(p.dtype) for g, p in zip(grads[1:], parameters)) + \
            tuple(jnp.zeros_like(r) for r in running)

    norm.defvjp(norm_forward, norm_backward)
    return norm


def batch_norm(x, scale=None, shift=None, running_mean=None, running_var=None, *, training=True,
               momentum=0.1, epsilon=1e-5, channel_axis=-1, activation=None):
    """act(scale (x - mean) / sqrt(var + epsilon) + shift) over all axes but channel_axis (N at
    0).  Training: the batch's mean and biased variance, and (given running_mean and
    running_var) PyTorch's update, running = (1 - momentum) running + momentum batch with the
    unbiased variance.  Inference: the running statistics.  Returns (y, running_mean,
    running_var): updated in training, as given in inference.  scale and shift: None is 1 and
    0; statistics and parameters are f32 (f64 for f64 x).  activation: None, "relu", "silu"."""
    if activation not in (None, "relu", "silu"):
        raise InvalidArgumentError(f"activation = {activation!r}: give None, relu or silu")
    if (running_mean is None) != (running_var is None) or (not training and running_mean is None):
        raise InvalidArgumentError(
            "running_mean and running_var: give both (inference reads them, training updates "
            "them) or, in training, neither")
    channel = channel_axis % x.ndim
    if channel == 0 or not 3 <= x.ndim <= 5:
        raise InvalidArgumentError(
            f"x {x.shape} with channel_axis {channel_axis}: give (batch, ..., channels) with 1 "
            "to 3 spatial dims, the channels at channel_axis (not 0)")
    order = (0, channel) + tuple(a for a in range(1, x.ndim) if a != channel)
    spec = NormSpec(order, bool(training), scale is not None, shift is not None,
                    running_mean is not None, float(momentum), float(epsilon), activation)
    param = jnp.float64 if x.dtype == jnp.float64 else jnp.float32
    rest = [jnp.asarray(a, param) for a in (scale, shift, running_mean, running_var)
            if a is not None]
    outs = _normalization(spec)(x, *rest)
    if not training:
        return outs[0], running_mean, running_var
    return (outs[0],) + (tuple(outs[3:5]) if spec.running else (None, None))
