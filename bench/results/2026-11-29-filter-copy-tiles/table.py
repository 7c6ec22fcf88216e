#!/usr/bin/env python3
"""Per ResNet-50 conv whose K C R S filters the Hopper conv copies, the H200
prediction of the copy (convjit_kernel_prepare) before and after the tiled
copy, and of the whole op after it against K R S C filters (no copy).

Usage: table.py BEFORE_FWD_COMPACT.json.gz BEFORE_BWDDATA.json.gz DIR
  BEFORE_FWD_COMPACT: bench/results/2026-11-28-hopper-wide-tile/predictions.json.gz
  BEFORE_BWDDATA: bench/results/2026-11-29-hopper-bwddata-in-place/resnet50-bB-bwddata-kcrs.json.gz
                  (B is read from DIR's runs: 32 and 4)
  DIR: resnet50-b{32,4}-{fwd,bwddata}-kcrs.json.gz and resnet50-b{32,4}-fwd-krsc.json.gz
"""
import gzip
import json
import os
import sys

H200 = 'H200'


def analysed(path):
    """layer -> (count, variant, op (low, high), {entry: (low, high)}) of auto's choice."""
    out = {}
    for op in json.load(gzip.open(path)):
        if not op.get('descriptor', '').startswith('conv'):
            continue
        for v in op.get('variants', []):
            if not v.get('auto'):
                continue
            p = next(p for p in v['predicted'] if p['gpu'] == H200)
            entries = {e['entry']: tuple(k['seconds'])
                       for e, k in zip(v['entries'], p['kernels'])}
            out[op['layer']] = (op['count'], v['variant'], tuple(p['seconds']), entries)
    return out


def compacted(path, run):
    """The same from the wide-tile sweep's compact predictions."""
    out = {}
    for op in json.load(gzip.open(path))[run]['auto']:
        if not op['descriptor'].startswith('conv'):
            continue
        entries = {k['entry']: tuple(k['seconds']) for k in op['kernels']}
        total = tuple(sum(s[i] for s in entries.values()) for i in (0, 1))
        out[op['layer']] = (op['count'], op['variant'], total, entries)
    return out


def us(r):
    return '%5.1f-%5.1f' % (r[0] * 1e6, r[1] * 1e6)


def mid(r):
    return (r[0] + r[1]) / 2


def table(title, before, after, krsc):
    print(title)
    print('%-24s %-15s %12s %12s %12s %12s' % ('layer', 'auto', 'copy before', 'copy after',
                                               'op (kcrs)', 'op (krsc)'))
    sums = [0.0] * 4
    for layer, (count, variant, op, entries) in after.items():
        prepare = entries.get('convjit_kernel_prepare')
        if prepare is None:
            continue
        old = before[layer][3]['convjit_kernel_prepare']
        in_place = krsc[layer][2] if krsc else (0, 0)
        for i, r in enumerate((old, prepare, op, in_place)):
            sums[i] += count * mid(r)
        print('%-24s %-15s %12s %12s %12s %12s' % (layer, variant, us(old), us(prepare), us(op),
                                                   us(in_place) if krsc else '-'))
    line = 'copied ops (each times its count, midpoints): copy %.1f -> %.1f us (%.2fx); ops %.1f us' % (
        sums[0] * 1e6, sums[1] * 1e6, sums[1] / sums[0], sums[2] * 1e6)
    if krsc:
        line += ', with K R S C filters %.1f us (%.3fx)' % (sums[3] * 1e6, sums[3] / sums[2])
    print(line)
    print()


def main():
    fwd_before, bwddata_before, runs = sys.argv[1], sys.argv[2], sys.argv[3]
    for batch in (32, 4):
        at = lambda name: os.path.join(runs, 'resnet50-b%d-%s.json.gz' % (batch, name))
        table('resnet50 batch %d fwd (bf16, channels-last)' % batch,
              compacted(fwd_before, 'resnet50 batch %d fwd' % batch),
              analysed(at('fwd-kcrs')), analysed(at('fwd-krsc')))
        table('resnet50 batch %d bwddata' % batch,
              analysed(bwddata_before.replace('-b32-', '-b%d-' % batch)),
              analysed(at('bwddata-kcrs')), None)


main()
