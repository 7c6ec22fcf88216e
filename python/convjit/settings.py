"""convjit's process-wide settings (each overrides its environment variable;
None restores the environment's value or the default), the JIT cache's
preload, and what served the last call."""

import ctypes as C
import os

from . import _library
from .errors import check

_lib = _library.lib


def _path(value):
    return None if value is None else os.fsencode(value)


def version():
    return _lib.convjit_version_string().decode()


def last_backend():
    """The backend that served this thread's last successful call ("jit", "reference"...)."""
    return _lib.convjit_last_backend().decode()


def set_cache_path(directories):
    """Where tuned libraries and the JIT cache live: a list of directories, or a ':'-joined
    string, searched in order."""
    if directories is not None and not isinstance(directories, (str, bytes, os.PathLike)):
        directories = ":".join(os.fspath(d) for d in directories)
    check(_lib.convjit_set_cache_path(_path(directories)))


def set_policy(policy):
    """"auto", "jit", "cudnn", "onednn", "reference", "tuned" or "emulate"."""
    check(_lib.convjit_set_policy(None if policy is None else policy.encode()))


def set_verbose(level):
    """0 off, 1 decisions, 2 decisions and executions."""
    check(_lib.convjit_set_verbose(-1 if level is None else int(level)))


def set_log_file(path):
    check(_lib.convjit_set_log_file(_path(path)))


def set_record_file(path):
    check(_lib.convjit_set_record_file(_path(path)))


def set_arch(arch):
    """The GPU architecture ("sm_90") JIT kernels are compiled for where no GPU tells it."""
    check(_lib.convjit_set_arch(None if arch is None else arch.encode()))


def set_allow_tf32(allow):
    check(_lib.convjit_set_allow_tf32(-1 if allow is None else int(bool(allow))))


def rescan():
    """Forgets failed lookups, so the next calls probe the cache again."""
    check(_lib.convjit_rescan())


def preload(descriptor_name, arch=None):
    """Compiles a descriptor's JIT kernel into the cache (or finds it there) for arch (None:
    set_arch's); returns True when it was compiled now."""
    compiled = C.c_int(0)
    check(_lib.convjit_preload(descriptor_name.encode(), None if arch is None else arch.encode(),
                               C.byref(compiled)))
    return bool(compiled.value)
