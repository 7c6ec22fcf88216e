"""convjit for PyTorch: torch.nn.functional's convolutions, pools,
batch_norm and interpolate (differentiable), aten's convolution_backward, drop-in modules and
replace_modules().  On torch 2.4 or newer the ops are torch.library custom
ops (convjit::conv and friends) with fake kernels and autograd, opaque to
torch.compile and export; on torch 2.1 to 2.3, autograd.Functions."""

from . import functional
from ._ops import REGISTERED_AS_CUSTOM_OPS
from .functional import (batch_norm, interpolate, avg_pool1d, avg_pool2d, avg_pool3d, conv1d, conv2d, conv3d,
                         conv_transpose1d, conv_transpose2d, conv_transpose3d,
                         convolution_backward, max_pool1d, max_pool2d, max_pool3d)
from .modules import (BatchNorm1d, BatchNorm2d, BatchNorm3d, Upsample, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d,
                      AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d,
                      AvgPool2d, AvgPool3d, Conv1d, Conv2d, Conv3d, ConvTranspose1d,
                      ConvTranspose2d, ConvTranspose3d, LeftToTorchWarning, MaxPool1d, MaxPool2d,
                      MaxPool3d, replace_modules)

__all__ = [
    "batch_norm", "interpolate", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Upsample",
    "functional", "REGISTERED_AS_CUSTOM_OPS", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution_backward", "max_pool1d", "max_pool2d", "max_pool3d", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d", "LeftToTorchWarning", "replace_modules",
]
