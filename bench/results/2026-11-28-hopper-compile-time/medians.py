#!/usr/bin/env python3
"""Median NVRTC time per Hopper conv kernel from the static check's output.

Usage: medians.py static-check-*.txt.  The test prints one line a kernel:
layer, direction, configuration, registers and the compile time in ms.
"""
import statistics
import sys

for path in sys.argv[1:]:
    rows = [l for l in open(path) if l.rstrip().endswith(' ms') and 'sm_90a' in l]
    groups = {}
    for line in rows:
        words = line.split()
        ms = float(words[-2])
        direction = next(w for w in words if w in ('fwd', 'bwddata', 'bwdfilt'))
        config = next(w for w in words if w.startswith('wgmma'))
        groups.setdefault(direction, []).append(ms)
        groups.setdefault(config + ' ' + direction, []).append(ms)
        groups.setdefault('all', []).append(ms)
    print(path)
    for name, v in sorted(groups.items()):
        print('  %-24s %3d kernels  median %5.0f  min %5.0f  max %5.0f ms'
              % (name, len(v), statistics.median(v), min(v), max(v)))
