#!/usr/bin/env python3
"""The Hopper conv's two tiles against the mma.sync tiles, layer by layer, as the fitted
bottleneck model predicts them on an H200.  Reads, for each model and direction M-D,
`convjit analyze --model M --direction D --json` of every variant
(../2026-11-27-hopper-conv-analysis/M-D.json.gz) and of wgmma128x64 alone (M-D-wgmma128x64.json.gz,
here), and prints per dense conv the fastest tile's, wgmma128x128's and wgmma128x64's predicted
time (the middle of each range) with each one's share of the op's roofline, and the one the auto
policy leads with on sm_90 (wgmma_lead_config: the 128 x 64 tile where it pads the output's
channels less than the 128 x 128 one, or where the reduction is three K steps of 64 or fewer);
then each model's conv totals (each op times its count), the Hopper conv taken where it is
predicted faster than the best tile.

  table.py resnet50-fwd resnet50-bwddata ...
"""
import gzip, json, math, os, sys

GPU = 'H200'
HERE = os.path.dirname(os.path.abspath(__file__))
EARLIER = os.path.join(HERE, '..', '2026-11-27-hopper-conv-analysis')


def load(path):
    return json.load(gzip.open(path) if path.endswith('.gz') else open(path))


def predicted(variant):
    p = next((p for p in variant['predicted'] if p['gpu'] == GPU and 'seconds' in p), None)
    return None if p is None else (sum(p['seconds']) / 2, p['roofline_seconds'])


def leads_with_half_tile(descriptor):
    # conv<N>d x-shape(5) x-strides(5) w-shape(5) y-shape(5) y-strides(5) pads(3) strides(3)
    # dilations(3) groups direction: wgmma_conv.cpp's wgmma_lead_config.
    tokens = descriptor.split('_')
    bwddata = tokens[36] == 'bwddata'
    channels = int(tokens[2] if bwddata else tokens[17])
    taps = math.prod(int(t) for t in tokens[13:16] if int(t) > 0)
    strides = [int(t) for t in tokens[29:32] if int(t) > 0]
    if bwddata and any(s != 1 for s in strides):
        for s in strides:
            taps = max(1, taps // s)
    reduction = int(tokens[11] if bwddata else tokens[12]) * taps
    pads_less = math.ceil(channels / 64) * 64 < math.ceil(channels / 128) * 128
    return pads_less or reduction <= 3 * 64


def rows(name):
    half = {op['descriptor']: op for op in load(os.path.join(HERE, name + '-wgmma128x64.json.gz'))
            if 'descriptor' in op}
    for op in load(os.path.join(EARLIER, name + '.json.gz')):
        # Dense convs: one group (the descriptor's field before the direction).
        if 'variants' not in op or not op['descriptor'].startswith('conv') or \
                op['descriptor'].split('_')[-3] != '1':
            continue
        tiles, hopper = [], {}
        for v in op['variants'] + half.get(op['descriptor'], {}).get('variants', []):
            p = predicted(v)
            if p is None:
                continue
            if v['variant'].startswith('tc'):
                tiles.append((p[0], v['variant'], p[1]))
            elif v['variant'] in ('wgmma128x128', 'wgmma128x64'):
                hopper[v['variant']] = p
        if tiles:
            yield op, min(tiles), hopper


def cell(p, roof):
    return f"{p[0] * 1e6:8.1f} {100 * roof / p[0]:3.0f}%" if p else f"{'-':>8} {'':>4}"


def main():
    print(f"predicted on an {GPU} (the middle of each range); % = the op's roofline over the "
          "predicted time; lead: auto's Hopper variant on sm_90")
    print(f"{'layer':<30} {'dir':<8} {'count':>5} {'best tile':<10} {'us':>8} {'%':>4}"
          f"  {'128x128':>8} {'%':>4}  {'128x64':>8} {'%':>4}  {'lead':<7} {'lead/tile':>9}")
    for name in sys.argv[1:]:
        total_tile = total_before = total_best = 0.0
        served = layers = wins = half_faster = half_led = 0
        for op, (t, tile, roof), hopper in rows(name):
            layers += 1
            total_tile += op['count'] * t
            wide, half = hopper.get('wgmma128x128'), hopper.get('wgmma128x64')
            lead_id = '128x64' if half and leads_with_half_tile(op['descriptor']) else '128x128'
            lead = half if lead_id == '128x64' else wide
            half_led += lead_id == '128x64'
            half_faster += lead_id == '128x64' and wide is not None and half[0] < wide[0]
            line = (f"{op['layer'][:30]:<30} {name.split('-')[-1]:<8} {op['count']:>5} "
                    f"{tile:<10} {t * 1e6:8.1f} {100 * roof / t:3.0f}%"
                    f"  {cell(wide, roof)}  {cell(half, roof)}")
            total_before += op['count'] * (min(t, wide[0]) if wide else t)
            if lead:
                served += 1
                wins += lead[0] < t
                total_best += op['count'] * min(t, lead[0])
                line += f"  {lead_id:<7} {lead[0] / t:9.2f}"
            else:
                total_best += op['count'] * t
                line += f"  {'-':<7} {'not served':>9}"
            print(line)
        print(f"== {name}: {layers} dense conv ops, the Hopper conv serves {served}, leads with "
              f"128x64 on {half_led} (predicted faster than 128x128 on {half_faster} of them) and "
              f"is predicted faster than the best tile on {wins}; conv step {total_tile * 1e3:.3f} "
              f"ms on the best tiles, {total_before * 1e3:.3f} ms with wgmma128x128 alone, "
              f"{total_best * 1e3:.3f} ms with the lead variant, each where predicted faster\n")


if __name__ == '__main__':
    main()
