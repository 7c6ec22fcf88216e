"""A resolved conv call from Python against torch.nn.functional.conv2d on
the same small shape, side by side in alternating rounds, 2 threads: the
per-call cost of convjit.torch beyond the kernel.

    build/python-env/bin/python bench/python_call_overhead.py [--calls N] [--rounds R]

The small shape (1x8x8x8, 8 filters 3x3) makes the kernel a few
microseconds, so each call's own cost (argument checks, descriptors,
ctypes, autograd's bookkeeping) shows.  Three calls, each on both sides:
a forward under no_grad, a forward that autograd records (the weight
requires grad), and that forward with its backward.  The C API with
prebuilt arguments times convjit's kernel and dispatch alone."""

import argparse
import ctypes as C
import statistics
import time

import torch
import torch.nn.functional as TF

import convjit
import convjit.torch as ct
from convjit import _library
from convjit.core import conv_params
from convjit.torch import _kernels


def per_call_us(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def c_api_call(x, w):
    """convjit_conv_forward with every argument built beforehand."""
    y = torch.empty(1, 8, 8, 8)
    params = conv_params(2, 1, 1)
    keep = [params] + [_kernels._desc(t, name) for t, name in ((x, "x"), (w, "w"), (y, "y"))]
    args = [C.byref(a) for a in keep] + [_kernels._HOST_REF]
    pointers = x.data_ptr(), w.data_ptr(), y.data_ptr()
    call = _library.lib.convjit_conv_forward

    def run():
        call(args[0], args[1], pointers[0], args[2], pointers[1], args[3], pointers[2], 1.0,
             0.0, args[4])
        return y  # which the pointer points into: alive as long as this function
    return run


def step(conv, x, w):
    def run():
        y = conv(x, w, padding=1)
        y.backward(torch.ones_like(y))
    return run


def sides(x, w, w_grad):
    return {
        "forward, no_grad": {"torch": lambda: TF.conv2d(x, w, padding=1),
                             "convjit": lambda: ct.conv2d(x, w, padding=1),
                             "C API, prebuilt arguments": c_api_call(x, w)},
        "forward, recorded": {"torch": lambda: TF.conv2d(x, w_grad, padding=1),
                              "convjit": lambda: ct.conv2d(x, w_grad, padding=1)},
        "forward + backward": {"torch": step(TF.conv2d, x, w_grad),
                               "convjit": step(ct.conv2d, x, w_grad)},
    }


def measure(calls, rounds, x, w, w_grad):
    table = sides(x, w, w_grad)
    times = {(group, name): [] for group, fns in table.items() for name in fns}
    for (group, name) in times:  # resolve and warm
        with torch.set_grad_enabled(group != "forward, no_grad"):
            per_call_us(table[group][name], 200)
    for _ in range(rounds):
        for (group, name), values in times.items():
            with torch.set_grad_enabled(group != "forward, no_grad"):
                values.append(per_call_us(table[group][name], calls))
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(2)
    x, w = torch.randn(1, 8, 8, 8), torch.randn(8, 8, 3, 3)
    w_grad = w.clone().requires_grad_()
    times = measure(args.calls, args.rounds, x, w, w_grad)
    print(f"torch {torch.__version__}, convjit {convjit.__version__}, backend "
          f"{convjit.last_backend()}, {args.rounds} alternating rounds x {args.calls} calls, "
          "2 threads, median per call")
    for (group, name), values in times.items():
        base = statistics.median(times[(group, "torch")])
        median = statistics.median(values)
        print(f"{group:20s} {name:28s} {median:8.2f} us  {median / base:5.2f}x torch")


if __name__ == "__main__":
    main()
