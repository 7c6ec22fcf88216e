"""torchvision's classification, video and segmentation models (random
weights, nothing downloaded) forward and backward through
replace_modules, in eval mode, against the same model in f64 as the truth,
beside f32 torch.

Which models: every one the pinned torchvision lists with
CONVJIT_TORCHVISION_MODELS=all (about 30 minutes on 2 cores; its output is
committed under bench/results/), else a set that holds every kind of
layer the full set has: 11x11 stride 4 (alexnet), 7x7 and 5x5 depthwise
(convnext_tiny, efficientnet_b0), 1x7/7x1 and count_include_pad average
pools (inception_v3), groups (resnext50_32x4d, regnet_y_400mf,
shufflenet_v2_x0_5), ceil_mode pools (googlenet, squeezenet1_0), dilation
(deeplabv3_resnet50), uniform and uneven adaptive pools (densenet121,
mnasnet0_5, alexnet), and 3D convolutions of 1x3x3, 3x1x1 and 3x7x7
(r2plus1d_18, mc3_18, r3d_18).

Piecewise activations (ReLU, ReLU6, hardswish, hardsigmoid) are swapped
for smooth ones on every side alike: one pre-activation 1e-7 from zero
flips on f32 rounding and moves a gradient by O(1) on either side.

Tolerance: per kind (the output, the input gradient, the parameter
gradients), ||ours - truth|| / ||truth|| over the kind's tensors taken as
one vector is at most twice f32 torch's plus 1e-5 where f32 torch's is
rounding (below 1e-5); where torch's is above that, chance decides it (see
below) and ours need only be below 1e-3, or below twice torch's where that
is larger (the input gradients of MViT v1, 1.4e-3 on both sides, and of
S3D, 5.7e-3). Each tensor's own (its
norm floored at 1e-3 of the kind's largest: a gradient that is zero in
exact arithmetic is noise on every side) is below 5e-2.  One vector, not
the worst tensor: a max pool window whose two largest values lie within
f32 rounding routes its gradient by chance on either side, and put
inception_v3's worst parameter gradient 1.1e-3 off in convjit against
3.4e-4 in torch in one run; a wrong formula moves a tensor by O(1).
inception_v3's input gradient is such a kind: torch's is 1.5e-4, a
hundred times rounding, and convjit's was 1.9e-4 in the sweep and 3.6e-4
in a CI run, as the thread schedule rounded the ties."""

import contextlib
import copy
import os
import warnings

import pytest
import torch
from torch import nn
from torchvision import models

import convjit.torch as ct
from f64_truth import norm_floor, relative, relative_all

ROUNDING = 1e-5  # f32 rounding over these depths; torch's is 2e-6 or less where no tie routes
FULL = os.environ.get("CONVJIT_TORCHVISION_MODELS") == "all"
KINDS = {"classification": models, "video": models.video,
         "segmentation": models.segmentation}
SWEEP = ["alexnet", "convnext_tiny", "efficientnet_b0", "inception_v3", "resnext50_32x4d",
         "regnet_y_400mf", "shufflenet_v2_x0_5", "googlenet", "squeezenet1_0",
         "deeplabv3_resnet50", "densenet121", "mnasnet0_5", "r2plus1d_18", "mc3_18", "r3d_18"]
ALL = [(kind, name) for kind, module in KINDS.items()
       for name in models.list_models(module=module)]
CASES = ALL if FULL else [(kind, name) for kind, name in ALL if name in SWEEP]

# Input sizes: the smallest each model takes comfortably.
SIZE = {"inception_v3": 80, "googlenet": 64, "s3d": 224}  # s3d: its last pool is 2x7x7
FIXED = {"vit": 224, "maxvit": 224}  # position embeddings and window grids
FRAMES = {"s3d": 16, "mvit_v1_b": 16, "mvit_v2_s": 16}


def _input(kind, name):
    side = next((s for prefix, s in FIXED.items() if name.startswith(prefix)),
                SIZE.get(name, 64))
    if kind == "video":
        frames = FRAMES.get(name, 4)
        side = 224 if name.startswith("mvit") else side
        return torch.rand(1, 3, frames, side, side)
    return torch.rand(1, 3, side, side)


def _build(kind, name):
    kwargs = {"weights": None}
    if kind == "segmentation":
        kwargs["weights_backbone"] = None
    if name in ("inception_v3", "googlenet"):
        kwargs["aux_logits"] = False
        kwargs["init_weights"] = True
    torch.manual_seed(0)
    return _no_zero_weights(models.get_model(name, **kwargs).eval())


def _no_zero_weights(model):
    """Zero-initialised weights (the ViTs' heads) drawn at random instead: a
    zero head makes the output and every gradient but its own zero, and the
    comparison would compare nothing."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0, 0.02)
    return model


SMOOTH = {nn.ReLU: nn.SiLU, nn.ReLU6: nn.SiLU, nn.Hardswish: nn.SiLU, nn.Hardsigmoid: nn.Sigmoid}


def _smooth(module):
    """Piecewise activation modules swapped for smooth ones, in place."""
    for parent in module.modules():
        for child_name, child in list(parent.named_children()):
            smooth = next((s for cls, s in SMOOTH.items() if isinstance(child, cls)), None)
            if smooth is not None:
                setattr(parent, child_name, smooth())
    return module


@contextlib.contextmanager
def _smooth_functional_relu():
    """torchvision's F.relu calls (densenet, googlenet, inception) as SiLU."""
    relu = torch.nn.functional.relu
    torch.nn.functional.relu = lambda x, inplace=False: torch.nn.functional.silu(x)
    try:
        yield
    finally:
        torch.nn.functional.relu = relu


def _run(model, x):
    model.zero_grad()
    x = x.detach().requires_grad_()
    y = model(x)
    y = y["out"] if isinstance(y, dict) else y
    (y * torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
    return {"output": [y.detach()], "input gradient": [x.grad],
            "parameter gradients": [p.grad for p in model.parameters() if p.grad is not None]}


@pytest.mark.parametrize("kind,name", CASES, ids=[name for _, name in CASES])
def test_model_against_f64(kind, name):
    base = _smooth(_build(kind, name))
    x = _input(kind, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ct.LeftToTorchWarning)
        ours = ct.replace_modules(copy.deepcopy(base))
    left = [str(w.message) for w in caught if issubclass(w.category, ct.LeftToTorchWarning)]
    with _smooth_functional_relu():
        truth = _run(copy.deepcopy(base).double(), x.double())
        theirs = _run(base, x)
        mine = _run(ours, x)
    report = []
    for key in truth:
        assert len(mine[key]) == len(truth[key]) > 0, key
        ours_err, torch_err = relative_all(mine[key], truth[key]), relative_all(theirs[key],
                                                                               truth[key])
        floor = norm_floor(truth[key])
        worst = max(relative(m, w, floor) for m, w in zip(mine[key], truth[key]))
        report.append(f"{key}: convjit {ours_err:.2e}, torch {torch_err:.2e} (convjit's worst "
                      f"tensor {worst:.1e})")
        bound = 2 * torch_err + ROUNDING if torch_err < ROUNDING else max(1e-3, 2 * torch_err)
        assert ours_err <= bound, (key, report)
        assert worst < 5e-2, (key, report)
    print(f"{name}: " + "; ".join(report) + ("; left to torch: " + " ".join(left) if left
                                                else ""))
