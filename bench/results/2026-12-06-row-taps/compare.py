#!/usr/bin/env python3
"""Per conv a row-tap variant serves: auto's variant and predicted time (the middle of the
range), each row-tap variant's time as a ratio to auto's, and the fastest.
  compare.py DIR MODEL DIRECTION [GPU]   (reads DIR/MODEL-DIRECTION-{auto-before,<variant>}.json.gz;
                                          GPU as the JSON names it, default H100 SXM)"""
import gzip
import json
import sys

ROW_TAPS = ['wgmma128x128r', 'wgmma256x128r', 'wgmma256x64r', 'wgmma128x64pr']


def predicted(path, gpu):
    """layer -> (variant, seconds) for each op predicted on `gpu`."""
    out = {}
    for op in json.load(gzip.open(path)):
        for variant in op.get('variants', []):
            for p in variant['predicted']:
                if p['gpu'] == gpu:
                    out[op['layer']] = (variant['variant'], sum(p['seconds']) / 2)
    return out


def main(folder, model, direction, gpu='H100 SXM'):
    stem = f'{folder}/{model}-{direction}'
    auto = predicted(f'{stem}-auto-before.json.gz', gpu)
    rows = {v: predicted(f'{stem}-{v}.json.gz', gpu) for v in ROW_TAPS}
    print(f"{'layer':<28} {'auto':<14} {'us':>6}  " + ' '.join(f'{v[5:]:>9}' for v in ROW_TAPS))
    for layer, (variant, seconds) in auto.items():
        if not any(layer in rows[v] for v in ROW_TAPS):
            continue
        ratios = [rows[v][layer][1] / seconds if layer in rows[v] else None for v in ROW_TAPS]
        cells = ' '.join(f'{r:9.2f}' if r else f"{'-':>9}" for r in ratios)
        print(f'{layer:<28} {variant:<14} {seconds * 1e6:6.1f}  {cells}')


if __name__ == '__main__':
    main(*sys.argv[1:])
