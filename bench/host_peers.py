"""convjit against its host peers on real models, side by side in one run,
the same thread count on every side, in alternating rounds (each side
keeps its median):

- the training step (forward, loss, backward) of ultralytics' YOLO11n
  (v8DetectionLoss on a synthetic batch with boxes) and of torchvision's
  ResNet-50 (cross entropy), in torch eager and through
  convjit.torch.replace_modules (convjit serves the convolutions and
  pools; torch everything else);
- the inference forward pass of both: torch, convjit, and ONNX Runtime's
  CPU execution provider on the model exported to ONNX.

    build/python-env/bin/python bench/host_peers.py [--threads 2] [--rounds 5]
        [--cases yolo11n:640:1,yolo11n:640:8,resnet50:224:8]

Weights are random (nothing is downloaded); the timings do not depend on
them.  Per op, against torch and with each op's oneDNN implementation,
see bench/host_step.py."""

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time

# Ultralytics must not reach for the network; its settings live beside
# the Python environment, as in the tests (tests/python/run_pytest.sh).
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_CONFIG_DIR", os.path.join(
    os.path.dirname(os.path.dirname(sys.executable)), "ultralytics-settings"))

import onnxruntime  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

import convjit  # noqa: E402
import convjit.torch as ct  # noqa: E402


def yolo11n():
    from ultralytics.cfg import get_cfg
    from ultralytics.nn.tasks import DetectionModel
    torch.manual_seed(0)
    model = DetectionModel("yolo11n.yaml", nc=80, verbose=False)
    model.args = get_cfg()  # the loss's gains
    return model


def yolo_loss(model, batch):
    from ultralytics.utils.loss import v8DetectionLoss
    boxes = {"batch_idx": torch.arange(batch).repeat_interleave(2).float(),
             "cls": torch.tensor([[1.0], [5.0]]).repeat(batch, 1),
             "bboxes": torch.tensor([[0.5, 0.5, 0.2, 0.3], [0.3, 0.6, 0.1, 0.1]]).repeat(batch, 1)}
    criterion = v8DetectionLoss(model)
    return lambda out: criterion(out, boxes)[0].sum()


def resnet50():
    torch.manual_seed(0)
    return torchvision.models.resnet50()


def resnet_loss(model, batch):
    labels = torch.arange(batch) % 1000
    return lambda out: torch.nn.functional.cross_entropy(out, labels)


MODELS = {"yolo11n": (yolo11n, yolo_loss), "resnet50": (resnet50, resnet_loss)}


def train_step(model, loss, x):
    def run():
        model.zero_grad(set_to_none=True)
        loss(model(x)).backward()
    return run


def inference(model, x):
    def run():
        with torch.no_grad():
            model(x)
    return run


def onnx_inference(model, x, threads, directory):
    path = os.path.join(directory, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, (x,), path, dynamo=False, opset_version=17)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x.numpy()}
    return lambda: session.run(None, feed)


def seconds(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternate(sides, rounds):
    """Each side's median over rounds, the sides taking turns (after one warm-up call each)."""
    for fn in sides.values():
        fn()
    times = {name: [] for name in sides}
    for _ in range(rounds):
        for name, fn in sides.items():
            times[name].append(seconds(fn))
    return {name: statistics.median(values) for name, values in times.items()}


def bench_case(name, size, batch, args, directory):
    build, make_loss = MODELS[name]
    x = torch.rand(batch, 3, size, size)
    theirs = build().train()
    ours = ct.replace_modules(copy.deepcopy(theirs))
    train = alternate({"torch": train_step(theirs, make_loss(theirs, batch), x),
                       "convjit": train_step(ours, make_loss(ours, batch), x)}, args.rounds)
    theirs.eval(), ours.eval()
    infer = alternate({"torch": inference(theirs, x), "convjit": inference(ours, x),
                       "onnxruntime": onnx_inference(theirs, x, args.threads, directory)},
                      args.rounds)
    return {"training step": train, "inference": infer}


def report(case, results):
    for what, times in results.items():
        base = times["torch"]
        cells = "  ".join(f"{side} {t * 1e3:9.1f} ms ({base / t:4.2f}x)"
                          for side, t in times.items())
        print(f"{case:20s} {what:14s} {cells}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cases", default="yolo11n:640:1,yolo11n:640:8,resnet50:224:8",
                        help="model:size:batch, comma-separated")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    print(f"torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, convjit "
          f"{convjit.__version__}, {args.threads} threads, median of {args.rounds} alternating "
          "rounds; (Nx) is torch's time over the side's")
    with tempfile.TemporaryDirectory() as directory:
        for spec in args.cases.split(","):
            name, size, batch = spec.split(":")
            report(f"{name} {size} batch {batch}",
                   bench_case(name, int(size), int(batch), args, directory))


if __name__ == "__main__":
    main()
