"""convjit's XLA FFI handlers (libconvjit_xla_ffi.so, xla_ffi/convjit_xla_ffi.cpp), registered
once as the custom call target "convjit_run" on the CPU and on CUDA, and how an op calls it.
On CUDA the op runs on XLA's stream for the call, on the buffers' device.

Every op is one call of that target: its descriptor name (convjit's grammar), the buffers it
reads and writes, and which convjit operand each is (ROLES, as the handler numbers them).  The
name is checked when the op is traced, so bad input raises convjit's message at trace
time."""

import ctypes as C
import os
from pathlib import Path

import jax
import numpy as np

from .. import _library
from ..errors import check

TARGET = "convjit_run"

# Which convjit operand a buffer is: xla_ffi/convjit_xla_ffi.cpp's Role.
ROLES = {name: code for code, name in enumerate((
    "x", "w", "dy", "out", "bias", "residual", "scale", "shift", "running_mean", "running_var",
    "saved_mean", "saved_invstd", "scale_grad", "shift_grad"))}


def _handler_library():
    explicit = os.environ.get("CONVJIT_XLA_FFI_LIBRARY")
    here = Path(__file__).resolve().parent.parent
    candidates = ([Path(explicit)] if explicit else
                  sorted((here / "lib").glob("libconvjit_xla_ffi.so*")) +
                  [here.parent.parent / "build" / "libconvjit_xla_ffi.so"])
    return _library.load_first(
        candidates, "libconvjit_xla_ffi.so, the XLA FFI handler",
        "It is built where jaxlib's FFI headers are found (tools/setup --python, or "
        "CONVJIT_XLA_FFI_INCLUDE_DIR); or point CONVJIT_XLA_FFI_LIBRARY at it.")


_handler = _handler_library()
jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(_handler.convjit_xla_run), platform="cpu")
# Registered whether or not this jax has CUDA: jax keeps it for a CUDA plugin that loads later.
jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(_handler.convjit_xla_run_cuda),
                            platform="CUDA")

_lib = _library.lib

_checked = set()


def check_descriptor(name):
    """Checks the descriptor once, so that a name convjit cannot take raises here, at trace
    time: a plan pinned to the reference, which builds no kernel worth the name.  The handler
    builds the op's real kernel on its first call, once."""
    if name in _checked:
        return
    host = _library.Device()
    host.kind, host.ordinal = _library.DEVICE_HOST, 0
    plan = C.c_void_p()
    check(_lib.convjit_plan_create(name.encode(), C.byref(host), b"reference", None,
                                   C.byref(plan)))
    _lib.convjit_plan_destroy(plan)
    _checked.add(name)


def call(descriptor, args, arg_roles, results, ret_roles, *, momentum=0.1, aliases=None,
         vmap_method=None):
    """Runs `descriptor` on `args` (jax arrays), returning `results` (ShapeDtypeStructs, a list):
    arg_roles and ret_roles name each buffer's operand (ROLES).  aliases: {arg index: result
    index} for results convjit updates in place (running statistics)."""
    check_descriptor(descriptor)
    return jax.ffi.ffi_call(TARGET, list(results), input_output_aliases=aliases,
                            vmap_method=vmap_method)(
        *args, descriptor=descriptor,
        arg_roles=np.array([ROLES[r] for r in arg_roles], dtype=np.int64),
        ret_roles=np.array([ROLES[r] for r in ret_roles], dtype=np.int64),
        momentum=float(momentum))
