"""The ops as torch.library custom ops (torch 2.4 or newer), with fake
kernels (shapes only: convjit's own shape arithmetic, no data) and autograd
formulas built of the same custom ops, so that torch.compile and
torch.export see opaque ops with known outputs.  Older torch (Debian's
1.13) uses _autograd.py's Functions instead."""

from typing import List, Optional

import torch

from ..core import conv_params, pool_params
from . import _kernels as K

AVAILABLE = hasattr(torch, "library") and hasattr(torch.library, "custom_op")

if AVAILABLE:
    Tensor = torch.Tensor

    @torch.library.custom_op("convjit::conv", mutates_args=())
    def conv(x: Tensor, w: Tensor, bias: Optional[Tensor], stride: List[int],
             pad_begin: List[int], pad_end: List[int], dilation: List[int],
             groups: int) -> Tensor:
        return K.conv_forward(K.dense(x), w.contiguous(), bias, stride, pad_begin, pad_end,
                              dilation, groups)

    @conv.register_fake
    def _(x, w, bias, stride, pad_begin, pad_end, dilation, groups):
        params = conv_params(x.dim() - 2, stride, list(zip(pad_begin, pad_end)), dilation, groups)
        return K._empty(K.conv_output_shape(x, w, params), x)

    @torch.library.custom_op("convjit::conv_backward_data", mutates_args=())
    def conv_backward_data(dy: Tensor, w: Tensor, x_shape: List[int], stride: List[int],
                           pad_begin: List[int], pad_end: List[int], dilation: List[int],
                           groups: int) -> Tensor:
        return K.conv_backward_data(dy, w.contiguous(), x_shape, stride, pad_begin, pad_end,
                                    dilation, groups)

    @conv_backward_data.register_fake
    def _(dy, w, x_shape, stride, pad_begin, pad_end, dilation, groups):
        return K._empty(x_shape, dy)

    @torch.library.custom_op("convjit::conv_backward_filter", mutates_args=())
    def conv_backward_filter(x: Tensor, dy: Tensor, w_shape: List[int], stride: List[int],
                             pad_begin: List[int], pad_end: List[int], dilation: List[int],
                             groups: int) -> Tensor:
        return K.conv_backward_filter(x, dy, w_shape, stride, pad_begin, pad_end, dilation,
                                      groups)

    @conv_backward_filter.register_fake
    def _(x, dy, w_shape, stride, pad_begin, pad_end, dilation, groups):
        return x.new_empty(w_shape)

    @torch.library.custom_op("convjit::bias_grad", mutates_args=())
    def bias_grad(dy: Tensor) -> Tensor:
        return K.bias_grad(dy)

    @bias_grad.register_fake
    def _(dy):
        return dy.new_empty([dy.shape[1]])

    def _conv_setup(ctx, inputs, output):
        x, w, bias, *params = inputs
        ctx.save_for_backward(x, w)
        ctx.params, ctx.has_bias = params, bias is not None

    def _conv_backward(ctx, dy):
        x, w = ctx.saved_tensors
        wants_x, wants_w, wants_b = ctx.needs_input_grad[:3]
        dx = conv_backward_data(dy, w, list(x.shape), *ctx.params) if wants_x else None
        dw = conv_backward_filter(x, dy, list(w.shape), *ctx.params) if wants_w else None
        db = bias_grad(dy) if wants_b and ctx.has_bias else None
        return dx, dw, db, None, None, None, None, None

    conv.register_autograd(_conv_backward, setup_context=_conv_setup)

    @torch.library.custom_op("convjit::conv_transpose", mutates_args=())
    def conv_transpose_op(x: Tensor, w: Tensor, out_shape: List[int], stride: List[int],
                          padding: List[int], dilation: List[int], groups: int) -> Tensor:
        return K.conv_backward_data(K.dense(x), w.contiguous(), out_shape, stride, padding,
                                    padding, dilation, groups)

    @conv_transpose_op.register_fake
    def _(x, w, out_shape, stride, padding, dilation, groups):
        return K._empty(out_shape, x)

    def _conv_transpose_setup(ctx, inputs, output):
        x, w, _, stride, padding, dilation, groups = inputs
        ctx.save_for_backward(x, w)
        ctx.params = (stride, padding, padding, dilation, groups)

    def _conv_transpose_backward(ctx, dy):
        x, w = ctx.saved_tensors
        wants_x, wants_w = ctx.needs_input_grad[:2]
        dx = conv(dy, w, None, *ctx.params) if wants_x else None
        dw = conv_backward_filter(dy, x, list(w.shape), *ctx.params) if wants_w else None
        return dx, dw, None, None, None, None, None

    conv_transpose_op.register_autograd(_conv_transpose_backward,
                                        setup_context=_conv_transpose_setup)

    @torch.library.custom_op("convjit::pool", mutates_args=())
    def pool(x: Tensor, mode: str, window: List[int], stride: List[int], pad_begin: List[int],
             pad_end: List[int], dilation: List[int], ceil_mode: bool) -> Tensor:
        return K.pool_forward(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode)

    @pool.register_fake
    def _(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode):
        params = pool_params(x.dim() - 2, mode, window, stride, list(zip(pad_begin, pad_end)),
                             dilation)
        return K._empty(K.pool_output_shape(x, params, ceil_mode), x)

    @torch.library.custom_op("convjit::pool_backward", mutates_args=())
    def pool_backward(x: Tensor, dy: Tensor, mode: str, window: List[int], stride: List[int],
                      pad_begin: List[int], pad_end: List[int], dilation: List[int]) -> Tensor:
        return K.pool_backward(x, dy, mode, window, stride, pad_begin, pad_end, dilation)

    @pool_backward.register_fake
    def _(x, dy, mode, window, stride, pad_begin, pad_end, dilation):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)

    def _pool_setup(ctx, inputs, output):
        x, *params = inputs
        ctx.save_for_backward(x)
        ctx.params = params[:-1]  # all but ceil_mode, which y's shape carries

    def _pool_backward(ctx, dy):
        (x,) = ctx.saved_tensors
        dx = pool_backward(x, dy, *ctx.params) if ctx.needs_input_grad[0] else None
        return dx, None, None, None, None, None, None, None

    pool.register_autograd(_pool_backward, setup_context=_pool_setup)

    def conv_transpose(x, w, out_shape, stride, padding, dilation, groups):
        return conv_transpose_op(x, w, list(out_shape), stride, padding, dilation, groups)

