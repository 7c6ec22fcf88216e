"""Compacts `convjit analyze --json` runs into predictions.json.gz: per run
(model, batch, direction) and variant, each conv's H200 prediction (its
kernels' blocks, threads, seconds low/high and limiter, the op's roofline
seconds) and, for auto, the variant it chose.
python3 compact.py DIR [OUT], DIR holding MODEL-BATCH-DIRECTION-VARIANT.json:
the runs in DIR replace those of OUT/predictions.json.gz (the same run and
variant; OUT is this script's directory by default), the others are kept.  The second sweep (after the analyser's
fix) reran the two-consumer tiles and auto only: the fix does not change
the one-consumer tiles' predictions."""
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def compact(path):
    ops = []
    for op in json.load(open(path)):
        if "variants" not in op:
            continue
        v = op["variants"][0]
        p = next(q for q in v["predicted"] if q["gpu"] == "H200")
        kernels = [{"entry": e["entry"], "blocks": e["blocks"], "threads": e["threads_per_block"],
                    "seconds": k["seconds"], "limiter": k["limiter"]}
                   for e, k in zip(v["entries"], p["kernels"])]
        ops.append({"layer": op["layer"], "descriptor": op["descriptor"], "count": op["count"],
                    "variant": v["variant"], "roofline_seconds": p["roofline_seconds"],
                    "kernels": kernels})
    return ops


def main(src, out=HERE):
    path = os.path.join(out, "predictions.json.gz")
    runs = {}
    if os.path.exists(path):
        with gzip.open(path, "rt") as f:
            runs = json.load(f)
    for name in sorted(os.listdir(src)):
        if not name.endswith(".json"):
            continue
        model, batch, direction, variant = name[:-5].split("-")
        runs.setdefault(f"{model} batch {batch} {direction}", {})[variant] = \
            compact(os.path.join(src, name))
    with gzip.open(path, "wt") as f:
        json.dump(runs, f, separators=(",", ":"))


if __name__ == "__main__":
    main(*sys.argv[1:3])
