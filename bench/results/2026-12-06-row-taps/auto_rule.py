#!/usr/bin/env python3
"""Auto's choice and predicted time per conv before the row-tap rule and with it, and the sum
over the convs whose choice changed and over all convs.
  auto_rule.py BEFORE.json.gz AFTER.json.gz [GPU]   (GPU as the JSON names it; default H100 SXM)"""
import gzip
import json
import sys


def choices(path, gpu):
    """layer -> (variant, seconds, count) of each conv predicted on `gpu`."""
    out = {}
    for op in json.load(gzip.open(path)):
        for variant in op.get('variants', []):
            for p in variant['predicted']:
                if p['gpu'] == gpu and op['descriptor'].startswith('conv'):
                    out[op['layer']] = (variant['variant'], sum(p['seconds']) / 2,
                                        op.get('count', 1))
    return out


def main(before_path, after_path, gpu='H100 SXM'):
    before, after = choices(before_path, gpu), choices(after_path, gpu)
    changed_before = changed_after = total_before = total_after = 0.0
    for layer, (old, old_s, count) in before.items():
        new, new_s, _ = after[layer]
        total_before += count * old_s
        total_after += count * new_s
        if new != old:
            changed_before += count * old_s
            changed_after += count * new_s
            print(f'{layer:<28} x{count:<2} {old:<14} {old_s * 1e6:7.1f} us -> {new:<14} '
                  f'{new_s * 1e6:7.1f} us  {new_s / old_s:4.2f}x')
    if changed_before:
        print(f'changed convs: {changed_before * 1e6:.1f} -> {changed_after * 1e6:.1f} us '
              f'({changed_after / changed_before:.2f}x)')
    print(f'all convs:     {total_before * 1e6:.1f} -> {total_after * 1e6:.1f} us '
          f'({total_after / total_before:.2f}x)')


if __name__ == '__main__':
    main(*sys.argv[1:])
