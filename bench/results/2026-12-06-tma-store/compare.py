#!/usr/bin/env python3
"""Each conv the TMA store serves: its predicted time range under auto with the threads' store (the
row-tap results' auto, before this change) and with the TMA store (whose epilogue the analyser
charges 0.026-0.31 ns an output, untimed), with the share of the op's roofline at each end of the
latter; then the sums over those convs and over all.
  compare.py BEFORE.json.gz AFTER.json.gz [GPU]   (GPU as the JSON names it; default H100 SXM)"""
import gzip
import json
import sys


def stored_by_tma(variant):
    """Whether the variant's main kernel stores through TMA (a bulk store site)."""
    for entry in variant['entries']:
        if entry['entry'] == 'convjit_kernel':
            return any(i['op'] == 'UTMASTG'
                       for i in entry.get('memory', {}).get('instructions', []))
    return False


def convs(path, gpu):
    """layer -> (variant, (low, high) seconds, roofline seconds, count, stored by TMA)."""
    out = {}
    for op in json.load(gzip.open(path)):
        if not op.get('descriptor', '').startswith('conv'):
            continue
        for variant in op.get('variants', []):
            for p in variant['predicted']:
                if p['gpu'] == gpu:
                    out[op['layer']] = (variant['variant'], tuple(p['seconds']),
                                        p['roofline_seconds'], op.get('count', 1),
                                        stored_by_tma(variant))
    return out


def main(before_path, after_path, gpu='H100 SXM'):
    before, after = convs(before_path, gpu), convs(after_path, gpu)
    sums = {'tma': [0.0] * 4, 'all': [0.0] * 4}
    print(f"{gpu}, predicted (low-high) with the threads' store, then with the TMA store; the "
          "share of the op's roofline at each end")
    print(f"{'layer':<26} {'variant':<14} {'threads':>17}  {'TMA':>17} {'% roofline':>16}")
    for layer, (_, (low0, high0), roof, count, _) in before.items():
        new, (low, high), _, _, tma = after[layer]
        times = [low0, high0, low, high]
        for key in ['all'] + (['tma'] if tma else []):
            sums[key] = [s + count * t for s, t in zip(sums[key], times)]
        if tma:
            print(f'{layer:<26} {new:<14} {low0 * 1e6:6.1f}-{high0 * 1e6:6.1f} us  '
                  f'{low * 1e6:6.1f}-{high * 1e6:6.1f} us  {roof / high:4.0%} to {roof / low:4.0%}'
                  f'{"  x" + str(count) if count > 1 else ""}')
    for key, label in (('tma', 'convs stored by TMA'), ('all', 'all convs')):
        low0, high0, low, high = sums[key]
        if low0:
            print(f'{label}: {low0 * 1e6:.1f}-{high0 * 1e6:.1f} us -> {low * 1e6:.1f}-'
                  f'{high * 1e6:.1f} us ({low / low0:.2f}-{high / high0:.2f}x)')


if __name__ == '__main__':
    main(*sys.argv[1:])
