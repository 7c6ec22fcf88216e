#!/usr/bin/env python3
"""The auto policy's Hopper rules against this run's times (hopper-bench/bench-*.json.gz):
where the Hopper conv leads over the tiles (kernel_variants.cpp's wgmma_leads) and which
configuration leads (wgmma_conv.cpp's wgmma_lead_config), the rule before this run against the
one fitted to it, each as the total time of the variants it picks over the 189 dense convs of
ResNet-50 and YOLO11n (each op times its count), beside the fastest variant of each op.

  rules.py
"""
import math

import table

RUNS = ('resnet50', 'yolo11n-fwd', 'yolo11n-bwddata', 'yolo11n-bwdfilt')
HOPPER_SMS = 132
TILE_PIXELS = 128


def shape(op):
    """(filters, channels, output channels, output pixels) from the descriptor: conv<N>d,
    then x's shape and strides, w's shape (5 fields each)."""
    t = op['descriptor'].split('_')
    filters, channels = int(t[11]), int(t[12])
    bwddata = op['direction'] == 'bwddata'
    out = [int(x) for x in (t[1:6] if bwddata else t[16:21])]
    return filters, channels, out[1], out[0] * math.prod(x for x in out[2:] if x > 0)


def ms(variants, key):
    v = variants.get(key)
    return v['ms'] if isinstance(v, dict) and 'ms' in v else None


def wave_fill(blocks, per_sm=2):
    slots = HOPPER_SMS * per_sm
    return blocks / (math.ceil(blocks / slots) * slots)


def old_rule(op, variants):
    """Before this run: from 64 channels a K step (bwdfilt always); the 128 x 64 tile where
    it pads less or the reduction is three K steps or fewer, else 128 x 128 at one block."""
    filters, channels, out_channels, _ = shape(op)
    if op['direction'] == 'bwdfilt':
        return 'wgmma128x128'
    if (filters if op['direction'] == 'bwddata' else channels) < 64:
        return None
    half = ms(variants, 'wgmma128x64') and table.half_tile.leads_with_half_tile(
        op['descriptor'].split('_pe_')[0])
    return 'wgmma128x64' if half else 'wgmma128x128'


def new_rule(op, variants):
    """This run's: from 32 channels a K step, a bwdfilt where both its sides are 16 or more;
    the 128 x 64 tile where it pads less or fills the waves over 1.2 times as fully, else
    128 x 128 at two blocks an SM."""
    filters, channels, out_channels, pixels = shape(op)
    if op['direction'] == 'bwdfilt':
        return 'wgmma128x128b2' if min(filters, channels) >= 16 else None
    if (filters if op['direction'] == 'bwddata' else channels) < 32:
        return None
    if not ms(variants, 'wgmma128x64'):
        return 'wgmma128x128b2'
    pads_less = math.ceil(out_channels / 64) * 64 < math.ceil(out_channels / 128) * 128
    rows = math.ceil(pixels / TILE_PIXELS)
    fuller = wave_fill(rows * math.ceil(out_channels / 64)) > \
        1.2 * wave_fill(rows * math.ceil(out_channels / 128))
    return 'wgmma128x64' if pads_less or fuller else 'wgmma128x128b2'


def main():
    totals = {'fastest': 0.0, 'old': 0.0, 'new': 0.0}
    narrow, b2_ratio, half_right, layers = [], [], [0, 0], 0
    for name in RUNS:
        for op in table.dense_convs(name):
            variants = op['jit'].get('variants', {})
            tiles = [v['ms'] for k, v in variants.items() if k.startswith('tc') and
                     isinstance(v, dict) and 'ms' in v]
            if not tiles:
                continue
            layers += 1
            tile, n = min(tiles), op['count']
            hopper = {k: ms(variants, k) for k in table.CONFIGS if ms(variants, k)}
            totals['fastest'] += n * min([tile] + list(hopper.values()))
            for rule, key in ((old_rule, 'old'), (new_rule, 'new')):
                lead = rule(op, variants) if hopper else None
                totals[key] += n * (hopper.get(lead, tile) if lead else tile)
            if hopper and new_rule(op, variants) is None:
                narrow.append((op['layer'], op['direction'], min(hopper.values()) / tile))
            if 'wgmma128x128' in hopper and 'wgmma128x128b2' in hopper:
                b2_ratio.append(hopper['wgmma128x128b2'] / hopper['wgmma128x128'])
            if 'wgmma128x64' in hopper and 'wgmma128x128b2' in hopper:
                lead = new_rule(op, variants)
                if lead:
                    half_right[0] += 1
                    half_right[1] += (lead == 'wgmma128x64') == \
                        (hopper['wgmma128x64'] <= hopper['wgmma128x128b2'])
    print(f"{layers} dense convs; total ms of the variants each rule picks (the best tile where "
          f"the Hopper conv does not lead):")
    for key, value in totals.items():
        print(f"  {key:<8} {value:7.3f}  ({100 * (value / totals['fastest'] - 1):4.1f}% over the "
              f"fastest)")
    print(f"where the new rule does not lead: {len(narrow)} layers, the fastest Hopper "
          f"configuration over the best tile "
          + ', '.join(f"{layer} {d} {r:.2f}" for layer, d, r in narrow))
    geo = math.exp(sum(map(math.log, b2_ratio)) / len(b2_ratio))
    print(f"128x128 at two blocks over one block: no slower on "
          f"{sum(r <= 1 for r in b2_ratio)} of {len(b2_ratio)}, geometric mean {geo:.2f}, "
          f"range {min(b2_ratio):.2f}-{max(b2_ratio):.2f}")
    print(f"the new rule's choice between 128x64 and 128x128b2 the faster on {half_right[1]} of "
          f"{half_right[0]} fwd and bwddata layers where it leads")


if __name__ == '__main__':
    main()
