#!/usr/bin/env python3
"""The H200's times of ResNet-50's bwdfilt convs (2026-12-04: bf16, channels-last, K C R S dw,
batch 32, the kernel before the clusters' sums and before this change) against the analyser's
predictions of that kernel (CONVJIT_WGMMA_CLUSTER_SUMS=0, dw stored by the tiles' threads):
without the scattered stores' term (../2026-12-07-bwdfilt-cluster-sums/model/after) and with it
(model/calibration-*).  Per conv measured / predicted, then the geometric mean and the spread
(max / min) per configuration.
  calibration.py            (from this folder or any other)"""
import gzip
import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ('wgmma128x128b2', 'wgmma128x128')

_spec = importlib.util.spec_from_file_location(
    'bwdfilt_calibration', os.path.join(HERE, '..', '2026-12-07-bwdfilt-cluster-sums',
                                        'bwdfilt_calibration.py'))
_earlier = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_earlier)


def predicted(path):
    with gzip.open(path, 'rt') as f:
        return {op['descriptor']: sum(p['seconds']) / 2 for op in json.load(f) if 'descriptor' in op
                for v in op['variants'] for p in v['predicted'] if p['gpu'] == 'H200'}


def main():
    columns = []
    for v in VARIANTS:
        columns.append(('without', v, _earlier.predicted('after', v)))
        columns.append(('with', v, predicted(os.path.join(HERE, 'model', f'calibration-{v}.json.gz'))))
    print('H200, measured / predicted (us), the stores\' term without and with')
    _earlier.print_table(_earlier.measured(), columns, label_width=8)


if __name__ == '__main__':
    main()
