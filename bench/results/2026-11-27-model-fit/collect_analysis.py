#!/usr/bin/env python3
"""Makes analysis.json.gz: `convjit analyze` of every (op, JIT variant) the H200 timed in
../2026-11-27-h200-hopper/hopper-bench (the direct kernels aside), with its time.
Run from the repository root with nvdisasm installed (tools/setup --python):

  bench/results/2026-11-27-model-fit/collect_analysis.py [path/to/convjit]

About 25 minutes on one core: each op's variants are compiled and two blocks of
each kernel emulated.
"""
import gzip, json, subprocess, sys

HERE = 'bench/results/2026-11-27-model-fit/'
TIMES = 'bench/results/2026-11-27-h200-hopper/hopper-bench/wgmma-{}.json'


def main():
    convjit = sys.argv[1] if len(sys.argv) > 1 else 'build/convjit'
    records = {}
    for model in ('resnet50', 'yolo11n'):
        for op in json.load(open(TIMES.format(model)))['ops']:
            for variant, measured in op['jit'].get('variants', {}).items():
                key = op['descriptor'] + '@' + variant
                if variant == 'direct' or key in records:
                    continue
                run = subprocess.run([convjit, 'analyze', '--arch', 'sm_90', '--variant', variant,
                                      '--sample-blocks', '2', '--json', '--name',
                                      op['descriptor']], capture_output=True, text=True,
                                     check=True)
                records[key] = {'model': model, 'layer': op.get('layer'), 'variant': variant,
                                'measured_ms': measured['ms'], 'analysis': json.loads(run.stdout)}
                print(len(records), op.get('layer'), variant, flush=True)
    with gzip.open(HERE + 'analysis.json.gz', 'wt') as out:
        json.dump(records, out)


if __name__ == '__main__':
    main()
