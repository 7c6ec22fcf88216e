#!/usr/bin/env python3
"""Each conv the pixel clusters serve, named: auto's choice before them (the Stream-K results'
whole tiles) and its predicted range, then wgmma128x64pa's and wgmma128x128pa's, each as a ratio
of that range at each end.  The evidence for auto's rule (pixel_cluster_lead in wgmma_conv.cpp).
  variants.py BEFORE.json.gz PA64.json.gz PA128.json.gz [GPU]   (default H100 SXM)"""
import importlib.util
import pathlib
import sys

_spec = importlib.util.spec_from_file_location(
    'tma_store_compare', pathlib.Path(__file__).parent.parent / '2026-12-06-tma-store' / 'compare.py')
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)


def main(before_path, pa64_path, pa128_path, gpu='H100 SXM'):
    before = _shared.convs(before_path, gpu)
    named = [_shared.convs(path, gpu) for path in (pa64_path, pa128_path)]
    print(f"{gpu}, predicted (low-high); each cluster variant's time over auto's before at the "
          "low and high end")
    for layer, (variant, (low, high), _, _, _) in before.items():
        cells = []
        for convs in named:
            if layer in convs:
                name, (l, h), _, _, _ = convs[layer]
                cells.append(f'{name:<15} {l * 1e6:6.1f}-{h * 1e6:6.1f} us {l / low:.2f}/{h / high:.2f}')
        if cells:
            print(f'{layer:<26} {variant:<15} {low * 1e6:6.1f}-{high * 1e6:6.1f} us | ' +
                  ' | '.join(cells))


if __name__ == '__main__':
    main(*sys.argv[1:])
