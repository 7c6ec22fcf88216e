"""convjit.jax against JAX's own ops, under jit, grad and vmap: conv_general_dilated against
jax.lax.conv_general_dilated (1D/2D/3D, every layout, padding, strides, dilation, groups),
the fused conv against its jnp composition, max_pool/avg_pool against lax.reduce_window,
resize against jax.image.resize, batch_norm against a jnp BatchNorm; check_grads in f64;
per-example gradients through vmap; a YOLO11n-like block trained 10 SGD steps with convjit
and with lax to the same losses; bad input raising at trace time.

Tolerances: f32 results within 1e-4 of JAX's (f32 sums of at most a few hundred products of
values in [-1, 1], against XLA's own f32), gradients 1e-3 relative to their largest element
(sums over the batch and the image); bf16 within 2e-2 relative to the largest element (bf16
keeps 8 bits: an output is rounded once, XLA's bf16 conv rounds too)."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

cj = pytest.importorskip("convjit.jax")
from convjit.errors import InvalidArgumentError  # noqa: E402
from conftest import F64_ON_CUDA  # noqa: E402

RNG = np.random.default_rng(2026)


def jax_devices():
    devices = jax.devices("cpu")[:1]
    try:
        devices += jax.devices("cuda")[:1]
    except RuntimeError:  # this jax has no CUDA, or sees no GPU
        pass
    return devices


@pytest.fixture(autouse=True, params=jax_devices(), ids=lambda d: d.platform)
def jax_device(request):
    """Arrays, jit and the references on this device; matmuls and convs in full precision."""
    with jax.default_device(request.param), jax.default_matmul_precision("highest"):
        yield request.param


def rand(*shape, dtype=jnp.float32):
    return jnp.asarray(RNG.uniform(-1, 1, shape)).astype(dtype)


def close(a, b, tol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(1.0, float(np.abs(b).max()))
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


CONVS = [  # lhs, rhs, strides, padding, rhs_dilation, dimension_numbers, groups
    ((2, 3, 9, 9), (4, 3, 3, 3), (2, 1), "SAME", (1, 2), None, 1),
    ((2, 9, 9, 6), (3, 3, 3, 4), (1, 1), [(1, 0), (2, 1)], (1, 1), ("NHWC", "HWIO", "NHWC"), 2),
    ((2, 9, 9, 6), (4, 6, 3, 3), (1, 2), "VALID", (2, 1), ("NHWC", "OIHW", "NCHW"), 1),
    ((2, 5, 11), (4, 5, 3), (2,), "VALID", (2,), None, 1),
    ((3, 7, 6), (3, 2, 6), (1,), "SAME", (1,), ("NWC", "WIO", "NWC"), 3),
    ((1, 2, 5, 6, 7), (4, 1, 2, 3, 2), (1, 2, 1), "SAME", (1, 1, 2), None, 2),
    ((1, 5, 6, 7, 3), (2, 3, 2, 3, 5), (2, 1, 1), [(0, 1), (1, 1), (2, 0)], (1, 1, 1),
     ("NDHWC", "DHWIO", "NDHWC"), 1),
]


def lax_and_convjit(case):
    _, _, strides, padding, dilation, dn, groups = case

    def make(op):
        return lambda x, w: op(x, w, strides, padding, rhs_dilation=dilation,
                               dimension_numbers=dn, feature_group_count=groups)
    return make(jax.lax.conv_general_dilated), make(cj.conv_general_dilated)


@pytest.mark.parametrize("case", CONVS, ids=lambda c: f"{c[0]}x{c[1]}")
def test_conv_general_dilated_jit_grad_vmap(case, jax_device):
    x, w = rand(*case[0]), rand(*case[1])
    theirs, ours = lax_and_convjit(case)
    y = jax.jit(ours)(x, w)
    assert y.devices() == {jax_device}
    close(y, theirs(x, w), 1e-4)
    loss = lambda f: lambda x, w: jnp.sum(jnp.sin(f(x, w)))  # noqa: E731
    for a, b in zip(jax.jit(jax.grad(loss(ours), (0, 1)))(x, w), jax.grad(loss(theirs), (0, 1))(x, w)):
        close(a, b, 1e-3)
    xs = jnp.stack([x, -2 * x, x * x])
    close(jax.vmap(ours, (0, None))(xs, w), jax.vmap(theirs, (0, None))(xs, w), 1e-4)
    # Per-example filter gradients: vmap of grad, one gradient per element.
    per = lambda f: jax.vmap(jax.grad(loss(f), 1), (0, None))  # noqa: E731
    close(per(ours)(xs, w), per(theirs)(xs, w), 1e-3)
    # A batched filter runs per element.
    ws = jnp.stack([w, 2 * w, -w])
    close(jax.vmap(ours)(xs, ws), jax.vmap(theirs)(xs, ws), 1e-4)


@pytest.mark.parametrize("case", CONVS[:3], ids=lambda c: f"{c[0]}x{c[1]}")
def test_conv_general_dilated_in_bf16(case):
    x, w = rand(*case[0], dtype=jnp.bfloat16), rand(*case[1], dtype=jnp.bfloat16)
    theirs, ours = lax_and_convjit(case)
    close(jax.jit(ours)(x, w), theirs(x.astype(jnp.float32), w.astype(jnp.float32)), 2e-2)


def test_check_grads_in_f64(jax_device):
    from jax.test_util import check_grads
    with jax.enable_x64(True):
        x, w = rand(2, 3, 7, 6, dtype=jnp.float64), rand(4, 3, 3, 2, dtype=jnp.float64)
        if jax_device.platform != "cpu":  # convjit computes f64 on the host only: it says so
            with pytest.raises(Exception, match=F64_ON_CUDA):
                jax.block_until_ready(cj.conv_general_dilated(x, w, (1, 1), "SAME"))
            return
        check_grads(lambda x, w: cj.conv_general_dilated(x, w, (2, 1), "SAME",
                                                         rhs_dilation=(1, 2)),
                    (x, w), order=1, modes=("rev",))
        check_grads(lambda x: cj.max_pool(x, (2, 2), (2, 1), "SAME"), (rand(2, 5, 6, 3,
                                                                          dtype=jnp.float64),),
                    order=1, modes=("rev",))
        g, b = rand(3, dtype=jnp.float64) + 2, rand(3, dtype=jnp.float64)
        check_grads(lambda x, g, b: cj.batch_norm(x, g, b, activation="silu")[0],
                    (rand(4, 5, 3, dtype=jnp.float64), g, b), order=1, modes=("rev",))
        check_grads(lambda x: cj.resize(x, (2, 7, 5, 3), "linear", antialias=False),
                    (rand(2, 4, 6, 3, dtype=jnp.float64),), order=1, modes=("rev",))


@pytest.mark.parametrize("activation", [None, "relu", "silu", "sigmoid"])
def test_fused_conv_against_its_composition(activation):
    x, w, bias, residual = rand(2, 3, 8, 8), rand(5, 3, 3, 3), rand(5), rand(2, 5, 8, 8)
    act = {None: lambda v: v, "relu": jax.nn.relu, "silu": jax.nn.silu,
           "sigmoid": jax.nn.sigmoid}[activation]

    def theirs(x, w, bias, residual):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME")
        return act(y + bias[None, :, None, None] + residual)

    def ours(x, w, bias, residual):
        return cj.conv(x, w, padding="SAME", bias=bias, residual=residual, activation=activation)

    close(jax.jit(ours)(x, w, bias, residual), theirs(x, w, bias, residual), 1e-4)
    loss = lambda f: lambda *a: jnp.sum(jnp.cos(f(*a)))  # noqa: E731
    for a, b in zip(jax.grad(loss(ours), (0, 1, 2, 3))(x, w, bias, residual),
                    jax.grad(loss(theirs), (0, 1, 2, 3))(x, w, bias, residual)):
        close(a, b, 1e-3)


def reduce_window(x, init, op, window, strides, padding):
    pads = padding if isinstance(padding, str) else ((0, 0),) + tuple(padding) + ((0, 0),)
    return jax.lax.reduce_window(x, init, op, (1,) + window + (1,), (1,) + strides + (1,), pads)


@pytest.mark.parametrize("window,strides,padding", [
    ((3, 3), (2, 2), "SAME"), ((2, 3), (1, 2), "VALID"), ((3, 2), (2, 1), [(1, 1), (0, 1)]),
    ((3,), (2,), "SAME"), ((2, 2, 3), (1, 2, 1), "VALID")])
def test_pooling_against_reduce_window(window, strides, padding):
    x = rand(2, *([7, 8, 6][:len(window)]), 5)
    ref_max = lambda x: reduce_window(x, -jnp.inf, jax.lax.max, window, strides, padding)  # noqa
    ref_avg = lambda x: reduce_window(x, 0.0, jax.lax.add, window, strides, padding) / np.prod(window)  # noqa
    ours_max = lambda x: cj.max_pool(x, window, strides, padding)  # noqa: E731
    ours_avg = lambda x: cj.avg_pool(x, window, strides, padding)  # noqa: E731
    for ours, theirs in [(ours_max, ref_max), (ours_avg, ref_avg)]:
        close(jax.jit(ours)(x), theirs(x), 1e-5)
        close(jax.grad(lambda x: jnp.sum(jnp.sin(ours(x))))(x),
              jax.grad(lambda x: jnp.sum(jnp.sin(theirs(x))))(x), 1e-4)
        xs = jnp.stack([x, -x])
        close(jax.vmap(ours)(xs), jax.vmap(theirs)(xs), 1e-5)
    # flax's unbatched form; channels first
    close(cj.max_pool(x[0], window, strides, padding), ref_max(x)[0], 1e-6)
    first = jnp.moveaxis(x, -1, 1)
    close(cj.avg_pool(first, window, strides, padding, channel_axis=1),
          jnp.moveaxis(ref_avg(x), -1, 1), 1e-6)


def test_avg_pool_that_counts_only_the_input():
    x = rand(1, 5, 5, 2)
    ours = cj.avg_pool(x, (3, 3), (2, 2), "SAME", count_include_pad=False)
    sums = reduce_window(x, 0.0, jax.lax.add, (3, 3), (2, 2), "SAME")
    counts = reduce_window(jnp.ones_like(x), 0.0, jax.lax.add, (3, 3), (2, 2), "SAME")
    close(ours, sums / counts, 1e-6)


@pytest.mark.parametrize("x_shape,shape,method,antialias", [
    ((2, 5, 7, 3), (2, 10, 14, 3), "nearest", True),
    ((2, 8, 9, 3), (2, 5, 6, 3), "nearest", True),
    ((2, 5, 7, 3), (2, 11, 9, 3), "linear", True),
    ((2, 8, 9, 3), (2, 5, 6, 3), "bilinear", False),
    ((1, 4, 5, 6, 2), (1, 8, 10, 3, 2), "trilinear", False),
    ((2, 7, 3), (2, 12, 3), "linear", True)])
def test_resize_against_jax_image_resize(x_shape, shape, method, antialias):
    x = rand(*x_shape)
    ours = lambda x: cj.resize(x, shape, method, antialias)  # noqa: E731
    theirs = lambda x: jax.image.resize(x, shape, method, antialias)  # noqa: E731
    close(jax.jit(ours)(x), theirs(x), 1e-5)
    close(jax.grad(lambda x: jnp.sum(jnp.sin(ours(x))))(x),
          jax.grad(lambda x: jnp.sum(jnp.sin(theirs(x))))(x), 1e-4)
    xs = jnp.stack([x, 3 * x])
    close(jax.vmap(ours)(xs), jax.vmap(theirs)(xs), 1e-5)


def jnp_batch_norm(x, g, b, rm, rv, training, momentum, eps, channel_axis, activation):
    axes = tuple(a for a in range(x.ndim) if a != channel_axis % x.ndim)
    shape = [1] * x.ndim
    shape[channel_axis % x.ndim] = -1
    if training:
        mean, var = x.mean(axes), x.var(axes)
        n = x.size / x.shape[channel_axis]
        rm, rv = (1 - momentum) * rm + momentum * mean, \
            (1 - momentum) * rv + momentum * var * n / (n - 1)
    else:
        mean, var = rm, rv
    y = (x - mean.reshape(shape)) / jnp.sqrt(var.reshape(shape) + eps) * g.reshape(shape) + \
        b.reshape(shape)
    y = {None: y, "relu": jax.nn.relu(y), "silu": jax.nn.silu(y)}[activation]
    return y, rm, rv


@pytest.mark.parametrize("shape,channel_axis,training,activation", [
    ((4, 6, 5, 3), -1, True, None), ((3, 4, 7), 1, True, "silu"), ((2, 3, 4, 5, 6), 1, False, "relu"),
    ((5, 4, 4, 8), -1, False, None), ((2, 5, 3, 3), 1, True, "relu")])
def test_batch_norm_against_jnp(shape, channel_axis, training, activation):
    x = rand(*shape) * 2 + 1
    c = shape[channel_axis]
    g, b, rm, rv = rand(c) + 1.5, rand(c), rand(c), rand(c) + 1.5
    kw = dict(training=training, momentum=0.3, epsilon=1e-3, channel_axis=channel_axis,
              activation=activation)
    ours = jax.jit(lambda *a: cj.batch_norm(*a, **kw))(x, g, b, rm, rv)
    theirs = jnp_batch_norm(x, g, b, rm, rv, kw["training"], 0.3, 1e-3, channel_axis, activation)
    for a, t in zip(ours, theirs):
        close(a, t, 1e-5)
    loss = lambda f: lambda x, g, b: jnp.sum(jnp.sin(f(x, g, b)))  # noqa: E731
    ours_y = lambda x, g, b: cj.batch_norm(x, g, b, rm, rv, **kw)[0]  # noqa: E731
    theirs_y = lambda x, g, b: jnp_batch_norm(x, g, b, rm, rv, training, 0.3, 1e-3,  # noqa: E731
                                              channel_axis, activation)[0]
    for a, t in zip(jax.grad(loss(ours_y), (0, 1, 2))(x, g, b),
                    jax.grad(loss(theirs_y), (0, 1, 2))(x, g, b)):
        close(a, t, 1e-4)
    # vmap: each element's own statistics in training; inference folds into the batch.
    xs = jnp.stack([x, 2 * x - 1])
    close(jax.vmap(ours_y, (0, None, None))(xs, g, b),
          jax.vmap(theirs_y, (0, None, None))(xs, g, b), 1e-5)


def test_batch_norm_without_scale_shift_or_running_statistics():
    x = rand(6, 4, 5)
    y, rm, rv = cj.batch_norm(x, channel_axis=1)
    assert rm is None and rv is None
    theirs = jnp_batch_norm(x, jnp.ones(4), jnp.zeros(4), jnp.zeros(4), jnp.ones(4), True, 0.1,
                            1e-5, 1, None)[0]
    close(y, theirs, 1e-5)


# ---- a YOLO11n-like block trained with convjit and with lax ---------------------------------

def block(params, x, ops):
    conv, bn, pool, up = ops
    h = conv(x, params["w1"])
    h, _, _ = bn(h, params["g1"], params["b1"])
    skip = h
    h = pool(h)
    h = conv(h, params["w2"])
    h, _, _ = bn(h, params["g2"], params["b2"])
    h = up(h, skip.shape[:3] + (h.shape[3],))
    h = jnp.concatenate([h, skip], axis=-1)
    return jnp.mean(conv(h, params["w3"]) ** 2)


CONVJIT_OPS = (
    lambda x, w: cj.conv_general_dilated(x, w, (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC")),
    lambda x, g, b: cj.batch_norm(x, g, b, activation="silu"),
    lambda x: cj.max_pool(x, (2, 2), (2, 2)),
    lambda x, shape: cj.resize(x, shape, "nearest"))
LAX_OPS = (
    lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                              dimension_numbers=("NHWC", "HWIO", "NHWC")),
    lambda x, g, b: jnp_batch_norm(x, g, b, jnp.zeros(g.shape), jnp.ones(g.shape), True, 0.1,
                                   1e-5, -1, "silu"),
    lambda x: reduce_window(x, -jnp.inf, jax.lax.max, (2, 2), (2, 2), "VALID"),
    lambda x, shape: jax.image.resize(x, shape, "nearest"))


def test_a_yolo_like_block_trains_to_the_same_losses():
    params = {"w1": rand(3, 3, 3, 8) * 0.5, "g1": jnp.ones(8), "b1": jnp.zeros(8),
              "w2": rand(3, 3, 8, 8) * 0.3, "g2": jnp.ones(8), "b2": jnp.zeros(8),
              "w3": rand(1, 1, 16, 4) * 0.3}
    x = rand(2, 16, 16, 3)
    trajectories = []
    for ops in (CONVJIT_OPS, LAX_OPS):
        p, losses = dict(params), []
        step = jax.jit(jax.value_and_grad(lambda p: block(p, x, ops)))
        for _ in range(10):
            loss, grads = step(p)
            losses.append(float(loss))
            p = {k: v - 0.1 * grads[k] for k, v in p.items()}
        trajectories.append(losses)
    ours, theirs = trajectories
    assert ours[-1] < ours[0]  # it trains
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)


# ---- bad input raises when traced ------------------------------------------------------------

def test_bad_input_raises_at_trace_time_with_convjits_message():
    x, w = rand(1, 3, 8, 8), rand(4, 3, 3, 3)
    with pytest.raises(NotImplementedError, match="transposed convolution"):
        jax.jit(lambda x, w: cj.conv_general_dilated(x, w, (1, 1), "SAME",
                                                     lhs_dilation=(2, 2))).trace(x, w)
    with pytest.raises(InvalidArgumentError, match="dtype int32"):
        jax.jit(lambda x, w: cj.conv_general_dilated(x, w, (1, 1), "SAME")).trace(
            x.astype(jnp.int32), w.astype(jnp.int32))
    with pytest.raises(InvalidArgumentError, match="groups"):  # convjit's own check of the name
        jax.jit(lambda x, w: cj.conv_general_dilated(x, w, (1, 1), "SAME",
                                                     feature_group_count=2)).trace(x, w)
    with pytest.raises(NotImplementedError, match="antialias"):
        jax.jit(lambda x: cj.resize(x, (1, 4, 4, 3), "linear")).trace(rand(1, 8, 8, 3))
    with pytest.raises(NotImplementedError, match="cubic"):
        cj.resize(rand(1, 4, 4, 3), (1, 8, 8, 3), "cubic")
