"""The analyser's H200 predictions (predictions.json.gz) for the convs auto
gives the Hopper conv: the lead before this change (auto_before: the tiles
of a block a tile, now wgmma_tile_a_block_config), the two ping-pong tiles
(wgmma128x128p, wgmma128x64p) and auto now (midpoint of the predicted
range, us, the op's kernels together; auto's % of the op's roofline).  Per
run the totals, each op times its count: auto before, auto now and the
fastest of the three configurations per op.  python3 table.py > table.txt"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The wide-tile sweep's reading of the predictions and its totals line.
sys.path.insert(0, os.path.join(HERE, "..", "2026-11-28-hopper-wide-tile"))
from table import print_totals, runs, seconds  # noqa: E402

COLUMNS = ("auto_before", "wgmma128x128p", "wgmma128x64p")


def main():
    for run, ops in runs(HERE):
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
        print_totals(totals, totals["before"])


if __name__ == "__main__":
    main()
