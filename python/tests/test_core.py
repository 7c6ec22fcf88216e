"""convjit's core functions on numpy arrays through DLPack, against torch
and numpy, with the settings, descriptor names, preload and errors."""

import ctypes

import numpy as np
import pytest
import torch

import convjit

RNG = np.random.default_rng(7)


def random(*shape, dtype=np.float32):
    return RNG.uniform(-1, 1, shape).astype(dtype)


def torch_conv(x, w, **kw):
    return torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).numpy()


def test_conv_forward_matches_torch_with_stride_padding_dilation_and_groups():
    x, w = random(2, 6, 11, 9), random(4, 3, 3, 2)
    shape = convjit.conv_output_shape(x.shape, w.shape, stride=(2, 1), padding=(1, 2),
                                      dilation=(1, 2), groups=2)
    y = np.zeros(shape, np.float32)
    convjit.conv_forward(x, w, y, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
    want = torch_conv(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert convjit.last_backend() in ("onednn", "reference")  # oneDNN where it loads


def test_asymmetric_padding_alpha_beta_and_a_channels_last_view():
    x_nhwc = random(1, 5, 7, 3).transpose(0, 3, 1, 2)  # an NHWC view: N, C, H, W = 1, 3, 5, 7
    x = np.ascontiguousarray(x_nhwc)
    w = random(2, 3, 3, 3)
    for source in (x, x_nhwc):
        y = random(1, 2, 4, 6)
        before = y.copy()
        convjit.conv_forward(source, w, y, padding=((0, 1), (1, 0)), alpha=0.5, beta=2.0)
        padded = np.pad(source, ((0, 0), (0, 0), (0, 1), (1, 0)))
        np.testing.assert_allclose(y, 0.5 * torch_conv(np.ascontiguousarray(padded), w) +
                                   2.0 * before, rtol=1e-5, atol=1e-5)


def test_backward_data_filter_and_bias_are_the_adjoints_of_the_forward():
    x, w, dy = random(2, 3, 8, 8, dtype=np.float64), random(4, 3, 3, 3, dtype=np.float64), \
        random(2, 4, 8, 8, dtype=np.float64)
    tx, tw = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    torch.nn.functional.conv2d(tx, tw, padding=1).backward(torch.from_numpy(dy))
    dx, dw, db = np.zeros_like(x), np.zeros_like(w), np.zeros(4)
    convjit.conv_backward_data(dy, w, dx, padding=1)
    convjit.conv_backward_filter(x, dy, dw, padding=1)
    convjit.bias_grad(dy, db)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(db, dy.sum(axis=(0, 2, 3)), rtol=1e-10)
    mx, mw, mb = np.zeros_like(x), np.zeros_like(w), np.zeros(4)
    convjit.conv_backward(x, w, dy, dx=mx, dw=mw, db=mb, padding=1)
    np.testing.assert_array_equal(mx, dx)
    np.testing.assert_array_equal(mw, dw)
    np.testing.assert_array_equal(mb, db)


def test_fused_forward_adds_bias_and_residual_then_the_activation():
    x, w, bias, res = random(1, 3, 6, 6), random(4, 3, 3, 3), random(4), random(1, 4, 6, 6)
    y = np.zeros((1, 4, 6, 6), np.float32)
    convjit.conv_forward(x, w, y, padding=1, activation="silu", bias=bias, residual=res)
    v = torch.from_numpy(torch_conv(x, w, padding=1) + bias.reshape(1, 4, 1, 1) + res)
    np.testing.assert_allclose(y, torch.nn.functional.silu(v).numpy(), rtol=1e-5, atol=1e-5)
    name = convjit.conv_descriptor_name(x, w, y, padding=1, activation="silu", bias=bias)
    assert name.endswith("_fwd_ep_silu_bias")


def test_pools_match_torch_in_every_mode_and_ceil_mode():
    x = random(2, 3, 9, 10)
    tx = torch.from_numpy(x)
    cases = [("max", torch.nn.functional.max_pool2d(tx, 3, 2, 1, ceil_mode=True)),
             ("avg", torch.nn.functional.avg_pool2d(tx, 3, 2, 1, ceil_mode=True,
                                                    count_include_pad=False)),
             ("avg_include_pad", torch.nn.functional.avg_pool2d(tx, 3, 2, 1, ceil_mode=True))]
    for mode, want in cases:
        shape = convjit.pool_output_shape(x.shape, 3, 2, 1, ceil_mode=True, mode=mode)
        assert shape == tuple(want.shape)
        y = np.zeros(shape, np.float32)
        convjit.pool_forward(x, y, window=3, mode=mode, stride=2, padding=1)
        np.testing.assert_allclose(y, want.numpy(), rtol=1e-6, atol=1e-6)
        dy, dx = random(*shape), np.zeros_like(x)
        convjit.pool_backward(x, dy, dx, window=3, mode=mode, stride=2, padding=1)
        t = tx.clone().requires_grad_()
        fn = torch.nn.functional
        out = fn.max_pool2d(t, 3, 2, 1, ceil_mode=True) if mode == "max" else fn.avg_pool2d(
            t, 3, 2, 1, ceil_mode=True, count_include_pad=mode == "avg_include_pad")
        out.backward(torch.from_numpy(dy))
        np.testing.assert_allclose(dx, t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_names_settings_and_preload(tmp_path):
    x, w = random(1, 8, 16, 16), random(8, 8, 3, 3)
    y = np.zeros((1, 8, 16, 16), np.float32)
    name = convjit.conv_descriptor_name(x, w, y, padding=1)
    assert name.startswith("conv2d_1_8_16_16_0_2048_256_16_1_0_8_8_3_3_0_")
    assert convjit.conv_descriptor_name(x, w, y, padding=1, symbolic_batch=True).startswith(
        "conv2d_B_8")
    assert convjit.pool_descriptor_name(x, np.zeros((1, 8, 8, 8), np.float32),
                                        window=2).startswith("maxpool2d_1_8_16_16")
    assert convjit.bias_grad_descriptor_name(y).startswith("biasgrad2d_1_8_16_16")
    assert convjit.preload(name, arch="sm_90") is True
    assert convjit.preload(name, arch="sm_90") is False  # now cached
    assert any(tmp_path.rglob("*sm_90*"))
    with pytest.raises(convjit.InvalidArgumentError, match="not of the form sm_XX"):
        convjit.preload(name, arch="volta")
    with pytest.raises(convjit.InvalidArgumentError, match="is not one of auto"):
        convjit.set_policy("fastest")
    convjit.set_policy("reference")
    convjit.conv_forward(x, w, y, padding=1)
    assert convjit.last_backend() == "reference"
    assert convjit.__version__ == convjit.version()


def test_bad_input_raises_with_convjits_message():
    x, w = random(1, 3, 5, 5), random(2, 3, 3, 3)
    with pytest.raises(convjit.InvalidArgumentError, match="y shape .* should be"):
        convjit.conv_forward(x, w, np.zeros((1, 2, 4, 4), np.float32), padding=1)
    with pytest.raises(convjit.InvalidArgumentError, match="DLPack dtype code 0"):
        convjit.conv_forward(x.astype(np.int32), w, np.zeros((1, 2, 3, 3), np.float32))
    with pytest.raises(convjit.InvalidArgumentError, match="has no __dlpack__"):
        convjit.conv_forward([[1.0]], w, np.zeros((1, 2, 3, 3), np.float32))
    with pytest.raises(convjit.InvalidArgumentError, match="w dtype f32 differs from x dtype f64"):
        convjit.conv_forward(x.astype(np.float64), w, np.zeros((1, 2, 3, 3), np.float32))
    with pytest.raises(convjit.InvalidArgumentError, match="db has 3 elements"):
        convjit.bias_grad(np.zeros((1, 2, 3, 3), np.float32), np.zeros(3, np.float32))
    with pytest.raises(convjit.InvalidArgumentError, match="stride = "):
        convjit.conv_forward(x, w, np.zeros((1, 2, 3, 3), np.float32), stride=(1, 1, 1))


def test_a_w_version_is_an_unsigned_64_bit_promise_the_host_path_needs_not():
    x, w, dy = random(1, 3, 6, 6), random(4, 3, 3, 3), random(1, 4, 6, 6)
    y, y_promised = np.zeros((1, 4, 6, 6), np.float32), np.zeros((1, 4, 6, 6), np.float32)
    convjit.conv_forward(x, w, y, padding=1)
    convjit.conv_forward(x, w, y_promised, padding=1, w_version=2 ** 64 - 1)
    np.testing.assert_array_equal(y_promised, y)
    dx = np.zeros_like(x)
    convjit.conv_backward_data(dy, w, dx, padding=1, w_version=3)
    np.testing.assert_allclose(dx, torch.nn.grad.conv2d_input(
        x.shape, torch.from_numpy(w), torch.from_numpy(dy), padding=1).numpy(),
        rtol=1e-5, atol=1e-5)
    for bad in (-1, 2 ** 64, 1.5, True):
        with pytest.raises(convjit.InvalidArgumentError, match="w_version = "):
            convjit.conv_forward(x, w, y, padding=1, w_version=bad)


class OnCuda:
    """A host array that says it lives on CUDA device 0, as a CUDA array
    would, and records the stream the consumer asked for."""

    def __init__(self, array):
        self.array, self.streams = array, []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.array.__dlpack__()


def has_cuda_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


# On a GPU machine these would be host arrays under CUDA's name, handed to a real driver.
@pytest.mark.skipif(has_cuda_driver(), reason="this machine has a CUDA driver; the test needs "
                                              "one without")
def test_a_cuda_array_without_a_driver_raises_with_convjits_message():
    x, w, y = OnCuda(random(1, 3, 5, 5)), OnCuda(random(2, 3, 3, 3)), OnCuda(
        np.zeros((1, 2, 3, 3), np.float32))
    with pytest.raises(convjit.NotAvailableError, match="(?i)cuda"):
        convjit.conv_forward(x, w, y)
    assert x.streams == [1], "DLPack's legacy default stream, for convjit's default stream"
    with pytest.raises(convjit.NotAvailableError):
        convjit.conv_forward(x, w, y, stream=5)
    assert x.streams[-1] == 5
    with pytest.raises(convjit.InvalidArgumentError, match="different devices"):
        convjit.conv_forward(random(1, 3, 5, 5), w, y)
