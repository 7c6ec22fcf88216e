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


def row(layer, variant, before, after, roof, count):
    """One conv's line: its ranges before and after, the roofline's share at each end of after."""
    (low0, high0), (low, high) = before, after
    return (f'{layer:<26} {variant:<14} {low0 * 1e6:6.1f}-{high0 * 1e6:6.1f} us  '
            f'{low * 1e6:6.1f}-{high * 1e6:6.1f} us  {roof / high:4.0%} to {roof / low:4.0%}'
            f'{"  x" + str(count) if count > 1 else ""}')


def print_sums(sums, labels):
    """Each sum's ranges before and after, and their ratio."""
    for key, label in labels:
        low0, high0, low, high = sums[key]
        if low0:
            print(f'{label}: {low0 * 1e6:.1f}-{high0 * 1e6:.1f} us -> {low * 1e6:.1f}-'
                  f'{high * 1e6:.1f} us ({low / low0:.2f}-{high / high0:.2f}x)')


def print_moved(before, after, roofs=None):
    """Each conv whose variant or range moves from `before` to `after` (convs()), a line each
    (old>new where the variant changes), the roofline's share from `roofs` (layer -> seconds;
    default: before's). Returns the sums over those convs ('moved') and over all ('all')."""
    sums = {'moved': [0.0] * 4, 'all': [0.0] * 4}
    for layer, (old, span0, roof, count, _) in before.items():
        new, span, _, _, _ = after[layer]
        moved = old != new or span != span0
        for key in ('moved', 'all') if moved else ('all',):
            for i, v in enumerate(span0 + span):
                sums[key][i] += v * count
        if moved:
            variant = new if new == old else f'{old}>{new}'
            print(row(layer, variant, span0, span, roofs[layer] if roofs else roof, count))
    return sums


def compare(before_path, after_path, gpu, title, subset, label):
    """The convs in `subset(old variant, new variant, stored by TMA)`, a line each (noting a changed
    variant), then their sums (`label`) and all convs' sums."""
    before, after = convs(before_path, gpu), convs(after_path, gpu)
    sums = {'subset': [0.0] * 4, 'all': [0.0] * 4}
    print(f"{gpu}, predicted (low-high) {title}; the share of the op's roofline at each end")
    print(f"{'layer':<26} {'variant':<14} {'threads':>17}  {'TMA':>17} {'% roofline':>16}")
    for layer, (old, (low0, high0), roof, count, _) in before.items():
        new, (low, high), _, _, tma = after[layer]
        times = [low0, high0, low, high]
        shown = subset(old, new, tma)
        for key in ['all'] + (['subset'] if shown else []):
            sums[key] = [s + count * t for s, t in zip(sums[key], times)]
        if shown:
            print(row(layer, new, (low0, high0), (low, high), roof, count) +
                  (f'  (was {old})' if old != new else ''))
    print_sums(sums, (('subset', label), ('all', 'all convs')))


def main(before_path, after_path, gpu='H100 SXM'):
    compare(before_path, after_path, gpu,
            "with the threads' store, then with the TMA store", lambda old, new, tma: tma,
            'convs stored by TMA')


if __name__ == '__main__':
    main(*sys.argv[1:])
