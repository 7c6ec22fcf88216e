"""The analyser's H200 predictions (predictions.json.gz) for the convs auto
gives the Hopper conv: the lead before this change (auto_before: the tiles
of a block a tile, now wgmma_tile_a_block_config), the two ping-pong tiles
(wgmma128x128p, wgmma128x64p) and auto now (midpoint of the predicted
range, us, the op's kernels together; auto's % of the op's roofline).  Per
run the totals, each op times its count: auto before, auto now and the
fastest of the three configurations per op.  python3 table.py > table.txt"""
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ("auto_before", "wgmma128x128p", "wgmma128x64p")


def seconds(op):
    return sum(sum(k["seconds"]) / 2 for k in op["kernels"])


def main():
    with gzip.open(os.path.join(HERE, "predictions.json.gz"), "rt") as f:
        runs = json.load(f)
    print("predicted on an H200 by `convjit analyze` (midpoint, us; % of the op's roofline)")
    for run, by_variant in runs.items():
        ops = {v: {(o["layer"], o["descriptor"]): o for o in by_variant[v]} for v in by_variant}
        print(f"\n{run}")
        print(f"{'layer':28s} {'n':>2s} {'before':>8s} {'128x128p':>8s} {'128x64p':>8s}"
              f" {'before':>14s} {'auto':>14s} {'us':>8s} {'%':>4s}")
        totals = {"before": 0.0, "auto": 0.0, "fastest": 0.0}
        for key, chosen in ops["auto"].items():
            before = ops["auto_before"].get(key)
            if before is None or not before["variant"].startswith("wgmma"):
                continue
            times = {v: seconds(ops[v][key]) for v in COLUMNS if key in ops[v]}
            n = chosen["count"]
            totals["before"] += n * times["auto_before"]
            totals["auto"] += n * seconds(chosen)
            totals["fastest"] += n * min(times.values())
            cells = " ".join(f"{times[v] * 1e6:8.1f}" if v in times else f"{'-':>8s}"
                             for v in COLUMNS)
            share = chosen["roofline_seconds"] / seconds(chosen) * 100
            print(f"{key[0][:28]:28s} {n:2d} {cells} {before['variant']:>14s}"
                  f" {chosen['variant']:>14s} {seconds(chosen) * 1e6:8.1f} {share:3.0f}%")
        base = totals["before"]
        print("total (x count): " + ", ".join(f"{k} {t * 1e6:.1f} us ({t / base:.3f}x)"
                                              for k, t in totals.items()))


if __name__ == "__main__":
    main()
