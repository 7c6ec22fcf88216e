#!/usr/bin/env python3
"""The host's training-step layers under convjit (its default policy: oneDNN
where it serves, else the reference), its reference and PyTorch on the CPU,
side by side in one run and with the same thread count.

For each model it runs `convjit run --json` once per policy (auto, then
reference), then times every distinct op in PyTorch (the pinned torch of
build/python-env) on tensors with the descriptor's own strides, and
prints per op the steady-state times and the ratios, and the totals (each
op counted as often as the step runs it).  It ends with the ops, and the
layers (a layer's forward and backward ops together), where onednn is slower
than PyTorch.

    build/python-env/bin/python bench/host_step.py --threads 2
    build/python-env/bin/python bench/host_step.py --models yolo11n:640 --skip-reference

PyTorch's backward ops are timed as autograd runs them: the convolution's
through aten.convolution_backward with one output selected, the max pool's
from the indices its forward saved, the BatchNorm's through
aten.native_batch_norm_backward (after the activation's own backward where
convjit fuses one), the upsample's through autograd.  A resize in a
coordinate rule PyTorch has no mode for is not timed there ("-").  Asymmetric padding, which PyTorch's
convolution lacks, is applied with F.pad inside the timed call.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

REPO = pathlib.Path(__file__).resolve().parent.parent
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def run_convjit(convjit, model, size, policy, reps, threads):
    env = dict(os.environ, CONVJIT_POLICY=policy, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(
        [convjit, "run", "--model", model, "--imgsz", str(size), "--reps", str(reps), "--json"],
        env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def describe(convjit, name):
    out = subprocess.run([convjit, "describe", "--json", "--name", name], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def tensor(dims, strides, dtype):
    return torch.empty_strided(dims, strides, dtype=dtype).uniform_(-1, 1)


def conv_op(d):
    n = d["spatial_dims"]
    dtype = DTYPES[d["dtype"]]
    x = tensor(d["x"], d["x_strides"], dtype)
    w = tensor(d["w"], d["w_strides"], dtype)
    dy = tensor(d["y"], d["y_strides"], dtype)
    stride, dilation, groups = d["stride"], d["dilation"], d["groups"]
    symmetric = d["pad_begin"] == d["pad_end"]
    padding = d["pad_begin"] if symmetric else [0] * n
    # F.pad takes the last dim first.
    asymmetric = [p for i in reversed(range(n)) for p in (d["pad_begin"][i], d["pad_end"][i])]
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]

    def padded(t):
        return t if symmetric else F.pad(t, asymmetric)

    if d["direction"] == "fwd":
        return lambda: conv(padded(x), w, None, stride, padding, dilation, groups)
    mask = [d["direction"] == "bwddata", d["direction"] == "bwdfilt", False]
    return lambda: torch.ops.aten.convolution_backward(
        dy, padded(x), w, None, stride, padding, dilation, False, [0] * n, groups, mask)


def pool_op(d):
    n = d["spatial_dims"]
    dtype = DTYPES[d["dtype"]]
    x = tensor(d["x"], d["x_strides"], dtype)
    dy = tensor(d["y"], d["y_strides"], dtype)
    k, s, p, dil = d["window"], d["stride"], d["pad_begin"], d["dilation"]
    floor = [(d["x"][2 + i] + 2 * p[i] - dil[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(n)]
    ceil = floor != d["y"][2:]
    if d["mode"] == "max":
        pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[n]
        if d["direction"] == "fwd":
            return lambda: pool(x, k, s, p, dil, ceil)
        _, indices = pool(x, k, s, p, dil, ceil, return_indices=True)
        backward = {2: torch.ops.aten.max_pool2d_with_indices_backward,
                    3: torch.ops.aten.max_pool3d_with_indices_backward}[n]
        return lambda: backward(dy, x, k, s, p, dil, ceil, indices)
    include = d["mode"] == "avg_include_pad"
    pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
    if d["direction"] == "fwd":
        return lambda: pool(x, k, s, p, ceil, include)
    backward = {2: torch.ops.aten.avg_pool2d_backward, 3: torch.ops.aten.avg_pool3d_backward}[n]
    return lambda: backward(dy, x, k, s, p, ceil, include, None)


def bias_op(d):
    dy = tensor(d["y"], d["y_strides"], DTYPES[d["dtype"]])
    dims = [0] + list(range(2, len(d["y"])))
    return lambda: dy.sum(dims)


ACTIVATIONS = {"identity": (lambda t: t, None), "relu": (F.relu, torch.ops.aten.threshold_backward),
               "silu": (F.silu, torch.ops.aten.silu_backward)}


def batchnorm_op(d):
    dtype = DTYPES[d["dtype"]]
    x = tensor(d["x"], d["x_strides"], dtype)
    c, eps, training = d["x"][1], d["epsilon"], d["training"]
    weight, bias = torch.rand(c) + 0.5, torch.randn(c)
    running_mean, running_var = torch.zeros(c), torch.ones(c)
    act, act_backward = ACTIVATIONS[d["activation"]]
    if d["direction"] == "fwd":
        return lambda: act(F.batch_norm(x, running_mean, running_var, weight, bias, training,
                                        0.1, eps))
    dy = tensor(d["y"], d["y_strides"], dtype)
    pre, mean, invstd = torch.ops.aten.native_batch_norm(x, weight, bias, running_mean,
                                                         running_var, training, 0.1, eps)

    def backward():
        g = dy
        if act_backward is torch.ops.aten.silu_backward:
            g = act_backward(dy, pre)
        elif act_backward is not None:
            g = act_backward(dy, pre, 0)
        return torch.ops.aten.native_batch_norm_backward(
            g, x, weight, running_mean, running_var, mean, invstd, training, eps,
            [True, True, True])
    return backward


# convjit's (mode, coordinates) -> torch's interpolate mode and align_corners.
RESIZE_MODES = {("nearest", "asymmetric"): ("nearest", None),
                ("nearest-round-prefer-ceil", "half-pixel"): ("nearest-exact", None),
                ("linear", "half-pixel"): ("linear", False),
                ("linear", "align-corners"): ("linear", True)}


def resize_op(d):
    if (d["mode"], d["coordinates"]) not in RESIZE_MODES:
        return None
    mode, align_corners = RESIZE_MODES[(d["mode"], d["coordinates"])]
    if mode == "linear":
        mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[d["spatial_dims"]]
    x = tensor(d["x"], d["x_strides"], DTYPES[d["dtype"]])
    size, scales = d["y"][2:], [s for s in d["scales"] if s]
    kw = {"scale_factor": scales} if len(scales) == d["spatial_dims"] else {"size": size}

    def forward(t):
        return F.interpolate(t, mode=mode, align_corners=align_corners, **kw)
    if d["direction"] == "fwd":
        return lambda: forward(x)
    x.requires_grad_(True)
    y = forward(x)
    dy = tensor(d["y"], d["y_strides"], DTYPES[d["dtype"]])
    return lambda: torch.autograd.grad(y, x, dy, retain_graph=True)


def torch_ms(d, reps):
    """The median time of the op in PyTorch, or None where PyTorch has no such op."""
    op = {"conv": conv_op, "pool": pool_op, "bias_grad": bias_op, "batchnorm": batchnorm_op,
          "resize": resize_op}[d["op"]](d)
    if op is None:
        return None
    op()  # first call: PyTorch's and oneDNN's one-time work
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        op()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def ratio(torch_time, onednn_time):
    if torch_time is None:
        return float("nan")
    return torch_time / onednn_time if onednn_time > 0 else float("inf")


def report_slower(what, rows):
    """rows: (name, torch ms, convjit ms)."""
    slower = [(name, ratio(t, ms)) for name, t, ms in rows if ratio(t, ms) < 1]
    print(f"{what} slower than PyTorch: {len(slower)} of {len(rows)}")
    for name, r in slower:
        print(f"  {name}: torch/onednn {r:.2f}")


def bench_model(args, model, size):
    """Rounds alternate convjit's whole step and PyTorch's, and each op keeps
    its best round, so a slow spell of a shared machine cannot fall on one
    side only."""
    reference = None if args.skip_reference else run_convjit(
        args.convjit, model, size, "reference", max(1, args.reps // 5), args.threads)
    ref_ms = {(o["descriptor"]): o["steady_ms"] for o in reference["ops"]} if reference else {}
    onednn, torch_best, described = None, {}, {}
    for _ in range(args.rounds):
        run = run_convjit(args.convjit, model, size, "auto", args.reps, args.threads)
        if onednn is None:
            onednn = run
        else:
            for best, o in zip(onednn["ops"], run["ops"]):
                best["steady_ms"] = min(best["steady_ms"], o["steady_ms"])
        for o in run["ops"]:
            name = o["descriptor"]
            if name not in described:
                described[name] = describe(args.convjit, name)
            t = torch_ms(described[name], args.reps)
            torch_best[name] = t if t is None else min(torch_best.get(name, t), t)
    totals = {"onednn": 0.0, "reference": 0.0, "torch": 0.0}
    layers = {}  # layer: [convjit ms, torch ms], every op it runs, in step order
    print(f"\n{model} at {size}, batch 1, {args.threads} threads (ms: median of {args.reps} "
          f"calls, best of {args.rounds} rounds; ratios are times over convjit's)")
    print(f"{'layer':28} {'op':8} {'served by':10} {'convjit':>9} {'reference':>10} "
          f"{'torch':>9} {'ref/convjit':>11} {'torch/convjit':>13}")
    for o in onednn["ops"]:
        t = torch_best[o["descriptor"]]
        if t is None:  # not timed in PyTorch: left out of both totals
            print(f"{o['layer'][:28]:28} {o['direction']:8} {o['backend']:10} "
                  f"{o['steady_ms']:9.3f} {'':>10} {'-':>9}")
            continue
        r = ref_ms.get(o["descriptor"])
        count = o["count"]
        totals["onednn"] += o["steady_ms"] * count
        totals["torch"] += t * count
        totals["reference"] += (r or 0.0) * count
        layer = layers.setdefault(o["layer"], [0.0, 0.0])
        layer[0] += o["steady_ms"] * count
        layer[1] += t * count
        ref_text = f"{r:.3f}" if r is not None else "-"
        ref_ratio = f"{r / o['steady_ms']:.1f}" if r else "-"
        print(f"{o['layer'][:28]:28} {o['direction']:8} {o['backend']:10} {o['steady_ms']:9.3f} "
              f"{ref_text:>10} {t:9.3f} {ref_ratio:>11} {ratio(t, o['steady_ms']):13.2f}")
    ref_total = f"{totals['reference']:.1f}" if reference else "-"
    ref_ratio = f"{totals['reference'] / totals['onednn']:.1f}" if reference else "-"
    print(f"{'step total':28} {'':8} {'':10} {totals['onednn']:9.1f} {ref_total:>10} "
          f"{totals['torch']:9.1f} {ref_ratio:>11} {totals['torch'] / totals['onednn']:13.2f}")
    report_slower("ops", [(f"{o['layer']} {o['direction']}", torch_best[o["descriptor"]],
                           o["steady_ms"]) for o in onednn["ops"]])
    report_slower("layers (each layer's ops together)",
                  [(name, t, ms) for name, (ms, t) in layers.items()])
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--convjit", default=str(REPO / "build" / "convjit"))
    parser.add_argument("--models", default="yolo11n:640,resnet50:224",
                        help="model:size, comma-separated")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds of convjit and PyTorch; each op keeps its best")
    parser.add_argument("--skip-reference", action="store_true",
                        help="skip the reference (minutes per model at full size)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, "
          f"mkldnn {'on' if torch.backends.mkldnn.is_available() else 'off'}")
    for spec in args.models.split(","):
        model, size = spec.split(":")
        bench_model(args, model, int(size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
