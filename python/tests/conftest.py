"""Every test runs on the host with a fresh, private cache path and the
default policy; the library is the build's (CONVJIT_LIBRARY, set by ctest)."""

import pytest

import convjit


@pytest.fixture(autouse=True)
def private_cache(tmp_path):
    convjit.set_cache_path([str(tmp_path)])
    convjit.set_policy(None)
    yield
    convjit.set_cache_path(None)
    convjit.set_policy(None)
