#!/usr/bin/env python3
"""The Hopper conv's three configurations against the mma.sync tiles and cuDNN, layer by layer,
as measured on the H200 of this run (hopper-bench/bench-*.json.gz: `convjit bench`, bf16,
channels-last, batch 32, each variant's median over 10 batches of back-to-back calls).

Per dense conv: the fastest tile's time, each Hopper configuration's, the one auto leads with
on sm_90 after this run (rules.py; '-' where it leads with a tile), the lead's time over the
best tile's and over cuDNN's best algorithm's, and the lead's time over what the fitted
bottleneck model predicted (../2026-11-27-hopper-conv-analysis for wgmma128x128,
../2026-11-28-hopper-half-tile for wgmma128x64; the b2 configuration was not predicted).  Then
each run's conv totals, each op times its count.

  table.py [--no-layers] resnet50 yolo11n-fwd yolo11n-bwddata yolo11n-bwdfilt yolo11n-fused
"""
import importlib.util, math, os, sys

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
    """The configuration auto leads with on sm_90 (rules.py's new rule), or None where it
    leads with a tile."""
    import rules  # it reads the benches through this module
    return rules.new_rule(op, variants) if any(c in variants for c in CONFIGS) else None


def cell(variants, key):
    v = variants.get(key)
    if not isinstance(v, dict) or 'ms' not in v:
        return f"{'-':>7} {'':>3}"
    return f"{v['ms'] * 1e3:7.1f} {100 * v['peak_fraction']:2.0f}%"


def geomean_line(ratios):
    if not ratios:
        return "n/a"
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    return f"{geo:.2f} over {len(ratios)} (range {min(ratios):.2f}-{max(ratios):.2f})"


def table(name, predicted, layers):
    totals = {k: 0.0 for k in ('tile', 'wide', 'auto', 'best', 'cudnn_jit', 'cudnn')}
    counts = {'ops': 0, 'served': 0, 'led': 0, 'beats_tile': 0, 'cudnn_ops': 0,
              'beats_cudnn': 0}
    model = {c: [] for c in ('wgmma128x128', 'wgmma128x64')}
    for op in dense_convs(name):
        variants = op['jit'].get('variants', {op['jit']['variant']: op['jit']})
        tiles = [(v['ms'], k) for k, v in variants.items()
                 if k.startswith('tc') and isinstance(v, dict) and 'ms' in v]
        if not tiles:
            continue
        tile_ms, tile = min(tiles)
        n = op['count']
        counts['ops'] += 1
        counts['served'] += any(c in variants for c in CONFIGS)
        totals['tile'] += n * tile_ms
        wide = variants.get('wgmma128x128', {}).get('ms') if isinstance(
            variants.get('wgmma128x128'), dict) else None
        totals['wide'] += n * min(tile_ms, wide or tile_ms)
        lead = lead_of(op, variants)
        lead_ms = variants[lead]['ms'] if lead and 'ms' in variants[lead] else None
        auto_ms = lead_ms or tile_ms
        totals['auto'] += n * auto_ms
        totals['best'] += n * op['jit']['ms']
        if lead_ms:
            counts['led'] += 1
            counts['beats_tile'] += lead_ms < tile_ms
        cudnn = op['cudnn'].get('ms')
        if cudnn:
            counts['cudnn_ops'] += 1
            counts['beats_cudnn'] += auto_ms < cudnn
            totals['cudnn_jit'] += n * auto_ms
            totals['cudnn'] += n * cudnn
        for config, ratios in model.items():
            pred, got = predicted.get((op['descriptor'], config)), variants.get(config)
            if pred and isinstance(got, dict) and 'ms' in got:
                ratios.append(got['ms'] * 1e-3 / pred)
        if layers:
            print(f"{op['layer'][:26]:<26} {op['direction']:<8} {n:>3} {tile:<9} "
                  f"{tile_ms * 1e3:7.1f} {100 * variants[tile]['peak_fraction']:2.0f}% "
                  + ' '.join(cell(variants, c) for c in CONFIGS)
                  + f"  {(lead or '-').removeprefix('wgmma'):<10} "
                  + (f"{lead_ms / tile_ms:5.2f} " if lead_ms else f"{'-':>5} ")
                  + (f"{auto_ms / cudnn:6.2f}" if cudnn else f"{'-':>6}"))
    print(f"== {name}: {counts['ops']} dense convs; the Hopper conv serves {counts['served']}, "
          f"auto leads with it on {counts['led']}, where it beats the best tile on "
          f"{counts['beats_tile']}.\n"
          f"   conv time (each op times its count): best tiles {totals['tile']:.3f} ms, with "
          f"wgmma128x128 where faster {totals['wide']:.3f} ms, auto's choice "
          f"{totals['auto']:.3f} ms, every op's fastest variant {totals['best']:.3f} ms.\n"
          f"   cuDNN served {counts['cudnn_ops']}: {totals['cudnn']:.3f} ms against auto's "
          f"{totals['cudnn_jit']:.3f} ms on those; auto faster on {counts['beats_cudnn']}.\n"
          f"   measured/predicted: wgmma128x128 {geomean_line(model['wgmma128x128'])}; "
          f"wgmma128x64 {geomean_line(model['wgmma128x64'])}\n")


def main():
    args = sys.argv[1:]
    layers = '--no-layers' not in args
    names = [a for a in args if a != '--no-layers']
    predicted = predictions()
    if layers:
        print("measured on an H200: us and % of the op's roofline (989 TFLOP/s dense bf16, "
              "4.8 TB/s); lead: auto's Hopper configuration after this run ('-': a tile); "
              "/tile: its time over the best tile's; /cuDNN: auto's choice over cuDNN's best")
        print(f"{'layer':<26} {'dir':<8} {'n':>3} {'best tile':<9} {'us':>7} {'%':>3} "
              + ' '.join(f"{c.removeprefix('wgmma'):>11}" for c in CONFIGS)
              + f"  {'lead':<10} {'/tile':>5} {'/cuDNN':>6}")
    for name in names:
        table(name, predicted, layers)


if __name__ == '__main__':
    main()
