"""The conv of few filters (`pixels`) on bwddata against auto's previous choice, and its grid
capped at a full GPU: the analyser's predictions.

python3 table.py DIR > table.txt: DIR holds `convjit analyze --json` runs:
  MODEL-BATCH-LAYOUT-DIRECTION-before.json and -after.json, `--model` runs of the convs under
  auto: bwddata built with `pixels` refusing bwddata (before) and as committed (after); fwd built
  with a block per tile (before) and as committed, the grid capped (after);
  LAYOUT-LAYER-VARIANT.json, one bwddata conv (`--name`) under `pixels` or under `auto`, auto's
  choice where `pixels` does not lead on it or did not before.
python3 table.py --compact DIR writes them into predictions.json.gz, which
python3 table.py predictions.json.gz reads instead.
Per run and GPU: each conv whose prediction moved (before and after: variant, seconds, % of the
op's roofline, limiter), then the run's totals; then the convs run alone.  Seconds are the mid of
the model's low and high, per conv, times its count."""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The fwd table's loader and columns, whose files this run names the same way.
_spec = importlib.util.spec_from_file_location(
    "fwd_table", os.path.join(HERE, "..", "2026-12-03-pixel-filters", "table.py"))
fwd_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fwd_table)
describe, load, moved = fwd_table.describe, fwd_table.load, fwd_table.moved
wide_table = fwd_table.wide_table


def table(data, gpu):
    for key, run in data["runs"].items():
        print(f"## {key} ({gpu})")
        moved(run["before"], run["after"], gpu)
    print(f"## the convs alone: under pixels, and under auto's choice without it ({gpu})")
    for name, ops in data["alone"].items():
        ratio = ops["pixels"]["seconds"][gpu] / ops["auto"]["seconds"][gpu]
        print(f"{name:24} {describe(ops['pixels'], gpu)}  auto {describe(ops['auto'], gpu)}  "
              f"{ratio:.3f}x")
    print()


if __name__ == "__main__":
    wide_table.cli(sys.argv[1:], HERE, load, table)
