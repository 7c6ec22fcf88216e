"""Any array with __dlpack__ (numpy, torch, cupy, jax) as a convjit tensor
descriptor and pointer, without copying.

The capsule is read, not consumed: it keeps its name, so its destructor
calls the producer's deleter when the view is dropped, after the call.  On
a CUDA device the consumer's stream is passed to __dlpack__(stream=...),
as the DLPack contract asks, so the producer orders its pending work
before convjit's.
"""

import ctypes as C

from . import _library
from .errors import InvalidArgumentError

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
KDL_FLOAT, KDL_BFLOAT = 2, 4
# The legacy default stream in DLPack's stream numbering (0 is ambiguous there).
DLPACK_LEGACY_DEFAULT_STREAM = 1


class _DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class _DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class _DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", _DLDevice), ("ndim", C.c_int32),
                ("dtype", _DLDataType), ("shape", C.POINTER(C.c_int64)),
                ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


class _DLManagedTensor(C.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", C.c_void_p),
                ("deleter", C.c_void_p)]


_get_pointer = C.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = C.c_void_p
_get_pointer.argtypes = [C.py_object, C.c_char_p]

_DTYPE_NAMES = {(KDL_FLOAT, 32): "float32", (KDL_FLOAT, 16): "float16",
                (KDL_FLOAT, 64): "float64", (KDL_BFLOAT, 16): "bfloat16"}


class Tensor:
    """A DLPack array as convjit sees it: descriptor, pointer and device."""

    def __init__(self, array, name, stream=None, vector=False):
        """vector: a bias-like array of contiguous elements, any rank (else N, C, spatial)."""
        if not hasattr(array, "__dlpack__") or not hasattr(array, "__dlpack_device__"):
            raise InvalidArgumentError(
                f"{name} is a {type(array).__name__}, which has no __dlpack__; pass a numpy, "
                "torch, cupy or jax array")
        device_type, device_id = array.__dlpack_device__()
        device_type = int(device_type)
        if device_type == KDL_CUDA:
            dl_stream = DLPACK_LEGACY_DEFAULT_STREAM if stream is None else stream
            self._capsule = array.__dlpack__(stream=dl_stream)
        elif device_type in (KDL_CPU, KDL_CUDA_HOST):
            self._capsule = array.__dlpack__()
        else:
            raise InvalidArgumentError(
                f"{name} lives on DLPack device type {device_type}; convjit takes host (CPU) "
                "and CUDA arrays")
        managed = _DLManagedTensor.from_address(_get_pointer(self._capsule, b"dltensor"))
        t = managed.dl_tensor
        key = (t.dtype.code, t.dtype.bits)
        if t.dtype.lanes != 1 or key not in _DTYPE_NAMES:
            raise InvalidArgumentError(
                f"{name} has DLPack dtype code {t.dtype.code}, {t.dtype.bits} bits, "
                f"{t.dtype.lanes} lanes; convjit takes float32, float16, bfloat16 and float64")
        if not vector and not 3 <= t.ndim <= _library.MAX_RANK:
            raise InvalidArgumentError(
                f"{name} has {t.ndim} dimensions; convjit takes N, C and 1 to 3 spatial ones")
        self.name = name
        self.dtype = _DTYPE_NAMES[key]
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        if t.strides:
            self.strides = tuple(t.strides[i] for i in range(t.ndim))
        else:  # compact row-major
            strides, running = [], 1
            for size in reversed(self.shape):
                strides.append(running)
                running *= size
            self.strides = tuple(reversed(strides))
        self.pointer = (t.data or 0) + t.byte_offset
        self.count = 1
        for size in self.shape:
            self.count *= size
        if vector and self.count > 1 and not self._contiguous():
            raise InvalidArgumentError(f"{name} must be contiguous (strides {self.strides})")
        self.device = (_library.DEVICE_CUDA if device_type == KDL_CUDA else _library.DEVICE_HOST,
                       int(device_id) if device_type == KDL_CUDA else 0)

    def _contiguous(self):
        running = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != running:
                return False
            running *= size
        return True

    def desc(self):
        d = _library.TensorDesc()
        d.dtype, d.rank = _library.DTYPES[self.dtype], len(self.shape)
        for i, (size, stride) in enumerate(zip(self.shape, self.strides)):
            d.dims[i], d.strides[i] = size, stride
        return d


class TensorLayout:
    """A tensor's shape, element strides and dtype, with no data: what a descriptor name needs
    of an array not made yet (a value traced by jax.jit).  dtype: "float32", "float16",
    "bfloat16" or "float64"."""

    def __init__(self, shape, strides, dtype, name):
        if dtype not in _DTYPE_NAMES.values():
            raise InvalidArgumentError(
                f"{name} has dtype {dtype}; convjit takes float32, float16, bfloat16 and float64")
        if not 3 <= len(shape) <= _library.MAX_RANK or len(strides) != len(shape):
            raise InvalidArgumentError(
                f"{name} has {len(shape)} dimensions; convjit takes N, C and 1 to 3 spatial ones")
        self.name, self.dtype = name, dtype
        self.shape, self.strides = tuple(int(v) for v in shape), tuple(int(v) for v in strides)

    desc = Tensor.desc
