"""convjit's ops in JAX, usable inside jax.jit, jax.grad and jax.vmap, on the host: each op
is an XLA FFI custom call (libconvjit_xla_ffi.so) that runs a convjit plan, and its gradient
runs convjit's backward ops (jax.custom_vjp).  A vmapped axis of the activations folds into
the batch (one call for the whole vmap).

The names and signatures are those JAX users know:
  conv_general_dilated  jax.lax.conv_general_dilated
  conv                  a convolution with convjit's fused bias, residual and activation
  max_pool, avg_pool    flax.linen.max_pool / avg_pool
  batch_norm            training and inference, returning the new running statistics
  resize                jax.image.resize, nearest and linear
"""

from ._conv import conv, conv_general_dilated
from ._norm import batch_norm
from ._pool import avg_pool, max_pool
from ._resize import resize

__all__ = ["avg_pool", "batch_norm", "conv", "conv_general_dilated", "max_pool", "resize"]
