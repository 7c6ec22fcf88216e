"""The Hopper conv's 128 x 256 tile (two consumers along the filters, sharing each stage's
pixels) against its transpose, the 256 x 128 tile, and against auto's choice: the analyser's
predictions.

python3 table.py DIR > table.txt: DIR holds `convjit analyze --json` runs named
MODEL-BATCH-DIRECTION-VARIANT.json, VARIANT wgmma256x128, wgmma128x256 or auto.
python3 table.py --compact DIR writes them into predictions.json.gz, which
python3 table.py predictions.json.gz reads instead.
Per run, each conv both tiles serve: their H200 predictions (the mid of low and high, per conv),
their ratio, each one's limiter, % of the op's roofline (dense bf16 peak or HBM bandwidth), and
auto's choice and time; then the run's totals, counts included."""
import gzip
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "stem_table", os.path.join(HERE, "..", "2026-12-03-hopper-stem", "table.py"))
stem_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stem_table)
conv = stem_table.conv
GPUS = stem_table.GPUS
TILES = ("wgmma256x128", "wgmma128x256")


def load(src):
    if src.endswith(".gz"):
        with gzip.open(src, "rt") as f:
            return json.load(f)
    runs = {}
    for name in sorted(os.listdir(src)):
        if not name.endswith(".json"):
            continue
        model, batch, direction, variant = name[:-5].split("-")
        ops = json.load(open(os.path.join(src, name)))
        runs.setdefault(f"{model}-{batch}-{direction}", {})[variant] = {
            op["layer"]: conv(op) for op in ops
            if "variants" in op and op["descriptor"].startswith("conv")}
    return runs


def limiter(op, gpu):
    return max(op["kernels"][gpu], key=lambda k: k[1])[0]


def table(runs, gpu="H200"):
    for key, run in runs.items():
        wide, tall, auto = run[TILES[0]], run[TILES[1]], run["auto"]
        both = [l for l in tall if tall[l]["variant"] == TILES[1] and
                wide.get(l, {}).get("variant") == TILES[0]]
        print(f"## {key} ({gpu}): {len(both)} convs both tiles serve")
        print(f"{'layer':28} {'256x128 us':>10} {'128x256 us':>10} {'ratio':>6} "
              f"{'lim 256x128':>12} {'lim 128x256':>12} {'% roof':>6} {'auto':>16} {'auto us':>8}")
        sums = {"wide": 0.0, "tall": 0.0, "auto": 0.0, "best": 0.0}
        for l in both:
            w, t, a = wide[l], tall[l], auto[l]
            n = t["count"]
            ws, ts, at = w["seconds"][gpu], t["seconds"][gpu], a["seconds"][gpu]
            sums["wide"] += ws * n
            sums["tall"] += ts * n
            sums["auto"] += at * n
            sums["best"] += min(at, ts) * n
            print(f"{l:28} {ws * 1e6:10.1f} {ts * 1e6:10.1f} {ts / ws:6.3f} {limiter(w, gpu):>12} "
                  f"{limiter(t, gpu):>12} {100 * t['roofline'][gpu] / ts:6.1f} "
                  f"{a['variant']:>16} {at * 1e6:8.1f}")
        if both:
            print(f"totals over these convs: 128x256 / 256x128 {sums['tall'] / sums['wide']:.3f}; "
                  f"auto {sums['auto'] * 1e6:.0f} us; auto with 128x256 where it is faster "
                  f"{sums['best'] / sums['auto']:.3f}x auto")
        print()


def cli(argv, here, load, table):
    """--compact DIR: DIR's runs (load) into here/predictions.json.gz; else the tables of the
    runs in argv[0], a DIR or that file, for each GPU."""
    if argv[0] == "--compact":
        with gzip.open(os.path.join(here, "predictions.json.gz"), "wt") as f:
            json.dump(load(argv[1]), f, separators=(",", ":"))
        return
    runs = load(argv[0])
    for gpu in GPUS:
        table(runs, gpu)


if __name__ == "__main__":
    cli(sys.argv[1:], HERE, load, table)
