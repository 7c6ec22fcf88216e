#!/usr/bin/env python3
"""The analyser's H200 predictions of ResNet-50's bwdfilt convs (bf16, channels-last, batch 32) in
the two Hopper bwdfilt configurations, before and after the busiest-SM rule (model/before,
model/after), against the H200's times of 2026-12-04 (../2026-12-04-h200/hopper-bench): per conv
measured / predicted, then the geometric mean and the spread (max / min) per configuration.
  bwdfilt_calibration.py            (from this folder or any other)"""
import gzip, json, math, os

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ('wgmma128x128b2', 'wgmma128x128')


def measured():
    path = os.path.join(HERE, '..', '2026-12-04-h200', 'hopper-bench', 'bench-resnet50-bwdfilt.json.gz')
    with gzip.open(path, 'rt') as f:
        return {op['descriptor']: (op['layer'], {k: v['ms'] * 1e-3 for k, v in op['jit'].get('variants', {}).items() if 'ms' in v})
                for op in json.load(f)['ops']}


def predicted(model, variant):
    with gzip.open(os.path.join(HERE, 'model', model, f'resnet50-bwdfilt-{variant}.json.gz'), 'rt') as f:
        return {op['descriptor']: sum(p['seconds']) / 2 for op in json.load(f) if 'descriptor' in op
                for v in op['variants'] for p in v['predicted'] if p['gpu'] == 'H200'}


def print_table(m, columns, label_width=7):
    """Per conv, measured / predicted for each (model, variant, predictions) column, then each
    column's geometric mean and spread."""
    print(f"{'layer':<24}" + ''.join(f"{model + ' ' + v:>30}" for model, v, _ in columns))
    ratios = {(model, v): [] for model, v, _ in columns}
    for d, (layer, times) in m.items():
        row = f'{layer:<24}'
        for model, v, p in columns:
            if d in p and v in times:
                r = times[v] / p[d]
                ratios[model, v].append(r)
                row += f'{times[v] * 1e6:11.1f} / {p[d] * 1e6:6.1f} = {r:4.2f}'
            else:
                row += ' ' * 30
        print(row)
    for (model, v), rs in ratios.items():
        logs = [math.log(r) for r in rs]
        print(f'{model:<{label_width}} {v:<16} {len(rs)} convs: measured / predicted '
              f'{math.exp(sum(logs) / len(logs)):.3f}, spread {max(rs) / min(rs):.2f}')


def main():
    columns = [(model, v, predicted(model, v)) for model in ('before', 'after') for v in VARIANTS]
    print('H200, measured / predicted (us)')
    print_table(measured(), columns)


if __name__ == '__main__':
    main()
