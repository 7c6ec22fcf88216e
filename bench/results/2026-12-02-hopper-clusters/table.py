"""The clusters of two (wgmma128x128pc) against auto's choice before it.

python3 table.py DIR > table.txt: DIR holds `convjit analyze --json` runs
named MODEL-BATCH-DIRECTION-VARIANT.json, VARIANT one of `autonew` (auto
with this change), `auto` (auto before it, where it was run before the
change), `wgmma128x128p` and `wgmma128x128pc`.  python3 table.py
predictions.json.gz reads the same runs from the compacted file that
`--compact DIR` writes.  Auto before the change is auto after it with
`wgmma128x128p` in place of every `wgmma128x128pc` it chose (the change
only swaps one for the other); where a run before the change exists, the
table checks that.  Seconds are the H200's and H100's predictions (mid of
low and high), per conv, times its count in the step."""
import gzip
import json
import os
import sys

GPUS = ("H200", "H100 SXM")


def convs(path):
    out = {}
    for op in json.load(open(path)):
        if "variants" not in op or not op["descriptor"].startswith("conv"):
            continue
        v = op["variants"][0]
        out[op["layer"]] = {
            "count": op.get("count", 1), "variant": v["variant"],
            "seconds": {p["gpu"]: sum(p["seconds"]) / 2 for p in v["predicted"]},
            "roofline": {p["gpu"]: p["roofline_seconds"] for p in v["predicted"]},
            "limiter": {p["gpu"]: p["kernels"][-1]["limiter"] for p in v["predicted"]}}
    return out


def load(src):
    if src.endswith(".gz"):
        with gzip.open(src, "rt") as f:
            return json.load(f)
    runs = {}
    for name in sorted(os.listdir(src)):
        if not name.endswith(".json") or os.path.getsize(os.path.join(src, name)) == 0:
            continue
        model, batch, direction, variant = name[:-5].split("-", 3)
        runs.setdefault(f"{model}-{batch}-{direction}", {})[variant] = convs(os.path.join(src, name))
    return runs


def before(run):
    """Auto before the change: its choices with the 128 x 128 ping-pong tile unclustered."""
    out = {}
    for layer, op in run["autonew"].items():
        out[layer] = run["wgmma128x128p"][layer] if op["variant"] == "wgmma128x128pc" else op
    return out


def total(ops, gpu):
    return sum(op["seconds"][gpu] * op["count"] for op in ops.values())


def table(runs):
    for key, run in runs.items():
        if "autonew" not in run or "wgmma128x128p" not in run:
            continue
        old, new = before(run), run["autonew"]
        print(f"## {key}")
        if "auto" in run:
            same = all(abs(run["auto"][l]["seconds"][g] - old[l]["seconds"][g]) <= 1e-9
                       for l in old for g in GPUS)
            print(f"auto before the change, as run: {'matches' if same else 'DIFFERS FROM'} "
                  "the reconstruction")
        for gpu in GPUS:
            t0, t1 = total(old, gpu), total(new, gpu)
            roof = sum(op["roofline"][gpu] * op["count"] for op in new.values())
            print(f"{gpu:9s} convs {t0 * 1e6:8.0f} us -> {t1 * 1e6:8.0f} us: {t1 / t0:.3f}x; "
                  f"roofline share {roof / t0:.3f} -> {roof / t1:.3f}")
        chosen = [l for l, op in new.items() if op["variant"] == "wgmma128x128pc"]
        print(f"{len(chosen)} of {len(new)} convs in clusters (H200: p -> pc us, ratio, limiters)")
        for layer in chosen:
            p, pc = run["wgmma128x128p"][layer], new[layer]
            s0, s1 = p["seconds"]["H200"], pc["seconds"]["H200"]
            print(f"  {layer:26s} {s0 * 1e6:7.1f} -> {s1 * 1e6:7.1f}  {s1 / s0:.2f}x  "
                  f"{p['limiter']['H200']:8s} -> {pc['limiter']['H200']}")
        kept = [l for l, op in new.items() if op["variant"] == "wgmma128x128p"]
        if kept:
            print(f"{len(kept)} kept unclustered: rounding to whole clusters adds a tile to the "
                  "fullest block, or a strided bwddata (H200: p -> pc us, ratio)")
        for layer in kept:
            s0 = run["wgmma128x128p"][layer]["seconds"]["H200"]
            if layer not in run["wgmma128x128pc"]:
                print(f"  {layer:26s} {s0 * 1e6:7.1f}: not served in clusters")
                continue
            s1 = run["wgmma128x128pc"][layer]["seconds"]["H200"]
            print(f"  {layer:26s} {s0 * 1e6:7.1f} -> {s1 * 1e6:7.1f}  {s1 / s0:.2f}x")
        print()


if __name__ == "__main__":
    if sys.argv[1] == "--compact":
        with gzip.open("predictions.json.gz", "wt") as f:
            json.dump(load(sys.argv[2]), f)
    else:
        table(load(sys.argv[1]))
