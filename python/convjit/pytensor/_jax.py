"""The JAX dispatch of convjit's PyTensor Ops (pytensor.link.jax.dispatch.jax_funcify): under
pytensor.function(..., mode="JAX") each lowers to convjit.jax, so the whole graph, gradients
included (PyTensor builds them from convjit's backward Ops), compiles into one jax.jit."""

import jax
from pytensor.link.jax.dispatch import jax_funcify

from ..jax import _norm, _resize
from ..jax import avg_pool, batch_norm, conv_general_dilated, max_pool
from . import _ops


def _vjp(f, primal, cotangent):
    """The cotangent through f at primal: convjit.jax's vjp rule runs convjit's backward op, and
    XLA drops the forward it does not use."""
    return jax.vjp(f, primal)[1](cotangent)[0]


def _conv(op):
    return lambda x, w: conv_general_dilated(
        x, w, op.stride, _ops.border_pads(op.pads, w.shape, op.dilation),
        rhs_dilation=op.dilation, feature_group_count=op.groups)


@jax_funcify.register(_ops.Conv)
def _(op, **kwargs):
    return _conv(op)


@jax_funcify.register(_ops.ConvGradInput)
def _(op, **kwargs):
    conv = _conv(op)
    return lambda x, w, dy: _vjp(lambda x: conv(x, w), x, dy)


@jax_funcify.register(_ops.ConvGradFilter)
def _(op, **kwargs):
    conv = _conv(op)
    return lambda x, w, dy: _vjp(lambda w: conv(x, w), w, dy)


def _pool(op):
    if op.mode == "max":
        return lambda x: max_pool(x, op.window, op.stride, op.pads, channel_axis=1)
    include = op.mode == "avg_include_pad"
    return lambda x: avg_pool(x, op.window, op.stride, op.pads, count_include_pad=include,
                              channel_axis=1)


@jax_funcify.register(_ops.Pool)
def _(op, **kwargs):
    return _pool(op)


@jax_funcify.register(_ops.PoolGrad)
def _(op, **kwargs):
    pool = _pool(op)
    return lambda x, dy: _vjp(pool, x, dy)


def _norm_spec(op, x, training, running=True):
    order = (0, 1) + tuple(range(2, x.ndim))
    return _norm.NormSpec(order, training, True, True, running,
                          getattr(op, "momentum", 0.1), op.epsilon, op.activation)


@jax_funcify.register(_ops.BatchNormTrain)
def _(op, **kwargs):
    # (y, mean, invstd, new running mean, new running var), as the Op's outputs
    return lambda x, *rest: _norm._forward_op(_norm_spec(op, x, True))(x, *rest)


@jax_funcify.register(_ops.BatchNormInference)
def _(op, **kwargs):
    return lambda x, scale, shift, mean, var: batch_norm(
        x, scale, shift, mean, var, training=False, epsilon=op.epsilon, channel_axis=1,
        activation=op.activation)[0]


@jax_funcify.register(_ops.BatchNormGrad)
def _(op, **kwargs):
    return lambda x, dy, scale, shift, mean, var_or_invstd: _norm._backward_op(
        _norm_spec(op, x, op.training))(x, dy, scale, shift, mean, var_or_invstd)


def _resize_of(op, x):
    """convjit.jax's differentiable resize for the Op, on arrays shaped as x."""
    spec = _resize.ResizeSpec(tuple(range(x.ndim)), op.output_spatial(x.shape), op.mode,
                              op.coordinates)
    return _resize._resizing(spec, tuple(x.shape[1:]))


@jax_funcify.register(_ops.Resize)
def _(op, **kwargs):
    return lambda x: _resize_of(op, x)(x)


@jax_funcify.register(_ops.ResizeGrad)
def _(op, **kwargs):
    return lambda x, dy: _vjp(_resize_of(op, x), x, dy)


