#!/usr/bin/env python3
"""The summary of one tools/gpu-check run (standard library only: it runs
under whatever python3 the GPU machine has).

Reads, from the raw folder: the GPU tests' text log (skip reasons, which
GoogleTest's JSON lacks, and the tests of a process stopped before it wrote
its JSON), dace_harness.txt, python_jax_tests.txt and python_tests.txt (with
their .status), bench-runs.txt (one line per bench run: model,
batch, dtype, image size, exit status, its --time-limit and the timeout that
guards it, in seconds, then its layout and form, plain or fused, which
older lines lack: nchw, plain) and each run's bench
JSON.  Writes to the out folder:
  summary.md  one table of every GPU test (pass, fail or skip, with the
              reason), the calibration probes against the bottleneck model
              (calibration.json, from the out folder), then per model x batch x dtype the geometric mean of
              JIT time / cuDNN time over the ops both served and the worst
              layer; for the bf16 batch-32 runs, the JIT's kernel goals on
              dense convolutions (speed against cuDNN per direction, share
              of the tensor-core peak on ResNet-50's 3x3 layers) and every
              dense conv's JIT/cuDNN comparison, and the bandwidth kernels'
              goals (depthwise, pooling, bias gradient), and the fused
              epilogues' (a fused run's fwd convs against the plain run's);
              where --predictions names a folder of `convjit analyze --json`
              files, each predicted op's range for the GPU calibration.json
              names beside its measured time;
              and a last line
              "Result: ..." (the goals are reported, not a failure);
  bench.json  every run's configuration, status and report, in one file.
Exit status: 0 when everything passed, 1 otherwise.

  gpu_check_summary.py --out DIR --raw DIR --gpu NAME --libraries TEXT --elapsed S
                       [--predictions DIR]
"""

import argparse
import json
import math
import os
import re
import sys


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def log_lines(log_path):
    """GoogleTest's text log, line by line; none where it is missing."""
    try:
        return open(log_path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return []


def skip_reasons(lines):
    """{test name: the message of its GTEST_SKIP} from GoogleTest's text log."""
    reasons, current, message, in_skip = {}, None, [], False
    for line in lines:
        started = re.match(r"\[ RUN      \] (\S+)", line)
        if started:
            current, message, in_skip = started.group(1), [], False
        elif line.endswith(": Skipped"):
            in_skip = True
        elif line.startswith("[  SKIPPED ]") and current:
            reasons[current] = " ".join(m for m in message if m).strip()
            current = None
        elif in_skip:
            message.append(line.strip())
    return reasons


def text_outcomes(lines):
    """{test name: pass, fail, skip, stop or unrun} from GoogleTest's text log: what a
    process stopped at its time limit (no JSON) had run, "stop" for the test it was stopped
    in, "unrun" for one gpu-check never started for want of time."""
    outcomes = {}
    ends = {"[       OK ]": "pass", "[  FAILED  ]": "fail", "[  SKIPPED ]": "skip"}
    last = None
    for line in lines:
        started = re.match(r"\[ RUN      \] (\S+)", line)
        if started:
            last = started.group(1)
            outcomes[last] = "stop"
        if line.startswith("gpu-check: not started") and outcomes.get(last) == "stop":
            outcomes[last] = "unrun"
        for mark, result in ends.items():
            ended = re.match(re.escape(mark) + r" (\S+) \(", line)
            if ended and outcomes.get(ended.group(1)) == "stop":
                outcomes[ended.group(1)] = result
    return outcomes


def gpu_tests(out_dir, raw_dir):
    """[(name, result, note)] from GoogleTest's JSON (the processes' merged), then the tests
    its text log shows that no JSON holds (a process stopped at its limit); None if there
    is neither."""
    report = read_json(os.path.join(out_dir, "gpu_tests.json"))
    lines = log_lines(os.path.join(raw_dir, "gpu_tests.txt"))
    logged = text_outcomes(lines)
    if report is None and not logged:
        return None
    reasons = skip_reasons(lines)
    rows = []
    for suite in report.get("testsuites", []):
        for test in suite.get("testsuite", []):
            name = f"{test.get('classname', suite.get('name'))}.{test['name']}"
            failures = test.get("failures", [])
            if failures:
                first = failures[0].get("failure", "").strip().splitlines()
                rows.append((name, "fail", first[0] if first else ""))
            elif test.get("result") == "SKIPPED":
                rows.append((name, "skip", reasons.get(name, "")))
            else:
                rows.append((name, "pass", f"{test.get('time', '')}"))
    reported = {row[0] for row in rows}
    notes = {"stop": "stopped at the time limit", "unrun": "not started: no time was left",
             "fail": "failed (the text log; no JSON)",
             "skip": reasons, "pass": "the text log; its process was stopped later"}
    for name, result in logged.items():
        if name not in reported:
            note = notes[result]
            rows.append((name, result, note.get(name, "") if isinstance(note, dict) else note))
    return rows


def bench_runs(raw_dir):
    """[{model, batch, dtype, imgsz, exit, budget_s, guard_s, report}] in run order."""
    runs = []
    try:
        lines = open(os.path.join(raw_dir, "bench-runs.txt"), encoding="utf-8").read().splitlines()
    except OSError:
        return runs
    for line in lines:
        fields = line.split()
        model, batch, dtype, imgsz, status, budget, guard = fields[:7]
        layout, form = fields[7:9] if len(fields) >= 9 else ("nchw", "plain")
        name = f"bench-{model}-b{batch}-{dtype}"
        name += "" if layout == "nchw" else f"-{layout}"
        name += "" if form == "plain" else f"-{form}"
        runs.append({"model": model, "batch": int(batch), "dtype": dtype, "imgsz": imgsz,
                     "exit": int(status), "budget_s": int(budget), "guard_s": int(guard),
                     "layout": layout, "form": form,
                     "report": read_json(os.path.join(raw_dir, name + ".json"))})
    return runs


def label(run):
    """The model, with the layout and form where they are not NCHW and plain."""
    text = run["model"]
    if run.get("layout", "nchw") != "nchw":
        text += " " + run["layout"]
    if run.get("form", "plain") != "plain":
        text += " " + run["form"]
    return text


def goal_run(run):
    """Whether the kernel goals look at a run: bf16, batch 32, plain."""
    return (run["report"] is not None and run["batch"] == 32 and run["dtype"] == "bf16"
            and run.get("form", "plain") == "plain")


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def jit_over_cudnn(report):
    """(geometric mean of JIT/cuDNN time, worst (ratio, layer), ops compared,
    ops the JIT declined) over the ops both backends served."""
    ratios, worst, declined = [], None, 0
    for op in report.get("ops", []):
        jit, cudnn = op.get("jit"), op.get("cudnn", {})
        if jit is None:  # a host run: no JIT column at all
            continue
        if "ms" not in jit:
            declined += 1
            continue
        if "ms" not in cudnn or cudnn["ms"] <= 0:
            continue
        ratio = jit["ms"] / cudnn["ms"]
        ratios.append(ratio)
        layer = f"{op.get('layer', '?')} {op.get('direction', '')}".strip()
        if worst is None or ratio > worst[0]:
            worst = (ratio, layer)
    return geomean(ratios), worst, len(ratios), declined


def run_status(run):
    """(finished, text).  A run its --time-limit cut short finished: the
    budget, not convjit, ended it, and its report says how far it got."""
    if run["exit"] == 124:
        return False, f"killed after {run['guard_s']} s (an op hung?)"
    if run["exit"] != 0:
        return False, f"failed (exit {run['exit']}; see raw.tar.gz)"
    report = run["report"]
    if report is None:
        return False, "no report"
    if report.get("stopped_at_time_limit"):
        return True, (f"partial: {len(report.get('ops', []))} of {report.get('distinct_ops')} "
                      f"ops in {run['budget_s']} s")
    return True, "ok"


def tests_table(tests):
    lines = ["| GPU test | result | note |", "|---|---|---|"]
    for name, result, note in tests:
        lines.append(f"| {name} | {result} | {note.replace('|', '/')} |")
    return lines


def bench_table(runs):
    lines = ["| model | batch | dtype | image | ops compared | JIT declined | "
             "geomean JIT/cuDNN time | worst layer (JIT/cuDNN) | status |",
             "|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        mean = worst = None
        compared = declined = 0
        if run["report"] is not None:
            mean, worst, compared, declined = jit_over_cudnn(run["report"])
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            label(run), run["batch"], run["dtype"], run["imgsz"], compared, declined,
            f"{mean:.2f}" if mean is not None else "n/a",
            f"{worst[1]} ({worst[0]:.2f})" if worst else "n/a", run_status(run)[1]))
    return lines


# The JIT's kernel goals on dense convolutions at bf16, batch 32: cuDNN's
# time over the JIT's (its speed relative to cuDNN), geometric mean per
# direction ("all": over every direction), at least this much.
SPEED_GOALS = {"resnet50": {"fwd": 0.8, "bwddata": 0.8, "bwdfilt": 0.8}, "yolo11n": {"all": 1.0}}
RESNET_3X3_PEAK_GOAL = 0.35


def dense_convs(report):
    """The ops both backends timed that are dense convolutions (one group)."""
    return [op for op in report.get("ops", [])
            if "flop" in op and op.get("groups", 1) == 1
            and "ms" in op.get("jit", {}) and "ms" in op.get("cudnn", {})]


def goal_lines(runs):
    """The goals table and the per-op comparison, for the bf16 batch-32 runs."""
    goals = ["| model | direction | dense convs | cuDNN time / JIT time (geomean) | goal | met |",
             "|---|---|---|---|---|---|"]
    ops = ["| model | layer | direction | JIT variant | JIT ms | cuDNN ms | cuDNN/JIT | "
           "JIT % of roofline |", "|---|---|---|---|---|---|---|---|"]
    peaks = []
    for run in runs:
        if not goal_run(run):
            continue
        report = run["report"]
        convs = dense_convs(report)
        for direction, goal in SPEED_GOALS.get(run["model"], {}).items():
            chosen = [o for o in convs if direction in ("all", o["direction"])]
            mean = geomean([o["cudnn"]["ms"] / o["jit"]["ms"] for o in chosen])
            goals.append("| {} | {} | {} | {} | {} | {} |".format(
                label(run), direction, len(chosen), f"{mean:.2f}" if mean else "n/a", goal,
                "yes" if mean and mean >= goal else "no"))
        half = (report.get("peaks") or {}).get("half_tflops")
        for o in convs:
            jit = o["jit"]
            share = jit.get("peak_fraction")
            ops.append("| {} | {} | {} | {} | {:.4f} | {:.4f} | {:.2f} | {} |".format(
                label(run), o.get("layer", "?"), o["direction"], jit.get("variant", ""),
                jit["ms"], o["cudnn"]["ms"], o["cudnn"]["ms"] / jit["ms"],
                f"{100 * share:.0f}%" if share is not None else "n/a"))
            if run["model"] == "resnet50" and o.get("window") == [3, 3] and half:
                peaks.append((o["flop"] / (jit["ms"] * 1e-3) / (half * 1e12), o["layer"],
                              o["direction"]))
    if len(goals) == 2:
        return []
    lines = ["JIT kernel goals on dense convolutions (bf16, batch 32):", ""] + goals + [""]
    if peaks:
        low = min(peaks)
        lines += [f"ResNet-50 3x3 layers: the JIT reaches {100 * low[0]:.0f}% to "
                  f"{100 * max(peaks)[0]:.0f}% of the tensor-core peak (lowest: {low[1]} "
                  f"{low[2]}); goal {100 * RESNET_3X3_PEAK_GOAL:.0f}%: "
                  f"{'met' if low[0] >= RESNET_3X3_PEAK_GOAL else 'not met'}.", ""]
    return lines + ["Where the JIT wins and loses (above 1: the JIT is faster):", ""] + ops + [""]


# The bandwidth kernels' goals at bf16, batch 32: depthwise fwd and
# bwddata, pooling and the bias gradient at 80% of the achievable HBM
# bandwidth (taken as 90% of the device's: 2.4 TB/s on an H100's 3.35),
# depthwise bwdfilt within 2x its fwd, and the JIT 1.5x cuDNN's speed on
# depthwise convs and pooling (geometric means).
BANDWIDTH_GOAL = 0.8 * 0.9
BWDFILT_OVER_FWD_GOAL = 2.0
BANDWIDTH_SPEED_GOAL = 1.5


def bandwidth_kind(op):
    """'depthwise <direction>', 'pooling', 'bias gradient', or None."""
    name = op.get("descriptor", "")
    if name.startswith(("maxpool", "avgpool", "avgpadpool")):
        return "pooling"
    if name.startswith("biasgrad"):
        return "bias gradient"
    tokens = name.split("_")
    if name.startswith("conv") and len(tokens) > 2 and tokens[2].isdigit():
        if op.get("groups", 1) > 1 and op["groups"] == int(tokens[2]):
            return f"depthwise {op.get('direction', '')}"
    return None


def bandwidth_goal_lines(runs):
    """The bandwidth kernels' goals, for the bf16 batch-32 runs."""
    lines = ["| model | ops | count | JIT TB/s (geomean, lowest) | goal TB/s | met |",
             "|---|---|---|---|---|---|"]
    speed = ["| model | depthwise and pooling ops | cuDNN time / JIT time (geomean) | goal | met |",
             "|---|---|---|---|---|"]
    ratios = []
    for run in runs:
        if not goal_run(run):
            continue
        report = run["report"]
        bandwidth = (report.get("peaks") or {}).get("bandwidth_gbs")
        timed = [(bandwidth_kind(o), o) for o in report.get("ops", [])
                 if "ms" in o.get("jit", {}) and o.get("bytes")]
        kinds = {}
        for kind, o in timed:
            if kind is not None:
                kinds.setdefault(kind, []).append(o)
        for kind in ("depthwise fwd", "depthwise bwddata", "pooling", "bias gradient"):
            rates = [o["bytes"] / (o["jit"]["ms"] * 1e-3) * 1e-12 for o in kinds.get(kind, [])]
            if not rates or not bandwidth:
                continue
            goal = BANDWIDTH_GOAL * bandwidth * 1e-3
            mean = geomean(rates)
            lines.append(f"| {label(run)} | {kind} | {len(rates)} | {mean:.2f}, {min(rates):.2f} "
                         f"| {goal:.2f} | {'yes' if mean >= goal else 'no'} |")
        fwd = {o.get("layer"): o for o in kinds.get("depthwise fwd", [])}
        for o in kinds.get("depthwise bwdfilt", []):
            if o.get("layer") in fwd:
                ratios.append((o["jit"]["ms"] / fwd[o["layer"]]["jit"]["ms"], label(run),
                               o["layer"]))
        versus = [o["cudnn"]["ms"] / o["jit"]["ms"]
                  for kind, o in timed
                  if kind is not None and kind != "bias gradient" and "ms" in o.get("cudnn", {})]
        if versus:
            mean = geomean(versus)
            speed.append(f"| {label(run)} | {len(versus)} | {mean:.2f} | {BANDWIDTH_SPEED_GOAL} "
                         f"| {'yes' if mean >= BANDWIDTH_SPEED_GOAL else 'no'} |")
    out = []
    if len(lines) > 2:
        out += ["Bandwidth kernel goals (bf16, batch 32; achievable HBM bandwidth taken as 90% of "
                "the device's):", ""] + lines + [""]
    if len(speed) > 2:
        out += speed + [""]
    if ratios:
        worst = max(ratios)
        out += [f"Depthwise bwdfilt over fwd time: at most {worst[0]:.2f}x ({worst[1]} "
                f"{worst[2]}); goal {BWDFILT_OVER_FWD_GOAL:.0f}x: "
                f"{'met' if worst[0] <= BWDFILT_OVER_FWD_GOAL else 'not met'}.", ""]
    return out


# A fused Conv+bias+SiLU's time over the plain conv's, at most (geometric
# mean over a model's fwd convs, bf16, batch 32).
FUSED_OVER_PLAIN_GOAL = 1.05


def fused_goal_lines(runs):
    """Each fused run's fwd convs against the same layers in its plain run."""
    lines = ["| model | fwd convs | fused / plain JIT time (geomean) | worst layer | goal | met |",
             "|---|---|---|---|---|---|"]
    for run in runs:
        if run.get("form") != "fused" or run["report"] is None or run["batch"] != 32 \
                or run["dtype"] != "bf16":
            continue
        plain = next((r for r in runs if r.get("form", "plain") == "plain"
                      and r["report"] is not None
                      and (r["model"], r["batch"], r["dtype"], r.get("layout", "nchw")) ==
                      (run["model"], run["batch"], run["dtype"], run.get("layout", "nchw"))), None)
        if plain is None:
            continue
        before = {o.get("layer"): o for o in plain["report"].get("ops", [])
                  if o.get("direction") == "fwd" and "ms" in o.get("jit", {})}
        ratios = [(o["jit"]["ms"] / before[o["layer"]]["jit"]["ms"], o["layer"])
                  for o in run["report"].get("ops", [])
                  if o.get("direction") == "fwd" and "ms" in o.get("jit", {})
                  and o.get("layer") in before and before[o["layer"]]["jit"]["ms"] > 0]
        if not ratios:
            continue
        mean = geomean([r for r, _ in ratios])
        worst = max(ratios)
        lines.append(f"| {label(run)} | {len(ratios)} | {mean:.3f} | {worst[1]} ({worst[0]:.3f}) "
                     f"| {FUSED_OVER_PLAIN_GOAL} | {'yes' if mean <= FUSED_OVER_PLAIN_GOAL else 'no'} |")
    if len(lines) == 2:
        return []
    return ["Fused epilogues (bf16, batch 32): each fused fwd conv's JIT time over the same "
            "layer's plain conv in the plain run:", ""] + lines + [""]


def python_tests(raw_dir, stem="python_tests"):
    """(status, last line) of the Python package's tests: status "0" passed, "skipped"
    where the machine's python3 could not run them, else pytest's exit code; None when
    the check did not run them."""
    try:
        status = open(os.path.join(raw_dir, stem + ".status"), encoding="utf-8").read()
        lines = open(os.path.join(raw_dir, stem + ".txt"), encoding="utf-8").read()
    except OSError:
        return None
    last = [line for line in lines.splitlines() if line.strip()]
    return status.strip(), (last[-1].strip("= ") if last else "no output")


def dace_harness(raw_dir):
    """The last two lines of the DaCe harness's log (its tally and the exit status of
    the export and harness chain), or None where the check did not run it."""
    try:
        text = open(os.path.join(raw_dir, "dace_harness.txt"), encoding="utf-8").read()
    except OSError:
        return None
    last = [line.strip() for line in text.splitlines() if line.strip()]
    return last[-2:] if last else ["no output"]


def calibration_lines(out_dir):
    """The calibration probes (calibration.json, `convjit calibrate`) against the
    bottleneck model's ranges; a note when the probes did not run."""
    report = read_json(os.path.join(out_dir, "calibration.json"))
    if report is None:
        return ["Calibration: no report (`convjit calibrate` failed; see raw/calibration.txt).",
                ""]
    lines = [f"Calibration of the bottleneck model (model row: {report.get('model_row')}):", "",
             "| probe | measured | model | unit | output |", "|---|---|---|---|---|"]
    for p in report.get("probes", []):
        model = p.get("modelled")
        model = "-" if not model else f"{model[0]:.4g}-{model[1]:.4g}"
        output = "checked" if p.get("checked") else "WRONG: " + p.get("check_error", "")
        lines.append(f"| {p['probe']} | {p['measured']:.4g} | {model} | {p['unit']} | {output} |")
    return lines + [""]


def read_predictions(folder):
    """{descriptor: [{gpu, variant, low_s, high_s}]} from the `convjit analyze --json` files
    in `folder` (the bundle's predictions/, made by tools/gpu-bundle --predict)."""
    predictions = {}
    if not folder or not os.path.isdir(folder):
        return predictions
    for name in sorted(os.listdir(folder)):
        ops = read_json(os.path.join(folder, name)) if name.endswith(".json") else None
        for op in ops or []:
            for variant in op.get("variants", []):
                for p in variant.get("predicted", []):
                    seconds = p.get("seconds")
                    if seconds:
                        predictions.setdefault(op["descriptor"], []).append(
                            {"gpu": p["gpu"], "variant": variant["variant"],
                             "low_s": seconds[0], "high_s": seconds[1]})
    return predictions


def prediction_lines(runs, predictions, model_row):
    """Each op the benches timed and `convjit analyze` predicted for this GPU (its
    model row, as `convjit calibrate` named it): the predicted range for a JIT
    variant beside that variant's measured time."""
    rows = []
    for run in runs:
        for op in (run["report"] or {}).get("ops", []):
            measured = op.get("jit", {}).get("variants", {})
            for p in predictions.get(op.get("descriptor"), []):
                if p["gpu"] == model_row and "ms" in measured.get(p["variant"], {}):
                    ms = measured[p["variant"]]["ms"]
                    rows.append(f"| {label(run)} b{run['batch']} | {op.get('layer', '')} | "
                                f"{op.get('direction', '')} | {p['variant']} | "
                                f"{p['low_s'] * 1e3:.4f}-{p['high_s'] * 1e3:.4f} | {ms:.4f} | "
                                f"{ms / (p['high_s'] * 1e3):.2f}-{ms / (p['low_s'] * 1e3):.2f} |")
    if not rows:
        return []
    return (["The bottleneck model's predictions (`convjit analyze`, made with the bundle) "
             "against the benches' times:", "",
             "| run | layer | direction | JIT variant | predicted ms | measured ms | "
             "measured / predicted |", "|---|---|---|---|---|---|---|"] + rows + [""])


def verdict(tests, runs, python=None, dace=None, jax=None, bench=True):
    """'all passed', or what failed; without bench, no bench run is expected."""
    problems = []
    if tests is None:
        problems.append("the GPU tests wrote no report")
    else:
        failed = [t for t in tests if t[1] == "fail"]
        if failed:
            problems.append(f"{len(failed)} GPU tests failed")
        if tests and all(t[1] == "skip" for t in tests):
            problems.append("every GPU test skipped")
        stopped = [t for t in tests if t[1] == "stop"]
        if stopped:
            problems.append(f"{len(stopped)} GPU tests were stopped at the time limit")
        unrun = [t for t in tests if t[1] == "unrun"]
        if unrun:
            problems.append(f"{len(unrun)} GPU tests were not started for want of time")
    bad = [r for r in runs if not run_status(r)[0]]
    if bad:
        problems.append(f"{len(bad)} of {len(runs)} bench runs did not finish")
    if bench and not runs:
        problems.append("no bench ran")
    if python is not None and python[0] not in ("0", "skipped"):
        problems.append(f"the Python package's tests failed ({python[1]})")
    if jax is not None and jax[0] not in ("0", "skipped"):
        problems.append(f"the JAX and PyTensor tests failed ({jax[1]})")
    if dace is not None and dace[-1] != "exit 0" and not dace[-1].startswith("skipped"):
        problems.append(f"the DaCe harness failed ({' '.join(dace)})")
    return "all passed" if not problems else "; ".join(problems)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--raw", required=True)
    parser.add_argument("--gpu", default="")
    parser.add_argument("--libraries", default="")
    parser.add_argument("--elapsed", default="")
    parser.add_argument("--predictions", default="",
                        help="a folder of `convjit analyze --json` files to set against the benches")
    parser.add_argument("--no-bench", action="store_true",
                        help="gpu-check ran no benches on purpose: their absence is no failure")
    args = parser.parse_args()

    tests = gpu_tests(args.out, args.raw)
    runs = bench_runs(args.raw)
    with open(os.path.join(args.out, "bench.json"), "w", encoding="utf-8") as f:
        json.dump({"gpu": args.gpu, "runs": runs}, f, indent=1)

    counts = {r: sum(1 for t in tests or [] if t[1] == r)
              for r in ("pass", "fail", "skip", "stop", "unrun")}
    python = python_tests(args.raw)
    dace = dace_harness(args.raw)
    jax = python_tests(args.raw, "python_jax_tests")
    result = verdict(tests, runs, python, dace, jax, bench=not args.no_bench)
    lines = [f"# convjit GPU check: {args.gpu}", "",
             f"Libraries: {args.libraries}", f"Elapsed: {args.elapsed} s", "",
             f"GPU tests: {counts['pass']} passed, {counts['fail']} failed, "
             f"{counts['skip']} skipped, {counts['stop']} stopped at the time limit, "
             f"{counts['unrun']} not started for want of time.", ""]
    lines += tests_table(tests or []) + [""] + calibration_lines(args.out)
    if python is not None:
        lines += [f"Python package tests: {python[1]}", ""]
    if jax is not None:
        lines += [f"JAX and PyTensor tests: {jax[1]}", ""]
    if dace is not None:
        lines += [f"DaCe harness on CUDA libraries: {'; '.join(dace)}", ""]
    lines += ["JIT/cuDNN is the JIT's median time over cuDNN's best algorithm's, per op "
              "both served (below 1: the JIT is faster).", ""]
    lines += bench_table(runs) + [""] + goal_lines(runs) + bandwidth_goal_lines(runs)
    lines += fused_goal_lines(runs)
    calibration = read_json(os.path.join(args.out, "calibration.json")) or {}
    lines += prediction_lines(runs, read_predictions(args.predictions),
                              calibration.get("model_row"))
    lines += [f"Result: {result}"]
    with open(os.path.join(args.out, "summary.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"gpu-check summary: {result}")
    return 0 if result == "all passed" else 1


if __name__ == "__main__":
    sys.exit(main())
