"""libconvjit.so through ctypes: the C API's structs, entry points and
status codes, one declaration each.

ctypes rather than pybind11: the C API is convjit's stable ABI, so the
package needs no compiler, works with any CPython that can load the
library (Debian's /usr/bin/python3 included), and cannot drift from the
C++ build it runs against.

The library is looked for, in order: $CONVJIT_LIBRARY (a file); next to
this package (convjit/lib/, where a wheel or `tools/setup` may put it);
the build tree of the checkout the package lives in (build/); then the
dynamic loader's search path (an installed convjit).
"""

import ctypes as C
import ctypes.util
import os
from pathlib import Path

MAX_RANK = 5
MAX_SPATIAL_DIMS = 3

SUCCESS = 0

DTYPES = {"float32": 0, "float16": 1, "bfloat16": 2, "float64": 3}
DEVICE_HOST, DEVICE_CUDA = 0, 1
CONV_FWD, CONV_BWDDATA, CONV_BWDFILT = 0, 1, 2
POOL_MAX, POOL_AVG_EXCLUDE_PAD, POOL_AVG_INCLUDE_PAD = 0, 1, 2
POOL_FWD, POOL_BWD = 0, 1
GRAD_INPUT, GRAD_WEIGHT, GRAD_BIAS = 1, 2, 4
ACTIVATIONS = {"identity": 0, "relu": 1, "silu": 2, "sigmoid": 3}
FORWARD, BACKWARD = 0, 1
BATCHNORM_NO_SCALE, BATCHNORM_NO_SHIFT, BATCHNORM_INFERENCE = 1, 2, 4
RESIZE_MODES = {"nearest": 1, "nearest-ceil": 2, "nearest-round-prefer-floor": 3,
                "nearest-round-prefer-ceil": 4, "linear": 5}
RESIZE_COORDINATES = {"asymmetric": 0, "half-pixel": 1, "pytorch-half-pixel": 2,
                      "align-corners": 3, "tf-half-pixel-for-nn": 4}


class TensorDesc(C.Structure):
    _fields_ = [("dtype", C.c_int), ("rank", C.c_int),
                ("dims", C.c_int64 * MAX_RANK), ("strides", C.c_int64 * MAX_RANK)]


class ConvParams(C.Structure):
    _fields_ = [("spatial_dims", C.c_int),
                ("pad_begin", C.c_int64 * MAX_SPATIAL_DIMS),
                ("pad_end", C.c_int64 * MAX_SPATIAL_DIMS),
                ("stride", C.c_int64 * MAX_SPATIAL_DIMS),
                ("dilation", C.c_int64 * MAX_SPATIAL_DIMS),
                ("groups", C.c_int64)]


class PoolParams(C.Structure):
    _fields_ = [("spatial_dims", C.c_int), ("mode", C.c_int),
                ("window", C.c_int64 * MAX_SPATIAL_DIMS),
                ("pad_begin", C.c_int64 * MAX_SPATIAL_DIMS),
                ("pad_end", C.c_int64 * MAX_SPATIAL_DIMS),
                ("stride", C.c_int64 * MAX_SPATIAL_DIMS),
                ("dilation", C.c_int64 * MAX_SPATIAL_DIMS)]


class BatchNormParams(C.Structure):
    _fields_ = [("epsilon", C.c_double), ("momentum", C.c_double),
                ("onnx_running_stats", C.c_int), ("activation", C.c_int)]


class ResizeParams(C.Structure):
    _fields_ = [("spatial_dims", C.c_int), ("mode", C.c_int), ("coordinates", C.c_int),
                ("scale", C.c_double * MAX_SPATIAL_DIMS)]


class Device(C.Structure):
    _fields_ = [("kind", C.c_int), ("ordinal", C.c_int)]


class Exec(C.Structure):
    _fields_ = [("device", Device), ("stream", C.c_void_p), ("workspace", C.c_void_p),
                ("workspace_bytes", C.c_size_t), ("w_version", C.c_uint64)]


class Epilogue(C.Structure):
    _fields_ = [("activation", C.c_int), ("bias", C.c_void_p), ("residual", C.c_void_p)]


def _candidates():
    explicit = os.environ.get("CONVJIT_LIBRARY")
    if explicit:
        yield Path(explicit)
        return
    here = Path(__file__).resolve().parent
    yield from sorted((here / "lib").glob("libconvjit.so*"))
    checkout = here.parent.parent  # python/convjit -> the repository
    yield checkout / "build" / "libconvjit.so"
    found = ctypes.util.find_library("convjit")
    if found:
        yield Path(found)


def load_first(candidates, what, hint):
    """The first of `candidates` (paths, or bare names for the loader's search) that loads;
    ImportError naming every one tried, `what` and `hint` (how to get it) otherwise."""
    tried = []
    for path in candidates:
        if path.name != str(path) and not path.exists():
            tried.append(f"{path} (missing)")
            continue
        try:
            return C.CDLL(str(path))
        except OSError as error:
            tried.append(f"{path} ({error})")
    raise ImportError(f"convjit: cannot load {what}; tried " + ("; ".join(tried) or "nothing") +
                      f". {hint}")


lib = load_first(_candidates(), "libconvjit.so",
                 "Build it (tools/setup) or point CONVJIT_LIBRARY at it.")

_P = C.POINTER
_STATUS = C.c_int
_NAME = [C.c_int, C.c_char_p, C.c_size_t, _P(C.c_size_t)]  # symbolic, buf, size, required

_SIGNATURES = {
    "convjit_version_string": (C.c_char_p, []),
    "convjit_status_string": (C.c_char_p, [C.c_int]),
    "convjit_last_error_message": (C.c_char_p, []),
    "convjit_last_backend": (C.c_char_p, []),
    "convjit_set_cache_path": (_STATUS, [C.c_char_p]),
    "convjit_set_verbose": (_STATUS, [C.c_int]),
    "convjit_set_log_file": (_STATUS, [C.c_char_p]),
    "convjit_set_record_file": (_STATUS, [C.c_char_p]),
    "convjit_set_policy": (_STATUS, [C.c_char_p]),
    "convjit_set_arch": (_STATUS, [C.c_char_p]),
    "convjit_set_allow_tf32": (_STATUS, [C.c_int]),
    "convjit_set_rules_file": (_STATUS, [C.c_char_p]),
    "convjit_rescan": (_STATUS, []),
    "convjit_preload": (_STATUS, [C.c_char_p, C.c_char_p, _P(C.c_int)]),
    "convjit_conv_output_dims": (_STATUS, [_P(ConvParams), _P(TensorDesc), _P(TensorDesc),
                                           _P(C.c_int64)]),
    "convjit_pool_output_dims": (_STATUS, [_P(PoolParams), _P(TensorDesc), C.c_int,
                                           _P(C.c_int64)]),
    "convjit_conv_descriptor_name": (_STATUS, [_P(ConvParams), C.c_int, _P(TensorDesc),
                                               _P(TensorDesc), _P(TensorDesc)] + _NAME),
    "convjit_conv_fused_descriptor_name": (_STATUS, [_P(ConvParams), _P(TensorDesc),
                                                     _P(TensorDesc), _P(Epilogue),
                                                     _P(TensorDesc)] + _NAME),
    "convjit_pool_descriptor_name": (_STATUS, [_P(PoolParams), C.c_int, _P(TensorDesc),
                                               _P(TensorDesc)] + _NAME),
    "convjit_bias_grad_descriptor_name": (_STATUS, [_P(TensorDesc)] + _NAME),
    "convjit_conv_forward": (_STATUS, [_P(ConvParams), _P(TensorDesc), C.c_void_p,
                                       _P(TensorDesc), C.c_void_p, _P(TensorDesc), C.c_void_p,
                                       C.c_double, C.c_double, _P(Exec)]),
    "convjit_conv_forward_fused": (_STATUS, [_P(ConvParams), _P(TensorDesc), C.c_void_p,
                                             _P(TensorDesc), C.c_void_p, _P(Epilogue),
                                             _P(TensorDesc), C.c_void_p, C.c_double, C.c_double,
                                             _P(Exec)]),
    "convjit_conv_backward_data": (_STATUS, [_P(ConvParams), _P(TensorDesc), C.c_void_p,
                                             _P(TensorDesc), C.c_void_p, _P(TensorDesc),
                                             C.c_void_p, C.c_double, C.c_double, _P(Exec)]),
    "convjit_conv_backward_filter": (_STATUS, [_P(ConvParams), _P(TensorDesc), C.c_void_p,
                                               _P(TensorDesc), C.c_void_p, _P(TensorDesc),
                                               C.c_void_p, C.c_double, C.c_double, _P(Exec)]),
    "convjit_conv_backward_bias": (_STATUS, [_P(TensorDesc), C.c_void_p, C.c_void_p, C.c_double,
                                             C.c_double, _P(Exec)]),
    "convjit_conv_backward": (_STATUS, [_P(ConvParams), _P(TensorDesc), C.c_void_p,
                                        _P(TensorDesc), C.c_void_p, _P(TensorDesc), C.c_void_p,
                                        C.c_uint, C.c_void_p, C.c_void_p, C.c_void_p, _P(Exec)]),
    "convjit_pool_forward": (_STATUS, [_P(PoolParams), _P(TensorDesc), C.c_void_p,
                                       _P(TensorDesc), C.c_void_p, C.c_double, C.c_double,
                                       _P(Exec)]),
    "convjit_pool_backward": (_STATUS, [_P(PoolParams), _P(TensorDesc), C.c_void_p,
                                        _P(TensorDesc), C.c_void_p, C.c_void_p, C.c_double,
                                        C.c_double, _P(Exec)]),
    "convjit_batchnorm_descriptor_name": (_STATUS, [_P(BatchNormParams), C.c_int, C.c_uint,
                                                    C.c_uint, _P(TensorDesc),
                                                    _P(TensorDesc)] + _NAME),
    "convjit_batchnorm_forward_training": (_STATUS, [_P(BatchNormParams), _P(TensorDesc),
                                                     C.c_void_p, C.c_void_p, C.c_void_p,
                                                     _P(TensorDesc), C.c_void_p, C.c_void_p,
                                                     C.c_void_p, C.c_void_p, C.c_void_p,
                                                     C.c_double, C.c_double, _P(Exec)]),
    "convjit_batchnorm_forward_inference": (_STATUS, [_P(BatchNormParams), _P(TensorDesc),
                                                      C.c_void_p, C.c_void_p, C.c_void_p,
                                                      C.c_void_p, C.c_void_p, _P(TensorDesc),
                                                      C.c_void_p, C.c_double, C.c_double,
                                                      _P(Exec)]),
    "convjit_batchnorm_backward": (_STATUS, [_P(BatchNormParams), C.c_int, _P(TensorDesc),
                                             C.c_void_p, _P(TensorDesc), C.c_void_p,
                                             C.c_void_p, C.c_void_p, C.c_void_p, C.c_void_p,
                                             C.c_uint, C.c_void_p, C.c_void_p, C.c_void_p,
                                             C.c_double, C.c_double, _P(Exec)]),
    "convjit_plan_create": (_STATUS, [C.c_char_p, _P(Device), C.c_char_p, C.c_char_p,
                                      _P(C.c_void_p)]),
    "convjit_plan_destroy": (None, [C.c_void_p]),
    "convjit_resize_output_dims": (_STATUS, [_P(ResizeParams), _P(TensorDesc), _P(C.c_int64)]),
    "convjit_resize_descriptor_name": (_STATUS, [_P(ResizeParams), C.c_int, _P(TensorDesc),
                                                 _P(TensorDesc)] + _NAME),
    "convjit_resize_forward": (_STATUS, [_P(ResizeParams), _P(TensorDesc), C.c_void_p,
                                         _P(TensorDesc), C.c_void_p, C.c_double, C.c_double,
                                         _P(Exec)]),
    "convjit_resize_backward": (_STATUS, [_P(ResizeParams), _P(TensorDesc), C.c_void_p,
                                          _P(TensorDesc), C.c_void_p, C.c_double, C.c_double,
                                          _P(Exec)]),
}

for _name, (_restype, _argtypes) in _SIGNATURES.items():
    _function = getattr(lib, _name)
    _function.restype, _function.argtypes = _restype, _argtypes
