#!/usr/bin/env python3
"""This run's benches against the auto policy of the checked-out code, layer by layer.

Each op of each bench (hopper-bench/bench-*.json.gz: `convjit bench`, bf16, channels-last,
batch 32, each variant's median over 10 batches of back-to-back calls on the H200): the
variant auto leads with on sm_90 (`convjit query --json`, CONVJIT_ARCH=sm_90), its time, the
fastest variant's, and cuDNN's best where it served the op.  Then per run the totals (each op
times its count): auto, the fastest variant per op, cuDNN over the ops it served against
auto over the same ops; and the ops where auto's lead is more than 5% slower than the fastest.

  table.py [--cli build/convjit] [--layers] resnet50-fwd yolo11n-bwddata ...
"""
import argparse, gzip, json, os, subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    with gzip.open(os.path.join(HERE, 'hopper-bench', f'bench-{name}.json.gz'), 'rt') as f:
        return json.load(f)


def auto_lead(cli, descriptor):
    env = dict(os.environ, CONVJIT_ARCH='sm_90')
    out = subprocess.run([cli, 'query', '--json', '--name', descriptor], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)['cuda']['jit_choice']


def rows(cli, report):
    for op in report['ops']:
        jit = op.get('jit', {})
        variants = {k: v['ms'] for k, v in jit.get('variants', {}).items() if 'ms' in v}
        if not variants:
            continue
        lead = auto_lead(cli, op['descriptor'])
        best = min(variants, key=variants.get)
        cudnn = op.get('cudnn', {}).get('ms')
        yield dict(layer=op.get('layer', op['descriptor'][:40]), count=op.get('count', 1),
                   lead=lead, lead_ms=variants.get(lead), best=best, best_ms=variants[best],
                   cudnn_ms=cudnn, variants=variants)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--cli', default=os.path.join(HERE, '..', '..', '..', 'build', 'convjit'))
    parser.add_argument('--layers', action='store_true')
    parser.add_argument('runs', nargs='+')
    args = parser.parse_args()
    for run in args.runs:
        table = list(rows(args.cli, load(run)))
        auto = sum(r['count'] * (r['lead_ms'] or r['best_ms']) for r in table)
        best = sum(r['count'] * r['best_ms'] for r in table)
        served = [r for r in table if r['cudnn_ms']]
        print(f'## {run}: {len(table)} ops')
        print(f'auto {auto:.3f} ms, fastest per op {best:.3f} ms (auto/fastest {auto / best:.3f})')
        if served:
            c = sum(r['count'] * r['cudnn_ms'] for r in served)
            a = sum(r['count'] * (r['lead_ms'] or r['best_ms']) for r in served)
            print(f'cuDNN served {len(served)} ops: {c:.3f} ms against auto {a:.3f} '
                  f'(cuDNN/auto {c / a:.2f}x)')
        for r in table:
            slow = r['lead_ms'] is None or r['lead_ms'] > 1.05 * r['best_ms']
            if args.layers or slow:
                lead = f"{r['lead_ms']:.4f}" if r['lead_ms'] is not None else 'not timed'
                cudnn = f" cudnn {r['cudnn_ms']:.4f}" if r['cudnn_ms'] else ''
                print(f"  {r['layer']:<24} x{r['count']} auto {r['lead']} {lead} | fastest "
                      f"{r['best']} {r['best_ms']:.4f}{cudnn}{'  <-' if slow else ''}")
        print()


if __name__ == '__main__':
    main()
