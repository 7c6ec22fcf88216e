#!/usr/bin/env python3
"""Each conv whose predicted time or variant moves under auto once it may lead with the ping-pong
tile in clusters that share their pixel tile (wgmma128x64pa), against auto before (the Stream-K
results' whole tiles), with the share of the op's roofline at each end of the latter; the sums
over those convs and over all; and how many of the Hopper conv's convs (the stem's folded 7 x 7
aside) reach 60% of their roofline (the newer file's) at the low end of the range, before and
after.
  compare.py BEFORE.json.gz AFTER.json.gz [GPU]   (GPU as the JSON names it; default H100 SXM)"""
import importlib.util
import pathlib
import sys

# The TMA-store comparison's reader of the analyser's JSON and its lines.
_spec = importlib.util.spec_from_file_location(
    'tma_store_compare', pathlib.Path(__file__).parent.parent / '2026-12-06-tma-store' / 'compare.py')
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)

GOAL = 0.60  # issue 43: every 3 x 3 and 1 x 1 layer at 60% of the dense tensor peak or more


def at_goal(convs, roofs):
    """(the Hopper conv's convs at the goal at the low end, all of them), the stem aside, against
    the rooflines `roofs` (the newer file's: before 2026-12-07 a strided conv's counted all of x)."""
    hopper = [(span, roofs[layer]) for layer, (variant, span, _, _, _) in convs.items()
              if variant.startswith('wgmma') and not layer.startswith('stem')]
    return sum(roof / span[0] >= GOAL for span, roof in hopper), len(hopper)


def main(before_path, after_path, gpu='H100 SXM'):
    before, after = _shared.convs(before_path, gpu), _shared.convs(after_path, gpu)
    print(f"{gpu}, predicted (low-high) by auto before, then with the pixel clusters; the share of "
          "the op's roofline at each end")
    print(f"{'layer':<26} {'variant':<14} {'before':>17}  {'after':>17} {'% roofline':>16}")
    roofs = {layer: roof for layer, (_, _, roof, _, _) in after.items()}
    sums = _shared.print_moved(before, after, roofs)
    _shared.print_sums(sums, [('moved', 'convs that moved'), ('all', 'all convs')])
    (met0, n0), (met, n) = at_goal(before, roofs), at_goal(after, roofs)
    print(f"at {GOAL:.0%} of the roofline or more at the low end: {met0} of {n0} before, "
          f"{met} of {n} after")


if __name__ == '__main__':
    main(*sys.argv[1:])
