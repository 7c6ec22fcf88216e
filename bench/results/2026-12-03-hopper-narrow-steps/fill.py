"""What the H200 of 2026-11-28 measured for the Hopper conv's 64-channel K step on layers that
reduce fewer channels: the same tiles and steps, the box's zero fill beyond C.

python3 fill.py > fill.txt reads ../2026-11-28-h200/hopper-bench/bench-*.json.gz (`convjit
bench`, bf16, channels-last, batch 32, each variant's median over 10 batches).  Per fwd and
bwddata conv of 3 x 3 taps and one 64-channel block a tap (9 K steps a tile: C, or a bwddata's
K, of 64 or fewer) and per configuration of the three timed: its tiles, and its time per tile
and K step on an SM (tiles x steps / 132 SMs), so that layers of the same shape but for C
compare.  Before this change every such step loaded a box of 64 channels, C of them x's."""
import gzip
import json
import math
import os
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "2026-11-28-h200", "hopper-bench")
CONFIGS = {"wgmma128x64": 64, "wgmma128x128": 128, "wgmma128x128b2": 128}
SMS = 132


def parse(descriptor):
    t = descriptor.split("_")  # x, its strides, w, y, its strides: 5 numbers each (2D: D 0)
    x, _, w, y, _ = ([int(v) for v in t[1 + 5 * i:6 + 5 * i]] for i in range(5))
    return x, w, y, t[-2]


def main():
    groups = defaultdict(list)
    for name in ("resnet50", "yolo11n-fwd"):
        with gzip.open(os.path.join(BENCH, f"bench-{name}.json.gz"), "rt") as f:
            report = json.load(f)
        for op in report["ops"]:
            if not op["descriptor"].startswith("conv2d") or op.get("groups") != 1:
                continue
            x, w, y, direction = parse(op["descriptor"])
            # A bwddata's steps a tile depend on its stride phases: fwd only.
            if direction != "fwd" or w[2:] != [3, 3, 0]:
                continue
            reduced, out, pixels = w[1], w[0], y[0] * y[2] * y[3]
            if reduced > 64:
                continue
            for variant, n in CONFIGS.items():
                timed = op["jit"].get("variants", {}).get(variant)
                if not timed:
                    continue
                tiles = math.ceil(pixels / 128) * math.ceil(out / n)
                per_step = timed["ms"] * 1e6 / (tiles * 9 / SMS)  # ns
                groups[(variant, tiles)].append((reduced, op["layer"], timed["ms"] * 1e3, per_step))
    print("variant          tiles  layer (C): us, ns per tile and K step on an SM")
    for (variant, tiles), rows in sorted(groups.items()):
        if len({r[0] for r in rows}) < 2:
            continue  # no other C at this shape
        print(f"{variant:16s} {tiles:5d}")
        for c, layer, us, ns in sorted(rows):
            print(f"    {layer:24s} C={c:3d}: {us:6.1f} us, {ns:5.0f} ns")


if __name__ == "__main__":
    main()
