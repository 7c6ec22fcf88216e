#!/usr/bin/env python3
"""NVRTC time of the same kernel texts against two or more template trees, side by side.

Usage: interleaved.py [--reps R] [--phases] TREE[,TREE...] KERNEL.cu...

Each TREE is a copy of kernel_templates/ (e.g. `git archive REV kernel_templates`); each
KERNEL.cu a kernel's text as convjit hands it to NVRTC (prelude and #include, kernels.tar.gz).
For every kernel the trees compile one after the other, R rounds, through libnvrtc with
convjit's options for sm_90a (nvrtc_compiler.cpp, less -Xptxas=-v), and each kernel keeps its
fastest round: this machine's speed drifts by a third from minute to minute, and the minimum
of interleaved runs is what the drift disturbs least.  Prints, per tree, the median and p90
per direction (the kernel file's second word), and with --phases NVRTC's own split
(--time: front end, NVVM optimizer, PTX translation) of each kernel's fastest round.
"""
import argparse
import collections
import csv
import ctypes
import glob
import os
import statistics
import tempfile
import time

nvrtc = ctypes.CDLL('/usr/local/cuda/lib64/libnvrtc.so')


def headers(tree):
    paths = sorted(glob.glob(os.path.join(tree, '**', '*.cuh'), recursive=True))
    return ([os.path.relpath(p, tree).encode() for p in paths],
            [open(p, 'rb').read() for p in paths])


def compile_ms(source, tree):
    names, texts = headers(tree)
    program, n = ctypes.c_void_p(), len(names)
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(program), source, b'generated.cu', n,
                                    (ctypes.c_char_p * n)(*texts),
                                    (ctypes.c_char_p * n)(*names)) == 0
    phases_csv = tempfile.mktemp(suffix='.csv')
    options = [b'--gpu-architecture=sm_90a', b'--std=c++17', b'--fmad=true',
               b'--time=' + phases_csv.encode()]
    start = time.perf_counter()
    result = nvrtc.nvrtcCompileProgram(program, len(options),
                                       (ctypes.c_char_p * len(options))(*options))
    ms = (time.perf_counter() - start) * 1e3
    nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
    assert result == 0, f'{tree}: NVRTC failed ({result})'
    phases = collections.Counter()
    for row in list(csv.reader(open(phases_csv)))[1:]:
        phases[row[1].strip()] += float(row[2])
    os.unlink(phases_csv)
    return ms, phases


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--reps', type=int, default=2)
    parser.add_argument('--phases', action='store_true')
    parser.add_argument('trees')
    parser.add_argument('kernels', nargs='+')
    args = parser.parse_args()
    trees = args.trees.split(',')
    best = {}
    for _ in range(args.reps):
        for kernel in args.kernels:
            source = open(kernel, 'rb').read()
            for tree in trees:
                ms, phases = compile_ms(source, tree)
                if (tree, kernel) not in best or ms < best[tree, kernel][0]:
                    best[tree, kernel] = (ms, phases)
    for tree in trees:
        groups = collections.defaultdict(list)
        for kernel in args.kernels:
            ms = best[tree, kernel][0]
            groups['all'].append(ms)
            groups[os.path.basename(kernel).split('_')[1]].append(ms)
            if args.phases:
                print(f'  {tree} {os.path.basename(kernel)} {ms:.0f} ms',
                      ' '.join(f'{k}: {v:.0f}' for k, v in best[tree, kernel][1].items()))
        print(tree, '  '.join(
            f'{g}: median {statistics.median(v):.0f} p90 {sorted(v)[int(0.9 * (len(v) - 1))]:.0f}'
            f' ({len(v)})' for g, v in sorted(groups.items())))


if __name__ == '__main__':
    main()
