"""A resolved conv call from Python against torch.nn.functional.conv2d on
the same small shape, side by side in alternating rounds, 2 threads: the
per-call cost of convjit.torch beyond the kernel.

    build/python-env/bin/python bench/python_call_overhead.py [--calls N] [--rounds R]

The small shape (1x8x8x8, 8 filters 3x3) makes the kernel a few
microseconds, so the call's own cost (argument checks, descriptors,
ctypes, the dispatcher's table) shows; convjit's kernel alone is timed
through the C API with the same operands for the difference."""

import argparse
import statistics
import time

import torch
import torch.nn.functional as TF

import convjit
import convjit.torch as ct


def per_call_us(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(2)
    x, w = torch.randn(1, 8, 8, 8), torch.randn(8, 8, 3, 3)
    y = torch.empty(1, 8, 8, 8)
    sides = {
        "torch F.conv2d": lambda: TF.conv2d(x, w, padding=1),
        "convjit.torch.conv2d": lambda: ct.conv2d(x, w, padding=1),
        "convjit.conv_forward (core, preallocated y)":
            lambda: convjit.conv_forward(x, w, y, padding=1),
    }
    with torch.no_grad():
        for fn in sides.values():
            per_call_us(fn, 200)  # resolve and warm
        times = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, fn in sides.items():
                times[name].append(per_call_us(fn, args.calls))
    print(f"torch {torch.__version__}, convjit {convjit.__version__}, backend "
          f"{convjit.last_backend()}, {args.rounds} rounds x {args.calls} calls, 2 threads")
    base = statistics.median(times["torch F.conv2d"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:45s} {median:8.2f} us/call  {median / base:5.2f}x torch")


if __name__ == "__main__":
    main()
