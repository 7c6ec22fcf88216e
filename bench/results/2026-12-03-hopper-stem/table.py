"""The Hopper conv with a stem's taps folded into its channels, against auto before it.

python3 table.py DIR > table.txt: DIR holds `convjit analyze --json` runs
named MODEL-BATCH-fwd-autonew.json (auto with the fold) and, for each conv
auto now folds, MODEL-BATCH-fwd-LAYER-VARIANT.json: that conv alone under
the variant auto took before (`--name`, the same build).  Auto before the
change is read from ../2026-12-02-hopper-clusters/predictions.json.gz (its
`autonew` runs); every conv auto does not fold must predict the same there
and here (checked).  python3 table.py predictions.json.gz reads the same
runs from the file `--compact DIR` writes.  Seconds are the H200's and
H100's predictions (mid of low and high), per conv, times its count."""
import gzip
import json
import os
import sys

GPUS = ("H200", "H100 SXM")
BEFORE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "..", "2026-12-02-hopper-clusters", "predictions.json.gz")


def conv(op):
    v = op["variants"][0]
    return {"count": op.get("count", 1), "variant": v["variant"],
            "descriptor": op["descriptor"],
            "seconds": {p["gpu"]: sum(p["seconds"]) / 2 for p in v["predicted"]},
            "roofline": {p["gpu"]: p["roofline_seconds"] for p in v["predicted"]},
            "kernels": {p["gpu"]: [(k["limiter"], sum(k["seconds"]) / 2) for k in p["kernels"]]
                        for p in v["predicted"]}}


def convs(path):
    return {op["layer"]: conv(op) for op in json.load(open(path))
            if "variants" in op and op["descriptor"].startswith("conv")}


def load(src):
    if src.endswith(".gz"):
        with gzip.open(src, "rt") as f:
            return json.load(f)
    runs = {}
    for name in sorted(os.listdir(src)):
        if not name.endswith(".json"):
            continue
        model, batch, direction, rest = name[:-5].split("-", 3)
        run = runs.setdefault(f"{model}-{batch}-{direction}", {"alone": {}})
        if rest == "autonew":
            run["autonew"] = convs(os.path.join(src, name))
        else:
            layer, variant = rest.rsplit("-", 1)
            op = json.load(open(os.path.join(src, name)))[0]
            run["alone"][layer] = conv(op) | {"variant": variant}
    return runs


def total(ops, gpu):
    return sum(op["seconds"][gpu] * op["count"] for op in ops.values())


def table(runs):
    with gzip.open(BEFORE, "rt") as f:
        before = json.load(f)
    for key, run in runs.items():
        old, new = before[key]["autonew"], run["autonew"]
        folded = [l for l in new if l in run["alone"]]
        same = all(abs(old[l]["seconds"][g] - new[l]["seconds"][g]) <= 1e-9
                   for l in new if l not in folded for g in GPUS)
        print(f"## {key}")
        print(f"the convs not folded: {'the same as' if same else 'DIFFER FROM'} before")
        for l in folded:
            alone = run["alone"][l]
            agree = all(abs(alone["seconds"][g] - old[l]["seconds"][g]) <= 1e-9 for g in GPUS)
            print(f"{l}: before {old[l]['variant']} ({'as' if agree else 'NOT as'} run alone "
                  f"now), now {new[l]['variant']} folded")
            for g in GPUS:
                s0, s1, roof = old[l]["seconds"][g], new[l]["seconds"][g], new[l]["roofline"][g]
                kernels = ", ".join(f"{lim} {s * 1e6:.1f}" for lim, s in new[l]["kernels"][g])
                print(f"  {g:9s} {s0 * 1e6:7.1f} -> {s1 * 1e6:6.1f} us: {s1 / s0:.3f}x; "
                      f"roofline share {roof / s0:.3f} -> {roof / s1:.3f} (kernels: {kernels})")
        for g in GPUS:
            t0, t1 = total(old, g), total(new, g)
            roof = sum(op["roofline"][g] * op["count"] for op in new.values())
            print(f"{g:9s} convs {t0 * 1e6:8.0f} us -> {t1 * 1e6:8.0f} us: {t1 / t0:.3f}x; "
                  f"roofline share {roof / t0:.3f} -> {roof / t1:.3f}")
        print()


if __name__ == "__main__":
    if sys.argv[1] == "--compact":
        with gzip.open("predictions.json.gz", "wt") as f:
            json.dump(load(sys.argv[2]), f)
    else:
        table(load(sys.argv[1]))
