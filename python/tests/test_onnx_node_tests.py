"""ONNX's own node tests for BatchNormalization, Resize and Upsample (Debian's
libonnx-testdata, installed by tools/setup), run through convjit's core
functions: each test's model gives the attributes, its data set the inputs
and the expected outputs.  Cubic interpolation and tf_crop_and_resize are
not convjit modes: those tests are skipped, saying so.

Tolerance: 1e-5 of 1 + |value| (f32 data; ONNX's reference computes in f32 and
f64, convjit's reference in f64, with coordinates in f32 as PyTorch)."""

import glob
import os

import numpy as np
import pytest

import convjit

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

NODE_TESTS = "/usr/share/libonnx-testdata/data/node"
NAMES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(NODE_TESTS, "test_*"))
               if os.path.basename(p).startswith(("test_batchnorm", "test_resize",
                                                   "test_upsample")))

pytestmark = pytest.mark.skipif(not NAMES, reason=f"no ONNX node tests at {NODE_TESTS}; "
                                "tools/setup installs libonnx-testdata")

NEAREST_MODES = {"floor": "nearest", "ceil": "nearest-ceil",
                 "round_prefer_floor": "nearest-round-prefer-floor",
                 "round_prefer_ceil": "nearest-round-prefer-ceil"}


def load(name):
    model = onnx.load(os.path.join(NODE_TESTS, name, "model.onnx"))
    node = model.graph.node[-1]  # after the Constants some models give roi and scales by
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    data = os.path.join(NODE_TESTS, name, "test_data_set_0")

    def tensors(kind):
        paths = sorted(glob.glob(os.path.join(data, f"{kind}_*.pb")),
                       key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
        out = []
        for path in paths:
            t = onnx.TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            out.append(numpy_helper.to_array(t))
        return out
    # The data set holds the graph's inputs, in order.
    names = [i.name for i in model.graph.input]
    return node, attributes, dict(zip(names, tensors("input"))), names, tensors("output")


def close(got, want):
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def batchnorm(attributes, inputs, names, outputs):
    # Copies: numpy exports only writable arrays through DLPack, and these are read-only.
    x, scale, shift, mean, var = (np.array(inputs[n], dtype=np.float32) for n in names)
    epsilon = attributes.get("epsilon", 1e-5)
    y = np.zeros_like(x)
    if not attributes.get("training_mode", 0):
        convjit.batch_norm_forward_inference(x, y, running_mean=mean, running_var=var,
                                             scale=scale, shift=shift, epsilon=epsilon)
        close(y, outputs[0])
        return
    running_mean, running_var = mean.copy(), var.copy()
    convjit.batch_norm_forward_training(x, y, scale=scale, shift=shift,
                                        running_mean=running_mean, running_var=running_var,
                                        epsilon=epsilon, momentum=attributes.get("momentum", 0.9),
                                        onnx_running_stats=True)
    close(y, outputs[0])
    close(running_mean, outputs[1])
    close(running_var, outputs[2])


def resize(op, attributes, inputs, names, outputs):
    x = np.array(inputs[names[0]], dtype=np.float32)  # a writable copy, as DLPack needs
    mode = attributes.get("mode", b"nearest").decode()
    scales = inputs.get("scales", attributes.get("scales"))
    if scales is not None and not np.size(scales):  # an empty scales input: sizes are given
        scales = None
    if op == "Upsample":  # deprecated: asymmetric floor (nearest) or linear
        coordinates, nearest = "asymmetric", "floor"
    else:
        coordinates = attributes.get("coordinate_transformation_mode", b"half_pixel").decode()
        nearest = attributes.get("nearest_mode", b"round_prefer_floor").decode()
    if mode == "cubic":
        pytest.skip("cubic interpolation is not a convjit resize mode")
    if coordinates == "tf_crop_and_resize":
        pytest.skip("tf_crop_and_resize (a region of interest) is not a convjit coordinate mode")
    y = np.zeros(outputs[0].shape, dtype=np.float32)
    spatial_scales = None
    if scales is not None:
        assert list(scales[:2]) == [1, 1], "convjit resizes spatial dims only"
        spatial_scales = [float(s) for s in scales[2:]]
    convjit.resize_forward(x, y, mode=NEAREST_MODES[nearest] if mode == "nearest" else "linear",
                           coordinates=coordinates.replace("_", "-"), scale=spatial_scales)
    close(y, outputs[0])


@pytest.mark.parametrize("name", NAMES)
def test_onnx_node(name):
    node, attributes, inputs, names, outputs = load(name)
    if node.op_type == "BatchNormalization":
        batchnorm(attributes, inputs, names, outputs)
    else:
        resize(node.op_type, attributes, inputs, names, outputs)
