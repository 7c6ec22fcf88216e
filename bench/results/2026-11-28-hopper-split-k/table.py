"""The analyser's H200 predictions (predictions.json.gz) of the Hopper conv's
two lead configurations per dense conv, before and after split-K and the
chunked filter copy: per layer the faster of wgmma128x128b2 and
wgmma128x64 (midpoint of the predicted range, us; the op's kernels
together: the filters' copy, the conv, split-K's second pass) and its % of
the op's roofline; per run the total, each op times its count, and its
ratio to the first.  python3 table.py > table.txt"""
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ("wgmma128x128b2", "wgmma128x64")
BUILDS = {
    "before": "97d6b75: no split-K, a thread per weight in the filters' copy",
    "split16": "split-K in slices of at least 16 K steps, the copy as before",
    "split32": "slices of at least 32 K steps, the copy a 16-byte chunk a thread",
    "after": "25367a0: slices of 16 where the tiles fill a quarter of the slots or less, else 32",
}


def best(ops_by_variant, key):
    """The faster variant's (seconds, roofline, entries) for one op, or None."""
    found = []
    for variant in VARIANTS:
        for op in ops_by_variant.get(variant, []):
            if (op["layer"], op["descriptor"]) == key:
                seconds = sum(sum(k["seconds"]) / 2 for k in op["kernels"])
                found.append((seconds, op["roofline_seconds"], op["count"], variant, op["kernels"]))
    return min(found) if found else None


def main():
    with gzip.open(os.path.join(HERE, "predictions.json.gz"), "rt") as f:
        runs = json.load(f)
    builds = list(runs)
    print("predicted on an H200 by `convjit analyze` (midpoint, us; % of the op's roofline): "
          "the faster of " + " and ".join(VARIANTS) + " per op")
    for b in builds:
        print(f"  {b}: {BUILDS.get(b, b)}")
    for part in runs[builds[0]]:
        first = runs[builds[0]][part]
        keys = []
        for variant in VARIANTS:
            for op in first.get(variant, []):
                if (op["layer"], op["descriptor"]) not in keys:
                    keys.append((op["layer"], op["descriptor"]))
        print(f"\n{part}")
        print(f"{'layer':26s} {'n':>2s} " + " ".join(f"{b:>17s}" for b in builds) + "  last's variant, entries")
        totals = [0.0] * len(builds)
        for key in keys:
            cells, count, last = [], 1, ""
            for i, b in enumerate(builds):
                r = best(runs[b].get(part, {}), key)
                if r is None:
                    cells.append(f"{'-':>17s}")
                    continue
                seconds, roofline, count, variant, kernels = r
                totals[i] += count * seconds
                cells.append(f"{seconds * 1e6:10.1f} {roofline / seconds * 100:4.0f}% ")
                last = variant + " " + "+".join(f"{k['entry'].replace('convjit_kernel', 'k')}[{k['blocks']}]"
                                                for k in kernels)
            print(f"{key[0][:26]:26s} {count:2d} " + " ".join(cells) + "  " + last)
        print(f"{'total (x count)':26s}    " + " ".join(
            (f"{t * 1e6:12.1f} us  " if t else f"{'-':>17s}") for t in totals))
        print(f"{'over before':26s}    " + " ".join(
            (f"{t / totals[0]:14.3f}x  " if t else f"{'-':>17s}") for t in totals))


if __name__ == "__main__":
    main()
