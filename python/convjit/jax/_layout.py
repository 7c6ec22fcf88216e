"""JAX arrays as convjit sees them: row-major buffers whose axes a layout spec orders into
convjit's (N, C, spatial...) (activations) or (K, C/groups, spatial...) (filters), as strides,
with no transposes."""

import jax.numpy as jnp

from .._dlpack import TensorLayout
from ..errors import InvalidArgumentError

_DTYPES = {jnp.dtype(jnp.float32): "float32", jnp.dtype(jnp.float16): "float16",
           jnp.dtype(jnp.bfloat16): "bfloat16", jnp.dtype(jnp.float64): "float64"}


def dtype_name(dtype, what):
    try:
        return _DTYPES[jnp.dtype(dtype)]
    except KeyError:
        raise InvalidArgumentError(
            f"{what} has dtype {jnp.dtype(dtype)}; convjit takes float32, float16, bfloat16 and "
            "float64") from None


def row_major_strides(shape):
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= size
    return tuple(reversed(strides))


def layout(shape, order, dtype, name):
    """A row-major array of `shape` whose axes `order` lists in convjit's order."""
    strides = row_major_strides(shape)
    return TensorLayout([shape[a] for a in order], [strides[a] for a in order],
                        dtype_name(dtype, name), name)


def shape_in(order, convjit_shape):
    """The array shape whose axes `order` maps to convjit_shape."""
    shape = [0] * len(order)
    for axis, size in zip(order, convjit_shape):
        shape[axis] = size
    return tuple(shape)
