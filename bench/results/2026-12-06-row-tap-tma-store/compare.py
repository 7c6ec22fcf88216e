#!/usr/bin/env python3
"""Each conv auto serves with a row-tap tile (a variant id ending in 'r'): its predicted time range
with the row-tap tiles on the threads' store (../2026-12-06-tma-store's predictions) and storing by
TMA (these), with the share of the op's roofline at each end of the latter; then the sums over those
convs and over all.
  compare.py BEFORE.json.gz AFTER.json.gz [GPU]   (GPU as the JSON names it; default H100 SXM)"""
import importlib.util
import pathlib
import sys

# The previous comparison's reader of the analyser's JSON and its lines.
_spec = importlib.util.spec_from_file_location(
    'tma_store_compare', pathlib.Path(__file__).parent.parent / '2026-12-06-tma-store' / 'compare.py')
_previous = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_previous)


def main(before_path, after_path, gpu='H100 SXM'):
    _previous.compare(
        before_path, after_path, gpu, "with the row-tap tiles on the threads' store, then by TMA",
        lambda old, new, tma: new.startswith('wgmma') and new.endswith('r'),
        'convs on row-tap tiles')


if __name__ == '__main__':
    main(*sys.argv[1:])
