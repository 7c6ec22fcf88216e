#!/usr/bin/env python3
"""Per conv, the H200 prediction of auto's choice with K C R S filters (a
first pass copies them) against K R S C ones (read in place), from
`convjit analyze --json` runs.

Usage: table.py KCRS.json.gz KRSC.json.gz
"""
import gzip
import json
import sys


def ops(path):
    """layer -> (count, variant, low, high seconds, entries) of auto's choice on the H200."""
    out = {}
    for op in json.load(gzip.open(path)):
        if 'variants' not in op:
            continue
        for v in op['variants']:
            if not v.get('auto'):
                continue
            h200 = next(p for p in v['predicted'] if p['gpu'] == 'H200')
            low, high = h200['seconds']
            out[op['layer']] = (op['count'], v['variant'], low, high,
                                [e['entry'] for e in v['entries']], h200['roofline_seconds'])
    return out


kcrs, krsc = ops(sys.argv[1]), ops(sys.argv[2])
print('%-24s %-15s %-15s %13s %13s %6s' % ('layer', 'kcrs variant', 'krsc variant',
                                           'kcrs us', 'krsc us', 'ratio'))
total = [0.0, 0.0, 0.0, 0.0]
for layer, a in kcrs.items():
    b = krsc[layer]
    mid_a, mid_b = (a[2] + a[3]) / 2, (b[2] + b[3]) / 2
    total[0] += a[0] * a[2]; total[1] += a[0] * a[3]
    total[2] += b[0] * b[2]; total[3] += b[0] * b[3]
    print('%-24s %-15s %-15s %5.1f-%5.1f %5.1f-%5.1f %6.3f %s' % (
        layer, a[1], b[1], a[2] * 1e6, a[3] * 1e6, b[2] * 1e6, b[3] * 1e6, mid_b / mid_a,
        '' if len(b[4]) < len(a[4]) else '(same entries)'))
print('total (each op times its count): kcrs %.0f-%.0f us, krsc %.0f-%.0f us: %.3f' % (
    total[0] * 1e6, total[1] * 1e6, total[2] * 1e6, total[3] * 1e6,
    (total[2] + total[3]) / (total[0] + total[1])))
