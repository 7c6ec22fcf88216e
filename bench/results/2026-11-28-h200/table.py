#!/usr/bin/env python3
"""The Hopper conv's three configurations against the mma.sync tiles and cuDNN, layer by layer,
as measured on the H200 of this run (hopper-bench/bench-*.json.gz: `convjit bench`, bf16,
channels-last, batch 32, each variant's median over 10 batches of back-to-back calls).

Per dense conv: the fastest tile's time, each Hopper configuration's, the one auto leads with
on sm_90 (wgmma_lead_config, restated in ../2026-11-28-hopper-half-tile/table.py), the lead's
time over the best tile's and over cuDNN's best algorithm's, and the lead's time over what the
fitted bottleneck model predicted for it (../2026-11-27-hopper-conv-analysis for wgmma128x128,
../2026-11-28-hopper-half-tile for wgmma128x64; the b2 configuration was not predicted).  Then
each run's conv totals, each op times its count.

  table.py [--no-layers] resnet50 yolo11n-fwd yolo11n-bwddata yolo11n-bwdfilt yolo11n-fused
"""
import gzip, importlib.util, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
HALF = os.path.join(HERE, '..', '2026-11-28-hopper-half-tile')
EARLIER = os.path.join(HERE, '..', '2026-11-27-hopper-conv-analysis')
CONFIGS = ('wgmma128x128', 'wgmma128x128b2', 'wgmma128x64')

_spec = importlib.util.spec_from_file_location('half_tile', os.path.join(HALF, 'table.py'))
half_tile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(half_tile)


def predictions():
    """{(descriptor, variant): predicted seconds (the middle of the range)} on an H200."""
    out = {}
    for model in ('resnet50', 'yolo11n', 'cosmoflow'):
        for direction in ('fwd', 'bwddata', 'bwdfilt'):
            for path, wanted in ((os.path.join(EARLIER, f'{model}-{direction}.json.gz'),
                                  'wgmma128x128'),
                                 (os.path.join(HALF, f'{model}-{direction}-wgmma128x64.json.gz'),
                                  'wgmma128x64')):
                if not os.path.exists(path):
                    continue
                for op in half_tile.load(path):
                    for v in op.get('variants', []):
                        p = half_tile.predicted(v) if v['variant'] == wanted else None
                        if p:
                            out[(op['descriptor'], wanted)] = p[0]
    return out


def dense_convs(name):
    report = half_tile.load(os.path.join(HERE, 'hopper-bench', f'bench-{name}.json.gz'))
    for op in report['ops']:
        if op['descriptor'].startswith('conv') and op.get('groups') == 1 and 'ms' in op['jit']:
            yield op


def lead_of(op, variants):
    if not any(c in variants for c in CONFIGS):
        return None
    half = 'wgmma128x64' in variants and op['direction'] != 'bwdfilt' and \
        half_tile.leads_with_half_tile(op['descriptor'].split('_pe_')[0].removesuffix('_bf16')
                                       + '_bf16')
    return 'wgmma128x64' if half else 'wgmma128x128'


def cell(variants, key):
    v = variants.get(key)
    if not isinstance(v, dict) or 'ms' not in v:
        return f"{'-':>7} {'':>3}"
    return f"{v['ms'] * 1e3:7.1f} {100 * v['peak_fraction']:2.0f}%"


def table(name, predicted, layers):
    totals = {k: 0.0 for k in ('tile', 'wide', 'lead', 'best', 'cudnn_jit', 'cudnn')}
    counts = {'ops': 0, 'served': 0, 'beats_tile': 0, 'cudnn_ops': 0, 'beats_cudnn': 0,
              'half_led': 0, 'half_right': 0}
    ratios = []
    for op in dense_convs(name):
        variants = op['jit'].get('variants', {op['jit']['variant']: op['jit']})
        tiles = [(v['ms'], k) for k, v in variants.items()
                 if k.startswith('tc') and isinstance(v, dict) and 'ms' in v]
        if not tiles:
            continue
        tile_ms, tile = min(tiles)
        n = op['count']
        counts['ops'] += 1
        totals['tile'] += n * tile_ms
        wide = variants.get('wgmma128x128', {}).get('ms') if isinstance(
            variants.get('wgmma128x128'), dict) else None
        totals['wide'] += n * min(tile_ms, wide or tile_ms)
        lead = lead_of(op, variants)
        lead_ms = variants[lead]['ms'] if lead and 'ms' in variants[lead] else None
        totals['lead'] += n * min(tile_ms, lead_ms or tile_ms)
        totals['best'] += n * op['jit']['ms']
        if lead_ms:
            counts['served'] += 1
            counts['beats_tile'] += lead_ms < tile_ms
            if lead == 'wgmma128x64':
                counts['half_led'] += 1
                counts['half_right'] += wide is None or lead_ms <= wide
        cudnn = op['cudnn'].get('ms')
        if cudnn:
            counts['cudnn_ops'] += 1
            jit_ms = min(tile_ms, lead_ms or tile_ms)
            counts['beats_cudnn'] += jit_ms < cudnn
            totals['cudnn_jit'] += n * jit_ms
            totals['cudnn'] += n * cudnn
        pred = predicted.get((op['descriptor'], lead)) if lead else None
        if pred and lead_ms:
            ratios.append(lead_ms * 1e-3 / pred)
        if layers:
            print(f"{op['layer'][:26]:<26} {op['direction']:<8} {n:>3} {tile:<9} "
                  f"{tile_ms * 1e3:7.1f} {100 * variants[tile]['peak_fraction']:2.0f}% "
                  + ' '.join(cell(variants, c) for c in CONFIGS)
                  + f"  {(lead or '-').removeprefix('wgmma'):<10} "
                  + (f"{lead_ms / tile_ms:5.2f} " if lead_ms else f"{'-':>5} ")
                  + (f"{min(tile_ms, lead_ms or tile_ms) / cudnn:6.2f} " if cudnn else
                     f"{'-':>6} ")
                  + (f"{lead_ms * 1e-3 / pred:5.2f}" if pred and lead_ms else f"{'-':>5}"))
    geo = (f"{pow(2.718281828, sum(map(_log, ratios)) / len(ratios)):.2f} over {len(ratios)} "
           f"(range {min(ratios):.2f}-{max(ratios):.2f})" if ratios else "n/a")
    print(f"== {name}: {counts['ops']} dense convs; the Hopper conv serves {counts['served']}, "
          f"its lead beats the best tile on {counts['beats_tile']}; auto led with 128x64 on "
          f"{counts['half_led']}, rightly (no slower than 128x128) on {counts['half_right']}.\n"
          f"   conv time (each op times its count): best tiles {totals['tile']:.3f} ms, with "
          f"wgmma128x128 {totals['wide']:.3f} ms, with the lead {totals['lead']:.3f} ms, every "
          f"op's fastest variant {totals['best']:.3f} ms.\n"
          f"   cuDNN served {counts['cudnn_ops']}: {totals['cudnn']:.3f} ms against the JIT's "
          f"{totals['cudnn_jit']:.3f} ms (tile or lead) on those; the JIT faster on "
          f"{counts['beats_cudnn']}.  Lead measured/predicted: {geo}\n")


def _log(x):
    import math
    return math.log(x)


def main():
    args = sys.argv[1:]
    layers = '--no-layers' not in args
    names = [a for a in args if a != '--no-layers']
    predicted = predictions()
    if layers:
        print("measured on an H200: us and % of the op's roofline (989 TFLOP/s dense bf16, "
              "4.8 TB/s); lead: auto's Hopper configuration; lead/tile: its time over the best "
              "tile's; JIT/cuDNN: min(tile, lead) over cuDNN's best; meas/pred: the lead's "
              "measured over predicted time")
        print(f"{'layer':<26} {'dir':<8} {'n':>3} {'best tile':<9} {'us':>7} {'%':>3} "
              + ' '.join(f"{c.removeprefix('wgmma'):>11}" for c in CONFIGS)
              + f"  {'lead':<10} {'/tile':>5} {'/cuDNN':>6} {'m/p':>5}")
    for name in names:
        table(name, predicted, layers)


if __name__ == '__main__':
    main()
