"""The differentiable ops as torch.autograd.Functions in torch.func's form
(forward without ctx, setup_context, vmap), so that torch.func.grad, vjp,
jacrev and vmap work as well as plain autograd.  The Functions run the ops
of one namespace: the torch.library custom ops on torch 2.4 or newer (so
torch.compile and export record those opaque ops), else the plain
kernels.  The gradient formulas live here once: every backward is built
of the same Functions (so gradients of gradients work), and the custom
ops' own autograd registrations reuse them.  Each backward computes only
the gradients autograd asks for; grad_output may have any strides (zero
strides included, as y.sum().backward() makes)."""

from types import SimpleNamespace

import torch

from ..errors import UnsupportedError


# vmap: a vmapped dim of the activations is more batch, folded into N for
# one convjit call.  Weights, and ops that reduce over the batch (the
# filter and bias gradients), have no such fold: they raise.
def _folded(op, names, foldable, info, in_dims, args):
    """args with the vmapped tensors' dims merged into N (unbatched foldable
    tensors expanded to match)."""
    for name, dim in zip(names, in_dims):
        if dim is not None and name not in foldable:
            raise UnsupportedError(
                f"convjit::{op}: vmap over {name} is not supported (convjit folds a vmapped dim "
                f"of {' and '.join(foldable)} into the batch, nothing else); loop over it, or "
                "use torch.nn.functional there")
    out = list(args)
    for i, (name, dim) in enumerate(zip(names, in_dims)):
        if name in foldable:
            t = args[i].movedim(dim, 0) if dim is not None else \
                args[i].expand(info.batch_size, *args[i].shape)
            out[i] = t.reshape((-1,) + tuple(t.shape[2:]))
    return out


def vmap_rule(op, name, names, foldable, shape_arg=None):
    """A vmap rule (torch.func's signature) that folds into the batch."""
    def rule(info, in_dims, *args):
        args = _folded(name, names, foldable, info, in_dims, args)
        if shape_arg is not None:
            args[shape_arg] = [args[shape_arg][0] * info.batch_size] + list(args[shape_arg][1:])
        y = op(*args)
        return y.reshape((info.batch_size, -1) + tuple(y.shape[1:])), 0
    return staticmethod(rule)


def no_vmap_rule(name):
    def rule(info, in_dims, *args):
        raise UnsupportedError(f"convjit::{name}: vmap is not supported (it sums over the batch, "
                               "which a vmapped dim must not join); loop over the vmapped dim, "
                               "or use torch.nn.functional there")
    return staticmethod(rule)


_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or \
    torch._dynamo.is_compiling


def _save_operands_and_params(ctx, inputs, output):
    """A backward op's setup: its two tensors, and the geometry after the shape."""
    ctx.save_for_backward(*inputs[:2])
    ctx.params = inputs[3:]


def make_functions(ops):
    """The Functions over `ops` (conv, conv_backward_data,
    conv_backward_filter, bias_grad, conv_transpose, pool, pool_backward,
    with the custom ops' signatures)."""
    # Locals, not attributes of `ops`: torch.compile traces the Functions
    # and wraps each op it meets, which it cannot do for a namespace.
    op_conv, op_conv_backward_data, op_conv_backward_filter = (
        ops.conv, ops.conv_backward_data, ops.conv_backward_filter)
    op_bias_grad, op_conv_transpose, op_pool, op_pool_backward = (
        ops.bias_grad, ops.conv_transpose, ops.pool, ops.pool_backward)

    def run(function, op, *args):
        """function's op, differentiable.  torch.compile traces a backward
        but no Function applied inside it: there the op itself runs, whose
        own autograd (the custom op's: these formulas) serves a gradient of
        the gradient."""
        return op(*args) if _compiling() else function.apply(*args)

    class Conv(torch.autograd.Function):
        """y = conv(x, w) + bias."""
        vmap = vmap_rule(op_conv, "conv", ("x", "w", "bias"), ("x",))

        @staticmethod
        def forward(x, w, bias, stride, pad_begin, pad_end, dilation, groups):
            return op_conv(x, w, bias, stride, pad_begin, pad_end, dilation, groups)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, w, bias, *params = inputs
            ctx.save_for_backward(x, w)
            ctx.params, ctx.has_bias = params, bias is not None

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            wants_x, wants_w, wants_b = ctx.needs_input_grad[:3]
            dx = run(ConvBackwardData, op_conv_backward_data, dy, w, list(x.shape),
                     *ctx.params) if wants_x else None
            dw = run(ConvBackwardFilter, op_conv_backward_filter, x, dy, list(w.shape),
                     *ctx.params) if wants_w else None
            db = run(BiasGrad, op_bias_grad, dy) if wants_b and ctx.has_bias else None
            return dx, dw, db, None, None, None, None, None

    # The backward ops are linear in their tensors: their gradients are the
    # other convolutions of the same geometry.
    class ConvBackwardData(torch.autograd.Function):
        vmap = vmap_rule(op_conv_backward_data, "conv_backward_data", ("dy", "w"), ("dy",),
                         shape_arg=2)

        @staticmethod
        def forward(dy, w, x_shape, *params):
            return op_conv_backward_data(dy, w, list(x_shape), *params)

        setup_context = staticmethod(_save_operands_and_params)

        @staticmethod
        def backward(ctx, g):
            dy, w = ctx.saved_tensors
            wants_dy, wants_w = ctx.needs_input_grad[:2]
            ddy = run(Conv, op_conv, g, w, None, *ctx.params) if wants_dy else None
            dw = run(ConvBackwardFilter, op_conv_backward_filter, g, dy, list(w.shape),
                     *ctx.params) if wants_w else None
            return (ddy, dw) + (None,) * (2 + len(ctx.params) - 1)

    class ConvBackwardFilter(torch.autograd.Function):
        vmap = no_vmap_rule("conv_backward_filter")

        @staticmethod
        def forward(x, dy, w_shape, *params):
            return op_conv_backward_filter(x, dy, list(w_shape), *params)

        setup_context = staticmethod(_save_operands_and_params)

        @staticmethod
        def backward(ctx, g):
            x, dy = ctx.saved_tensors
            wants_x, wants_dy = ctx.needs_input_grad[:2]
            dx = run(ConvBackwardData, op_conv_backward_data, dy, g, list(x.shape),
                     *ctx.params) if wants_x else None
            ddy = run(Conv, op_conv, x, g, None, *ctx.params) if wants_dy else None
            return (dx, ddy) + (None,) * (2 + len(ctx.params) - 1)

    class BiasGrad(torch.autograd.Function):
        vmap = no_vmap_rule("bias_grad")

        @staticmethod
        def forward(dy):
            return op_bias_grad(dy)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.dy_shape = inputs[0].shape

        @staticmethod
        def backward(ctx, g):
            shape = ctx.dy_shape
            return g.reshape([1, -1] + [1] * (len(shape) - 2)).expand(shape)

    class ConvTranspose(torch.autograd.Function):
        """conv_transpose(x, w): the conv's backward data, with the output's
        shape given (output_padding picks among the shapes a stride allows).
        The bias is the caller's (functional.py adds it after cropping)."""
        vmap = vmap_rule(op_conv_transpose, "conv_transpose", ("x", "w"), ("x",), shape_arg=2)

        @staticmethod
        def forward(x, w, out_shape, stride, padding, dilation, groups):
            return op_conv_transpose(x, w, list(out_shape), stride, padding, dilation, groups)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, w, _, stride, padding, dilation, groups = inputs
            ctx.save_for_backward(x, w)
            ctx.params = (stride, padding, padding, dilation, groups)

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            wants_x, wants_w = ctx.needs_input_grad[:2]
            dx = run(Conv, op_conv, dy, w, None, *ctx.params) if wants_x else None
            dw = run(ConvBackwardFilter, op_conv_backward_filter, dy, x, list(w.shape),
                     *ctx.params) if wants_w else None
            return dx, dw, None, None, None, None, None

    class Pool(torch.autograd.Function):
        vmap = vmap_rule(op_pool, "pool", ("x",), ("x",))

        @staticmethod
        def forward(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode):
            return op_pool(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, *params = inputs
            ctx.save_for_backward(x)
            ctx.params = params[:-1]  # all but ceil_mode, which y's shape carries

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensors
            dx = run(PoolBackward, op_pool_backward, x, dy, *ctx.params) \
                if ctx.needs_input_grad[0] else None
            return dx, None, None, None, None, None, None, None

    # An average pool's backward is the adjoint of its forward, so its own
    # gradient is the forward again, and x's through it is zero.  A max
    # pool's backward routes dy to each window's winner: its gradient
    # gathers from the winners, which convjit has no op for.
    class PoolBackward(torch.autograd.Function):
        vmap = vmap_rule(op_pool_backward, "pool_backward", ("x", "dy"), ("x", "dy"))

        @staticmethod
        def forward(x, dy, mode, window, stride, pad_begin, pad_end, dilation):
            return op_pool_backward(x, dy, mode, window, stride, pad_begin, pad_end, dilation)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, dy, mode, *params = inputs
            ctx.x_shape, ctx.dy_shape, ctx.mode, ctx.params = x.shape, dy.shape, mode, params

        @staticmethod
        def backward(ctx, g):
            if ctx.mode == "max":
                raise UnsupportedError("convjit::pool_backward: double backward through a max "
                                       "pool is not supported (it gathers from each window's "
                                       "winner); use torch.nn.functional's max pool there")
            wants_x, wants_dy = ctx.needs_input_grad[:2]
            ddy = None
            if wants_dy:
                ddy = run(Pool, op_pool, g, ctx.mode, *ctx.params, False)
                if list(ddy.shape) != list(ctx.dy_shape):  # dy came from ceil mode
                    ddy = run(Pool, op_pool, g, ctx.mode, *ctx.params, True)
            dx = torch.zeros(ctx.x_shape, dtype=g.dtype, device=g.device) if wants_x else None
            return dx, ddy, None, None, None, None, None, None

    return SimpleNamespace(Conv=Conv, ConvBackwardData=ConvBackwardData,
                           ConvBackwardFilter=ConvBackwardFilter, BiasGrad=BiasGrad,
                           ConvTranspose=ConvTranspose, Pool=Pool, PoolBackward=PoolBackward)
