"""The ops as torch.library custom ops (torch 2.4 or newer), with fake
kernels (shapes only: convjit's own shape arithmetic, no data), autograd
and vmap rules, so that torch.compile and torch.export see opaque ops with
known outputs.  The autograd formulas are _autograd.py's, over these ops;
the functions reach the ops through those Functions, which torch.func
accepts (the autograd that register_autograd makes is not)."""

from types import SimpleNamespace
from typing import List, Optional

import torch

from ..core import conv_params, pool_params
from . import _kernels as K
from ._autograd import make_functions

AVAILABLE = hasattr(torch, "library") and hasattr(torch.library, "custom_op")


def _ints(values):
    """Concrete ints for convjit's shape arithmetic: a symbolic size (torch's
    dynamic shapes) is specialised, which guards the graph on its value."""
    return [int(v) for v in values]


if AVAILABLE:
    Tensor = torch.Tensor

    @torch.library.custom_op("convjit::conv", mutates_args=())
    def conv(x: Tensor, w: Tensor, bias: Optional[Tensor], stride: List[int],
             pad_begin: List[int], pad_end: List[int], dilation: List[int],
             groups: int) -> Tensor:
        return K.PLAIN_OPS.conv(x, w, bias, stride, pad_begin, pad_end, dilation, groups)

    @conv.register_fake
    def _(x, w, bias, stride, pad_begin, pad_end, dilation, groups):
        params = conv_params(x.dim() - 2, _ints(stride),
                             list(zip(_ints(pad_begin), _ints(pad_end))), _ints(dilation),
                             int(groups))
        return K._empty(K.conv_output_shape(x, w, params), x)

    @torch.library.custom_op("convjit::conv_backward_data", mutates_args=())
    def conv_backward_data(dy: Tensor, w: Tensor, x_shape: List[int], stride: List[int],
                           pad_begin: List[int], pad_end: List[int], dilation: List[int],
                           groups: int) -> Tensor:
        return K.PLAIN_OPS.conv_backward_data(dy, w, x_shape, stride, pad_begin, pad_end,
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

    @torch.library.custom_op("convjit::conv_transpose", mutates_args=())
    def conv_transpose(x: Tensor, w: Tensor, out_shape: List[int], stride: List[int],
                       padding: List[int], dilation: List[int], groups: int) -> Tensor:
        return K.PLAIN_OPS.conv_transpose(x, w, out_shape, stride, padding, dilation, groups)

    @conv_transpose.register_fake
    def _(x, w, out_shape, stride, padding, dilation, groups):
        return K._empty(out_shape, x)

    @torch.library.custom_op("convjit::pool", mutates_args=())
    def pool(x: Tensor, mode: str, window: List[int], stride: List[int], pad_begin: List[int],
             pad_end: List[int], dilation: List[int], ceil_mode: bool) -> Tensor:
        return K.pool_forward(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode)

    @pool.register_fake
    def _(x, mode, window, stride, pad_begin, pad_end, dilation, ceil_mode):
        params = pool_params(x.dim() - 2, mode, _ints(window), _ints(stride),
                             list(zip(_ints(pad_begin), _ints(pad_end))), _ints(dilation))
        return K._empty(K.pool_output_shape(x, params, ceil_mode), x)

    @torch.library.custom_op("convjit::pool_backward", mutates_args=())
    def pool_backward(x: Tensor, dy: Tensor, mode: str, window: List[int], stride: List[int],
                      pad_begin: List[int], pad_end: List[int], dilation: List[int]) -> Tensor:
        return K.pool_backward(x, dy, mode, window, stride, pad_begin, pad_end, dilation)

    @pool_backward.register_fake
    def _(x, dy, mode, window, stride, pad_begin, pad_end, dilation):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)

    FUNCTIONS = make_functions(SimpleNamespace(
        conv=conv._opoverload, conv_backward_data=conv_backward_data._opoverload,
        conv_backward_filter=conv_backward_filter._opoverload,
        bias_grad=bias_grad._opoverload, conv_transpose=conv_transpose._opoverload,
        pool=pool._opoverload, pool_backward=pool_backward._opoverload), K.PLAIN_OPS)
    for op, function in ((conv, FUNCTIONS.Conv), (conv_backward_data, FUNCTIONS.ConvBackwardData),
                         (conv_backward_filter, FUNCTIONS.ConvBackwardFilter),
                         (bias_grad, FUNCTIONS.BiasGrad),
                         (conv_transpose, FUNCTIONS.ConvTranspose), (pool, FUNCTIONS.Pool),
                         (pool_backward, FUNCTIONS.PoolBackward)):
        op.register_autograd(function.backward, setup_context=function.setup_context)
        torch.library.register_vmap(op, function.vmap)
