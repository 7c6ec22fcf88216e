"""convjit.pytensor: the Ops run by PyTensor itself (mode FAST_COMPILE: each Op's perform
through convjit's C API) and compiled by its JAX backend (mode "JAX": the dispatch to
convjit.jax), with pytensor.grad through convjit's backward Ops, against JAX's own ops.

PyTensor 3.0.7 (the last for Python 3.11) has no conv2d and no pooling of its own any more
(AbstractConv was removed in 2.37, pool_2d long before), so the independent reference is
jax.lax; conv2d's parameter mapping (border_mode, subsample, filter_flip, filter_dilation,
num_groups) is checked one parameter at a time against it.

Tolerances: as test_jax.py's (f32 against XLA's f32)."""

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
pytensor.config.floatX = "float32"  # before pytensor's JAX dispatch reads it (x64 off)
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

cpt = pytest.importorskip("convjit.pytensor")
from convjit.errors import InvalidArgumentError  # noqa: E402

RNG = np.random.default_rng(2027)
MODES = ["FAST_COMPILE", "JAX"]


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def variable(name, ndim):
    return pt.tensor(name, dtype="float32", shape=(None,) * ndim)


def close(a, b, tol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * max(1.0, float(np.abs(b).max())))


def check(build, reference, arrays, mode, tol=1e-4):
    """build(*variables) -> output; reference(*arrays) -> the same in JAX.  Compares the
    output and the gradients of sum(sin(output))."""
    variables = [variable(f"v{i}", a.ndim) for i, a in enumerate(arrays)]
    out = build(*variables)
    grads = pytensor.grad(pt.sum(pt.sin(out)), variables)
    got = pytensor.function(variables, [out] + grads, mode=mode)(*arrays)
    want = [reference(*arrays)] + list(jax.grad(
        lambda *a: jnp.sum(jnp.sin(reference(*a))), tuple(range(len(arrays))))(*arrays))
    for g, w in zip(got, want):
        close(g, w, tol)


def lax_conv(stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1, flip=False):
    def conv(x, w):
        if flip:
            w = w[:, :, ::-1, ::-1]
        return jax.lax.conv_general_dilated(x, w, stride, pads, rhs_dilation=dilation,
                                            feature_group_count=groups)
    return conv


# conv2d's parameters, one at a time: (kwargs, the lax convolution they mean).
CONV2D_PARAMETERS = [
    (dict(border_mode="valid", filter_flip=False), lax_conv()),
    (dict(border_mode="full", filter_flip=False), lax_conv(pads=((4, 4), (2, 2)))),
    (dict(border_mode="half", filter_flip=False), lax_conv(pads=((2, 2), (1, 1)))),
    (dict(border_mode=2, filter_flip=False), lax_conv(pads=((2, 2), (2, 2)))),
    (dict(border_mode=(1, (0, 2)), filter_flip=False), lax_conv(pads=((1, 1), (0, 2)))),
    (dict(subsample=(2, 1), filter_flip=False), lax_conv(stride=(2, 1))),
    (dict(filter_flip=True), lax_conv(flip=True)),
    (dict(filter_dilation=(1, 2), border_mode="half", filter_flip=False),
     lax_conv(pads=((2, 2), (2, 2)), dilation=(1, 2))),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kwargs,reference", CONV2D_PARAMETERS,
                         ids=[str(k) for k, _ in CONV2D_PARAMETERS])
def test_conv2d_parameters_one_by_one(mode, kwargs, reference):
    x, w = rand(2, 3, 9, 8), rand(4, 3, 5, 3)
    check(lambda X, W: cpt.conv2d(X, W, **kwargs), reference, [x, w], mode)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_conv2d_and_conv3d(mode):
    x, w = rand(2, 6, 7, 7), rand(4, 3, 3, 3)
    check(lambda X, W: cpt.conv2d(X, W, num_groups=2, filter_flip=False),
          lax_conv(groups=2), [x, w], mode)
    x3, w3 = rand(1, 2, 5, 6, 4), rand(3, 2, 2, 3, 2)
    check(lambda X, W: cpt.conv3d(X, W, border_mode="half", subsample=(1, 2, 1)),
          lambda x, w: jax.lax.conv_general_dilated(x, w[:, :, ::-1, ::-1, ::-1], (1, 2, 1),
                                                    ((1, 1), (1, 1), (1, 1))),
          [x3, w3], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pool_mode", ["max", "average_inc_pad", "average_exc_pad"])
def test_pool_2d(mode, pool_mode):
    x = rand(2, 3, 9, 8)
    window, stride, pad = (3, 2), (2, 2), (1, 1)
    pads = ((0, 0), (0, 0), (1, 1), (1, 1))

    def reference(x):
        full = (1, 1) + window
        strides = (1, 1) + stride
        if pool_mode == "max":
            return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, full, strides, pads)
        sums = jax.lax.reduce_window(x, 0.0, jax.lax.add, full, strides, pads)
        if pool_mode == "average_inc_pad":
            return sums / np.prod(window)
        return sums / jax.lax.reduce_window(jnp.ones_like(x), 0.0, jax.lax.add, full, strides,
                                            pads)

    check(lambda X: cpt.pool_2d(X, window, True, stride, pad, pool_mode), reference, [x], mode,
          1e-5)


def jnp_batch_norm(x, g, b, mean, var, epsilon, activation):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / jnp.sqrt(var.reshape(shape) + epsilon) * \
        g.reshape(shape) + b.reshape(shape)
    return {None: y, "relu": jax.nn.relu(y), "silu": jax.nn.silu(y)}[activation]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("activation", [None, "silu"])
def test_batch_normalization_train_and_test(mode, activation):
    x, g, b = rand(4, 3, 5, 6) * 2 + 1, rand(3) + 1.5, rand(3)
    rm, rv = rand(3), rand(3) + 1.5
    axes = (0, 2, 3)

    def train_reference(x, g, b):
        return jnp_batch_norm(x, g, b, x.mean(axes), x.var(axes), 1e-3, activation)

    check(lambda X, G, B: cpt.batch_normalization_train(X, G, B, epsilon=1e-3,
                                                        activation=activation)[0],
          train_reference, [x, g, b], mode)
    check(lambda X, G, B: cpt.batch_normalization_test(X, G, B, rm, rv, epsilon=1e-3,
                                                       activation=activation),
          lambda x, g, b: jnp_batch_norm(x, g, b, rm, rv, 1e-3, activation), [x, g, b], mode)
    # The statistics and the running update (Theano's and PyTorch's: unbiased variance).
    X, G, B = variable("x", 4), variable("g", 1), variable("b", 1)
    outs = cpt.batch_normalization_train(X, G, B, epsilon=1e-3, running_average_factor=0.3,
                                         running_mean=rm, running_var=rv)
    _, mean, invstd, new_mean, new_var = pytensor.function([X, G, B], list(outs), mode=mode)(
        x, g, b)
    n = x.size / 3
    close(mean, x.mean(axes), 1e-6)
    close(invstd, 1 / np.sqrt(x.var(axes) + 1e-3), 1e-5)
    close(new_mean, 0.7 * rm + 0.3 * x.mean(axes), 1e-6)
    close(new_var, 0.7 * rv + 0.3 * x.var(axes) * n / (n - 1), 1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_resize(mode):
    x = rand(2, 3, 5, 7)
    check(lambda X: cpt.resize(X, scale_factor=2), lambda x: jnp.repeat(jnp.repeat(x, 2, 2), 2, 3),
          [x], mode, 1e-6)
    check(lambda X: cpt.resize(X, size=(9, 4), mode="nearest-exact"),
          lambda x: jax.image.resize(x, (2, 3, 9, 4), "nearest"), [x], mode, 1e-6)
    check(lambda X: cpt.resize(X, size=(11, 13), mode="linear"),
          lambda x: jax.image.resize(x, (2, 3, 11, 13), "linear"), [x], mode, 1e-5)


# ---- the plan's YOLO11n-like model, trained in both modes -------------------------------------

def yolo_like(X, W1, G1, B1, W2, G2, B2, W3):
    h = cpt.batch_normalization_train(cpt.conv2d(X, W1, border_mode="half", filter_flip=False),
                                      G1, B1, activation="silu")[0]
    skip = h
    h = cpt.pool_2d(h, (2, 2))
    h = cpt.batch_normalization_train(cpt.conv2d(h, W2, border_mode="half", filter_flip=False),
                                      G2, B2, activation="silu")[0]
    h = pt.concatenate([cpt.resize(h, scale_factor=2), skip], axis=1)
    return pt.mean(cpt.conv2d(h, W3, filter_flip=False) ** 2)


def jax_yolo_like(x, w1, g1, b1, w2, g2, b2, w3):
    def bn(h, g, b):
        return jnp_batch_norm(h, g, b, h.mean((0, 2, 3)), h.var((0, 2, 3)), 1e-4, "silu")
    h = bn(lax_conv(pads=((1, 1), (1, 1)))(x, w1), g1, b1)
    skip = h
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    h = bn(lax_conv(pads=((1, 1), (1, 1)))(h, w2), g2, b2)
    h = jnp.concatenate([jnp.repeat(jnp.repeat(h, 2, 2), 2, 3), skip], axis=1)
    return jnp.mean(lax_conv()(h, w3) ** 2)


def test_the_yolo_like_model_trains_to_the_same_losses_in_every_mode():
    x = rand(2, 3, 16, 16)
    params = [rand(8, 3, 3, 3) * 0.5, np.ones(8, np.float32), np.zeros(8, np.float32),
              rand(8, 8, 3, 3) * 0.3, np.ones(8, np.float32), np.zeros(8, np.float32),
              rand(4, 16, 1, 1) * 0.3]
    # Static shapes, as PyTensor's JAX backend needs (the concatenation's gradient splits by
    # the static sizes).
    X = pt.tensor("x", dtype="float32", shape=x.shape)
    P = [pt.tensor(f"p{i}", dtype="float32", shape=p.shape) for i, p in enumerate(params)]
    cost = yolo_like(X, *P)
    grads = pytensor.grad(cost, P)
    steps = {mode: pytensor.function([X] + P, [cost] + grads, mode=mode) for mode in MODES}
    steps["lax"] = jax.jit(lambda x, *p: (jax_yolo_like(x, *p),) + tuple(
        jax.grad(jax_yolo_like, tuple(range(1, 8)))(x, *p)))
    losses = {}
    for name, step in steps.items():
        p, trace = [a.copy() for a in params], []
        for _ in range(10):
            loss, *g = step(x, *p)
            trace.append(float(loss))
            p = [a - 0.1 * np.asarray(d) for a, d in zip(p, g)]
        losses[name] = trace
    assert losses["JAX"][-1] < losses["JAX"][0]
    np.testing.assert_allclose(losses["FAST_COMPILE"], losses["lax"], rtol=1e-4)
    np.testing.assert_allclose(losses["JAX"], losses["lax"], rtol=1e-4)


def test_bad_parameters_are_named():
    X, W = variable("x", 4), variable("w", 4)
    with pytest.raises(NotImplementedError, match="unshared"):
        cpt.conv2d(X, W, unshared=True)
    with pytest.raises(InvalidArgumentError, match="border_mode"):
        cpt.conv2d(X, W, border_mode="same-ish")
    with pytest.raises(NotImplementedError, match="ignore_border"):
        cpt.pool_2d(X, (2, 2), ignore_border=False)
    with pytest.raises(NotImplementedError, match="axes"):
        cpt.batch_normalization_train(X, np.ones(3), np.zeros(3), axes="per-activation")
