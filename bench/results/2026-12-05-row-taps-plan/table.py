#!/usr/bin/env python3
"""Per conv of a `convjit analyze --json` run: the variant, its predicted time (the middle of
the range), the roofline and its %, then per kernel its limiter and every limit over 30% of the
kernel's time.  `convjit analyze`'s text gives the first four; this adds the limits beside them.
  table.py resnet50-fwd-auto.json.gz [GPU]   (GPU: as the JSON names it; default H100 SXM)"""
import gzip
import json
import sys


def mid_us(span):
    return sum(span) / 2 * 1e6


def kernel_limits(kernel):
    total = mid_us(kernel['seconds'])
    big = [f'{name}={mid_us(span):.1f}' for name, span in kernel['limits'].items()
           if mid_us(span) > 0.3 * total]
    return f"{kernel['limiter']}:{total:.1f}({'/'.join(big)})"


def main(path, gpu='H100 SXM'):
    for op in json.load(gzip.open(path)):
        if 'variants' not in op or '.bn' in op['layer'] or 'pool' in op['layer']:
            continue
        for variant in op['variants']:
            for p in (p for p in variant['predicted'] if p['gpu'] == gpu):
                us, roof = mid_us(p['seconds']), p['roofline_seconds'] * 1e6
                kernels = ' '.join(kernel_limits(k) for k in p['kernels'])
                print(f"{op['layer']:<24} {variant['variant']:<14} {us:6.1f} us roof {roof:5.1f} "
                      f"{100 * roof / us:3.0f}% {kernels}")


if __name__ == '__main__':
    main(*sys.argv[1:])
