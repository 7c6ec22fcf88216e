"""Weighs the auto policy's choice between the ping-pong tiles and the lead
before them (wgmma_lead_config in dispatcher/backends/jit/wgmma_conv.cpp)
on the analyser's predictions (predictions.json.gz): per run, each
candidate rule's total time (each op times its count) over the previous
lead's, and the fastest of the three configurations per op.  An op's
features come from `convjit describe` (build/convjit, or $CONVJIT): its
128 x 128 and 128 x 64 tiles (a strided bwddata's over its phases) and
its K steps a tile (a strided bwddata's, the mean over its phases), as the
C++ counts them.  python3 rules.py"""
import functools
import gzip
import json
import math
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
CONVJIT = os.environ.get("CONVJIT", os.path.join(HERE, "../../../build/convjit"))
SMS = 132


def cdiv(a, b):
    return (a + b - 1) // b


@functools.lru_cache(None)
def features(name):
    out = subprocess.run([CONVJIT, "describe", "--name", name], capture_output=True, text=True,
                         check=True).stdout
    fields = dict(line.split(None, 1) for line in out.splitlines() if len(line.split(None, 1)) == 2)
    bwd = "bwddata" in fields["op"]
    shape = lambda k: [int(v) for v in fields[k].split("shape [")[1].split("]")[0].split(",")]
    x, w, y = shape("dx" if bwd else "x"), shape("w"), shape("dy" if bwd else "y")
    phases = math.prod(int(v) for v in fields["stride"].strip("[]").split(",")) if bwd else 1
    taps = math.prod(w[2:])
    out_channels, reduced = (x[1], w[0]) if bwd else (y[1], w[1])
    pixels = cdiv((x if bwd else y)[0] * math.prod((x if bwd else y)[2:]), phases)
    tiles = lambda n: phases * cdiv(pixels, 128) * cdiv(out_channels, n)
    return {"T128": tiles(128), "T64": tiles(64), "steps": cdiv(taps * cdiv(reduced, 64), phases),
            "half": cdiv(out_channels, 64) * 64 < cdiv(out_channels, 128) * 128}


def rule(wide_steps=16, sliced_steps=64, short_steps=4):
    def choose(f, before):
        if before.startswith("wgmma256") and f["steps"] >= wide_steps and f["T128"] >= SMS:
            return "auto_before"
        if 2 * f["T64"] <= SMS and f["steps"] >= sliced_steps:
            return "auto_before"
        half = f["half"] or f["T64"] <= SMS or f["steps"] <= short_steps
        return "wgmma128x64p" if half else "wgmma128x128p"
    return choose


def seconds(op):
    return sum(sum(k["seconds"]) / 2 for k in op["kernels"])


def main():
    with gzip.open(os.path.join(HERE, "predictions.json.gz"), "rt") as f:
        runs = json.load(f)
    candidates = {"chosen (16, 64, 4)": rule(), "no exceptions": rule(10**9, 10**9),
                  "wide over 8 steps": rule(wide_steps=8), "wide over 27": rule(wide_steps=27),
                  "no split exception": rule(sliced_steps=10**9),
                  "128 x 64 over 2 steps or fewer": rule(short_steps=2),
                  "128 x 64 over 8 or fewer": rule(short_steps=8)}
    for run, by_variant in runs.items():
        ops = {v: {(o["layer"], o["descriptor"]): o for o in by_variant[v]} for v in by_variant}
        totals = dict.fromkeys(list(candidates) + ["fastest"], 0.0)
        base = 0.0
        for key, before in ops["auto_before"].items():
            if not before["variant"].startswith("wgmma"):
                continue
            times = {v: seconds(ops[v][key]) for v in ("auto_before", "wgmma128x128p",
                                                       "wgmma128x64p") if key in ops[v]}
            n = before["count"]
            base += n * times["auto_before"]
            totals["fastest"] += n * min(times.values())
            for name, choose in candidates.items():
                pick = choose(features(key[1]), before["variant"])
                totals[name] += n * times.get(pick, times["auto_before"])
        print(run + ": " + ", ".join(f"{k} {t / base:.3f}x" for k, t in totals.items()))


if __name__ == "__main__":
    main()
