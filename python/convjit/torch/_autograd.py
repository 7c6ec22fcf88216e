"""The differentiable ops as torch.autograd.Functions (every torch: Debian's
1.13 included).  Each backward computes only the gradients autograd asks
for, through convjit; grad_output may have any strides (zero strides
included, as y.sum().backward() makes)."""

import torch

from . import _kernels as K


class Conv(torch.autograd.Function):
    """y = act(conv(x, w) + bias), act None (identity) for a differentiable conv."""

    @staticmethod
    def forward(ctx, x, w, bias, stride, pad_begin, pad_end, dilation, groups):
        x, w = K.dense(x), w.contiguous()
        ctx.save_for_backward(x, w)
        ctx.params = (stride, pad_begin, pad_end, dilation, groups)
        ctx.has_bias = bias is not None
        return K.conv_forward(x, w, bias, stride, pad_begin, pad_end, dilation, groups)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        wants_x, wants_w, wants_b = ctx.needs_input_grad[:3]
        dx = K.conv_backward_data(dy, w, x.shape, *ctx.params) if wants_x else None
        dw = K.conv_backward_filter(x, dy, w.shape, *ctx.params) if wants_w else None
        db = K.bias_grad(dy) if wants_b and ctx.has_bias else None
        return dx, dw, db, None, None, None, None, None


class ConvTranspose(torch.autograd.Function):
    """conv_transpose(x, w): the conv's backward data, with the output's shape
    given (output_padding picks among the shapes a stride allows).  The bias is
    the caller's (functional.py adds it after cropping and padding)."""

    @staticmethod
    def forward(ctx, x, w, out_shape, stride, padding, dilation, groups):
        x, w = K.dense(x), w.contiguous()
        ctx.save_for_backward(x, w)
        ctx.params = (stride, padding, padding, dilation, groups)
        return K.conv_backward_data(x, w, out_shape, *ctx.params)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        wants_x, wants_w = ctx.needs_input_grad[:2]
        dx = K.conv_forward(dy, w, None, *ctx.params) if wants_x else None
        dw = K.conv_backward_filter(dy, x, w.shape, *ctx.params) if wants_w else None
        return dx, dw, None, None, None, None, None


class Pool(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode):
        x = K.dense(x)
        ctx.save_for_backward(x)
        ctx.params = (mode, window, stride, pad_begin, pad_end, dilation)
        return K.pool_forward(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        dx = K.pool_backward(x, dy, *ctx.params) if ctx.needs_input_grad[0] else None
        return dx, None, None, None, None, None, None, None
