"""convjit.torch's batch_norm and interpolate, and the BatchNorm and Upsample
modules, against torch.nn.functional on random cases (1D/2D/3D, channels_last,
batch 1, channels not a multiple of 8, training and inference, every resize
mode, sizes and fractional scales), gradcheck in f64, the custom ops'
opcheck, a YOLO11n-like block trained through convjit only, and bad input.

Tolerances: f64 1e-10 (the reference accumulates in f64; torch too in f64);
f32 1e-5 of 1 + |value| (torch's f32 statistics over at most a few hundred
values per channel); f16 and bf16 2^-8 and 2^-5 of 1 + |value| (their
storage's rounding), against torch in f32 on the same rounded inputs."""

import random

import pytest
import torch
import torch.nn.functional as TF

import convjit
import convjit.torch as cf

TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5, torch.float16: 2 ** -8,
             torch.bfloat16: 2 ** -5}


def close(got, want, dtype=None):
    tol = TOLERANCE[dtype or got.dtype]
    got, want = got.double(), want.double()
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=tol, atol=tol, equal_nan=True), \
        (got - want).abs().max().item()


def random_input(rng, n, dtype=torch.float64, channels_last=None):
    shape = [rng.choice([1, 2, 3]), rng.choice([1, 3, 5, 11])] + \
        [rng.randint(1, 7) for _ in range(n)]
    shape[2] = max(shape[2], 2)  # more than one value per channel, even at batch 1
    x = torch.randn(shape, dtype=torch.float64).to(dtype)
    if channels_last if channels_last is not None else rng.random() < 0.5:
        x = x.to(memory_format={3: torch.contiguous_format, 4: torch.channels_last,
                                5: torch.channels_last_3d}[x.dim()])
    return x


def affine(rng, c, dtype=torch.float64):
    weight = torch.rand(c, dtype=dtype) + 0.5 if rng.random() < 0.8 else None
    bias = torch.randn(c, dtype=dtype) if rng.random() < 0.8 else None
    return weight, bias


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_torch_in_f64(n, training):
    rng = random.Random(n * 10 + training)
    for _ in range(12):
        x = random_input(rng, n)
        c = x.shape[1]
        weight, bias = affine(rng, c)
        stats = [torch.randn(c, dtype=torch.float64), torch.rand(c, dtype=torch.float64) + 0.1]
        ours, theirs = [s.clone() for s in stats], [s.clone() for s in stats]
        momentum, eps = rng.choice([0.1, 0.03, 1.0]), rng.choice([1e-5, 1e-3])
        got = cf.batch_norm(x, *ours, weight, bias, training, momentum, eps)
        want = TF.batch_norm(x, *theirs, weight, bias, training, momentum, eps)
        close(got, want)
        assert got.stride() == want.stride()
        for a, b in zip(ours, theirs):
            close(a, b)


def test_batch_norm_onnx_running_update_uses_population_variance():
    x = torch.randn(3, 2, 4, dtype=torch.float64)
    y, mean, invstd = torch.empty_like(x), torch.empty(2, dtype=torch.float64), \
        torch.empty(2, dtype=torch.float64)
    running_mean, running_var = torch.ones(2, dtype=torch.float64), torch.ones(2,
                                                                                dtype=torch.float64)
    convjit.batch_norm_forward_training(x, y, running_mean=running_mean, running_var=running_var,
                                        saved_mean=mean, saved_invstd=invstd, momentum=0.9,
                                        onnx_running_stats=True)
    batch_mean = x.mean(dim=(0, 2))
    batch_var = x.var(dim=(0, 2), unbiased=False)
    close(running_mean, 0.9 * 1 + 0.1 * batch_mean)
    close(running_var, 0.9 * 1 + 0.1 * batch_var)
    close(invstd, 1 / torch.sqrt(batch_var + 1e-5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_batch_norm_in_lower_precision(dtype):
    rng = random.Random(5)
    for n in (1, 2, 3):
        x = random_input(rng, n, dtype)
        c = x.shape[1]
        weight, bias = affine(rng, c, torch.float32)
        ours = [torch.zeros(c), torch.ones(c)]
        theirs = [s.clone() for s in ours]
        got = cf.batch_norm(x, *ours, weight, bias, True, 0.1, 1e-5)
        want = TF.batch_norm(x.float(), *theirs, weight, bias, True, 0.1, 1e-5)
        assert got.dtype == dtype
        close(got, want, dtype)
        for a, b in zip(ours, theirs):
            close(a, b, dtype)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("activation", [None, "relu", "silu"])
def test_batch_norm_gradcheck(training, activation):
    x = torch.randn(3, 4, 5, dtype=torch.float64, requires_grad=True)
    weight = (torch.rand(4, dtype=torch.float64) + 0.5).requires_grad_()
    bias = torch.randn(4, dtype=torch.float64, requires_grad=True)
    stats = torch.randn(4, dtype=torch.float64), torch.rand(4, dtype=torch.float64) + 0.5

    def f(x, weight, bias):
        return cf.batch_norm(x, *[s.clone() for s in stats], weight, bias, training,
                             activation=activation)
    assert torch.autograd.gradcheck(f, (x, weight, bias))


def test_fused_activation_equals_the_activation_after_batch_norm():
    x = torch.randn(2, 3, 4, 4, dtype=torch.float64, requires_grad=True)
    weight, bias = torch.rand(3, dtype=torch.float64) + 0.5, torch.randn(3, dtype=torch.float64)
    got = cf.batch_norm(x, None, None, weight, bias, True, activation="silu")
    want = TF.silu(TF.batch_norm(x, None, None, weight, bias, True))
    close(got, want)
    r = torch.randn_like(got)
    close(torch.autograd.grad((got * r).sum(), x)[0], torch.autograd.grad((want * r).sum(), x)[0])


MODES = [("nearest", None), ("nearest-exact", None), ("linear", False), ("linear", True)]


def torch_mode(mode, n):
    return {1: "linear", 2: "bilinear", 3: "trilinear"}[n] if mode == "linear" else mode


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("mode,align_corners", MODES)
def test_interpolate_matches_torch_in_f64(n, mode, align_corners):
    rng = random.Random(n * 7 + len(mode))
    for _ in range(10):
        x = random_input(rng, n)
        if rng.random() < 0.5:
            kw = {"size": [rng.randint(1, 9) for _ in range(n)]}
        else:
            kw = {"scale_factor": [rng.choice([0.5, 0.7, 1.0, 1.5, 2.0, 2.3, 3.0])
                                   for _ in range(n)],
                  "recompute_scale_factor": rng.choice([None, True])}
            if any(int(s * f) < 1 for s, f in zip(x.shape[2:], kw["scale_factor"])):
                continue
        mode_n = torch_mode(mode, n)
        got = cf.interpolate(x, mode=mode_n, align_corners=align_corners, **kw)
        want = TF.interpolate(x, mode=mode_n, align_corners=align_corners, **kw)
        close(got, want)
        assert got.is_contiguous(memory_format=torch.channels_last) == \
            want.is_contiguous(memory_format=torch.channels_last) or x.dim() == 3


@pytest.mark.parametrize("mode,align_corners", MODES)
def test_interpolate_gradcheck(mode, align_corners):
    for n, scale in ((1, 1.6), (2, 2.0), (3, 0.75)):
        x = torch.randn([2, 3] + [4] * n, dtype=torch.float64, requires_grad=True)
        mode_n = torch_mode(mode, n)
        assert torch.autograd.gradcheck(
            lambda x: cf.interpolate(x, scale_factor=scale, mode=mode_n,
                                     align_corners=align_corners), (x,))
        assert torch.autograd.gradgradcheck(
            lambda x: cf.interpolate(x, scale_factor=scale, mode=mode_n,
                                     align_corners=align_corners), (x,))


def test_resize_backward_is_deterministic():
    x = torch.randn(4, 16, 9, 13, requires_grad=True)
    g = torch.randn(4, 16, 23, 31)
    first = torch.autograd.grad(cf.interpolate(x, size=(23, 31), mode="bilinear"), x, g)[0]
    for _ in range(3):
        again = torch.autograd.grad(cf.interpolate(x, size=(23, 31), mode="bilinear"), x, g)[0]
        assert torch.equal(first, again)
    close(first, torch.autograd.grad(TF.interpolate(x, size=(23, 31), mode="bilinear"), x, g)[0],
          torch.float32)


def test_modules_keep_running_statistics_as_torch():
    torch.manual_seed(0)
    for cls, shape in ((torch.nn.BatchNorm1d, (4, 6)), (torch.nn.BatchNorm1d, (4, 6, 5)),
                       (torch.nn.BatchNorm2d, (2, 6, 3, 3)), (torch.nn.BatchNorm3d, (2, 6, 2, 2, 3))):
        for kwargs in ({}, {"momentum": None}, {"affine": False}, {"track_running_stats": False}):
            theirs = cls(6, **kwargs).double()
            ours = cf.replace_modules(torch.nn.Sequential(cls(6, **kwargs).double()))[0]
            ours.load_state_dict(theirs.state_dict())
            assert isinstance(ours, cf.modules.BatchNormMixin)
            for step in range(3):
                x = torch.randn(shape, dtype=torch.float64)
                close(ours(x), theirs(x))
            ours.eval(), theirs.eval()
            x = torch.randn(shape, dtype=torch.float64)
            close(ours(x), theirs(x))
            for key, value in theirs.state_dict().items():
                assert torch.equal(ours.state_dict()[key], value) if value.dtype == torch.long \
                    else torch.allclose(ours.state_dict()[key], value, atol=1e-12), key


def test_upsample_module_and_replacement():
    model = torch.nn.Sequential(torch.nn.Upsample(scale_factor=2, mode="nearest"),
                                torch.nn.Upsample(size=(5, 7), mode="bilinear",
                                                  align_corners=True),
                                torch.nn.Upsample(scale_factor=2, mode="bicubic"))
    with pytest.warns(cf.LeftToTorchWarning, match="mode 'bicubic'"):
        cf.replace_modules(model)
    assert isinstance(model[0], cf.Upsample) and isinstance(model[1], cf.Upsample)
    assert not isinstance(model[2], cf.Upsample)


def test_custom_ops_pass_opcheck():
    if not cf.REGISTERED_AS_CUSTOM_OPS:
        pytest.skip("torch before 2.4 has no custom ops")
    x = torch.randn(2, 3, 4, 5, dtype=torch.float64, requires_grad=True)
    w = torch.rand(3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    ops = torch.ops.convjit
    torch.library.opcheck(ops.batch_norm, (x, w, b, rm, rv, True, 0.1, 1e-5, "silu"))
    torch.library.opcheck(ops.batch_norm, (x, w, b, rm, rv, False, 0.1, 1e-5, None))
    torch.library.opcheck(ops.resize, (x, [7, 3], "linear", "half-pixel", [0.0, 0.0]))
    torch.library.opcheck(ops.resize_backward, (torch.randn(2, 3, 7, 3, dtype=torch.float64),
                                                [2, 3, 4, 5], "nearest", "asymmetric",
                                                [0.0, 0.0]))


class Block(torch.nn.Module):
    """A YOLO11n-like piece: Conv-BN-SiLU, a 2x nearest upsample, concat, Conv-BN-SiLU."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8, eps=1e-3, momentum=0.03)
        self.up = torch.nn.Upsample(scale_factor=2, mode="nearest")
        self.conv2 = torch.nn.Conv2d(11, 5, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(5, eps=1e-3, momentum=0.03)

    def forward(self, x):
        a = TF.silu(self.bn1(self.conv1(x)))
        return TF.silu(self.bn2(self.conv2(torch.cat([self.up(a), x], dim=1))))


def test_yolo_like_block_trains_as_in_torch():
    torch.manual_seed(1)
    theirs = Block().double()
    ours = Block().double()
    ours.load_state_dict(theirs.state_dict())
    cf.replace_modules(ours)
    data = [torch.randn(4, 3, 12, 12, dtype=torch.float64) for _ in range(4)]
    targets = [torch.randn(4, 5, 12, 12, dtype=torch.float64) for _ in range(4)]
    opt_ours = torch.optim.SGD(ours.parameters(), lr=0.05, momentum=0.9)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=0.05, momentum=0.9)
    for x, t in zip(data, targets):
        losses = []
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            loss = TF.mse_loss(model(x), t)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[0] == pytest.approx(losses[1], rel=1e-10)
    for (key, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        assert torch.allclose(a.double(), b.double(), atol=1e-9), key


def test_bad_input_is_named():
    x = torch.randn(2, 3, 4)
    with pytest.raises(convjit.InvalidArgumentError, match="weight has 4 elements; it needs C = 3"):
        cf.batch_norm(x, None, None, torch.ones(4), None, True)
    with pytest.raises(convjit.InvalidArgumentError, match="epsilon = -0.001 must be finite"):
        cf.batch_norm(x, None, None, None, None, True, eps=-1e-3)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        cf.batch_norm(torch.randn(1, 3, 1), None, None, None, None, True)
    with pytest.raises(convjit.InvalidArgumentError, match="x shape\\[0\\] = 0 must be positive"):
        cf.batch_norm(torch.randn(0, 3, 4), torch.zeros(3), torch.ones(3), None, None, False)
    with pytest.raises(convjit.InvalidArgumentError, match="gives an empty output"):
        convjit.resize_output_shape((1, 1, 4), 0.2)
    with pytest.raises(convjit.UnsupportedError, match="mode 'area'"):
        cf.interpolate(x, scale_factor=2, mode="area")
    nan = torch.randn(2, 3, 4)
    nan[1, 0, 2] = float("nan")
    got = cf.batch_norm(nan, None, None, None, None, True)
    want = TF.batch_norm(nan, None, None, None, None, True)
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    close(got, want, torch.float32)
