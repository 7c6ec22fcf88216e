"""Drop-in replacements for torch.nn's convolution and pooling modules:
subclasses with the same parameters, buffers and state_dict, whose forward
runs through convjit.  replace_modules() swaps them into a model."""

import torch
from torch import nn

from . import functional as F


def _zeros_padding(module, input):
    """input padded as padding_mode says (reflect, replicate, circular), and
    the conv's own padding then: 0; or input and the module's padding."""
    if module.padding_mode == "zeros":
        return input, module.padding
    return (torch.nn.functional.pad(input, module._reversed_padding_repeated_twice,
                                    mode=module.padding_mode), 0)


class Conv1d(nn.Conv1d):
    def _conv_forward(self, input, weight, bias):
        input, padding = _zeros_padding(self, input)
        return F.conv1d(input, weight, bias, self.stride, padding, self.dilation, self.groups)


class Conv2d(nn.Conv2d):
    def _conv_forward(self, input, weight, bias):
        input, padding = _zeros_padding(self, input)
        return F.conv2d(input, weight, bias, self.stride, padding, self.dilation, self.groups)


class Conv3d(nn.Conv3d):
    def _conv_forward(self, input, weight, bias):
        input, padding = _zeros_padding(self, input)
        return F.conv3d(input, weight, bias, self.stride, padding, self.dilation, self.groups)


def _transposed(module, input, output_size, n, function):
    if module.padding_mode != "zeros":
        raise ValueError(f"Only 'zeros' padding mode is supported for {type(module).__name__}")
    output_padding = module._output_padding(input, output_size, module.stride, module.padding,
                                            module.kernel_size, n, module.dilation)
    return function(input, module.weight, module.bias, module.stride, module.padding,
                    output_padding, module.groups, module.dilation)


class ConvTranspose1d(nn.ConvTranspose1d):
    def forward(self, input, output_size=None):
        return _transposed(self, input, output_size, 1, F.conv_transpose1d)


class ConvTranspose2d(nn.ConvTranspose2d):
    def forward(self, input, output_size=None):
        return _transposed(self, input, output_size, 2, F.conv_transpose2d)


class ConvTranspose3d(nn.ConvTranspose3d):
    def forward(self, input, output_size=None):
        return _transposed(self, input, output_size, 3, F.conv_transpose3d)


class MaxPool1d(nn.MaxPool1d):
    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class MaxPool2d(nn.MaxPool2d):
    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class MaxPool3d(nn.MaxPool3d):
    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool1d(nn.AvgPool1d):
    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(nn.AvgPool2d):
    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool3d(nn.AvgPool3d):
    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


REPLACEMENTS = {nn.Conv1d: Conv1d, nn.Conv2d: Conv2d, nn.Conv3d: Conv3d,
                nn.ConvTranspose1d: ConvTranspose1d, nn.ConvTranspose2d: ConvTranspose2d,
                nn.ConvTranspose3d: ConvTranspose3d, nn.MaxPool1d: MaxPool1d,
                nn.MaxPool2d: MaxPool2d, nn.MaxPool3d: MaxPool3d, nn.AvgPool1d: AvgPool1d,
                nn.AvgPool2d: AvgPool2d, nn.AvgPool3d: AvgPool3d}


def replace_modules(model, predicate=None):
    """Swaps every torch.nn conv and pool module of `model` (exactly those
    classes, not subclasses of them) for convjit's, in place, sharing its
    parameters and buffers (an optimizer over them keeps working); with
    `predicate(name, module)`, only those it accepts.  Returns the model."""
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            replacement = REPLACEMENTS.get(type(child))
            full = f"{name}.{child_name}" if name else child_name
            if replacement is None or (predicate is not None and not predicate(full, child)):
                continue
            swapped = replacement.__new__(replacement)
            swapped.__dict__.update(child.__dict__)
            setattr(module, child_name, swapped)
    return model
