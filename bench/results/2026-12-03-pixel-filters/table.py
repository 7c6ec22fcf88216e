"""The conv of few filters over short reductions (`pixels`) against auto's previous choice: the
analyser's predictions.

python3 table.py DIR > table.txt: DIR holds `convjit analyze --json` runs:
  MODEL-BATCH-LAYOUT-before.json and MODEL-BATCH-LAYOUT-after.json, `--model` runs of the fwd
  convs under auto, built before the `pixels` variant led (d819b24 for channels-last; 465bbb1
  with the lead turned off for NCHW) and after (this build);
  LAYOUT-LAYER-VARIANT.json, one conv (`--name`) under `pixels` or, before the lead, `auto`.
python3 table.py --compact DIR writes them into predictions.json.gz, which
python3 table.py predictions.json.gz reads instead.
Per run and GPU: each conv whose prediction moved (before and after: variant, seconds, % of the
op's roofline, limiter), then the run's totals; then the convs run alone under `pixels`, against
auto's choice before.  Seconds are the mid of the model's low and high, per conv, times its
count."""
import gzip
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# An op's predictions as the stem's table reads them; the command line and
# a conv's limiter as the 128 x 256 tile's table has them.
_spec = importlib.util.spec_from_file_location(
    "wide_table", os.path.join(HERE, "..", "2026-12-03-hopper-filter-wide-tile", "table.py"))
wide_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wide_table)
conv, GPUS, limiter = wide_table.conv, wide_table.GPUS, wide_table.limiter


def convs(ops):
    return {op["layer"]: conv(op) for op in ops
            if "variants" in op and op["descriptor"].startswith("conv")}


def load(src):
    if src.endswith(".gz"):
        with gzip.open(src, "rt") as f:
            return json.load(f)
    runs, alone = {}, {}
    for name in sorted(os.listdir(src)):
        if not name.endswith(".json"):
            continue
        ops = json.load(open(os.path.join(src, name)))
        parts = name[:-5].split("-")
        if parts[-1] in ("before", "after"):
            runs.setdefault("-".join(parts[:-1]), {})[parts[-1]] = convs(ops)
        else:
            layout, layer = parts[0], "-".join(parts[1:-1])
            alone.setdefault(f"{layout} {layer}", {})[parts[-1]] = conv(ops[0])
    return {"runs": runs, "alone": alone}


def describe(op, gpu):
    s = op["seconds"][gpu]
    return (f"{op['variant']:>14} {s * 1e6:8.1f} us {100 * op['roofline'][gpu] / s:5.1f}% "
            f"{limiter(op, gpu):>8}")


def moved(before, after, gpu):
    """The convs of a run whose prediction moved, then the run's totals."""
    for layer in after:
        b, a = before[layer], after[layer]
        if abs(b["seconds"][gpu] - a["seconds"][gpu]) > 1e-12 or b["variant"] != a["variant"]:
            print(f"{layer:24} {describe(b, gpu)}  ->  {describe(a, gpu)}  "
                  f"{a['seconds'][gpu] / b['seconds'][gpu]:.3f}x")
    tb = sum(o["seconds"][gpu] * o["count"] for o in before.values())
    ta = sum(o["seconds"][gpu] * o["count"] for o in after.values())
    print(f"the run's convs: {tb * 1e6:.0f} -> {ta * 1e6:.0f} us ({ta / tb:.3f}x)\n")


def table(data, gpu):
    for key, run in data["runs"].items():
        print(f"## {key} fwd ({gpu})")
        moved(run["before"], run["after"], gpu)
    print(f"## the convs alone: under pixels, and auto's choice before the lead ({gpu})")
    for name, ops in data["alone"].items():
        line = f"{name:24} {describe(ops['pixels'], gpu)}"
        if "auto" in ops:
            ratio = ops["pixels"]["seconds"][gpu] / ops["auto"]["seconds"][gpu]
            line += f"  auto {describe(ops['auto'], gpu)}  {ratio:.3f}x"
        print(line)
    print()


if __name__ == "__main__":
    wide_table.cli(sys.argv[1:], HERE, load, table)
