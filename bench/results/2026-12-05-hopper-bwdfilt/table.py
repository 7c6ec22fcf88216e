#!/usr/bin/env python3
"""Per bwdfilt conv: auto's lead before this change as the H200 timed it, and an estimate now.

ops.tsv (predict.py ops) holds every op's measured variants and auto's lead now;
predictions-before.tsv and predictions-after.tsv the analyser's H200 predictions of that lead
without and with the skip of a tile's absent second 64 filters (predict.py predict).

Before: auto's lead under the rules of f504ea2, which led with wgmma128x128b2 where both sides
(a group's filters and channels) were 16 or more and the conv did not fold, else a tile: its
fastest tile's measured time stands for it (within 5% of auto's on both stems and both side-8
layers, ../2026-12-04-h200/table-after.txt).  Now: where the H200 timed the lead
(wgmma128x128b2), that time scaled by predicted after / predicted before; where it could not
(the stems, which it did not serve unfolded), the prediction times 0.93, the H200's measured /
predicted for wgmma128x128b2 under the refit model (../2026-12-05-model-refit/calibration.txt).

  table.py > table.txt
"""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))
CALIBRATION = 0.93


def rows(name):
    with open(os.path.join(HERE, name)) as f:
        return [line.rstrip('\n').split('\t') for line in f]


def main():
    before = {(r[0], r[1]): float(r[3]) for r in rows('predictions-before.tsv')}
    after = {(r[0], r[1]): float(r[3]) for r in rows('predictions-after.tsv')}
    runs = {}
    for run, layer, count, filters, channels, variant, measured, _ in rows('ops.tsv'):
        runs.setdefault(run, []).append((layer, int(count), int(filters), int(channels), variant,
                                         json.loads(measured)))
    for run, ops in runs.items():
        old_total = new_total = 0.0
        print(f'## {run}')
        print(f"{'layer':<22} {'n':>2} {'K':>4} {'C':>4} {'lead before':<14} {'ms':>7}  "
              f"{'predicted before':>16} {'after':>7} {'ratio':>5}  {'estimate ms':>11}")
        for layer, count, filters, channels, variant, measured in ops:
            tiles = {k: v for k, v in measured.items() if k.startswith('tc')}
            hopper_before = variant.startswith('wgmma') and channels % 8 == 0 and \
                min(filters, channels) >= 16
            old_lead = ('wgmma128x128b2' if hopper_before else
                        min(tiles, key=tiles.get) if variant.startswith('wgmma') else variant)
            old = new = measured[old_lead]
            if (run, layer) in after:
                b, a = before[(run, layer)], after[(run, layer)]
                timed = measured.get(variant)
                new = timed * a / b if timed else a * CALIBRATION
                print(f'{layer:<22} {count:>2} {filters:>4} {channels:>4} {old_lead:<14} '
                      f'{old:7.4f}  {b:16.4f} {a:7.4f} {a / b:5.2f}  {new:11.4f}')
            old_total += count * old
            new_total += count * new
        print(f'total (each op times its count): before {old_total:.3f} ms measured, '
              f'estimate now {new_total:.3f} ms ({new_total / old_total:.2f}x)\n')


if __name__ == '__main__':
    main()
