"""convjit.torch's modules: drop-in state, replace_modules(), and a small
CNN (conv-BN-SiLU-maxpool blocks, a depthwise conv, an upsample and a
concat) trained 20 SGD steps through convjit and through torch: the losses
agree at every step.

Tolerance of the losses: 1e-4 relative in f32 (each step's gradients
differ from torch's by f32 reassociation, about 1e-6 relative, and 20 steps
at learning rate 0.05 compound that far below 1e-4)."""

import copy

import pytest
import torch
from torch import nn

import convjit
import convjit.torch as ct


class Block(nn.Module):
    def __init__(self, cin, cout, stride=1, groups=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = Block(3, 16)
        self.pool = nn.MaxPool2d(2)
        self.down = Block(16, 32, stride=2)
        self.depthwise = Block(32, 32, groups=32)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.fuse = nn.Conv2d(48, 8, 1)
        self.head = nn.AvgPool2d(4)
        self.classify = nn.Linear(8 * 2 * 2, 5)

    def forward(self, x):
        a = self.pool(self.stem(x))
        b = self.up(self.depthwise(self.down(a)))
        y = self.head(self.fuse(torch.cat([a, b], dim=1)))
        return self.classify(y.flatten(1))


def test_modules_keep_torchs_parameters_and_state_dict():
    torch.manual_seed(0)
    ours = ct.Conv2d(4, 6, 3, stride=2, padding=1, groups=2, padding_mode="reflect")
    theirs = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2, padding_mode="reflect")
    theirs.load_state_dict(ours.state_dict())
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    x = torch.randn(2, 4, 9, 9)
    assert torch.allclose(ours(x), theirs(x), atol=1e-5)
    transposed = ct.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
    reference = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
    reference.load_state_dict(transposed.state_dict())
    assert torch.allclose(transposed(x), reference(x), atol=1e-5)
    assert torch.allclose(transposed(x, output_size=[17, 17]), reference(x, output_size=[17, 17]),
                          atol=1e-5)
    pools = [(ct.MaxPool2d(3, 2, 1, ceil_mode=True), nn.MaxPool2d(3, 2, 1, ceil_mode=True),
              (2, 4, 9, 9)),
             (ct.AvgPool2d(3, 2, 1, count_include_pad=False),
              nn.AvgPool2d(3, 2, 1, count_include_pad=False), (2, 4, 9, 9)),
             (ct.MaxPool1d(2), nn.MaxPool1d(2), (2, 4, 9)),
             (ct.AvgPool3d(2), nn.AvgPool3d(2), (1, 2, 4, 4, 4))]
    for mine, torchs, shape in pools:
        z = torch.randn(shape)
        assert torch.allclose(mine(z), torchs(z), atol=1e-6)


def test_replace_modules_swaps_every_conv_and_pool_and_honours_the_predicate():
    model = SmallCnn()
    ct.replace_modules(model, predicate=lambda name, module: name != "fuse")
    assert type(model.stem.conv) is ct.Conv2d and type(model.pool) is ct.MaxPool2d
    assert type(model.head) is ct.AvgPool2d and type(model.fuse) is nn.Conv2d
    ct.replace_modules(model)
    assert type(model.fuse) is ct.Conv2d


def test_training_through_convjit_gives_torchs_losses(device):
    torch.manual_seed(1)
    theirs = SmallCnn().to(device)
    ours = ct.replace_modules(copy.deepcopy(theirs))
    inputs = torch.randn(4, 3, 16, 16, device=device)
    labels = torch.randint(0, 5, (4,), device=device)
    losses = []
    for model in (theirs, ours):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        trace = []
        for _ in range(20):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
            trace.append(loss.item())
        losses.append(trace)
    assert convjit.last_backend() in (("onednn", "reference") if device == "cpu" else ("jit",))
    for step, (want, got) in enumerate(zip(*losses)):
        assert abs(got - want) <= 1e-4 * abs(want), (step, got, want)
    assert losses[1][-1] < losses[1][0], "the model did not learn"


class SubclassedConv(nn.Conv3d):
    """Changes no computation, as torchvision's Conv3DSimple."""

    def describe(self):
        return "mine"


class OverridingConv(nn.Conv2d):
    def forward(self, x):
        return super().forward(x) * 2


def test_subclasses_are_served_keeping_their_class_and_the_rest_is_named():
    model = nn.Sequential(SubclassedConv(2, 4, 3, padding=1), nn.AdaptiveAvgPool3d((2, 1, 1)))
    two_d = nn.Sequential(OverridingConv(2, 2, 1), nn.LPPool2d(2, 2),
                          nn.MaxPool2d(2, return_indices=True), nn.AdaptiveMaxPool2d(3))
    x = torch.randn(2, 2, 4, 5, 6)
    want = model(x)
    ct.replace_modules(model)
    assert isinstance(model[0], SubclassedConv) and isinstance(model[0], ct.modules.ConvMixin)
    assert model[0].describe() == "mine" and type(model[0]).__name__ == "SubclassedConv"
    assert isinstance(model[1], ct.modules.AdaptivePoolMixin)
    convjit.set_policy("reference")  # every call through convjit, or it raises
    assert torch.allclose(model(x), want, atol=1e-5)
    with pytest.warns(ct.LeftToTorchWarning) as caught:
        ct.replace_modules(two_d)
    message = str(caught[0].message)
    assert "left 3 module(s) to torch" in message
    assert "0 (OverridingConv): OverridingConv redefines forward" in message
    assert "1 (LPPool2d): convjit has no power-average pooling" in message
    assert "2 (MaxPool2d): return_indices=True" in message
    assert isinstance(two_d[3], ct.AdaptiveMaxPool2d)


def test_adaptive_pools_with_uniform_windows_are_ordinary_pools():
    for ours, torchs, shape in [
            (ct.AdaptiveAvgPool2d((1, 1)), nn.AdaptiveAvgPool2d((1, 1)), (2, 3, 7, 5)),
            (ct.AdaptiveAvgPool2d((3, None)), nn.AdaptiveAvgPool2d((3, None)), (2, 3, 9, 4)),
            (ct.AdaptiveMaxPool1d(4), nn.AdaptiveMaxPool1d(4), (2, 3, 12)),
            (ct.AdaptiveAvgPool3d(2), nn.AdaptiveAvgPool3d(2), (1, 2, 4, 6, 2))]:
        x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        got, want = ours(x), torchs(x)
        assert torch.allclose(got, want, atol=1e-12)
        assert torch.allclose(torch.autograd.grad(got.sum(), x)[0],
                              torch.autograd.grad(want.sum(), x)[0], atol=1e-12)
    uneven = ct.AdaptiveAvgPool2d(3)
    x = torch.randn(1, 2, 7, 7)
    with pytest.warns(ct.LeftToTorchWarning, match=r"from \(7, 7\) to \(3, 3\) has windows of "
                                                    "two widths"):
        assert torch.allclose(uneven(x), nn.AdaptiveAvgPool2d(3)(x))
