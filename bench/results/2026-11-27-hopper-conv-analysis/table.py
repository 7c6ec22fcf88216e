#!/usr/bin/env python3
"""The Hopper conv against the mma.sync tiles, layer by layer, as the fitted bottleneck
model predicts them on an H200: reads `convjit analyze --model M --direction D --json`
outputs (M-D.json.gz in this folder) and prints, per dense conv, the fastest tile's and
the Hopper conv's predicted time (the middle of each range), their ratio and each one's
share of the op's roofline, then each model's conv totals (each op times its count).

  table.py resnet50-fwd.json.gz resnet50-bwddata.json.gz ...
"""
import gzip, json, sys

GPU = 'H200'


def middle(p):
    return sum(p['seconds']) / 2


def rows(path):
    for op in json.load(gzip.open(path) if path.endswith('.gz') else open(path)):
        # Dense convs: one group (the descriptor's field before the direction).
        if 'variants' not in op or not op['descriptor'].startswith('conv') or \
                op['descriptor'].split('_')[-3] != '1':
            continue
        tiles, wgmma = [], None
        for v in op['variants']:
            p = next((p for p in v['predicted'] if p['gpu'] == GPU and 'seconds' in p), None)
            if p is None:
                continue
            if v['variant'].startswith('tc'):
                tiles.append((middle(p), v['variant'], p['roofline_seconds']))
            elif v['variant'] == 'wgmma128x128':
                wgmma = (middle(p), v['variant'], p['roofline_seconds'])
        if tiles:
            yield op, min(tiles), wgmma


def main():
    print(f"predicted on an {GPU}: the fastest mma.sync tile and wgmma128x128 (the middle of "
          "each range); % = the op's roofline over the predicted time")
    print(f"{'layer':<30} {'dir':<8} {'count':>5} {'best tile':<10} {'us':>8} {'%':>4}"
          f"  {'wgmma us':>8} {'%':>4} {'wgmma/tile':>10}")
    for path in sys.argv[1:]:
        total_tile = total_best = 0.0
        served = layers = wins = 0
        for op, (t, tile, roof), wgmma in rows(path):
            layers += 1
            total_tile += op['count'] * t
            best = t
            line = (f"{op['layer'][:30]:<30} {path.split('-')[-1].split('.')[0]:<8} {op['count']:>5} "
                    f"{tile:<10} {t * 1e6:8.1f} {100 * roof / t:3.0f}%")
            if wgmma:
                w = wgmma[0]
                served += 1
                wins += w < t
                best = min(t, w)
                line += f"  {w * 1e6:8.1f} {100 * roof / w:3.0f}% {w / t:10.2f}"
            else:
                line += f"  {'-':>8} {'':>4} {'not served':>10}"
            total_best += op['count'] * best
            print(line)
        print(f"== {path}: {layers} dense conv ops, the Hopper conv serves {served} and is "
              f"predicted faster on {wins}; conv step {total_tile * 1e3:.3f} ms on the best "
              f"tiles, {total_best * 1e3:.3f} ms with the Hopper conv where predicted faster "
              f"({total_tile / total_best:.2f}x)\n")


if __name__ == '__main__':
    main()
