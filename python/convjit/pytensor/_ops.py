"""convjit's ops as PyTensor Ops on the host: each Op's perform runs convjit's C API on numpy
arrays (convjit.core), its grad builds convjit's backward Ops, and _jax.py lowers every one of
them to convjit.jax for mode="JAX".  Activations are channels-first (N, C, spatial...), as in
PyTensor's (former) conv2d; filters (K, C/groups, spatial...), already flipped where the caller
wanted a true convolution (conv2d's filter_flip)."""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.gradient import DisconnectedType, disconnected_type

from .. import core


def _array(a):
    """a as convjit takes it: a view with a negative stride (a flipped filter) copied."""
    return np.ascontiguousarray(a) if any(s < 0 for s in a.strides) else a


def border_pads(border, w_shape, dilation):
    """(begin, end) per spatial dim: `border` as given, or PyTensor's 'full' ((k - 1) d each
    side) or 'half' (((k - 1) d + 1) // 2) for filters of w_shape."""
    if not isinstance(border, str):
        return border
    dilated = [(k - 1) * d + 1 for k, d in zip(w_shape[2:], dilation)]
    return tuple((k - 1, k - 1) if border == "full" else (k // 2, k // 2) for k in dilated)


def _static(*variables):
    """The variables' static shapes, or None where one is not fully known."""
    shapes = [v.type.shape for v in variables]
    return None if any(d is None for shape in shapes for d in shape) else shapes


def _output(like, shape=None):
    """An output of like's dtype; `shape` its static shape where it is known (PyTensor's JAX
    backend needs static sizes, for instance to split a concatenation's gradient)."""
    return pt.tensor(dtype=like.dtype, shape=tuple(shape) if shape else (None,) * like.ndim)


def _shaped_as(like):
    """An output of like's dtype and static shape."""
    return _output(like, _static(like) and like.type.shape)


def _gradient_node(op, x, dy):
    """(x, dy) -> dx, dx shaped as x."""
    x, dy = pt.as_tensor_variable(x), pt.as_tensor_variable(dy)
    return Apply(op, [x, dy], [_shaped_as(x)])


def _channels(like):
    channels = like.type.shape[1]
    return pt.tensor(dtype="float64" if like.dtype == "float64" else "float32",
                     shape=(channels,))


class _ConvOp(Op):
    """Shared by the three directions: stride, padding, dilation and groups per spatial dim,
    as convjit.core takes them.  pads: (begin, end) pairs, or "full" or "half", resolved for
    the filters' size when the Op runs."""
    __props__ = ("stride", "pads", "dilation", "groups")

    def __init__(self, stride, pads, dilation, groups):
        self.stride = tuple(stride)
        self.pads = pads if isinstance(pads, str) else tuple(tuple(p) for p in pads)
        self.dilation, self.groups = tuple(dilation), int(groups)

    def kwargs(self, w_shape):
        return dict(stride=self.stride, padding=border_pads(self.pads, w_shape, self.dilation),
                    dilation=self.dilation, groups=self.groups)


class Conv(_ConvOp):
    """(x, w) -> y"""

    def make_node(self, x, w):
        x, w = pt.as_tensor_variable(x), pt.as_tensor_variable(w)
        static = _static(x, w)
        shape = static and core.conv_output_shape(*static, **self.kwargs(static[1]))
        return Apply(self, [x, w], [_output(x, shape)])

    def perform(self, node, inputs, outputs):
        x, w = map(_array, inputs)
        kwargs = self.kwargs(w.shape)
        y = np.empty(core.conv_output_shape(x.shape, w.shape, **kwargs), x.dtype)
        core.conv_forward(x, w, y, **kwargs)
        outputs[0][0] = y

    def pullback(self, inputs, outputs, cotangents):
        x, w = inputs
        (g,) = cotangents
        props = (self.stride, self.pads, self.dilation, self.groups)
        return [ConvGradInput(*props)(x, w, g), ConvGradFilter(*props)(x, w, g)]


class _ConvGrad(_ConvOp):
    """(x, w, dy) -> dx or dw; the other operand gives the output's shape only."""
    wrt = None  # 0: dx, 1: dw

    def make_node(self, x, w, dy):
        x, w, dy = map(pt.as_tensor_variable, (x, w, dy))
        like = (x, w)[self.wrt]
        return Apply(self, [x, w, dy], [_shaped_as(like)])

    def perform(self, node, inputs, outputs):
        x, w, dy = map(_array, inputs)
        out = np.empty((x, w)[self.wrt].shape, x.dtype)
        if self.wrt == 0:
            core.conv_backward_data(dy, w, out, **self.kwargs(w.shape))
        else:
            core.conv_backward_filter(x, dy, out, **self.kwargs(w.shape))
        outputs[0][0] = out

    def connection_pattern(self, node):
        return [[self.wrt == 0], [self.wrt == 1], [True]]


class ConvGradInput(_ConvGrad):
    """(x, w, dy) -> dx"""
    wrt = 0


class ConvGradFilter(_ConvGrad):
    """(x, w, dy) -> dw"""
    wrt = 1


class _PoolOp(Op):
    __props__ = ("mode", "window", "stride", "pads")

    def __init__(self, mode, window, stride, pads):
        self.mode, self.window, self.stride = mode, tuple(window), tuple(stride)
        self.pads = tuple(tuple(p) for p in pads)

    def kwargs(self):
        return dict(window=self.window, mode=self.mode, stride=self.stride, padding=self.pads)


class Pool(_PoolOp):
    """x -> y; mode: max, avg (padding not counted) or avg_include_pad."""

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        shape = _static(x) and core.pool_output_shape(x.type.shape, self.window, self.stride,
                                                      self.pads)
        return Apply(self, [x], [_output(x, shape)])

    def perform(self, node, inputs, outputs):
        x = _array(inputs[0])
        y = np.empty(core.pool_output_shape(x.shape, self.window, self.stride, self.pads),
                     x.dtype)
        core.pool_forward(x, y, **self.kwargs())
        outputs[0][0] = y

    def pullback(self, inputs, outputs, cotangents):
        return [PoolGrad(self.mode, self.window, self.stride, self.pads)(inputs[0],
                                                                         cotangents[0])]


class PoolGrad(_PoolOp):
    """(x, dy) -> dx"""

    def make_node(self, x, dy):
        return _gradient_node(self, x, dy)

    def perform(self, node, inputs, outputs):
        x, dy = map(_array, inputs)
        dx = np.empty(x.shape, x.dtype)
        core.pool_backward(x, dy, dx, **self.kwargs())
        outputs[0][0] = dx


class BatchNormTrain(Op):
    """(x, scale, shift, running_mean, running_var) -> (y, mean, invstd, new running_mean,
    new running_var): the batch's statistics over every axis but 1, PyTorch's running update
    (with the unbiased variance)."""
    __props__ = ("epsilon", "momentum", "activation")

    def __init__(self, epsilon, momentum, activation=None):
        self.epsilon, self.momentum, self.activation = float(epsilon), float(momentum), activation

    def make_node(self, x, scale, shift, running_mean, running_var):
        x = pt.as_tensor_variable(x)
        rest = [pt.as_tensor_variable(v) for v in (scale, shift, running_mean, running_var)]
        return Apply(self, [x] + rest, [_shaped_as(x)] +
                     [_channels(x) for _ in range(4)])

    def perform(self, node, inputs, outputs):
        x, scale, shift, running_mean, running_var = map(_array, inputs)
        y = np.empty_like(x)
        mean, invstd = np.empty_like(running_mean), np.empty_like(running_mean)
        running_mean, running_var = running_mean.copy(), running_var.copy()  # PyTensor is functional
        core.batch_norm_forward_training(
            x, y, scale=scale, shift=shift, running_mean=running_mean, running_var=running_var,
            saved_mean=mean, saved_invstd=invstd, epsilon=self.epsilon, momentum=self.momentum,
            activation=self.activation)
        for storage, value in zip(outputs, (y, mean, invstd, running_mean, running_var)):
            storage[0] = value

    def pullback(self, inputs, outputs, cotangents):
        if not all(isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            raise NotImplementedError(
                "convjit's BatchNorm differentiates y only, not the batch statistics it returns")
        x, scale, shift = inputs[:3]
        dx, dscale, dshift = BatchNormGrad(True, self.epsilon, self.activation)(
            x, cotangents[0], scale, shift, outputs[1], outputs[2])
        return [dx, dscale, dshift, disconnected_type(), disconnected_type()]

    def connection_pattern(self, node):
        # x: y and the statistics; scale and shift: y; the running statistics: nothing
        # differentiable (their update is bookkeeping).
        return [[True, True, True, False, False], [True, False, False, False, False],
                [True, False, False, False, False]] + [[False] * 5] * 2


class BatchNormInference(Op):
    """(x, scale, shift, running_mean, running_var) -> y"""
    __props__ = ("epsilon", "activation")

    def __init__(self, epsilon, activation=None):
        self.epsilon, self.activation = float(epsilon), activation

    def make_node(self, x, scale, shift, running_mean, running_var):
        x = pt.as_tensor_variable(x)
        rest = [pt.as_tensor_variable(v) for v in (scale, shift, running_mean, running_var)]
        return Apply(self, [x] + rest, [_shaped_as(x)])

    def perform(self, node, inputs, outputs):
        x, scale, shift, running_mean, running_var = map(_array, inputs)
        y = np.empty_like(x)
        core.batch_norm_forward_inference(x, y, running_mean=running_mean,
                                          running_var=running_var, scale=scale, shift=shift,
                                          epsilon=self.epsilon, activation=self.activation)
        outputs[0][0] = y

    def pullback(self, inputs, outputs, cotangents):
        x, scale, shift, running_mean, running_var = inputs
        dx, dscale, dshift = BatchNormGrad(False, self.epsilon, self.activation)(
            x, cotangents[0], scale, shift, running_mean, running_var)
        return [dx, dscale, dshift, disconnected_type(), disconnected_type()]

    def connection_pattern(self, node):
        return [[True]] * 3 + [[False]] * 2


class BatchNormGrad(Op):
    """(x, dy, scale, shift, mean, var_or_invstd) -> (dx, dscale, dshift), as PyTorch's
    native_batch_norm_backward: the saved mean and invstd in training, the running statistics
    in inference."""
    __props__ = ("training", "epsilon", "activation")

    def __init__(self, training, epsilon, activation=None):
        self.training, self.epsilon, self.activation = bool(training), float(epsilon), activation

    def make_node(self, x, dy, scale, shift, mean, var_or_invstd):
        x = pt.as_tensor_variable(x)
        rest = [pt.as_tensor_variable(v) for v in (dy, scale, shift, mean, var_or_invstd)]
        return Apply(self, [x] + rest, [_shaped_as(x), _channels(x),
                                        _channels(x)])

    def perform(self, node, inputs, outputs):
        x, dy, scale, shift, mean, var_or_invstd = map(_array, inputs)
        dx, dscale, dshift = np.empty_like(x), np.empty_like(scale), np.empty_like(scale)
        core.batch_norm_backward(x, dy, mean=mean,
                                 var_or_invstd=var_or_invstd, training=self.training,
                                 scale=scale, shift=shift, dx=dx, dscale=dscale, dshift=dshift,
                                 epsilon=self.epsilon, activation=self.activation)
        for storage, value in zip(outputs, (dx, dscale, dshift)):
            storage[0] = value


class _ResizeOp(Op):
    """mode and coordinates as convjit.core.resize_params takes them; the output's spatial
    sizes, or integer scale factors of the input's."""
    __props__ = ("mode", "coordinates", "sizes", "scales")

    def __init__(self, mode, coordinates, sizes=None, scales=None):
        self.mode, self.coordinates = mode, coordinates
        self.sizes = None if sizes is None else tuple(int(s) for s in sizes)
        self.scales = None if scales is None else tuple(int(s) for s in scales)

    def output_spatial(self, x_shape):
        if self.sizes is not None:
            return self.sizes
        return tuple(int(size) * s for size, s in zip(x_shape[2:], self.scales))

    def kwargs(self):
        return dict(mode=self.mode, coordinates=self.coordinates, scale=self.scales)


class Resize(_ResizeOp):
    """x -> y"""

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        shape = _static(x) and x.type.shape[:2] + self.output_spatial(x.type.shape)
        return Apply(self, [x], [_output(x, shape)])

    def perform(self, node, inputs, outputs):
        x = _array(inputs[0])
        y = np.empty(x.shape[:2] + self.output_spatial(x.shape), x.dtype)
        core.resize_forward(x, y, **self.kwargs())
        outputs[0][0] = y

    def pullback(self, inputs, outputs, cotangents):
        return [ResizeGrad(self.mode, self.coordinates, self.sizes, self.scales)(
            inputs[0], cotangents[0])]


class ResizeGrad(_ResizeOp):
    """(x, dy) -> dx; x gives dx's shape only."""

    def make_node(self, x, dy):
        return _gradient_node(self, x, dy)

    def perform(self, node, inputs, outputs):
        x, dy = map(_array, inputs)
        dx = np.empty(x.shape, x.dtype)
        core.resize_backward(dy, dx, **self.kwargs())
        outputs[0][0] = dx

    def connection_pattern(self, node):
        return [[False], [True]]
