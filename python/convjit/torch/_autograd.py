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
_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)


def plain_eager(*tensors):
    """Whether a call is plain eager torch on real tensors, which the plain
    kernels serve directly.  Anything that must see the op itself (the
    compiler, a tracer, a functorch transform, a dispatch mode such as fake
    tensors or export's, a tensor subclass) takes the custom op, at the
    cost of torch's dispatch to a Python op (tens of microseconds)."""
    return not (_compiling() or torch._C._are_functorch_transforms_active() or
                torch._C._len_torch_dispatch_stack() or torch._C._get_tracing_state()) and \
        all(t is None or type(t) in _PLAIN_TYPES for t in tensors)


def _save_operands_and_params(ctx, inputs, output):
    """A backward op's setup: its two tensors, and the geometry after the shape."""
    ctx.save_for_backward(*inputs[:2])
    ctx.params = inputs[3:]


def _eager_or(op, plain, tensors):
    """op, which plain eager calls skip for plain (the same kernel without
    torch's dispatch); the op's first `tensors` arguments are its tensors."""
    if op is plain:
        return op

    def call(*args):
        return plain(*args) if plain_eager(*args[:tensors]) else op(*args)
    return call


def _eager_function(function, plain):
    """function in the old style (forward takes ctx) over plain, for plain
    eager calls: torch applies a Function with setup_context only after
    binding its forward's signature (inspect, tens of microseconds a call);
    this form skips that.  The formulas are function's own."""
    def forward(ctx, *args):
        output = plain(*args)
        function.setup_context(ctx, args, output)
        return output
    return type(f"Eager{function.__name__}", (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": function.backward})


def _entry(function, plain, tensors):
    """function.apply; a plain eager call runs plain directly where it needs
    no gradient, else through function's eager form.  function's first
    `tensors` arguments are its tensors."""
    eager = _eager_function(function, plain)

    def call(*args):
        operands = args[:tensors]
        if not plain_eager(*operands):
            return function.apply(*args)
        if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in operands):
            return eager.apply(*args)
        return plain(*args)
    return call


def make_functions(ops, plain_ops):
    """The Functions over `ops` (conv, conv_backward_data,
    conv_backward_filter, bias_grad, conv_transpose, pool, pool_backward,
    with the custom ops' signatures), and the entry points conv,
    conv_transpose and pool; plain eager calls run `plain_ops`, the same
    kernels undispatched."""
    # Locals, not attributes of `ops`: torch.compile traces the Functions
    # and wraps each op it meets, which it cannot do for a namespace.
    op_conv = _eager_or(ops.conv, plain_ops.conv, 3)
    op_conv_backward_data = _eager_or(ops.conv_backward_data, plain_ops.conv_backward_data, 2)
    op_conv_backward_filter = _eager_or(ops.conv_backward_filter,
                                        plain_ops.conv_backward_filter, 2)
    op_bias_grad = _eager_or(ops.bias_grad, plain_ops.bias_grad, 1)
    op_conv_transpose = _eager_or(ops.conv_transpose, plain_ops.conv_transpose, 2)
    op_pool = _eager_or(ops.pool, plain_ops.pool, 1)
    op_pool_backward = _eager_or(ops.pool_backward, plain_ops.pool_backward, 2)

    def run(function, op, *args):
        """function's op, differentiable.  torch.compile traces a backward
        but no Function applied inside it: there the op itself runs, whose
        own autograd (the custom op's: these formulas) serves a gradient of
        the gradient."""
        return op(*args) if _compiling() or not torch.is_grad_enabled() else \
            function.apply(*args)

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
                           ConvTranspose=ConvTranspose, Pool=Pool, PoolBackward=PoolBackward,
                           conv=_entry(Conv, plain_ops.conv, 3),
                           conv_transpose=_entry(ConvTranspose, plain_ops.conv_transpose, 2),
                           pool=_entry(Pool, plain_ops.pool, 1))
