#!/usr/bin/env python3
"""Fits the bottleneck model's latency and issue terms (analysis/gpu_throughput.cpp)
to a lent GPU's times, and checks the fit out of sample.

Input: analysis.json.gz, one record per (op, JIT variant) the H200 timed in
../2026-11-27-h200-hopper/hopper-bench: the op's `convjit analyze --json --variant V
--sample-blocks 2 --arch sm_90` and its measured time.  The model here mirrors
analysis/bottleneck_model.cpp: every throughput limit as analyze computed it, the
issue limit recomputed from the dynamic instruction count at an efficiency of
min(1, warps per scheduler / W), plus, per round of resident blocks, a fill and
drain by kernel family and an epilogue per output of the resident tiles.

  fit_model.py            the fits and their out-of-sample errors
  fit_model.py --table    also every op's measured / predicted
"""
import gzip, json, math, re, sys, collections

SMS, CLOCK_HZ, SCHEDULERS = 132, 1.83e9, 4  # the H200 row
PARAMS = ['warps', 'plain', 'mma', 'wgmma', 'epilogue']


def memory_instructions(c):
    return sum(c.get(k, 0) for k in ['ldg', 'stg', 'ldgsts', 'lds', 'sts', 'ldsm'])


def dynamic_instructions(e, requests):
    """analysis/bottleneck_model.cpp's dynamic_mix, at the middle of its range."""
    whole, loop = e.get('kernel_instructions'), e.get('main_loop')
    if whole is None:
        return None
    m = e['memory']
    if loop is None:
        if memory_instructions(whole) == 0:
            return None
        return requests / memory_instructions(whole) * whole['total']
    straight, every = loop['outside_inner_loops'], loop['instructions']
    anchor_static, anchor_dynamic = straight['mma'], m.get('mma_instructions', 0)
    if anchor_static == 0 or anchor_dynamic == 0:
        anchor_static, anchor_dynamic = memory_instructions(straight), requests
    if anchor_static == 0:
        return None
    trips = anchor_dynamic / anchor_static
    warps = e['blocks'] * e['threads_per_block'] / 32
    around_memory = memory_instructions(whole) - memory_instructions(every)
    inner_memory = memory_instructions(every) - memory_instructions(straight)
    if inner_memory > 0:
        inner = max(0, requests - trips * memory_instructions(straight) -
                    around_memory * warps) / inner_memory
    else:
        inner = trips / 2
    return (trips * straight['total'] + inner * (every['total'] - straight['total']) +
            warps * (whole['total'] - every['total']))


def kernels(record):
    variant = record['analysis'][0]['variants'][0]
    predicted = next(p for p in variant['predicted'] if p['gpu'] == 'H200')
    tile = re.match(r'(?:tc|wgmma)(\d+)x(\d+)', record['variant'])
    for e, k in zip(variant['entries'], predicted['kernels']):
        occupancy = next(o for o in e['occupancy'] if o['gpu'] == 'H200')
        m = e['memory']
        requests = sum(s['requests'] for s in m.get('instructions', [])
                       if not (s['space'] == 'shared' and s['op'] == 'cp.async'))
        yield dict(
            limits={n: sum(v) / 2 for n, v in k['limits'].items() if n != 'issue'},
            waves=k['waves'], blocks_per_sm=occupancy['blocks_per_sm'],
            warps_per_sm=occupancy['warps_per_sm'],
            instructions=dynamic_instructions(e, requests),
            family='wgmma' if m.get('wgmma_mma_equivalents', 0) > 0
            else 'mma' if m.get('mma_instructions', 0) > 0 else 'plain',
            tile_outputs=int(tile.group(1)) * int(tile.group(2))
            if tile and e['entry'] == 'convjit_kernel' else 0)


def predict(ops, p):
    seconds = 0
    for k in ops:
        limits = dict(k['limits'])
        if k['instructions'] is not None:
            stretch = math.ceil(k['waves']) / k['waves']
            rate = SCHEDULERS * min(1.0, k['warps_per_sm'] / SCHEDULERS / p['warps'])
            limits['issue'] = k['instructions'] / (SMS * CLOCK_HZ * rate) * stretch
        per_round = p[k['family']] + p['epilogue'] * k['blocks_per_sm'] * k['tile_outputs']
        seconds += max(limits.values()) + math.ceil(k['waves']) * per_round
    return seconds


def error(rows, p):
    return math.sqrt(sum(math.log(r['measured'] / predict(r['kernels'], p)) ** 2
                         for r in rows) / len(rows))


def fit(rows, p):
    """Coordinate descent on the log error: a few parameters, a smooth surface."""
    best = error(rows, p)
    improved = True
    while improved:
        improved = False
        for name in PARAMS:
            for factor in (0.8, 0.95, 1.05, 1.25):
                q = dict(p, **{name: max(1.0 if name == 'warps' else 0.0, p[name] * factor)})
                e = error(rows, q)
                if e < best - 1e-9:
                    p, best, improved = q, e, True
    return p


def family(variant):
    return 'wgmma' if variant.startswith('wgmma') else 'tc' if variant.startswith('tc') else 'other'


def report(label, rows, p):
    print(label)
    groups = collections.defaultdict(list)
    for r in rows:
        groups[family(r['variant'])].append(r['measured'] / predict(r['kernels'], p))
    for name, q in sorted(groups.items()):
        logs = [math.log(x) for x in q]
        mean = sum(logs) / len(logs)
        spread = math.sqrt(sum((x - mean) ** 2 for x in logs) / len(logs))
        within = sum(1 for x in q if 0.5 <= x <= 2) / len(q)
        print(f'  {name:<6}{len(q):4d} ops: measured/predicted geomean {math.exp(mean):.2f}, '
              f'{min(q):.2f}-{max(q):.2f}, spread x{math.exp(spread):.2f}, '
              f'{100 * within:.0f}% within 2x')
    print(f'  all {len(rows)} ops: rms log error {error(rows, p):.3f} (x{math.exp(error(rows, p)):.2f})')


def show(p):
    return (f"W {p['warps']:.2f} warps/scheduler, plain {p['plain'] * 1e6:.2f} us, "
            f"mma {p['mma'] * 1e6:.2f} us, wgmma {p['wgmma'] * 1e6:.2f} us, "
            f"epilogue {p['epilogue'] * 1e9:.3f} ns/output")


def main():
    records = json.load(gzip.open(__file__.rsplit('/', 1)[0] + '/analysis.json.gz'))
    rows = [dict(model=r['model'], layer=r['layer'], variant=r['variant'],
                 measured=r['measured_ms'] * 1e-3, kernels=list(kernels(r)))
            for r in records.values()]
    start = dict(warps=6.0, plain=1.5e-6, mma=3e-6, wgmma=1e-6, epilogue=2e-10)
    before = dict(warps=1e-9, plain=0, mma=0, wgmma=0, epilogue=0)
    report('issue from the dynamic count, at full rate, no latency (before the fit)', rows, before)
    fits = {'all': fit(rows, start)}
    for model in sorted({r['model'] for r in rows}):
        own = [r for r in rows if r['model'] == model]
        others = [r for r in rows if r['model'] != model]
        fits[model] = fit(own, start)
        print(f'fit to {model} alone: {show(fits[model])}')
        report(f'  its prediction of the other model\'s ops (out of sample)', others, fits[model])
    print(f"fit to all: {show(fits['all'])}")
    report('  in sample', rows, fits['all'])
    print('ranges over the three fits:')
    for name in PARAMS:
        values = [f[name] for f in fits.values()]
        print(f'  {name}: {min(values):.4g} - {max(values):.4g}')
    if '--table' in sys.argv:
        for r in sorted(rows, key=lambda r: (r['model'], r['layer'], r['variant'])):
            print(f"{r['model']:<9}{r['layer'][:30]:<31}{r['variant']:<14}"
                  f"{r['measured'] * 1e3:8.4f} ms  {predict(r['kernels'], fits['all']) * 1e3:8.4f} ms")


if __name__ == '__main__':
    main()
