"""Libraries that DaCe itself builds (the `dace` package from PyPI, its CPU code generator)
under convjit's tuned-library loader: the DaCe ABI as LBANN's generated kernels export it,
not as convjit's own export or the hand-written fakes write it.  Each direction's program is
compiled for one small strided, padded, dilated conv, placed in the cache under its
descriptor's name, served by convjit (`tuned-library`, loaded through the DaCe ABI, as the
verbose log says) and compared with convjit's host reference."""

import os
import shutil

import numpy as np
import pytest

import convjit

# DaCe reads ~/.dace.conf, whose settings (a compiler, a GPU target) are not this test's:
# a configuration file that does not exist gives DaCe's defaults.
os.environ["DACE_CONFIG"] = os.path.join(os.path.dirname(__file__), "no-such-dace.conf")
# A python3 without DaCe (a GPU machine's, which tools/gpu-check runs these tests on) skips
# this module, saying so; build/python-env has it pinned.
pytest.importorskip("dace", reason="DaCe is not installed in this python3")
import dace_conv_programs  # noqa: E402  (imports dace, after DACE_CONFIG)

# DaCe's memlet propagation warns about the loops' data-dependent accesses; nothing to act on.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:dace.*")

RNG = np.random.default_rng(37)

# x 2x3x9x8, w 4x3x3x2, stride 2, pad 1, dilation (1, 2): y 2x4x5x4.
SIZES = dict(B=2, C=3, H=9, W=8, K=4, R=3, S=2, OH=5, OW=4, SH=2, SW=2, PH=1, PW=1, DH=1, DW=2)
GEOMETRY = dict(stride=(2, 2), padding=(1, 1), dilation=(1, 2))
SLOTS = {"fwd": ("x", "w", "y"), "bwddata": ("dx", "w", "dy"), "bwdfilt": ("x", "dw", "dy")}
RUN = {"fwd": convjit.conv_forward, "bwddata": convjit.conv_backward_data,
       "bwdfilt": convjit.conv_backward_filter}


def shapes(batch):
    s = SIZES
    return {"x": (batch, s["C"], s["H"], s["W"]), "w": (s["K"], s["C"], s["R"], s["S"]),
            "y": (batch, s["K"], s["OH"], s["OW"])}


def operands(direction, batch):
    """The direction's inputs (random) and output (random, so beta's term is checked)."""
    shape = shapes(batch)
    return {slot: RNG.uniform(-1, 1, shape[slot.lstrip("d")]).astype(np.float32)
            for slot in SLOTS[direction]}


def call(direction, ops, out, **scale):
    """Runs `direction` with `out` as its output, the rest from `ops`."""
    if direction == "fwd":
        RUN[direction](ops["x"], ops["w"], out, **GEOMETRY, **scale)
    elif direction == "bwddata":
        RUN[direction](ops["dy"], ops["w"], out, **GEOMETRY, **scale)
    else:
        RUN[direction](ops["x"], ops["dy"], out, **GEOMETRY, **scale)


def output_slot(direction):
    return {"fwd": "y", "bwddata": "dx", "bwdfilt": "dw"}[direction]


def library_name(direction, batch, symbolic_batch):
    ops = operands(direction, batch)
    x, w, y = (ops[slot] for slot in SLOTS[direction])
    return "lib" + convjit.conv_descriptor_name(x, w, y, direction=direction, **GEOMETRY,
                                                symbolic_batch=symbolic_batch) + ".so"


@pytest.fixture(scope="module")
def dace_libraries(tmp_path_factory):
    """Each direction's concrete library (batch 2), and fwd's symbolic-batch one, built by
    DaCe and published as convjit's loader requires (a private directory, mode 0755)."""
    build = tmp_path_factory.mktemp("dace-build")
    built = {(d, False): dace_conv_programs.build(d, SIZES, build / d) for d in SLOTS}
    built["fwd", True] = dace_conv_programs.build("fwd", SIZES, build / "fwd-symbolic", True)
    return built


def publish(library, directory, name):
    directory.mkdir(mode=0o700, exist_ok=True)
    target = directory / name
    shutil.copyfile(library, target)
    os.chmod(target, 0o755)
    return target


def reference(direction, ops, out, alpha, beta):
    """convjit's host reference on the same operands, and the bound on an f32 sum of L terms
    (L = the reduction length) in any order: 2 L u over the terms' magnitudes, which the
    reference gives on |operands| in f64."""
    convjit.set_policy("reference")
    want = out.copy()
    call(direction, ops, want, alpha=alpha, beta=beta)
    magnitude = np.zeros(out.shape, np.float64)
    call(direction, {k: np.abs(v).astype(np.float64) for k, v in ops.items()}, magnitude,
         alpha=abs(alpha))
    convjit.set_policy(None)
    s = SIZES
    length = (ops["x"].shape[0] * s["OH"] * s["OW"] if direction == "bwdfilt" else
              s["R"] * s["S"] * (s["C"] if direction == "fwd" else s["K"]))
    bound = 2 * length * np.finfo(np.float32).eps * (magnitude + abs(beta) * np.abs(out))
    return want, bound + np.finfo(np.float32).tiny


def run_through_dace(direction, batch, cache, log):
    ops = operands(direction, batch)
    out = ops[output_slot(direction)]
    for alpha, beta in ((1.0, 0.0), (0.5, 0.25)):
        want, bound = reference(direction, ops, out, alpha, beta)
        got = out.copy()
        convjit.set_cache_path([str(cache)])
        convjit.set_verbose(1)
        convjit.set_log_file(str(log))
        try:
            call(direction, ops, got, alpha=alpha, beta=beta)
            served_by = convjit.last_backend()
        finally:
            convjit.set_verbose(None)
            convjit.set_log_file(None)
        assert served_by == "tuned-library", f"{direction} batch {batch}: {served_by}"
        err = np.abs(got.astype(np.float64) - want)
        assert np.all(err <= bound), (
            f"{direction} batch {batch} alpha {alpha} beta {beta}: worst error "
            f"{err.max():.3g} against a bound of {bound.flat[np.argmax(err - bound)]:.3g}")


@pytest.mark.parametrize("direction", list(SLOTS))
def test_a_library_dace_built_serves_its_direction(dace_libraries, direction, tmp_path):
    cache, log = tmp_path / "cache", tmp_path / "convjit.log"
    target = publish(dace_libraries[direction, False], cache,
                     library_name(direction, SIZES["B"], False))
    run_through_dace(direction, SIZES["B"], cache, log)
    assert f"{target}: loaded (DaCe ABI)" in log.read_text()


def test_a_symbolic_batch_library_dace_built_serves_every_batch(dace_libraries, tmp_path):
    cache, log = tmp_path / "cache", tmp_path / "convjit.log"
    target = publish(dace_libraries["fwd", True], cache, library_name("fwd", 1, True))
    assert "_B_" in target.name
    for batch in (1, 3, 5):
        run_through_dace("fwd", batch, cache, log)
    assert log.read_text().count(f"{target}: loaded (DaCe ABI)") == 3


def test_a_dace_library_of_another_direction_is_not_what_serves(dace_libraries, tmp_path):
    """The loader trusts the file name, as DiHydrogen does: a fwd library published under the
    bwddata name computes fwd's sums with bwddata's pointers, so the comparison must fail.
    This is what the tests above would miss if they compared nothing."""
    # Each test runs its own batches: the process's dispatcher keeps what served a descriptor
    # (the batch 2 libraries above) whatever the cache path says later.
    cache, log = tmp_path / "cache", tmp_path / "convjit.log"
    target = publish(dace_libraries["fwd", True], cache, library_name("bwddata", 4, True))
    with pytest.raises(AssertionError, match="worst error"):
        run_through_dace("bwddata", 4, cache, log)
    assert f"{target}: loaded (DaCe ABI)" in log.read_text()
