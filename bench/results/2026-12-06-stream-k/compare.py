#!/usr/bin/env python3
"""Each conv whose predicted time or variant moves once the ping-pong grids run Stream-K
(CONVJIT_WGMMA_STREAM_K=1) against whole tiles (the default), with the share of the op's roofline
at each end of the former; then the sums over those convs and over all.
  compare.py WHOLE.json.gz STREAM_K.json.gz [GPU]   (GPU as the JSON names it; default H100 SXM)"""
import importlib.util
import pathlib
import sys

# The TMA-store comparison's reader of the analyser's JSON and its lines.
_spec = importlib.util.spec_from_file_location(
    'tma_store_compare', pathlib.Path(__file__).parent.parent / '2026-12-06-tma-store' / 'compare.py')
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)


def main(whole_path, stream_k_path, gpu='H100 SXM'):
    before, after = _shared.convs(whole_path, gpu), _shared.convs(stream_k_path, gpu)
    print(f"{gpu}, predicted (low-high) with whole tiles, then with Stream-K; the share of the "
          "op's roofline at each end")
    print(f"{'layer':<26} {'variant':<14} {'whole tiles':>17}  {'Stream-K':>17} {'% roofline':>16}")
    sums = _shared.print_moved(before, after)
    _shared.print_sums(sums, [('moved', 'convs that moved'), ('all', 'all convs')])


if __name__ == '__main__':
    main(*sys.argv[1:])
