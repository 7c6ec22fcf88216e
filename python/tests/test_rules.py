"""convjit.rules: rules files and documents set from Python, as a setter and as a context
manager, nested, restored, and refused with the core's message when malformed."""

import numpy as np
import pytest

import convjit

RNG = np.random.default_rng(11)
FORCE_REFERENCE = [{"id": "ref", "match": {"op": "conv"}, "force": "reference"}]


def conv_backend(groups=1):
    x = RNG.uniform(-1, 1, (1, 4, 9, 9)).astype(np.float32)
    w = RNG.uniform(-1, 1, (4, 4 // groups, 3, 3)).astype(np.float32)
    y = np.zeros(convjit.conv_output_shape(x.shape, w.shape, groups=groups), np.float32)
    convjit.conv_forward(x, w, y, groups=groups)
    return convjit.last_backend()


@pytest.fixture
def host_backend():
    backend = conv_backend()
    if backend != "onednn":
        pytest.skip("oneDNN, which serves the host without rules, is not available")
    return backend


def test_a_document_forces_its_calls_inside_the_block_only(host_backend):
    with convjit.rules(FORCE_REFERENCE):
        assert conv_backend() == "reference"
    assert conv_backend() == host_backend


def test_rules_select_by_match_and_nest(host_backend, tmp_path):
    grouped = tmp_path / "grouped.json"
    grouped.write_text('{"version": 1, "rules": [{"id": "g", "match": {"groups": {"min": 2}},'
                       ' "deny": "onednn"}]}')
    with convjit.rules(grouped):
        assert conv_backend(groups=1) == host_backend
        assert conv_backend(groups=2) == "reference"
        with convjit.rules():  # no rules at all inside
            assert conv_backend(groups=2) == host_backend
        assert conv_backend(groups=2) == "reference"


def test_as_a_setter_until_set_again(host_backend):
    convjit.rules({"version": 1, "rules": FORCE_REFERENCE})
    try:
        assert conv_backend() == "reference"
    finally:
        convjit.rules(None)
    assert conv_backend() == host_backend


def test_a_bad_source_raises_naming_the_key_and_the_rules_in_force_stay(host_backend):
    with convjit.rules(FORCE_REFERENCE):
        with pytest.raises(convjit.InvalidArgumentError, match="unknown key 'forse'"):
            convjit.rules([{"id": "x", "match": {}, "forse": "jit"}])
        with pytest.raises(convjit.InvalidArgumentError, match="unknown backend 'cuda'"):
            convjit.rules([{"id": "x", "match": {}, "deny": "cuda"}])
        with pytest.raises(convjit.NotAvailableError, match="/nonexistent/r.json"):
            convjit.rules("/nonexistent/r.json")
        with pytest.raises(TypeError, match="a path, a dict or a list"):
            convjit.rules(42)
        assert conv_backend() == "reference"
    assert conv_backend() == host_backend
