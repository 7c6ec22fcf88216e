"""convjit from Python: convolution, pooling, batch normalisation and resize, served per shape by a tuned
library, a JIT kernel or the vendor library, on any DLPack array (numpy,
torch, cupy, jax) on the host or a CUDA device.  PyTorch functions and
modules are in convjit.torch."""

from .core import (batch_norm_backward, batch_norm_descriptor_name, batch_norm_forward_inference,
                   batch_norm_forward_training, bias_grad, bias_grad_descriptor_name,
                   conv_backward, conv_backward_data, conv_backward_filter, conv_descriptor_name,
                   conv_forward, conv_output_shape, pool_backward, pool_descriptor_name,
                   pool_forward, pool_output_shape, resize_backward, resize_descriptor_name,
                   resize_forward, resize_output_shape)
from .errors import (Error, ExecutionError, InternalError, InvalidArgumentError,
                     NotAvailableError, OutOfMemoryError, UnsupportedError)
from .rules import rules
from .settings import (last_backend, preload, rescan, set_allow_tf32, set_arch, set_cache_path,
                       set_log_file, set_policy, set_record_file, set_verbose, version)

__version__ = version()

__all__ = [
    "batch_norm_backward", "batch_norm_descriptor_name", "batch_norm_forward_inference",
    "batch_norm_forward_training", "resize_backward", "resize_descriptor_name", "resize_forward",
    "resize_output_shape", "bias_grad", "bias_grad_descriptor_name", "conv_backward", "conv_backward_data",
    "conv_backward_filter", "conv_descriptor_name", "conv_forward", "conv_output_shape",
    "pool_backward", "pool_descriptor_name", "pool_forward", "pool_output_shape",
    "Error", "ExecutionError", "InternalError", "InvalidArgumentError", "NotAvailableError",
    "OutOfMemoryError", "UnsupportedError", "last_backend", "preload", "rescan", "rules",
    "set_allow_tf32", "set_arch", "set_cache_path", "set_log_file", "set_policy",
    "set_record_file", "set_verbose", "version",
]
