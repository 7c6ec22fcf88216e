"""The analyser's H200 predictions (predictions.json.gz) of the Hopper conv's
configurations per conv the auto policy gives it: the one-consumer tiles
(wgmma128x128b2, wgmma128x64) against the two-consumer ones (wgmma256x128,
wgmma256x64), and auto's choice (midpoint of the predicted range, us, the op's kernels
together; % of the op's roofline).  Per run the totals, each op times its
count: the faster one-consumer tile per op (the rule before this change
chose it on every op an H200 timed), auto's choice, and the fastest of
the four.  python3 table.py > table.txt"""
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ONE = ("wgmma128x128b2", "wgmma128x64")
WIDE = ("wgmma256x128", "wgmma256x64")


def seconds(op):
    return sum(sum(k["seconds"]) / 2 for k in op["kernels"])


def runs(here):
    """Each run's name and its ops per variant, keyed by (layer, descriptor),
    from the predictions in `here`, after the table's heading."""
    with gzip.open(os.path.join(here, "predictions.json.gz"), "rt") as f:
        by_run = json.load(f)
    print("predicted on an H200 by `convjit analyze` (midpoint, us; % of the op's roofline)")
    for run, by_variant in by_run.items():
        print(f"\n{run}")
        yield run, {v: {(o["layer"], o["descriptor"]): o for o in by_variant[v]}
                    for v in by_variant}


def print_totals(totals, base):
    print("total (x count): " + ", ".join(f"{k} {t * 1e6:.1f} us ({t / base:.3f}x)"
                                          for k, t in totals.items()))


def main():
    for run, ops in runs(HERE):
        if "auto" not in ops:
            print("  (no auto run)")
            continue
        print(f"{'layer':28s} {'n':>2s} {'b2':>8s} {'half':>8s} {'256x128':>8s} {'256x64':>8s}"
              f" {'auto':>14s} {'%':>4s}  auto's limiters")
        totals = {"one consumer": 0.0, "auto": 0.0, "fastest": 0.0}
        for key, chosen in ops["auto"].items():
            if chosen["variant"] not in ONE + WIDE:
                continue
            times = {v: seconds(ops[v][key]) for v in ONE + WIDE if key in ops[v]}
            one = min(t for v, t in times.items() if v in ONE)
            n = chosen["count"]
            totals["one consumer"] += n * one
            totals["auto"] += n * seconds(chosen)
            totals["fastest"] += n * min(times.values())
            cells = " ".join(f"{times[v] * 1e6:8.1f}" if v in times else f"{'-':>8s}"
                             for v in ONE + WIDE)
            share = chosen["roofline_seconds"] / seconds(chosen) * 100
            limits = "/".join(k["limiter"] for k in chosen["kernels"])
            print(f"{key[0][:28]:28s} {n:2d} {cells} {chosen['variant']:>14s} {share:3.0f}%  {limits}")
        print_totals(totals, totals["one consumer"])


if __name__ == "__main__":
    main()
