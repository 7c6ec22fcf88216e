#!/usr/bin/env python3
"""The fwd and bwddata ops whose predicted time the busiest-SM rule moves by more than 15%:
measured / predicted before and after (geometric mean) and the mean |log| of it, per variant,
against the H200's times (../2026-12-04-h200).
  busiest_sm.py [BEFORE AFTER]   (folders of predictions; default model/before, model/after)"""
import importlib.util, math, sys, os
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('cal', os.path.join(here, '..', '2026-12-04-h200', 'calibration.py'))
cal = importlib.util.module_from_spec(spec); spec.loader.exec_module(cal)
old_dir, new_dir = (sys.argv[1:3] if len(sys.argv) > 2 else
                    [os.path.join(here, "model", m) for m in ("before", "after")])
for v in ('wgmma128x128b2', 'wgmma128x64', 'tc128x128'):
    o, n = [], []
    for run in ('resnet50-fwd', 'resnet50-bwddata', 'yolo11n-fwd', 'yolo11n-bwddata'):
        m = cal.measured(run); po = cal.predicted(run, old_dir); pn = cal.predicted(run, new_dir)
        for d in pn:
            if v in pn[d] and v in po.get(d, {}) and v in m.get(d, {}) and abs(pn[d][v] / po[d][v] - 1) > 0.15:
                o.append(math.log(m[d][v] / po[d][v])); n.append(math.log(m[d][v] / pn[d][v]))
    if o:
        g = lambda l: math.exp(sum(l) / len(l))
        print(f"{v:<16} {len(o):3d} ops moved >15%: measured/predicted {g(o):.2f} before, {g(n):.2f} after; "
              f"mean |log| {sum(map(abs, o)) / len(o):.3f} before, {sum(map(abs, n)) / len(n):.3f} after")
    else:
        print(f"{v:<16} no op moved by more than 15%")
