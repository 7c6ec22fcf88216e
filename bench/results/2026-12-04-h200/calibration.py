#!/usr/bin/env python3
"""The analyser's H200 predictions (predictions/, predict.sh) against this run's measured times
(hopper-bench/bench-*.json.gz), per variant: the ops both cover, the geometric mean of
measured / predicted (the middle of the predicted range) and its spread; and per run how often
the variant the analyser predicted fastest among the Hopper configurations was the measured
fastest, and what choosing by prediction cost against the measured fastest.

  calibration.py [--predictions DIR]   (another run's predictions of these ops: a refit model's)
"""
import argparse, gzip, json, math, os
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = ('resnet50-fwd', 'resnet50-bwddata', 'yolo11n-fwd', 'yolo11n-bwddata')


def measured(run):
    with gzip.open(os.path.join(HERE, 'hopper-bench', f'bench-{run}.json.gz'), 'rt') as f:
        report = json.load(f)
    return {op['descriptor']: {k: v['ms'] * 1e-3 for k, v in op['jit'].get('variants', {}).items()
                               if 'ms' in v} for op in report['ops']}


def predicted(run, folder):
    out = defaultdict(dict)
    for name in os.listdir(folder):
        if not name.startswith(run + '-') or not name.endswith('.json.gz'):
            continue
        variant = name[len(run) + 1:-len('.json.gz')]
        with gzip.open(os.path.join(folder, name), 'rt') as f:
            for op in json.load(f):
                for v in op.get('variants', []):
                    for p in v.get('predicted', []):
                        if p['gpu'] == 'H200':
                            out[op['descriptor']][variant] = sum(p['seconds']) / 2
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--predictions', default=os.path.join(HERE, 'predictions'))
    args = parser.parse_args()
    ratios = defaultdict(list)
    for run in RUNS:
        m, p = measured(run), predicted(run, args.predictions)
        hits = total = 0
        chosen = fastest = 0.0
        for d, times in m.items():
            for v, t in times.items():
                if v in p.get(d, {}):
                    ratios[v].append(t / p[d][v])
            hopper = {v: t for v, t in times.items() if v.startswith('wgmma') and v in p.get(d, {})}
            if len(hopper) < 3:
                continue
            pick = min(hopper, key=lambda v: p[d][v])
            best = min(hopper, key=hopper.get)
            total += 1
            hits += pick == best
            chosen += hopper[pick]
            fastest += hopper[best]
        if total:
            print(f'{run}: the predicted fastest Hopper configuration was the measured fastest on '
                  f'{hits} of {total} convs; choosing by prediction {chosen / fastest:.3f}x the '
                  f'fastest in all')
    print()
    print(f"{'variant':<16}{'ops':>5}{'measured/predicted':>20}{'min':>8}{'max':>8}")
    for v in sorted(ratios):
        r = ratios[v]
        g = math.exp(sum(math.log(x) for x in r) / len(r))
        print(f'{v:<16}{len(r):>5}{g:>20.2f}{min(r):>8.2f}{max(r):>8.2f}')


if __name__ == '__main__':
    main()
