"""Every test runs with a fresh, private cache path and the default policy;
the library is the build's (CONVJIT_LIBRARY, set by ctest).  Tests that
take `device` run on the host and, where torch sees one, on a CUDA GPU."""

import os

import pytest

# No node-local JIT tier: each test's cache is its private path alone (ctest
# sets the same; this keeps a direct pytest run alike).
os.environ.setdefault("CONVJIT_LOCAL_CACHE_PATH", "none")

import convjit  # noqa: E402

try:
    import torch
    DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    # torch's GPU convolutions compare in full f32, as convjit's f32 runs.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
except ImportError:  # the core's tests need only numpy
    DEVICES = ["cpu"]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


# convjit computes f64 on the host only, and says so for a CUDA tensor (UnsupportedError): the
# tests in f64 check that message on CUDA.
F64_ON_CUDA = "f64 is computed on the host device only"


@pytest.fixture(autouse=True)
def private_cache(tmp_path):
    convjit.set_cache_path([str(tmp_path)])
    convjit.set_policy(None)
    yield
    convjit.set_cache_path(None)
    convjit.set_policy(None)


def pytest_runtest_logreport(report):
    """With CONVJIT_PYTEST_FAILURES set, each failure's reason is appended to that file as it
    happens: tools/gpu-check stops pytest at its time limit, before pytest prints any."""
    path = os.environ.get("CONVJIT_PYTEST_FAILURES")
    if path and report.failed:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext}\n")
