"""Drop-in replacements for torch.nn's convolution, pooling, BatchNorm and
Upsample modules:
subclasses with the same parameters, buffers and state_dict, whose forward
runs through convjit.  replace_modules() swaps them into a model, user
subclasses of torch's modules included.

Each replacement is a mixin (the computation through convjit) over
torch's class; a user's subclass is served by the same mixin over the
user's class, so it keeps its identity and its methods."""

import warnings

import torch
from torch import nn

from . import functional as F

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _zeros_padding(module, input):
    """input padded as padding_mode says (reflect, replicate, circular), and
    the conv's own padding then: 0; or input and the module's padding."""
    if module.padding_mode == "zeros":
        return input, module.padding
    return (torch.nn.functional.pad(input, module._reversed_padding_repeated_twice,
                                    mode=module.padding_mode), 0)


class ConvMixin:
    """nn.Conv1d/2d/3d's computation through convjit."""

    def _conv_forward(self, input, weight, bias):
        input, padding = _zeros_padding(self, input)
        return _CONV[len(self.kernel_size)](input, weight, bias, self.stride, padding,
                                            self.dilation, self.groups)


class ConvTransposeMixin:
    """nn.ConvTranspose1d/2d/3d's computation through convjit."""

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError(
                f"Only 'zeros' padding mode is supported for {type(self).__name__}")
        n = len(self.kernel_size)
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, n, self.dilation)
        return _CONV_TRANSPOSE[n](input, self.weight, self.bias, self.stride, self.padding,
                                  output_padding, self.groups, self.dilation)


class MaxPoolMixin:
    def forward(self, input):
        n = _pool_dims(type(self))
        return _MAX_POOL[n](input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPoolMixin:
    def forward(self, input):
        n = _pool_dims(type(self))
        extra = () if n == 1 else (self.divisor_override,)
        return _AVG_POOL[n](input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, *extra)


class AdaptivePoolMixin:
    """An adaptive pool whose windows are uniform (each input size a
    multiple of its output size, global pooling included) is an ordinary
    pool with window = stride = input // output.  Other sizes have windows
    of two widths: those calls stay torch's, with a warning once per shape."""

    def forward(self, input):
        base = _torch_base(type(self))
        n = _pool_dims(type(self))
        sizes = list(input.shape[-n:])
        wanted = [self.output_size] * n if isinstance(self.output_size, int) else \
            list(self.output_size)
        out = [i if o is None else o for i, o in zip(sizes, wanted)]
        if any(o == 0 or i % o for i, o in zip(sizes, out)):
            self._warn_uneven(sizes, out)
            return base.forward(self, input)
        window = [i // o for i, o in zip(sizes, out)]
        if base in _ADAPTIVE_MAX:
            return _MAX_POOL[n](input, window, window)
        return _AVG_POOL[n](input, window, window)

    def _warn_uneven(self, sizes, out):
        seen = self.__dict__.setdefault("_convjit_uneven_shapes", set())
        if tuple(sizes) not in seen:
            seen.add(tuple(sizes))
            warnings.warn(f"convjit: {type(self).__name__} from {tuple(sizes)} to {tuple(out)} "
                          "has windows of two widths (an input size is not a multiple of its "
                          "output size); torch serves this shape", LeftToTorchWarning,
                          stacklevel=3)


class Conv1d(ConvMixin, nn.Conv1d):
    pass


class Conv2d(ConvMixin, nn.Conv2d):
    pass


class Conv3d(ConvMixin, nn.Conv3d):
    pass


class ConvTranspose1d(ConvTransposeMixin, nn.ConvTranspose1d):
    pass


class ConvTranspose2d(ConvTransposeMixin, nn.ConvTranspose2d):
    pass


class ConvTranspose3d(ConvTransposeMixin, nn.ConvTranspose3d):
    pass


class MaxPool1d(MaxPoolMixin, nn.MaxPool1d):
    pass


class MaxPool2d(MaxPoolMixin, nn.MaxPool2d):
    pass


class MaxPool3d(MaxPoolMixin, nn.MaxPool3d):
    pass


class AvgPool1d(AvgPoolMixin, nn.AvgPool1d):
    pass


class AvgPool2d(AvgPoolMixin, nn.AvgPool2d):
    pass


class AvgPool3d(AvgPoolMixin, nn.AvgPool3d):
    pass


class AdaptiveAvgPool1d(AdaptivePoolMixin, nn.AdaptiveAvgPool1d):
    pass


class AdaptiveAvgPool2d(AdaptivePoolMixin, nn.AdaptiveAvgPool2d):
    pass


class AdaptiveAvgPool3d(AdaptivePoolMixin, nn.AdaptiveAvgPool3d):
    pass


class AdaptiveMaxPool1d(AdaptivePoolMixin, nn.AdaptiveMaxPool1d):
    pass


class AdaptiveMaxPool2d(AdaptivePoolMixin, nn.AdaptiveMaxPool2d):
    pass


class AdaptiveMaxPool3d(AdaptivePoolMixin, nn.AdaptiveMaxPool3d):
    pass


class BatchNormMixin:
    """nn.BatchNorm1d/2d/3d's computation through convjit: its running statistics and
    num_batches_tracked kept exactly as torch keeps them."""

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        training = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias,
                            training, factor, self.eps)


class BatchNorm1d(BatchNormMixin, nn.BatchNorm1d):
    pass


class BatchNorm2d(BatchNormMixin, nn.BatchNorm2d):
    pass


class BatchNorm3d(BatchNormMixin, nn.BatchNorm3d):
    pass


class UpsampleMixin:
    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)


class Upsample(UpsampleMixin, nn.Upsample):
    pass


class LeftToTorchWarning(UserWarning):
    """A conv or pool module, or one call of it, that torch serves, not convjit."""


# torch's class -> (convjit's class, the methods that hold the computation).
REPLACEMENTS = {
    **{base: (ours, ("forward", "_conv_forward")) for base, ours in (
        (nn.Conv1d, Conv1d), (nn.Conv2d, Conv2d), (nn.Conv3d, Conv3d))},
    **{base: (ours, ("forward",)) for base, ours in (
        (nn.ConvTranspose1d, ConvTranspose1d), (nn.ConvTranspose2d, ConvTranspose2d),
        (nn.ConvTranspose3d, ConvTranspose3d), (nn.MaxPool1d, MaxPool1d),
        (nn.MaxPool2d, MaxPool2d), (nn.MaxPool3d, MaxPool3d), (nn.AvgPool1d, AvgPool1d),
        (nn.AvgPool2d, AvgPool2d), (nn.AvgPool3d, AvgPool3d),
        (nn.AdaptiveAvgPool1d, AdaptiveAvgPool1d), (nn.AdaptiveAvgPool2d, AdaptiveAvgPool2d),
        (nn.AdaptiveAvgPool3d, AdaptiveAvgPool3d), (nn.AdaptiveMaxPool1d, AdaptiveMaxPool1d),
        (nn.AdaptiveMaxPool2d, AdaptiveMaxPool2d), (nn.AdaptiveMaxPool3d, AdaptiveMaxPool3d),
        (nn.BatchNorm1d, BatchNorm1d), (nn.BatchNorm2d, BatchNorm2d),
        (nn.BatchNorm3d, BatchNorm3d), (nn.Upsample, Upsample))},
}
_POOL_DIMS = {base: int(base.__name__[-2]) for base in REPLACEMENTS if "Pool" in base.__name__}
_ADAPTIVE_MAX = (nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d)
_MIXINS = (ConvMixin, ConvTransposeMixin, MaxPoolMixin, AvgPoolMixin, AdaptivePoolMixin,
           BatchNormMixin, UpsampleMixin)

# Conv and pool modules convjit has no replacement for: named when left.
_UNSERVED = {
    nn.LPPool1d: "convjit has no power-average pooling",
    nn.LPPool2d: "convjit has no power-average pooling",
    nn.LPPool3d: "convjit has no power-average pooling",
    nn.FractionalMaxPool2d: "convjit has no fractional (random-window) max pooling",
    nn.FractionalMaxPool3d: "convjit has no fractional (random-window) max pooling",
    nn.MaxUnpool1d: "convjit has no max unpooling",
    nn.MaxUnpool2d: "convjit has no max unpooling",
    nn.MaxUnpool3d: "convjit has no max unpooling",
}


def _torch_base(cls):
    """The torch.nn class of REPLACEMENTS that cls is or derives from, or None."""
    return next((base for base in cls.__mro__ if base in REPLACEMENTS), None)


def _pool_dims(cls):
    return _POOL_DIMS[_torch_base(cls)]


def _overridden(cls, base, methods):
    """The methods of `methods` that a class between cls and base redefines."""
    between = cls.__mro__[:cls.__mro__.index(base)]
    return [m for m in methods if any(m in c.__dict__ for c in between)]


_SUBCLASS_REPLACEMENTS = {}


def _replacement_class(cls, base):
    """convjit's class for base, or the same mixin over a user's subclass cls."""
    ours, _ = REPLACEMENTS[base]
    if cls is base:
        return ours
    if cls not in _SUBCLASS_REPLACEMENTS:
        mixin = ours.__mro__[1]
        _SUBCLASS_REPLACEMENTS[cls] = type(cls.__name__, (mixin, cls), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__})
    return _SUBCLASS_REPLACEMENTS[cls]


def _why_left(module, base):
    """Why convjit cannot serve this module, or None when it can."""
    if isinstance(module, nn.modules.lazy.LazyModuleMixin):
        return "a lazy module not yet initialised: run one forward first"
    _, methods = REPLACEMENTS[base]
    redefined = _overridden(type(module), base, methods)
    if redefined:
        return f"{type(module).__qualname__} redefines {', '.join(redefined)}"
    if getattr(module, "return_indices", False):
        return "return_indices=True: convjit's max pooling keeps no indices"
    if getattr(module, "divisor_override", None) is not None:
        return "divisor_override: convjit divides by the window's element count"
    if isinstance(module, nn.Upsample) and module.mode not in F._RESIZE_MODES:
        return f"mode {module.mode!r}: convjit's resize is nearest or linear"
    return None


def replace_modules(model, predicate=None):
    """Swaps every torch.nn conv and pool module of `model` for convjit's, in
    place, sharing its parameters and buffers (an optimizer over them keeps
    working); with `predicate(name, module)`, only those it accepts.

    Subclasses of torch's modules are swapped too, unless they redefine the
    computation (forward, or a conv's _conv_forward): the swapped module is
    an instance of the user's class with convjit's computation.  The conv
    and pool modules left to torch, and why, are named in one
    LeftToTorchWarning.  Returns the model."""
    left = []
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if predicate is not None and not predicate(full, child):
                continue
            if isinstance(child, _MIXINS):  # convjit's already
                continue
            base = _torch_base(type(child))
            if base is None:
                unserved = next((why for cls, why in _UNSERVED.items()
                                 if isinstance(child, cls)), None)
                if unserved:
                    left.append(f"{full} ({type(child).__name__}): {unserved}")
                continue
            why = _why_left(child, base)
            if why:
                left.append(f"{full} ({type(child).__name__}): {why}")
                continue
            swapped = object.__new__(_replacement_class(type(child), base))
            swapped.__dict__.update(child.__dict__)
            setattr(module, child_name, swapped)
    if left:
        warnings.warn(f"convjit.torch.replace_modules left {len(left)} module(s) to torch: "
                      + "; ".join(left), LeftToTorchWarning, stacklevel=2)
    return model
