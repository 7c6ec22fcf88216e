"""The Hopper conv's K step of 16 or 32 channels where the conv reduces no more, against the
64-channel step before it, then its 64-filter tiles' N of 32 where the output has 32 channels
or fewer: the analyser's predictions.

python3 table.py DIR > table.txt: DIR/before, DIR/after and DIR/tile hold `convjit analyze
--json` runs: before, the build of the narrow step with the step pinned to 64 channels;
after, that build; tile, the build of the 32-filter tile.  Each is named
MODEL-BATCH-DIRECTION-auto.json (`--model`, auto's choice per op) and
MODEL-BATCH-DIRECTION-LAYER-VARIANT.json (one conv, `--name`, under VARIANT).
python3 table.py predictions.json.gz reads the same runs from the file `--compact DIR`
writes.  Per change and run, the convs whose prediction moved, and the run's totals.
Seconds are the H200's and H100's predictions (the mid of low and high), per conv, times its
count; the roofline is the op's (dense bf16 peak or HBM bandwidth)."""
import gzip
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# An op's predictions as the stem's table reads them.
_spec = importlib.util.spec_from_file_location(
    "stem_table", os.path.join(HERE, "..", "2026-12-03-hopper-stem", "table.py"))
stem_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stem_table)
GPUS, conv = stem_table.GPUS, stem_table.conv
# The runs, each change's after the one before: the 64-channel step, the
# narrow steps, and with them the 32-filter tile.
SIDES = ("before", "after", "tile")
CHANGES = (("before", "after", "the K step of 16 or 32 channels"),
           ("after", "tile", "the 64-filter tiles' N of 32"))


def convs(ops):
    return {op["layer"]: conv(op) for op in ops
            if "variants" in op and op["descriptor"].startswith("conv")}


def load_side(path):
    runs = {}
    for name in sorted(os.listdir(path)):
        if not name.endswith(".json"):
            continue
        model, batch, direction, rest = name[:-5].split("-", 3)
        key = f"{model}-{batch}-{direction}"
        ops = json.load(open(os.path.join(path, name)))
        if rest == "auto":
            runs.setdefault(key, {})["auto"] = convs(ops)
        else:
            layer, variant = rest.rsplit("-", 1)
            runs.setdefault(key, {}).setdefault("alone", {})[f"{layer} {variant}"] = conv(ops[0])
    return runs


def load(src):
    if src.endswith(".gz"):
        with gzip.open(src, "rt") as f:
            return json.load(f)
    return {side: load_side(os.path.join(src, side)) for side in SIDES}


def reduced_channels(descriptor):
    """The channels the conv reduces: a fwd's C (a stem's before its fold), a bwddata's K."""
    t = descriptor.split("_")  # x, its strides, w, y, its strides: 5 numbers each
    w = [int(v) for v in t[11:16]]
    return w[0] if t[-2] == "bwddata" else w[1]


def line(name, old, new, gpu):
    s0, s1 = old["seconds"][gpu], new["seconds"][gpu]
    roof = new["roofline"][gpu]
    kernels = ", ".join(f"{lim} {s * 1e6:.1f}" for lim, s in new["kernels"][gpu])
    return (f"  {name:34s} {gpu:8s} {s0 * 1e6:7.1f} -> {s1 * 1e6:7.1f} us {s1 / s0:6.3f}x  "
            f"roofline {roof / s0:.3f} -> {roof / s1:.3f}  ({kernels})")


def table(runs):
    for old_side, new_side, change in CHANGES:
        print(f"# {change}: {old_side} -> {new_side}")
        print()
        compare(runs[old_side], runs[new_side])


def compare(before, after):
    for key in sorted(after):
        print(f"## {key}")
        b, a = before[key], after[key]
        if "auto" in a:
            old, new = b["auto"], a["auto"]
            for layer, op in new.items():
                if all(abs(old[layer]["seconds"][g] - op["seconds"][g]) <= 1e-9 for g in GPUS):
                    continue
                reduced = reduced_channels(op["descriptor"])
                print(f"{layer} (C={reduced}: {old[layer]['variant']} -> {op['variant']})")
                for g in GPUS:
                    print(line("", old[layer], op, g))
            for g in GPUS:
                t0 = sum(op["seconds"][g] * op["count"] for op in old.values())
                t1 = sum(op["seconds"][g] * op["count"] for op in new.values())
                roof = sum(op["roofline"][g] * op["count"] for op in new.values())
                print(f"{g:9s} convs {t0 * 1e6:8.0f} us -> {t1 * 1e6:8.0f} us: {t1 / t0:.3f}x; "
                      f"roofline share {roof / t0:.3f} -> {roof / t1:.3f}")
        for name, op in sorted(a.get("alone", {}).items()):
            print(f"{name} alone (C={reduced_channels(op['descriptor'])})")
            for g in GPUS:
                print(line("", b["alone"][name], op, g))
        print()


def main(args):
    runs = load(args[-1])
    if args[0] != "--compact":
        table(runs)
        return
    with gzip.open("predictions.json.gz", "wt") as f:
        json.dump(runs, f)


if __name__ == "__main__":
    main(sys.argv[1:])
