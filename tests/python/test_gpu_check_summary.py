"""tools/gpu_check_summary.py on made-up GPU-check output: the test table
(skip reasons from the text log), the JIT/cuDNN geometric mean and worst
layer per run, partial and failed runs, and the verdict and exit status.

    python3 test_gpu_check_summary.py PATH/TO/gpu_check_summary.py
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None

TEXT_LOG = """[ RUN      ] Gpu.Passes
[       OK ] Gpu.Passes (5 ms)
[ RUN      ] Gpu.Skips
/src/test.cpp:12: Skipped
variant algo6-fma: NOT_SUPPORTED

[  SKIPPED ] Gpu.Skips (0 ms)
[ RUN      ] Gpu.Fails
/src/test.cpp:20: Failure
[  FAILED  ] Gpu.Fails (1 ms)
"""


def gtest_json(fail=True, all_skipped=False):
    tests = [
        {"name": "Passes", "classname": "Gpu", "result": "COMPLETED", "time": "0.005s"},
        {"name": "Skips", "classname": "Gpu", "result": "SKIPPED", "time": "0s"},
    ]
    if fail:
        tests.append({"name": "Fails", "classname": "Gpu", "result": "COMPLETED",
                      "failures": [{"failure": "/src/test.cpp:20\nmax error 0.5 > 0.01"}]})
    if all_skipped:
        tests = [tests[1]]
    return {"testsuites": [{"name": "Gpu", "testsuite": tests}]}


def op(layer, direction, jit_ms, cudnn_ms):
    row = {"layer": layer, "direction": direction, "cudnn": {"ms": cudnn_ms}}
    row["jit"] = {"ms": jit_ms} if jit_ms is not None else {"declined": "unsupported"}
    return row


def bench_report(ops, stopped=False, distinct=None):
    return {"ops": ops, "stopped_at_time_limit": stopped,
            "distinct_ops": distinct if distinct is not None else len(ops)}


class Summary(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = self.dir.name
        self.raw = os.path.join(self.out, "raw")
        os.makedirs(self.raw)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, relative, content):
        with open(os.path.join(self.out, relative), "w", encoding="utf-8") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))

    def add_run(self, model, batch, dtype, status, report, budget=20, layout=None, form=None):
        name = f"bench-{model}-b{batch}-{dtype}"
        extra = ""
        if layout is not None:  # the newer line; older ones end at the guard
            name += "" if layout == "nchw" else f"-{layout}"
            name += "" if form == "plain" else f"-{form}"
            extra = f" {layout} {form}"
        with open(os.path.join(self.raw, "bench-runs.txt"), "a", encoding="utf-8") as f:
            f.write(f"{model} {batch} {dtype} default {status} {budget} {budget + 20}{extra}\n")
        if report is not None:
            self.write(f"raw/{name}.json", report)

    def summarize(self, gpu="Test GPU", predictions=None, no_bench=False):
        extra = ["--predictions", predictions] if predictions else []
        extra += ["--no-bench"] if no_bench else []
        result = subprocess.run(
            [sys.executable, SCRIPT, "--out", self.out, "--raw", self.raw, "--gpu", gpu,
             "--libraries", "NVRTC=x", "--elapsed", "12"] + extra,
            capture_output=True, text=True, check=False)
        with open(os.path.join(self.out, "summary.md"), encoding="utf-8") as f:
            return result.returncode, f.read()

    def test_tests_table_gives_each_result_with_the_skip_reason_and_first_failure_line(self):
        self.write("gpu_tests.json", gtest_json())
        self.write("raw/gpu_tests.txt", TEXT_LOG)
        self.add_run("resnet50", 1, "f32", 0, bench_report([op("stem", "fwd", 2.0, 1.0)]))
        status, summary = self.summarize()
        self.assertEqual(status, 1)
        self.assertIn("GPU tests: 1 passed, 1 failed, 1 skipped, 0 stopped at the time limit, "
                      "0 not started for want of time.",
                      summary)
        self.assertIn("| Gpu.Passes | pass | 0.005s |", summary)
        self.assertIn("| Gpu.Skips | skip | variant algo6-fma: NOT_SUPPORTED |", summary)
        self.assertIn("| Gpu.Fails | fail | /src/test.cpp:20 |", summary)
        self.assertIn("Result: 1 GPU tests failed", summary)

    def test_calibration_probes_are_tabled_with_the_model_range_and_a_wrong_output_named(self):
        self.write("gpu_tests.json", gtest_json(fail=False))
        self.write("calibration.json", {"model_row": "H200", "probes": [
            {"probe": "hbm copy", "measured": 3.9, "modelled": [4.0, 4.3], "unit": "TB/s",
             "checked": True},
            {"probe": "l2 read", "measured": 1.0, "modelled": None, "unit": "TB/s",
             "checked": False, "check_error": "output 3 word 0 is 0x1"}]})
        self.add_run("resnet50", 1, "f32", 0, bench_report([op("stem", "fwd", 2.0, 1.0)]))
        _, summary = self.summarize()
        self.assertIn("| hbm copy | 3.9 | 4-4.3 | TB/s | checked |", summary)
        self.assertIn("| l2 read | 1 | - | TB/s | WRONG: output 3 word 0 is 0x1 |", summary)

    def test_no_calibration_report_says_so(self):
        self.write("gpu_tests.json", gtest_json(fail=False))
        self.add_run("resnet50", 1, "f32", 0, bench_report([op("stem", "fwd", 2.0, 1.0)]))
        _, summary = self.summarize()
        self.assertIn("Calibration: no report", summary)

    def test_predictions_are_set_beside_the_measured_variant_of_the_same_gpu(self):
        self.write("gpu_tests.json", gtest_json(fail=False))
        row = op("stem.conv", "fwd", 0.8, 0.4)
        row["descriptor"] = "conv2d_x_fwd_bf16"
        row["jit"]["variants"] = {"tc128x64": {"ms": 0.8}, "direct": {"ms": 5.0}}
        self.add_run("resnet50", 32, "bf16", 0, bench_report([row]), layout="nhwc", form="plain")
        self.write("calibration.json", {"model_row": "H200", "probes": []})
        folder = os.path.join(self.out, "predictions")
        os.makedirs(folder)
        with open(os.path.join(folder, "resnet50.json"), "w", encoding="utf-8") as f:
            json.dump([{"descriptor": "conv2d_x_fwd_bf16", "variants": [
                {"variant": "tc128x64", "predicted": [
                    {"gpu": "H100 SXM", "seconds": [1e-4, 2e-4]},
                    {"gpu": "H200", "seconds": [2e-4, 4e-4]}]}]}], f)
        _, summary = self.summarize(gpu="NVIDIA H200", predictions=folder)
        self.assertIn("| resnet50 nhwc b32 | stem.conv | fwd | tc128x64 | 0.2000-0.4000 | 0.8000 | "
                      "2.00-4.00 |", summary)
        self.assertNotIn("0.1000-0.2000", summary)  # the H100's row is not this GPU's

    def test_geometric_mean_and_worst_layer_over_the_ops_both_backends_served(self):
        self.write("gpu_tests.json", gtest_json(fail=False))
        self.add_run("yolo11n", 32, "bf16", 0, bench_report([
            op("a", "fwd", 2.0, 1.0), op("b", "bwddata", 0.5, 1.0), op("c", "bwdfilt", 4.0, 1.0),
            op("d", "fwd", None, 1.0)]))
        status, summary = self.summarize()
        self.assertEqual(status, 0, summary)
        mean = math.exp((math.log(2.0) + math.log(0.5) + math.log(4.0)) / 3)
        self.assertIn(f"| yolo11n | 32 | bf16 | default | 3 | 1 | {mean:.2f} | c bwdfilt (4.00) | ok |",
                      summary)
        self.assertIn("Result: all passed", summary)
        with open(os.path.join(self.out, "bench.json"), encoding="utf-8") as f:
            merged = json.load(f)
        self.assertEqual(merged["runs"][0]["model"], "yolo11n")
        self.assertEqual(len(merged["runs"][0]["report"]["ops"]), 4)

    def test_goals_on_dense_convs_and_the_win_loss_table_for_bf16_batch_32(self):
        self.write("gpu_tests.json", gtest_json(fail=False))

        def conv(layer, direction, jit_ms, cudnn_ms, groups=1, window=(3, 3)):
            row = op(layer, direction, jit_ms, cudnn_ms)
            row.update({"flop": 989e9, "groups": groups, "window": list(window)})
            row["jit"].update({"variant": "tc128x64", "peak_fraction": 0.5})
            return row

        report = bench_report([
            conv("l1", "fwd", 2.0, 1.0), conv("l1", "bwddata", 1.0, 1.0),
            conv("l1", "bwdfilt", 1.0, 2.0), conv("l2", "fwd", 8.0, 8.0, window=(1, 1)),
            conv("dw", "fwd", 9.0, 1.0, groups=64)])
        report["peaks"] = {"half_tflops": 989}
        self.add_run("resnet50", 32, "bf16", 0, report)
        self.add_run("resnet50", 1, "f32", 0, report)  # not a goal run
        status, summary = self.summarize()
        self.assertEqual(status, 0, summary)  # goals are reported, not a failure
        self.assertIn(f"| resnet50 | fwd | 2 | {math.sqrt(0.5):.2f} | 0.8 | no |", summary)
        self.assertIn("| resnet50 | bwddata | 1 | 1.00 | 0.8 | yes |", summary)
        self.assertIn("| resnet50 | bwdfilt | 1 | 2.00 | 0.8 | yes |", summary)
        # 989 GFLOP at 989 TFLOP/s is 1 ms: 2 ms is 50%, 1 ms 100%.
        self.assertIn("ResNet-50 3x3 layers: the JIT reaches 50% to 100% of the tensor-core peak "
                      "(lowest: l1 fwd); goal 35%: met.", summary)
        self.assertIn("| resnet50 | l1 | fwd | tc128x64 | 2.0000 | 1.0000 | 0.50 | 50% |", summary)
        self.assertNotIn("| dw |", summary)  # depthwise is not a dense conv
        self.assertEqual(summary.count("| resnet50 | l1 | fwd |"), 1)  # the f32 run is left out

    def test_bandwidth_goals_for_depthwise_pooling_and_bias_gradients(self):
        self.write("gpu_tests.json", gtest_json(fail=False))

        def mem(layer, direction, descriptor, jit_ms, cudnn_ms, groups=None):
            row = op(layer, direction, jit_ms, cudnn_ms)
            row.update({"descriptor": descriptor, "bytes": 3e9})
            if groups is not None:
                row["groups"] = groups
            return row

        dw = "conv2d_32_64_80_80_0_409600_1_5120_64_0_64_1_3_3_0_fwd"
        report = bench_report([
            mem("dw", "fwd", dw, 1.0, 2.0, groups=64),      # 3 TB/s
            mem("dw", "bwddata", dw, 2.0, 2.0, groups=64),  # 1.5 TB/s
            mem("dw", "bwdfilt", dw, 2.5, 2.0, groups=64),  # 2.5x its fwd
            mem("grouped", "fwd", dw, 1.0, 1.0, groups=2),  # not depthwise
            mem("pool", "fwd", "maxpool2d_32", 1.0, 8.0),   # 3 TB/s
            mem("db", "bwd", "biasgrad_32", 1.0, 1.0)])     # 3 TB/s
        report["peaks"] = {"bandwidth_gbs": 3350}
        self.add_run("yolo11n", 32, "bf16", 0, report)
        status, summary = self.summarize()
        self.assertEqual(status, 0, summary)
        goal = 0.72 * 3.35
        self.assertIn(f"| yolo11n | depthwise fwd | 1 | 3.00, 3.00 | {goal:.2f} | yes |", summary)
        self.assertIn(f"| yolo11n | depthwise bwddata | 1 | 1.50, 1.50 | {goal:.2f} | no |",
                      summary)
        self.assertIn(f"| yolo11n | pooling | 1 | 3.00, 3.00 | {goal:.2f} | yes |", summary)
        self.assertIn(f"| yolo11n | bias gradient | 1 | 3.00, 3.00 | {goal:.2f} | yes |", summary)
        # cuDNN/JIT over the depthwise convs and the pool: 2, 1, 0.8, 8.
        self.assertIn(f"| yolo11n | 4 | {(2 * 1 * 0.8 * 8) ** 0.25:.2f} | 1.5 | yes |", summary)
        self.assertIn("Depthwise bwdfilt over fwd time: at most 2.50x (yolo11n dw); goal 2x: "
                      "not met.", summary)

    def test_a_fused_run_is_compared_with_the_plain_run_of_its_layout(self):
        self.write("gpu_tests.json", gtest_json(fail=False))
        self.add_run("yolo11n", 32, "bf16", 0, bench_report([
            op("a", "fwd", 9.0, 1.0), op("b", "fwd", 9.0, 1.0)]), layout="nchw", form="plain")
        self.add_run("yolo11n", 32, "bf16", 0, bench_report([
            op("a", "fwd", 1.0, 1.0), op("b", "fwd", 2.0, 1.0), op("b", "bwddata", 5.0, 1.0)]),
            layout="nhwc", form="plain")
        self.add_run("yolo11n", 32, "bf16", 0, bench_report([
            op("a", "fwd", 1.0, 1.0), op("b", "fwd", 2.4, 1.0), op("c", "fwd", 1.0, 1.0)]),
            layout="nhwc", form="fused")
        status, summary = self.summarize()
        self.assertEqual(status, 0, summary)
        self.assertIn("| yolo11n nhwc fused | 32 | bf16 | default | 3 |", summary)
        # a: 1.0, b: 1.2 (c has no plain layer); against the NHWC run, not the NCHW one.
        self.assertIn(f"| yolo11n nhwc fused | 2 | {math.sqrt(1.2):.3f} | b (1.200) | 1.05 | no |",
                      summary)

    def test_a_run_cut_by_its_time_limit_is_partial_but_a_killed_or_failed_one_fails(self):
        self.write("gpu_tests.json", gtest_json(fail=False))
        self.add_run("resnet50", 1, "f32", 0,
                     bench_report([op("a", "fwd", 1.0, 1.0)], stopped=True, distinct=9))
        status, summary = self.summarize()
        self.assertEqual(status, 0, summary)
        self.assertIn("partial: 1 of 9 ops in 20 s", summary)
        self.add_run("cosmoflow", 1, "f32", 124, None)
        self.add_run("yolo11n", 1, "f32", 1, None)
        status, summary = self.summarize()
        self.assertEqual(status, 1)
        self.assertIn("killed after 40 s", summary)
        self.assertIn("failed (exit 1; see raw.tar.gz)", summary)
        self.assertIn("Result: 2 of 3 bench runs did not finish", summary)

    def test_the_python_package_tests_are_reported_and_their_failure_fails(self):
        self.write("gpu_tests.json", gtest_json(fail=False))
        self.add_run("resnet50", 1, "f32", 0, bench_report([op("a", "fwd", 1.0, 1.0)]))
        self.write("raw/python_tests.txt", "....\n==== 40 passed, 1 skipped in 9.1s ====\n")
        self.write("raw/python_tests.status", "0\n")
        status, summary = self.summarize()
        self.assertEqual(status, 0, summary)
        self.assertIn("Python package tests: 40 passed, 1 skipped in 9.1s", summary)
        self.write("raw/python_tests.txt", "F...\n==== 1 failed, 39 passed in 9.1s ====\n")
        self.write("raw/python_tests.status", "1\n")
        status, summary = self.summarize()
        self.assertEqual(status, 1)
        self.assertIn("the Python package's tests failed (1 failed, 39 passed in 9.1s)", summary)
        self.write("raw/python_tests.txt", "skipped: python3 here cannot import torch\nNo module")
        self.write("raw/python_tests.status", "skipped\n")
        status, summary = self.summarize()
        self.assertEqual(status, 0, summary)
        self.write("raw/python_jax_tests.txt", ".F\n==== 1 failed, 70 passed in 30s ====\n")
        self.write("raw/python_jax_tests.status", "1\n")
        status, summary = self.summarize()
        self.assertEqual(status, 1)
        self.assertIn("JAX and PyTensor tests: 1 failed, 70 passed in 30s", summary)
        self.assertIn("the JAX and PyTensor tests failed (1 failed, 70 passed in 30s)", summary)

    def test_a_shard_stopped_at_its_limit_adds_its_logged_tests_and_the_stopped_one(self):
        self.write("gpu_tests.json", gtest_json())  # the shards that finished
        self.write("raw/gpu_tests.txt", TEXT_LOG + "[ RUN      ] Slow.Finished\n"
                   "[       OK ] Slow.Finished (90 ms)\n[ RUN      ] Slow.Compiling\n"
                   "[ RUN      ] Late.Queued\ngpu-check: not started, no time left\n")
        self.add_run("resnet50", 1, "f32", 0, bench_report([op("a", "fwd", 1.0, 1.0)]))
        status, summary = self.summarize()
        self.assertEqual(status, 1)
        self.assertIn("| Slow.Finished | pass | the text log; its process was stopped later |",
                      summary)
        self.assertIn("| Slow.Compiling | stop | stopped at the time limit |", summary)
        self.assertIn("| Late.Queued | unrun | not started: no time was left |", summary)
        self.assertIn("GPU tests: 2 passed, 1 failed, 1 skipped, 1 stopped at the time limit, "
                      "1 not started for want of time.", summary)
        self.assertIn("| Gpu.Fails | fail | /src/test.cpp:20 |", summary)  # the JSON's note
        self.assertIn("; 1 GPU tests were stopped at the time limit; 1 GPU tests were not "
                      "started for want of time", summary)

    def test_the_dace_harness_tally_is_reported_and_its_failure_fails_the_check(self):
        self.write("gpu_tests.json", gtest_json(fail=False))
        self.add_run("resnet50", 1, "f32", 0, bench_report([op("a", "fwd", 1.0, 1.0)]))
        self.write("raw/dace_harness.txt", "ok lib_a.so\n2 libraries: 0 failed, 0 fell back\n"
                   "exit 0\n")
        status, summary = self.summarize()
        self.assertEqual(status, 0, summary)
        self.assertIn("DaCe harness on CUDA libraries: 2 libraries: 0 failed, 0 fell back; "
                      "exit 0", summary)
        self.write("raw/dace_harness.txt", "FAIL lib_a.so\n1 libraries: 1 failed, 0 fell back\n"
                   "exit 1\n")
        status, summary = self.summarize()
        self.assertEqual(status, 1)
        self.assertIn("the DaCe harness failed (1 libraries: 1 failed, 0 fell back exit 1)",
                      summary)

    def test_no_test_report_or_every_test_skipped_is_a_failure(self):
        self.add_run("resnet50", 1, "f32", 0, bench_report([op("a", "fwd", 1.0, 1.0)]))
        status, summary = self.summarize()
        self.assertEqual(status, 1)
        self.assertIn("the GPU tests wrote no report", summary)
        self.write("gpu_tests.json", gtest_json(fail=False, all_skipped=True))
        status, summary = self.summarize()
        self.assertEqual(status, 1)
        self.assertIn("every GPU test skipped", summary)

    def test_no_bench_fails_the_check_unless_it_was_asked_for(self):
        self.write("gpu_tests.json", gtest_json(fail=False))
        status, summary = self.summarize()
        self.assertEqual(status, 1)
        self.assertIn("no bench ran", summary)
        status, summary = self.summarize(no_bench=True)
        self.assertEqual(status, 0, summary)
        self.assertNotIn("no bench ran", summary)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
