#!/usr/bin/env python3
"""Where the model overrates the mma.sync tiles (tc*): their main kernel's predicted time
against the H200's time of 2026-12-04, less the predicted time of the kernels before it
(the filters' copy).  Per limiter of the main kernel: how many ops, measured / predicted,
measured / the limiter's bound alone, and the exposed latency's share of the prediction; then
measured / that bound per tile and warps a scheduler (the issue bound derates below 5.4-6.3).

  bench/results/2026-12-05-model-refit/mma_sync_fit.py   (from the repository root)
"""
import gzip, json, math, os
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, '..', '2026-12-04-h200', 'hopper-bench')
RUNS = ('resnet50-fwd', 'resnet50-bwddata', 'yolo11n-fwd', 'yolo11n-bwddata')
TILES = ('tc128x128', 'tc128x64', 'tc64x64', 'tc128x32')


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def middle(r):
    return sum(r) / 2


def main():
    found = defaultdict(list)
    by_tile = defaultdict(list)
    for run in RUNS:
        with gzip.open(os.path.join(BENCH, f'bench-{run}.json.gz'), 'rt') as f:
            measured = {op['descriptor']: {k: v['ms'] * 1e-3 for k, v in
                                           op['jit'].get('variants', {}).items() if 'ms' in v}
                        for op in json.load(f)['ops']}
        for tile in TILES:
            with gzip.open(os.path.join(HERE, 'predictions', f'{run}-{tile}.json.gz'), 'rt') as f:
                ops = json.load(f)
            for op in ops:
                t = measured.get(op.get('descriptor'), {}).get(tile)
                for variant in op.get('variants', []):
                    for p in variant['predicted']:
                        if p['gpu'] != 'H200' or t is None:
                            continue
                        *before, kernel = p['kernels']
                        rest = t - sum(middle(k['seconds']) for k in before)
                        if rest <= 0:
                            continue
                        limits = kernel['limits']
                        limiter = max(limits, key=lambda k: middle(limits[k]))
                        found[limiter].append((rest, middle(kernel['seconds']),
                                               middle(limits[limiter]),
                                               middle(kernel['exposed_latency'])))
                        occupancy = [o for o in variant['entries'][-1]['occupancy']
                                     if o['gpu'] == 'H200'][0]
                        by_tile[(tile, occupancy['warps_per_sm'] // 4)].append(
                            rest / middle(limits[limiter]))
    for limiter, rows in found.items():
        print(f'{limiter}: {len(rows)} ops; measured / predicted '
              f'{geomean([m / p for m, p, _, _ in rows]):.3f}, measured / {limiter} bound '
              f'{geomean([m / b for m, _, b, _ in rows]):.3f}, exposed latency '
              f'{sum(e for *_, e in rows) / sum(p for _, p, _, _ in rows):.2f} of the prediction')
    for (tile, warps), ratios in sorted(by_tile.items()):
        print(f'  {tile:10s} {warps:2d} warps a scheduler: {len(ratios):3d} ops, measured / bound '
              f'{geomean(ratios):.3f}')


if __name__ == '__main__':
    main()
