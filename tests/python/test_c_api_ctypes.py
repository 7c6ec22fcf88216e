"""Drives the convjit C API from Python ctypes on numpy host memory and
compares with the C++ API (ctypes_peer) and with a numpy reference.

usage: /usr/bin/python3 test_c_api_ctypes.py <libconvjit.so> <ctypes_peer>
Needs Debian's python3-numpy (the system interpreter, not the PATH one).
"""
import ctypes as C
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

LIB_PATH, PEER_PATH = sys.argv[1], sys.argv[2]
MAX_RANK, MAX_SPATIAL = 5, 3
F32, F16, BF16, F64 = 0, 1, 2, 3
NCHW, NHWC = 0, 1
POOL_MAX = 0
SUCCESS, INVALID_ARGUMENT, NOT_AVAILABLE = 0, 1, 3


class TensorDesc(C.Structure):
    _fields_ = [("dtype", C.c_int), ("rank", C.c_int),
                ("dims", C.c_int64 * MAX_RANK), ("strides", C.c_int64 * MAX_RANK)]


class ConvParams(C.Structure):
    _fields_ = [("spatial_dims", C.c_int),
                ("pad_begin", C.c_int64 * MAX_SPATIAL), ("pad_end", C.c_int64 * MAX_SPATIAL),
                ("stride", C.c_int64 * MAX_SPATIAL), ("dilation", C.c_int64 * MAX_SPATIAL),
                ("groups", C.c_int64)]


class PoolParams(C.Structure):
    _fields_ = [("spatial_dims", C.c_int), ("mode", C.c_int),
                ("window", C.c_int64 * MAX_SPATIAL),
                ("pad_begin", C.c_int64 * MAX_SPATIAL), ("pad_end", C.c_int64 * MAX_SPATIAL),
                ("stride", C.c_int64 * MAX_SPATIAL), ("dilation", C.c_int64 * MAX_SPATIAL)]


class Device(C.Structure):
    _fields_ = [("kind", C.c_int), ("ordinal", C.c_int)]


class Exec(C.Structure):
    _fields_ = [("device", Device), ("stream", C.c_void_p), ("workspace", C.c_void_p),
                ("workspace_bytes", C.c_size_t), ("w_version", C.c_uint64)]


# The comparisons with the C++ peer (another process) are exact, so both run
# the reference: oneDNN, the host's first choice, picks its layout by timing
# and may sum in another order from one process to the next.
os.environ["CONVJIT_POLICY"] = "reference"
lib = C.CDLL(LIB_PATH)
lib.convjit_last_error_message.restype = C.c_char_p
lib.convjit_last_backend.restype = C.c_char_p
lib.convjit_version_string.restype = C.c_char_p
P = C.POINTER
lib.convjit_conv_forward.argtypes = [P(ConvParams), P(TensorDesc), C.c_void_p, P(TensorDesc),
                                     C.c_void_p, P(TensorDesc), C.c_void_p, C.c_double,
                                     C.c_double, P(Exec)]
lib.convjit_pool_forward.argtypes = [P(PoolParams), P(TensorDesc), C.c_void_p, P(TensorDesc),
                                     C.c_void_p, C.c_double, C.c_double, P(Exec)]
lib.convjit_conv_output_dims.argtypes = [P(ConvParams), P(TensorDesc), P(TensorDesc), P(C.c_int64)]
lib.convjit_pool_output_dims.argtypes = [P(PoolParams), P(TensorDesc), C.c_int, P(C.c_int64)]
lib.convjit_conv_descriptor_name.argtypes = [P(ConvParams), C.c_int, P(TensorDesc), P(TensorDesc),
                                             P(TensorDesc), C.c_int, C.c_char_p, C.c_size_t,
                                             P(C.c_size_t)]


def desc_of(array, dtype=F32):
    """A descriptor for a numpy array of any strides (numpy strides are bytes)."""
    d = TensorDesc()
    d.dtype, d.rank = dtype, array.ndim
    for i in range(array.ndim):
        d.dims[i] = array.shape[i]
        d.strides[i] = array.strides[i] // array.itemsize
    return d


def ptr(array):
    return array.ctypes.data_as(C.c_void_p)


def check(status):
    if status != SUCCESS:
        raise AssertionError(lib.convjit_last_error_message().decode())


def the_conv():
    p = ConvParams()
    p.spatial_dims = 2
    p.stride[:] = [2, 1, 0]
    p.dilation[:] = [1, 1, 0]
    p.pad_begin[:] = [1, 1, 0]
    p.pad_end[:] = [2, 1, 0]
    p.groups = 2
    return p


def the_pool():
    p = PoolParams()
    p.spatial_dims, p.mode = 2, POOL_MAX
    p.window[:] = [3, 3, 0]
    p.stride[:] = [2, 2, 0]
    p.dilation[:] = [1, 1, 0]
    p.pad_begin[:] = [1, 1, 0]
    p.pad_end[:] = [1, 1, 0]
    return p


def numpy_conv2d(x, w, stride, pad_begin, pad_end, groups):
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad_begin[0], pad_end[0]),
                                       (pad_begin[1], pad_end[1])))
    oh = (h + pad_begin[0] + pad_end[0] - r) // stride[0] + 1
    ow = (wd + pad_begin[1] + pad_end[1] - s) // stride[1] + 1
    y = np.zeros((n, k, oh, ow))
    kg = k // groups
    for f in range(k):
        g = f // kg
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg, i * stride[0]:i * stride[0] + r,
                           j * stride[1]:j * stride[1] + s]
                y[:, f, i, j] = np.einsum("ncrs,crs->n", patch, w[f].astype(np.float64))
    return y


class CtypesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rng = np.random.default_rng(2026)
        cls.x = rng.uniform(-1, 1, (2, 4, 9, 7)).astype(np.float32)
        cls.w = rng.uniform(-1, 1, (6, 2, 3, 3)).astype(np.float32)
        cls.tmp = tempfile.TemporaryDirectory()
        d = Path(cls.tmp.name)
        cls.x.tofile(d / "x.bin")
        cls.w.tofile(d / "w.bin")
        subprocess.run([PEER_PATH, str(d)], check=True)
        cls.y_cpp = np.fromfile(d / "y_cpp.bin", dtype=np.float32)
        cls.p_cpp = np.fromfile(d / "p_cpp.bin", dtype=np.float32)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def conv_via_ctypes(self, x):
        p = the_conv()
        xd, wd = desc_of(x), desc_of(self.w)
        y_dims = (C.c_int64 * 4)()
        check(lib.convjit_conv_output_dims(C.byref(p), C.byref(xd), C.byref(wd), y_dims))
        y = np.full(tuple(y_dims), np.nan, dtype=np.float32)
        check(lib.convjit_conv_forward(C.byref(p), C.byref(xd), ptr(x), C.byref(wd), ptr(self.w),
                                       C.byref(desc_of(y)), ptr(y), 1.0, 0.0, None))
        return y

    def test_conv_matches_cpp_api_exactly(self):
        y = self.conv_via_ctypes(self.x)
        np.testing.assert_array_equal(y.ravel(), self.y_cpp)
        # The host's backend: oneDNN where it loads, else the reference.
        self.assertIn(lib.convjit_last_backend(), (b"onednn", b"reference"))

    def test_conv_matches_numpy(self):
        y = self.conv_via_ctypes(self.x)
        expected = numpy_conv2d(self.x, self.w, (2, 1), (1, 1), (2, 1), 2)
        # f32 storage of f64-accumulated sums of 18 products: half an f32 ulp.
        np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)

    def test_channels_last_view_gives_the_same_result(self):
        x_nhwc = np.ascontiguousarray(self.x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        self.assertFalse(x_nhwc.flags["C_CONTIGUOUS"])
        np.testing.assert_array_equal(self.conv_via_ctypes(x_nhwc).ravel(), self.y_cpp)

    def test_pool_ceil_mode_matches_cpp_api(self):
        p = the_pool()
        xd = desc_of(self.x)
        dims = (C.c_int64 * 4)()
        check(lib.convjit_pool_output_dims(C.byref(p), C.byref(xd), 1, dims))
        y = np.empty(tuple(dims), dtype=np.float32)
        check(lib.convjit_pool_forward(C.byref(p), C.byref(xd), ptr(self.x),
                                       C.byref(desc_of(y)), ptr(y), 1.0, 0.0, None))
        np.testing.assert_array_equal(y.ravel(), self.p_cpp)

    def test_descriptor_name(self):
        p = the_conv()
        y = self.conv_via_ctypes(self.x)
        buf = C.create_string_buffer(512)
        needed = C.c_size_t()
        check(lib.convjit_conv_descriptor_name(C.byref(p), 0, C.byref(desc_of(self.x)),
                                               C.byref(desc_of(self.w)), C.byref(desc_of(y)), 1,
                                               buf, len(buf), C.byref(needed)))
        self.assertTrue(buf.value.startswith(b"conv2d_B_4_9_7_0_252_63_7_1_0_6_2_3_3_0_B_6_"))
        self.assertTrue(buf.value.endswith(b"_2_fwd_pe_2_1_0"), buf.value)

    def test_errors_come_back_as_status_and_message(self):
        p = the_conv()
        p.groups = 3
        y = np.zeros((2, 6, 5, 7), dtype=np.float32)
        status = lib.convjit_conv_forward(C.byref(p), C.byref(desc_of(self.x)), ptr(self.x),
                                          C.byref(desc_of(self.w)), ptr(self.w),
                                          C.byref(desc_of(y)), ptr(y), 1.0, 0.0, None)
        self.assertEqual(status, INVALID_ARGUMENT)
        self.assertIn(b"groups = 3 does not divide", lib.convjit_last_error_message())
        self.assertTrue((y == 0).all())

    def test_cuda_device_reports_not_available(self):
        p = the_conv()
        y = np.zeros((2, 6, 5, 7), dtype=np.float32)
        on_cuda = Exec(Device(1, 0), None, None, 0)
        status = lib.convjit_conv_forward(C.byref(p), C.byref(desc_of(self.x)), ptr(self.x),
                                          C.byref(desc_of(self.w)), ptr(self.w),
                                          C.byref(desc_of(y)), ptr(y), 1.0, 0.0, C.byref(on_cuda))
        self.assertEqual(status, NOT_AVAILABLE, lib.convjit_last_error_message())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
