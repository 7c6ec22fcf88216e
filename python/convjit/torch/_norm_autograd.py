"""batchnorm and resize as torch.autograd.Functions in torch.func's form
(forward without ctx, setup_context), over the ops of one namespace: the
torch.library custom ops on torch 2.4 or newer, else the plain kernels.
The gradient formulas are convjit's backward ops; a resize's backward is
linear, so its own gradient is the forward again."""

from types import SimpleNamespace

import torch

from ..errors import UnsupportedError


def make_norm_functions(ops):
    """BatchNorm, Resize and ResizeBackward over `ops` (batch_norm,
    batch_norm_backward, resize, resize_backward, with the custom ops'
    signatures)."""
    op_batch_norm, op_batch_norm_backward = ops.batch_norm, ops.batch_norm_backward
    op_resize, op_resize_backward = ops.resize, ops.resize_backward

    class BatchNorm(torch.autograd.Function):
        """(y, mean, invstd, new running mean, new running var); only y is differentiable."""

        @staticmethod
        def forward(x, weight, bias, running_mean, running_var, training, momentum, eps,
                    activation):
            return op_batch_norm(x, weight, bias, running_mean, running_var, training, momentum,
                                 eps, activation)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, weight, bias, running_mean, running_var, training, _, eps, activation = inputs
            _, mean, invstd, _, _ = output
            stats = (mean, invstd) if training else (running_mean, running_var)
            ctx.save_for_backward(x, weight, bias, *stats)
            ctx.training, ctx.eps, ctx.activation = training, eps, activation
            ctx.mark_non_differentiable(*output[1:])

        @staticmethod
        def backward(ctx, dy, *unused):
            x, weight, bias, a, b = ctx.saved_tensors
            mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1] and weight is not None,
                    ctx.needs_input_grad[2] and bias is not None]
            if not any(mask):
                return (None,) * 9
            if torch.is_grad_enabled() and dy.requires_grad:
                raise UnsupportedError("convjit::batch_norm: double backward is not supported; "
                                       "use torch.nn.functional.batch_norm there")
            dx, dw, db = op_batch_norm_backward(x, dy, weight, bias, a, b, ctx.training, ctx.eps,
                                                ctx.activation, mask)
            return (dx if mask[0] else None, dw if mask[1] else None, db if mask[2] else None) \
                + (None,) * 6

    class Resize(torch.autograd.Function):
        @staticmethod
        def forward(x, out_size, mode, coordinates, scales):
            return op_resize(x, out_size, mode, coordinates, scales)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, _, *params = inputs
            ctx.x_shape, ctx.params = list(x.shape), params

        @staticmethod
        def backward(ctx, dy):
            if not ctx.needs_input_grad[0]:
                return None, None, None, None, None
            return ResizeBackward.apply(dy, ctx.x_shape, *ctx.params), None, None, None, None

    class ResizeBackward(torch.autograd.Function):
        @staticmethod
        def forward(dy, x_shape, mode, coordinates, scales):
            return op_resize_backward(dy, x_shape, mode, coordinates, scales)

        @staticmethod
        def setup_context(ctx, inputs, output):
            dy, _, *params = inputs
            ctx.out_size, ctx.params = list(dy.shape[2:]), params

        @staticmethod
        def backward(ctx, g):
            if not ctx.needs_input_grad[0]:
                return None, None, None, None, None
            return Resize.apply(g, ctx.out_size, *ctx.params), None, None, None, None

    return SimpleNamespace(BatchNorm=BatchNorm, Resize=Resize, ResizeBackward=ResizeBackward)
