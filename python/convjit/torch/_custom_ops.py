"""The ops as torch.library custom ops (torch 2.4 or newer), with fake
kernels (shapes only: convjit's own shape arithmetic, no data), autograd
and vmap rules, so that torch.compile and torch.export see opaque ops with
known outputs.  The autograd formulas are _autograd.py's, over these ops;
the functions reach the ops through those Functions, which torch.func
accepts (the autograd that register_autograd makes is not)."""

from types import SimpleNamespace
from typing import List, Optional, Tuple

import torch

from ..core import conv_params, pool_params
from . import _kernels as K
from . import _norm_kernels as NK
from ._autograd import make_functions
from ._norm_autograd import make_norm_functions

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

    @torch.library.custom_op("convjit::batch_norm", mutates_args=())
    def batch_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                   running_mean: Optional[Tensor], running_var: Optional[Tensor], training: bool,
                   momentum: float, eps: float,
                   activation: Optional[str]) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        return NK.batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps,
                             activation)

    @batch_norm.register_fake
    def _(x, weight, bias, running_mean, running_var, training, momentum, eps, activation):
        dtype = NK._param_dtype(x)
        channels = x.shape[1] if training else 0
        kept = channels if running_mean is not None else 0
        return (K._empty(x.shape, x), x.new_empty(channels, dtype=dtype),
                x.new_empty(channels, dtype=dtype), x.new_empty(kept, dtype=dtype),
                x.new_empty(kept, dtype=dtype))

    @torch.library.custom_op("convjit::batch_norm_backward", mutates_args=())
    def batch_norm_backward(x: Tensor, dy: Tensor, weight: Optional[Tensor],
                            bias: Optional[Tensor], mean: Tensor, var_or_invstd: Tensor,
                            training: bool, eps: float, activation: Optional[str],
                            mask: List[bool]) -> Tuple[Tensor, Tensor, Tensor]:
        return NK.batch_norm_backward(x, dy, weight, bias, mean, var_or_invstd, training, eps,
                                      activation, mask)

    @batch_norm_backward.register_fake
    def _(x, dy, weight, bias, mean, var_or_invstd, training, eps, activation, mask):
        def param(p):
            return x.new_empty(x.shape[1], dtype=NK._param_dtype(x) if p is None else p.dtype)
        return (torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
                if mask[0] else x.new_empty(0),
                param(weight) if mask[1] else x.new_empty(0),
                param(bias) if mask[2] else x.new_empty(0))

    @torch.library.custom_op("convjit::resize", mutates_args=())
    def resize(x: Tensor, out_size: List[int], mode: str, coordinates: str,
               scales: List[float]) -> Tensor:
        return NK.resize(x, out_size, mode, coordinates, scales)

    @resize.register_fake
    def _(x, out_size, mode, coordinates, scales):
        return K._empty(list(x.shape[:2]) + _ints(out_size), x)

    @torch.library.custom_op("convjit::resize_backward", mutates_args=())
    def resize_backward(dy: Tensor, x_shape: List[int], mode: str, coordinates: str,
                        scales: List[float]) -> Tensor:
        return NK.resize_backward(dy, x_shape, mode, coordinates, scales)

    @resize_backward.register_fake
    def _(dy, x_shape, mode, coordinates, scales):
        return K._empty(_ints(x_shape), dy)

    NORM_FUNCTIONS = make_norm_functions(SimpleNamespace(
        batch_norm=batch_norm._opoverload, batch_norm_backward=batch_norm_backward._opoverload,
        resize=resize._opoverload, resize_backward=resize_backward._opoverload))
    for op, function in ((batch_norm, NORM_FUNCTIONS.BatchNorm),
                         (resize, NORM_FUNCTIONS.Resize),
                         (resize_backward, NORM_FUNCTIONS.ResizeBackward)):
        op.register_autograd(function.backward, setup_context=function.setup_context)

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
