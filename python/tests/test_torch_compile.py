"""convjit's torch.library custom ops under torch's own checks: opcheck of
every op (schema, fake kernel, autograd registration) in f32 and bf16 with
contiguous and channels-last inputs; torch.compile of a CNN with convjit
modules in one graph, with eager's losses and gradients; torch.export
keeping the convjit ops; torch.func.grad and vmap.

Tolerances: compiled and eager run the same convjit calls on the same
operands, so they agree exactly; the only difference inductor may make is
in the ops around them (the loss's sum), hence 1e-6 relative in f32.
"""

import pytest
import torch
from torch import nn

import convjit
import convjit.torch as cf
from conftest import F64_ON_CUDA

pytestmark = pytest.mark.skipif(
    not cf.REGISTERED_AS_CUSTOM_OPS,
    reason=f"torch {torch.__version__} has no torch.library.custom_op (2.4+): the ops run as "
           "autograd.Functions")

OPS = torch.ops.convjit


def _inputs(dtype, channels_last, device, grad=True):
    x = torch.randn(2, 4, 9, 8, device=device, dtype=dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.randn(6, 2, 3, 3, device=device, dtype=dtype)
    b = torch.randn(6, device=device, dtype=dtype)
    return [t.requires_grad_(grad) for t in (x, w, b)]


def _op_cases(dtype, channels_last, device):
    """(op, args) for every convjit custom op, on operands of one dtype and layout."""
    x, w, b = _inputs(dtype, channels_last, device)
    conv = [[2, 1], [1, 0], [1, 2], [1, 2], 2]  # stride, pad begin, pad end, dilation, groups
    y = OPS.conv(x.detach(), w.detach(), b.detach(), *conv)
    dy = torch.randn_like(y).requires_grad_()
    pool = ["max", [3, 2], [2, 2], [1, 0], [1, 1], [1, 1], False]
    py = OPS.pool(x.detach(), *pool)
    dpy = torch.randn_like(py).requires_grad_()
    wt = torch.randn(4, 3, 3, 3, device=device, dtype=dtype, requires_grad=True)
    return [
        (OPS.conv.default, (x, w, b, *conv)),
        (OPS.conv.default, (x, w, None, *conv)),
        (OPS.conv_backward_data.default, (dy, w, list(x.shape), *conv)),
        (OPS.conv_backward_filter.default, (x, dy, list(w.shape), *conv)),
        (OPS.bias_grad.default, (dy,)),
        (OPS.conv_transpose.default, (x, wt, [2, 3, 18, 16], [2, 2], [1, 1], [1, 1], 1)),
        (OPS.pool.default, (x, *pool)),
        (OPS.pool.default, (x, "avg", [3, 3], [2, 2], [1, 1], [1, 1], [1, 1], True)),
        (OPS.pool_backward.default, (x, dpy, *pool[:-1])),
        (OPS.pool_backward.default, (x, dpy, "avg_include_pad", *pool[1:-1])),
    ]


# A max pool's backward has no gradient of its own in convjit (see
# test_double_backward): opcheck's AOT test, which takes one, leaves it out.
def _tests_for(op, args):
    if op is OPS.pool_backward.default and args[2] == "max":
        return ("test_schema", "test_autograd_registration", "test_faketensor")
    return ("test_schema", "test_autograd_registration", "test_faketensor",
            "test_aot_dispatch_dynamic")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_every_op_passes_opcheck(dtype, channels_last, device):
    # bf16's rounding is compared by opcheck's autograd test with torch's
    # own default tolerance for bf16.
    for op, args in _op_cases(dtype, channels_last, device):
        torch.library.opcheck(op, args, test_utils=_tests_for(op, args))


class SmallCnn(nn.Module):
    """Every module type convjit serves, with an activation between them."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.pointwise = nn.Conv2d(8, 16, 1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.avg = nn.AvgPool2d(2)
        self.head = nn.Conv1d(8, 4, 3, padding=1)

    def forward(self, x):
        x = torch.nn.functional.silu(self.stem(x))
        x = self.pool(torch.nn.functional.silu(self.depthwise(x)))
        x = self.avg(self.up(torch.nn.functional.silu(self.pointwise(x))))
        return self.head(x.flatten(2))


def _model(channels_last=False):
    torch.manual_seed(0)
    model = cf.replace_modules(SmallCnn())
    return model.to(memory_format=torch.channels_last) if channels_last else model


def _loss_and_grads(model, x):
    model.zero_grad()
    x = x.detach().requires_grad_()
    loss = model(x).square().mean()
    loss.backward()
    return loss.detach(), [x.grad] + [p.grad for p in model.parameters()]


@pytest.mark.parametrize("channels_last", [False, True])
def test_compile_runs_in_one_graph_with_eagers_losses_and_gradients(channels_last):
    torch._dynamo.reset()
    model = _model(channels_last)
    x = torch.randn(2, 3, 16, 16)
    explained = torch._dynamo.explain(model)(x)
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1
    eager_loss, eager_grads = _loss_and_grads(model, x)
    compiled = torch.compile(model, fullgraph=True)
    for _ in range(2):  # the second call runs the cached compiled graph
        loss, grads = _loss_and_grads(compiled, x)
        torch.testing.assert_close(loss, eager_loss, rtol=1e-6, atol=0)
        for got, want in zip(grads, eager_grads):
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7)


def test_export_keeps_the_convjit_ops():
    model = _model().eval()
    exported = torch.export.export(model, (torch.randn(2, 3, 16, 16),))
    targets = {str(node.target) for node in exported.graph.nodes if node.op == "call_function"}
    assert {"convjit.conv.default", "convjit.pool.default",
            "convjit.conv_transpose.default"} <= targets, targets
    assert not any(t.startswith("aten.convolution") for t in targets), targets
    x = torch.randn(2, 3, 16, 16)
    torch.testing.assert_close(exported.module()(x), model(x), rtol=0, atol=0)


def test_func_grad_matches_autograd():
    x, w, b = (t.detach() for t in _inputs(torch.float64, False, "cpu", grad=False))

    def loss(w, b):
        return cf.max_pool2d(cf.conv2d(x, w, b, padding=1, groups=2), 2).square().sum()

    got = torch.func.grad(loss, argnums=(0, 1))(w, b)
    w.requires_grad_(), b.requires_grad_()
    want = torch.autograd.grad(loss(w, b), (w, b))
    for g, h in zip(got, want):
        torch.testing.assert_close(g, h, rtol=1e-12, atol=1e-12)


def test_double_backward(device):
    def t(*shape):
        return torch.randn(*shape, dtype=torch.float64, device=device, requires_grad=True)

    x, w, b = t(2, 4, 7, 6), t(6, 2, 3, 3), t(6)
    if device == "cuda":  # gradgradcheck needs f64, which convjit computes on the host only
        with pytest.raises(convjit.UnsupportedError, match=F64_ON_CUDA):
            cf.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), groups=2)
        return
    assert torch.autograd.gradgradcheck(
        lambda x, w, b: cf.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), groups=2), (x, w, b))
    assert torch.autograd.gradgradcheck(
        lambda x, w: cf.conv_transpose2d(x, w, stride=2, padding=1), (t(1, 6, 3, 4), w))
    assert torch.autograd.gradgradcheck(lambda x: cf.avg_pool2d(x, 3, 2, 1), (x,))
    y = cf.max_pool2d(x, 2)
    (dx,) = torch.autograd.grad(y.square().sum(), x, create_graph=True)
    with pytest.raises(convjit.UnsupportedError, match="convjit::pool_backward: double backward "
                                                       "through a max pool"):
        dx.sum().backward()


def test_vmap_over_inputs_matches_a_loop():
    x = torch.randn(3, 2, 4, 7, 6)  # a vmapped dim of 3 before N
    w, b = torch.randn(6, 2, 3, 3), torch.randn(6)

    def f(x):
        return cf.avg_pool2d(cf.conv2d(x, w, b, padding=1, groups=2), 2)

    want = torch.stack([f(x[i]) for i in range(3)])
    torch.testing.assert_close(torch.vmap(f)(x), want, rtol=0, atol=0)
    moved = torch.vmap(f, in_dims=1)(x.movedim(0, 1))  # the vmapped dim elsewhere
    torch.testing.assert_close(moved, want, rtol=0, atol=0)


def test_vmap_over_weights_raises_naming_the_op():
    x, w = torch.randn(2, 4, 7, 6), torch.randn(3, 6, 4, 3, 3)
    with pytest.raises(convjit.UnsupportedError, match="convjit::conv.*vmap over w"):
        torch.vmap(lambda w: cf.conv2d(x, w))(w)
