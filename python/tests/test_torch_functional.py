"""convjit.torch's functions against torch.nn.functional on random cases
(strides, padding including 'same' and 'valid', dilation, groups,
channels_last, unbatched inputs; f32 and f64, f16 and bf16 against f32),
gradcheck in f64 for every op, zero-stride gradients, aten's
convolution_backward, and bad input.

Tolerances: f64 1e-10 (the reference accumulates in f64); f32 1e-4 of the
magnitude (reductions of at most a few hundred products in f32); f16 and
bf16 2^-8 and 2^-5 of 1 + |value| (their storage's rounding, with f32
accumulation), against torch in f32 on the same rounded inputs.
"""

import random

import pytest
import torch
import torch.nn.functional as TF

import convjit
import convjit.torch as cf
from conftest import F64_ON_CUDA

TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-4, torch.float16: 2 ** -8,
             torch.bfloat16: 2 ** -5}


def close(got, want):
    tol = TOLERANCE[got.dtype]
    assert got.dtype == want.dtype or tol > 1e-4
    got, want = got.double(), want.double()
    assert torch.allclose(got, want, rtol=tol, atol=tol), (got - want).abs().max().item()


def random_conv(rng, n):
    groups = rng.choice([1, 1, 2, 3])
    case = {"groups": groups, "cin": groups * rng.choice([1, 2, 4]),
            "cout": groups * rng.choice([1, 2, 3]), "batch": rng.choice([1, 2]),
            "kernel": [rng.choice([1, 2, 3]) for _ in range(n)],
            "stride": [rng.choice([1, 2, 3]) for _ in range(n)],
            "dilation": [rng.choice([1, 2]) for _ in range(n)]}
    case["input"] = [rng.randint(d * (k - 1) + 1, 9 if n < 3 else 6)
                     for k, d in zip(case["kernel"], case["dilation"])]
    case["padding"] = [rng.randint(0, d * (k - 1) // 2)
                       for k, d in zip(case["kernel"], case["dilation"])]
    return case


def conv_tensors(case, n, dtype=torch.float64, channels_last=False):
    x = torch.randn([case["batch"], case["cin"]] + case["input"], dtype=dtype)
    w = torch.randn([case["cout"], case["cin"] // case["groups"]] + case["kernel"], dtype=dtype)
    b = torch.randn(case["cout"], dtype=dtype)
    if channels_last and n == 2:
        x = x.contiguous(memory_format=torch.channels_last)
    return x, w, b


CONVS = {1: (cf.conv1d, TF.conv1d), 2: (cf.conv2d, TF.conv2d), 3: (cf.conv3d, TF.conv3d)}


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_conv_matches_torch_on_random_cases(n, dtype, device):
    rng = random.Random(n * 10 + (dtype == torch.float64))
    mine, theirs = CONVS[n]
    for trial in range(12):
        case = random_conv(rng, n)
        x, w, b = (t.to(device) for t in conv_tensors(case, n, dtype,
                                                       channels_last=trial % 2 == 1))
        kw = dict(stride=case["stride"], padding=case["padding"], dilation=case["dilation"],
                  groups=case["groups"])
        if device == "cuda" and dtype == torch.float64:
            with pytest.raises(convjit.UnsupportedError, match=F64_ON_CUDA):
                mine(x, w, b, **kw)
            return
        close(mine(x, w, b if trial % 3 else None, **kw), theirs(x, w, b if trial % 3 else None,
                                                                 **kw))


def test_same_and_valid_padding_and_unbatched_inputs():
    x, w = torch.randn(2, 4, 9, 8), torch.randn(6, 2, 4, 3)
    for padding in ("same", "valid"):
        close(cf.conv2d(x, w, padding=padding, dilation=(1, 2), groups=2),
              TF.conv2d(x, w, padding=padding, dilation=(1, 2), groups=2))
    close(cf.conv2d(x[0], w, padding="same", groups=2), TF.conv2d(x[0], w, padding="same",
                                                                  groups=2))
    with pytest.raises(convjit.InvalidArgumentError, match="strided convolutions"):
        cf.conv2d(x, w, padding="same", stride=2, groups=2)


def test_channels_last_stays_channels_last():
    x = torch.randn(2, 8, 6, 6).contiguous(memory_format=torch.channels_last)
    y = cf.conv2d(x, torch.randn(8, 8, 3, 3), padding=1)
    assert y.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_against_torch_in_f32(dtype):
    x, w = torch.randn(2, 8, 7, 7).to(dtype), torch.randn(8, 8, 3, 3).to(dtype)
    y = cf.conv2d(x, w, padding=1)
    assert y.dtype == dtype
    close(y, TF.conv2d(x.float(), w.float(), padding=1).to(dtype))
    p = cf.max_pool2d(x, 3, 2, 1)
    close(p, TF.max_pool2d(x.float(), 3, 2, 1).to(dtype))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_conv_transpose_matches_torch(n):
    rng = random.Random(30 + n)
    mine = getattr(cf, f"conv_transpose{n}d")
    theirs = getattr(TF, f"conv_transpose{n}d")
    for _ in range(8):
        groups = rng.choice([1, 2])
        stride, dilation = rng.choice([1, 2, 3]), rng.choice([1, 2])
        kernel, padding = rng.choice([1, 2, 3]), rng.choice([0, 1])
        output_padding = rng.randint(0, max(stride, dilation) - 1)
        x = torch.randn([2, 2 * groups] + [rng.randint(2, 5)] * n, dtype=torch.float64)
        w = torch.randn([2 * groups, rng.choice([1, 3])] + [kernel] * n, dtype=torch.float64)
        b = torch.randn(w.shape[1] * groups, dtype=torch.float64)
        kw = dict(stride=stride, padding=padding, output_padding=output_padding, groups=groups,
                  dilation=dilation)
        try:
            want = theirs(x, w, b, **kw)
        except RuntimeError:
            continue  # a shape torch refuses (padding beyond the output)
        close(mine(x, w, b, **kw), want)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_pools_match_torch(n):
    rng = random.Random(40 + n)
    for _ in range(10):
        kernel = rng.choice([1, 2, 3])
        stride, padding = rng.choice([1, 2, 3]), rng.randint(0, kernel // 2)
        ceil_mode = rng.choice([False, True])
        x = torch.randn([2, 3] + [rng.randint(kernel, 8)] * n)
        close(getattr(cf, f"max_pool{n}d")(x, kernel, stride, padding, 1, ceil_mode),
              getattr(TF, f"max_pool{n}d")(x, kernel, stride, padding, 1, ceil_mode))
        include = rng.choice([False, True])
        close(getattr(cf, f"avg_pool{n}d")(x, kernel, stride, padding, ceil_mode, include),
              getattr(TF, f"avg_pool{n}d")(x, kernel, stride, padding, ceil_mode, include))
    x = torch.randn([1, 2] + [9] * n)
    close(getattr(cf, f"max_pool{n}d")(x, 3, 2, 1, dilation=2),
          getattr(TF, f"max_pool{n}d")(x, 3, 2, 1, dilation=2))


def test_gradcheck_in_f64_for_every_op(device):
    def t(*shape):
        return torch.randn(*shape, dtype=torch.float64, device=device, requires_grad=True)

    checks = [
        (lambda x, w, b: cf.conv1d(x, w, b, stride=2, padding=1, dilation=2), (t(2, 4, 9),
                                                                             t(3, 4, 3), t(3))),
        (lambda x, w, b: cf.conv2d(x, w, b, padding="same", groups=2), (t(1, 4, 5, 6),
                                                                        t(4, 2, 2, 3), t(4))),
        (lambda x, w: cf.conv3d(x, w, stride=(1, 2, 1)), (t(1, 2, 4, 5, 3), t(2, 2, 2, 2, 2))),
        (lambda x, w, b: cf.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
         (t(1, 2, 3, 4), t(2, 3, 3, 3), t(3))),
        (lambda x, w: cf.conv_transpose1d(x, w, groups=2, dilation=2), (t(2, 4, 5), t(4, 1, 3))),
        (lambda x, w: cf.conv_transpose3d(x, w, stride=2), (t(1, 2, 2, 3, 2), t(2, 2, 2, 1, 2))),
        (lambda x: cf.max_pool1d(x, 3, 2, 1, ceil_mode=True), (t(2, 2, 9),)),
        (lambda x: cf.max_pool2d(x, 2, 1, dilation=2), (t(1, 2, 6, 5),)),
        (lambda x: cf.max_pool3d(x, 2), (t(1, 1, 4, 4, 4),)),
        (lambda x: cf.avg_pool1d(x, 3, 2, 1, count_include_pad=False), (t(2, 2, 8),)),
        (lambda x: cf.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (t(1, 2, 7, 6),)),
        (lambda x: cf.avg_pool3d(x, 2, 1), (t(1, 1, 3, 4, 3),)),
    ]
    for function, inputs in checks:
        if device == "cuda":
            with pytest.raises(convjit.UnsupportedError, match=F64_ON_CUDA):
                function(*inputs)
            continue
        assert torch.autograd.gradcheck(function, inputs)


def test_a_zero_strided_gradient_from_sum_backward(device):
    dtype = torch.float64 if device == "cpu" else torch.float32  # f64: the host's only
    x = torch.randn(2, 3, 6, 6, dtype=dtype, device=device, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, dtype=dtype, device=device, requires_grad=True)
    cf.conv2d(x, w, padding=1).sum().backward()
    gx, gw = x.grad, w.grad
    x.grad = w.grad = None
    TF.conv2d(x, w, padding=1).sum().backward()
    close(gx, x.grad)
    close(gw, w.grad)


def test_convolution_backward_matches_aten_and_honours_the_mask():
    x = torch.randn(2, 4, 7, 7, dtype=torch.float64)
    w = torch.randn(6, 2, 3, 3, dtype=torch.float64)
    dy = torch.randn(2, 6, 4, 4, dtype=torch.float64)
    args = ([6], [2, 2], [1, 1], [1, 1], False, [0, 0], 2)
    want = torch.ops.aten.convolution_backward(dy, x, w, *args, [True, True, True])
    got = cf.convolution_backward(dy, x, w, *args, [True, True, True])
    for g, h in zip(got, want):
        close(g, h)
    assert cf.convolution_backward(dy, x, w, *args, [False, True, False])[0::2] == (None, None)
    xt = torch.randn(2, 6, 4, 4, dtype=torch.float64)
    wt = torch.randn(6, 2, 3, 3, dtype=torch.float64)
    dyt = torch.randn(2, 4, 8, 8, dtype=torch.float64)
    targs = (None, [2, 2], [1, 1], [1, 1], True, [1, 1], 2)
    want = torch.ops.aten.convolution_backward(dyt, xt, wt, *targs, [True, True, False])
    got = cf.convolution_backward(dyt, xt, wt, *targs, [True, True, False])
    close(got[0], want[0])
    close(got[1], want[1])


def test_bad_input_raises_with_convjits_message():
    x, w = torch.randn(1, 4, 5, 5), torch.randn(2, 4, 3, 3)
    with pytest.raises(convjit.InvalidArgumentError, match="int32; convjit takes float32"):
        cf.conv2d(x.int(), w.int())
    with pytest.raises(convjit.InvalidArgumentError, match="channel mismatch"):
        cf.conv2d(x, torch.randn(2, 3, 3, 3))
    with pytest.raises(convjit.InvalidArgumentError, match="dtype f64 differs"):
        cf.conv2d(x, w.double())
    with pytest.raises(convjit.UnsupportedError, match="keeps no index tensor"):
        cf.max_pool2d(x, 2, return_indices=True)
    with pytest.raises(convjit.UnsupportedError, match="divisor_override"):
        cf.avg_pool2d(x, 2, divisor_override=3)
    convjit.set_policy("jit")
    with pytest.raises(convjit.NotAvailableError, match="the JIT backend runs on CUDA devices"):
        cf.conv2d(x, w)  # a host tensor under the JIT-only policy: no backend serves it


@pytest.mark.skipif(not cf.REGISTERED_AS_CUSTOM_OPS,
                    reason=f"torch {torch.__version__} has no torch.library.custom_op (2.4+): "
                           "the ops run as autograd.Functions")
def test_the_custom_ops_pass_torchs_opcheck_and_compile(device):
    x = torch.randn(2, 4, 8, 8, device=device, requires_grad=True)
    w = torch.randn(6, 4, 3, 3, device=device, requires_grad=True)
    b = torch.randn(6, device=device, requires_grad=True)
    torch.library.opcheck(torch.ops.convjit.conv.default,
                          (x, w, b, [1, 1], [1, 1], [1, 1], [1, 1], 1))
    torch.library.opcheck(torch.ops.convjit.pool.default,
                          (x, "max", [2, 2], [2, 2], [0, 0], [0, 0], [1, 1], False))

    def f(x, w, b):
        return cf.max_pool2d(cf.conv2d(x, w, b, padding=1), 2).sum()

    compiled = torch.compile(f, fullgraph=True)
    close(compiled(x, w, b), f(x, w, b))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_padding_past_the_filter_extent_as_torch_takes_it(n):
    """Any non-negative padding, in every direction: outputs that see only
    padding are the bias (issue 36, item 5)."""
    rng = random.Random(50 + n)
    mine, theirs = CONVS[n]
    cases = [([1] * n, [1] * n), ([3] + [1] * (n - 1), [1, 2][:n] + [0] * (n - 2))]
    for _ in range(6):
        k = [rng.choice([1, 2, 3]) for _ in range(n)]
        cases.append((k, [rng.randint(0, 2 * kk + 1) for kk in k]))
    for kernel, padding in cases:
        x = torch.randn([2, 4] + [rng.randint(3, 6) for _ in range(n)], dtype=torch.float64,
                        requires_grad=True)
        w = torch.randn([6, 2] + kernel, dtype=torch.float64, requires_grad=True)
        b = torch.randn(6, dtype=torch.float64, requires_grad=True)
        kw = dict(padding=padding, stride=rng.choice([1, 2]), groups=2)
        got, want = mine(x, w, b, **kw), theirs(x, w, b, **kw)
        close(got, want)
        dy = torch.randn_like(want)
        for g, h in zip(torch.autograd.grad(got, (x, w, b), dy),
                        torch.autograd.grad(want, (x, w, b), dy)):
            close(g, h)


def test_the_torch_2_1_path_autograd_functions_over_plain_kernels():
    """torch 2.1 to 2.3 have no custom ops: the same Functions run over the
    plain kernels.  Checked here on the pinned torch."""
    from convjit.torch import _autograd, _kernels
    functions = _autograd.make_functions(_kernels.PLAIN_OPS, _kernels.PLAIN_OPS)
    x = torch.randn(2, 4, 7, 6, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, 2, 3, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(6, dtype=torch.float64, requires_grad=True)
    params = ([2, 1], [1, 0], [1, 2], [1, 1], 2)
    got = functions.Conv.apply(x, w, b, *params)
    want = TF.conv2d(TF.pad(x, [0, 2, 1, 1]), w, b, stride=(2, 1), groups=2)
    close(got, want)
    for g, h in zip(torch.autograd.grad(got.square().sum(), (x, w, b)),
                    torch.autograd.grad(want.square().sum(), (x, w, b))):
        close(g, h)
    pooled = functions.Pool.apply(x, "max", [3, 2], [2, 2], [1, 0], [1, 0], [1, 1], True)
    close(pooled, TF.max_pool2d(x, (3, 2), 2, (1, 0), ceil_mode=True))
    (gx,) = torch.autograd.grad(pooled.sum(), x)
    (hx,) = torch.autograd.grad(TF.max_pool2d(x, (3, 2), 2, (1, 0), ceil_mode=True).sum(), x)
    close(gx, hx)


def test_plain_eager_calls_skip_the_custom_op_and_traced_ones_keep_it():
    """Plain eager calls run the kernels undispatched (the custom op costs
    tens of microseconds a call); fake tensors, torch.func transforms and
    tensor subclasses must still meet the op, or they would read no data."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from convjit.torch._autograd import plain_eager
    x, w = torch.randn(1, 2, 5, 5), torch.nn.Parameter(torch.randn(3, 2, 3, 3))
    assert plain_eager(x, w, None)
    assert not plain_eager(x, w.detach().as_subclass(Subclass))
    plain_w = w.detach()
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(x)
        assert not plain_eager(fake, w)
        assert cf.conv2d(fake, mode.from_tensor(plain_w)).shape == (1, 3, 3, 3)
    torch.func.grad(lambda v: (assert_not_plain(v), cf.conv2d(v, w).sum())[1])(x)
    with torch.no_grad():
        assert not cf.conv2d(x, w).requires_grad


class Subclass(torch.Tensor):
    pass


def assert_not_plain(v):
    from convjit.torch._autograd import plain_eager
    assert not plain_eager(v)


def test_each_layout_of_one_shape_gets_its_own_plan():
    """The kernels keep a geometry's descriptors by shape and strides: one
    shape in three layouts must not share them."""
    base = torch.randn(2, 6, 7, 5, dtype=torch.float64)
    w = torch.randn(4, 6, 3, 3, dtype=torch.float64)
    for x in (base, base.contiguous(memory_format=torch.channels_last),
              base.transpose(2, 3).contiguous().transpose(2, 3), base[:, ::2].repeat(1, 2, 1, 1)):
        close(cf.conv2d(x, w, padding=1), TF.conv2d(x, w, padding=1))
        close(cf.max_pool2d(x, 3, 2, 1), TF.max_pool2d(x, 3, 2, 1))
        x = x.clone().requires_grad_()
        for g, h in zip(torch.autograd.grad(cf.conv2d(x, w, stride=2).square().sum(), x),
                        torch.autograd.grad(TF.conv2d(x, w, stride=2).square().sum(), x)):
            close(g, h)


def test_views_of_a_batch_of_one_keep_their_meaning():
    """A channel slice of a batch of one (autograd's gradient of a
    concatenation) is dense with a batch stride of its parent's: convjit
    names it by the dense strides (a size-1 dim's stride addresses
    nothing), in either memory format, and computes the same."""
    x = torch.randn(1, 4, 9, 9, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 4, 3, 3, dtype=torch.float64)
    for fmt in (torch.contiguous_format, torch.channels_last):
        x0 = x.contiguous(memory_format=fmt)
        def sppf(pool, conv):
            ys = [x0]
            for _ in range(3):
                ys.append(pool(ys[-1], 5, 1, 2))
            return conv(torch.cat(ys, 1)[:, 4:12], w.repeat(1, 2, 1, 1), padding=1)
        got, want = sppf(cf.max_pool2d, cf.conv2d), sppf(TF.max_pool2d, TF.conv2d)
        close(got, want)
        g = torch.randn_like(want)
        close(torch.autograd.grad(got, x, g)[0], torch.autograd.grad(want, x, g)[0])
