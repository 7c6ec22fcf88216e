#!/usr/bin/env python3
"""The analyser's H200 prediction of auto's lead on the bwdfilt convs this change touches.

For ResNet-50's and YOLO11n's bwdfilt convs as the H200 timed them on 2026-12-04
(../2026-12-04-h200/hopper-bench/bench-*-bwdfilt.json.gz: bf16, channels-last, batch 32):
auto's lead on sm_90 (`convjit query`), and where that is a Hopper conv whose tile has no
filters past its first 64 (a conv of 64 filters or fewer: the skip) or that folds a stem's
taps, `convjit analyze --sample-blocks 1` of it, the H200's predicted seconds (the middle
of the range, all entries) in milliseconds.

  predict.py --cli build/convjit ops > ops.tsv                 # every op, its lead
  predict.py --cli build/convjit predict > predictions-after.tsv
"""
import argparse, gzip, json, os, subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = ('resnet50-bwdfilt', 'yolo11n-bwdfilt')


def bench(run):
    path = os.path.join(HERE, '..', '2026-12-04-h200', 'hopper-bench', f'bench-{run}.json.gz')
    with gzip.open(path, 'rt') as f:
        return json.load(f)


def dims(descriptor):
    """K and C of a 2D conv's descriptor name (its w dims follow x's dims and strides)."""
    t = descriptor.split('_')
    return int(t[11]), int(t[12])


def lead(cli, descriptor):
    env = dict(os.environ, CONVJIT_ARCH='sm_90')
    out = subprocess.run([cli, 'query', '--json', '--name', descriptor], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)['cuda']['jit_choice']


def touched(filters, channels, variant):
    skips = 0 < filters % 128 <= 64
    return variant.startswith('wgmma') and (skips or channels % 8 != 0)


def predict(cli, descriptor, variant):
    out = subprocess.run([cli, 'analyze', '--arch', 'sm_90', '--name', descriptor, '--variant',
                          variant, '--sample-blocks', '1', '--json'], check=True,
                         capture_output=True, text=True).stdout
    h200 = [p for p in json.loads(out)[0]['variants'][0]['predicted'] if p['gpu'] == 'H200'][0]
    return sum(h200['seconds']) / 2 * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--cli', default=os.path.join(HERE, '..', '..', '..', 'build', 'convjit'))
    parser.add_argument('what', choices=('ops', 'predict'))
    args = parser.parse_args()
    for run in RUNS:
        for op in bench(run)['ops']:
            measured = {k: v['ms'] for k, v in op['jit']['variants'].items() if 'ms' in v}
            filters, channels = dims(op['descriptor'])
            variant = lead(args.cli, op['descriptor'])
            if args.what == 'ops':
                print(run, op['layer'], op.get('count', 1), filters, channels, variant,
                      json.dumps(measured), op['descriptor'], sep='\t')
            elif touched(filters, channels, variant):
                ms = predict(args.cli, op['descriptor'], variant)
                print(run, op['layer'], variant, f'{ms:.5f}', sep='\t', flush=True)


if __name__ == '__main__':
    main()
