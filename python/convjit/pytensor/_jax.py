"""The JAX dispatch of convjit's PyTensor Ops (pytensor.link.jax.dispatch.jax_funcify): under
pytensor.function(..., mode="JAX") each lowers to convjit.jax, so the whole graph, gradients
included (PyTensor builds them from convjit's backward Ops), compiles into one jax.jit."""

import jax
from pytensor.link.jax.dispatch import jax_funcify

from ..jax import _norm, _resize
from ..jax import avg_pool, batch_norm, conv_general_dilated, max_pool
from . import _ops


def _conv(op):
    return lambda x, w: conv_general_dilated(
        x, w, op.stride, _ops.border_pads(op.pads, w.shape, op.dilation),
        rhs_dilation=op.dilation, feature_group_count=op.groups)


@jax_funcify.register(_ops.Conv)
def _(op, **kwargs):
    return _conv(op)


# The backward Ops: the vjp of convjit.jax's convolution, whose rule runs convjit's bwddata or
# bwdfilt (XLA drops the unused forward).
@jax_funcify.register(_ops.ConvGradInput)
def _(op, **kwargs):
    conv = _conv(op)
    return lambda x, w, dy: jax.vjp(lambda x: conv(x, w), x)[1](dy)[0]


@jax_funcify.register(_ops.ConvGradFilter)
def _(op, **kwargs):
    conv = _conv(op)
    return lambda x, w, dy: jax.vjp(lambda w: conv(x, w), w)[1](dy)[0]


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
    return lambda x, dy: jax.vjp(pool, x)[1](dy)[0]


def _norm_spec(op, x, training, running=True):
    order = (0, 1) + tuple(range(2, x.ndim))
    return _norm.NormSpec(order, training, True, True, running,
                          getattr(op, "momentum", 0.1), op.epsilon, op.activation)


@jax_funcify.register(_ops.BatchNormTrain)
def _(op, **kwargs):
    def train(x, scale, shift, running_mean, running_var):
        y, mean, invstd, new_mean, new_var = _norm._forward_op(_norm_spec(op, x, True))(
            x, scale, shift, running_mean, running_var)
        return y, mean, invstd, new_mean, new_var
    return train


@jax_funcify.register(_ops.BatchNormInference)
def _(op, **kwargs):
    return lambda x, scale, shift, mean, var: batch_norm(
        x, scale, shift, mean, var, training=False, epsilon=op.epsilon, channel_axis=1,
        activation=op.activation)[0]


@jax_funcify.register(_ops.BatchNormGrad)
def _(op, **kwargs):
    return lambda x, dy, scale, shift, mean, var_or_invstd: _norm._backward_op(
        _norm_spec(op, x, op.training))(x, dy, scale, shift, mean, var_or_invstd)


def _resize_spec(op, x):
    order = tuple(range(x.ndim))
    return _resize.ResizeSpec(order, op.output_spatial(x.shape), op.mode, op.coordinates)


@jax_funcify.register(_ops.Resize)
def _(op, **kwargs):
    return lambda x: _resize._resizing(_resize_spec(op, x), tuple(x.shape[1:]))(x)


@jax_funcify.register(_ops.ResizeGrad)
def _(op, **kwargs):
    def backward(x, dy):
        resize = _resize._resizing(_resize_spec(op, x), tuple(x.shape[1:]))
        return jax.vjp(resize, x)[1](dy)[0]
    return backward


