#!/usr/bin/env python3
"""Each conv auto serves with a row-tap tile (a variant id ending in 'r'): its predicted time range
with the row-tap tiles on the threads' store (../2026-12-06-tma-store's predictions) and storing by
TMA (these), with the share of the op's roofline at each end of the latter; then the sums over those
convs and over all.
  compare.py BEFORE.json.gz AFTER.json.gz [GPU]   (GPU as the JSON names it; default H100 SXM)"""
import importlib.util
import pathlib
import sys

# The previous comparison's reader of the analyser's JSON (one conv's variant, range, roofline).
_spec = importlib.util.spec_from_file_location(
    'tma_store_compare', pathlib.Path(__file__).parent.parent / '2026-12-06-tma-store' / 'compare.py')
_previous = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_previous)


def main(before_path, after_path, gpu='H100 SXM'):
    before, after = _previous.convs(before_path, gpu), _previous.convs(after_path, gpu)
    sums = {'rows': [0.0] * 4, 'all': [0.0] * 4}
    print(f"{gpu}, predicted (low-high) with the row-tap tiles on the threads' store, then by "
          "TMA; the share of the op's roofline at each end")
    print(f"{'layer':<26} {'variant':<14} {'threads':>17}  {'TMA':>17} {'% roofline':>16}")
    for layer, (old, (low0, high0), roof, count, _) in before.items():
        new, (low, high), _, _, _ = after[layer]
        times = [low0, high0, low, high]
        rows = new.endswith('r') and new.startswith('wgmma')
        for key in ['all'] + (['rows'] if rows else []):
            sums[key] = [s + count * t for s, t in zip(sums[key], times)]
        if rows or old != new:
            print(f'{layer:<26} {new:<14} {low0 * 1e6:6.1f}-{high0 * 1e6:6.1f} us  '
                  f'{low * 1e6:6.1f}-{high * 1e6:6.1f} us  {roof / high:4.0%} to {roof / low:4.0%}'
                  f'{"  x" + str(count) if count > 1 else ""}'
                  f'{"  (was " + old + ")" if old != new else ""}')
    for key, label in (('rows', 'convs on row-tap tiles'), ('all', 'all convs')):
        low0, high0, low, high = sums[key]
        if low0:
            print(f'{label}: {low0 * 1e6:.1f}-{high0 * 1e6:.1f} us -> {low * 1e6:.1f}-'
                  f'{high * 1e6:.1f} us ({low / low0:.2f}-{high / high0:.2f}x)')


if __name__ == '__main__':
    main(*sys.argv[1:])
