#!/usr/bin/env python3
"""The H200's times of the ping-pong tiles (../2026-12-04-h200/hopper-bench) against the refit
model's predictions of them (../2026-12-05-model-refit/predictions), as committed and with their
counts scaled to the grid by the tiles the sampled block took (the emulator's grid_scale) instead
of the blocks. The sampled block is block 0, which holds ceil(T / B) of a persistent grid's T
tiles on B blocks; the counts were its own times B, where the grid's are T / ceil(T / B) times its.

Every limit but DRAM's is linear in the counts, so scaling the committed limits by
g = T / (B ceil(T / B)) gives the prediction the corrected emulator makes; DRAM's caps its
footprint at the buffers and is left as it was (the scaled prediction is then an upper bound).
T is the GEMM's tiles: 128-pixel tiles (rounded to whole clusters for wgmma128x128pc) times
filter tiles; fwd convs, and bwddata convs of stride 1 (a strided one runs by phases, whose
tiles this does not count: they are left out, before and after alike).

A third column tries a hypothesis for what the scaled prediction still leaves: that a persistent
grid's last, partial round of tiles runs on SMs that each draw at most TAIL times their share of
the L2's bandwidth (the share: the L2's bandwidth over the 132 SMs), so its L2 time is the full
rounds' bytes at the L2's bandwidth plus the larger of the tail's bytes at it and one tile's at
the SM's cap (in tiles: full + max(tail, 132 / TAIL) of T).  The model does not do this.

  h200_check.py [--tail TAIL]   (default 2; per run and variant: the ops whose prediction moves
                        by 1% or more, the geometric mean of measured / predicted and its spread,
                        committed, scaled, and scaled with the tail's L2; then ResNet-50 fwd per
                        conv)"""
import argparse
import gzip
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(RESULTS, '2026-12-04-h200'))
import calibration  # noqa: E402  (its reader of the measured times)

PREDICTIONS = os.path.join(RESULTS, '2026-12-05-model-refit', 'predictions')
RUNS = ('resnet50-fwd', 'resnet50-bwddata', 'yolo11n-fwd', 'yolo11n-bwddata')
# variant: (filters a tile, blocks a cluster)
PING_PONG = {'wgmma128x64p': (64, 1), 'wgmma128x128p': (128, 1), 'wgmma128x128pc': (128, 2)}


def gemm_tiles(descriptor, direction, filters, cluster):
    """The GEMM's tiles, or None for a strided bwddata (run by phases)."""
    t = descriptor.split('_')
    n, c, h, w = (int(v) for v in t[1:5])
    k, p, q = int(t[17]), int(t[18]), int(t[19])
    if direction == 'fwd':
        pixels, columns = n * p * q, k
    elif (h, w) == (p, q):
        pixels, columns = n * h * w, c
    else:
        return None
    pixel_tiles = math.ceil(pixels / 128)
    pixel_tiles = math.ceil(pixel_tiles / cluster) * cluster
    return pixel_tiles * math.ceil(columns / filters)


def predictions(run, variant):
    with gzip.open(os.path.join(PREDICTIONS, f'{run}-{variant}.json.gz'), 'rt') as f:
        return [op for op in json.load(f) if 'variants' in op]


SMS = 132


def tail_factor(tiles, tail_share):
    """The L2 time of a persistent grid's tiles under the tail hypothesis, over all at the L2's
    bandwidth."""
    full = tiles // SMS * SMS
    tail = tiles - full
    return (full + max(tail, SMS / tail_share)) / tiles if tail else 1.0


def seconds(op, tiles, tail_share):
    """The H200's predicted seconds (the middle of the range): as committed, scaled, and scaled
    with the tail's L2."""
    for v in op['variants']:
        for p in v.get('predicted', []):
            if p['gpu'] != 'H200':
                continue
            out = [0.0, 0.0, 0.0]
            for k, entry in zip(p['kernels'], v['entries']):
                blocks = entry['blocks']
                g, l2 = 1.0, 1.0
                if entry['entry'] == 'convjit_kernel':
                    if tiles > blocks:
                        g = tiles / (blocks * math.ceil(tiles / blocks))
                    l2 = tail_factor(tiles, tail_share)
                limits = k['limits']
                latency = sum(k['exposed_latency']) / 2

                def scaled(tail):
                    return sum(max(l[end] * (1 if name == 'dram' else g) *
                                   (tail if name == 'l2' else 1) for name, l in limits.items())
                               for end in (0, 1)) / 2 + latency

                out[0] += sum(k['seconds']) / 2
                out[1] += scaled(1.0)
                out[2] += scaled(l2)
            return out
    return None


def log_sd(xs):
    mu = sum(map(math.log, xs)) / len(xs)
    return math.sqrt(sum((math.log(x) - mu) ** 2 for x in xs) / len(xs))


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--tail', type=float, default=2.0)
    args = parser.parse_args()
    pooled = ([], [], [])
    plain = ([], [], [])  # without the clusters, which the model rated 1.26x fast before
    per_conv = []
    print('measured / predicted on the H200, the ops whose prediction moves (1% or more)')
    print(f"{'run':<18} {'variant':<16} {'ops':>4} {'before':>7} {'after':>7} "
          f"{f'tail {args.tail:g}':>7}   {'spread before':>13} {'spread after':>13}")
    for run in RUNS:
        measured = calibration.measured(run)
        direction = run.split('-')[1]
        for variant, (filters, cluster) in PING_PONG.items():
            before, after = [], []
            for op in predictions(run, variant):
                d = op['descriptor']
                t = measured.get(d, {}).get(variant)
                tiles = gemm_tiles(d, direction, filters, cluster)
                s = seconds(op, tiles, args.tail) if tiles and t else None
                if s is None:
                    continue
                if run == 'resnet50-fwd' and variant != 'wgmma128x128pc':
                    per_conv.append((variant, op['layer'], tiles, t / s[0], t / s[1]))
                if abs(s[1] / s[0] - 1) < 0.01:
                    continue
                before.append([t / x for x in s])
            if not before:
                continue
            for i in range(3):
                column = [r[i] for r in before]
                pooled[i].extend(column)
                if cluster == 1:
                    plain[i].extend(column)
            b, a, tail = ([r[i] for r in before] for i in range(3))
            print(f"{run:<18} {variant:<16} {len(b):>4} {geomean(b):>7.2f} {geomean(a):>7.2f} "
                  f"{geomean(tail):>7.2f}   {min(b):>6.2f}-{max(b):<6.2f} "
                  f"{min(a):>6.2f}-{max(a):<6.2f}")
    for name, (b, a, tail) in (('all', pooled), ('without clusters', plain)):
        print(f"{name}: {len(b)} moved ops, geometric mean {geomean(b):.3f} -> {geomean(a):.3f} "
              f"(tail {geomean(tail):.3f}), log-sd {log_sd(b):.3f} -> {log_sd(a):.3f} "
              f"(tail {log_sd(tail):.3f})")
    print('\nResNet-50 fwd per conv (tiles on 132 blocks): measured / predicted before, after')
    for variant, layer, tiles, b, a in per_conv:
        print(f"  {variant:<14} {layer:<24} {tiles:>5} {b:>6.2f} {a:>6.2f}")


if __name__ == '__main__':
    main()
