"""BatchNorm on the host, training: convjit.torch.batch_norm against torch's, side by side in one
process, forward alone and forward plus backward (x, weight and bias gradients), on YOLO11n's
BatchNorm shapes at 640 (b0, a 64-channel and a 256-channel layer), NCHW and channels-last.
Each value is the best of 5 rounds of the median of 20 calls, in ms.

    CONVJIT_LOCAL_CACHE_PATH=none build/python-env/bin/python bench/host_batchnorm.py --threads 2
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import convjit.torch as cf

SHAPES = [(1, 16, 320, 320), (1, 64, 80, 80), (1, 256, 20, 20)]


def best_median_ms(fn, reps=20, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        best = min(best, statistics.median(times))
    return best * 1e3


def timings(batch_norm, x, weight, bias, dy):
    x, weight, bias = (t.clone().requires_grad_(True) for t in (x, weight, bias))

    def forward():
        return batch_norm(x, None, None, weight, bias, True, 0.1, 1e-5)

    def forward_backward():
        torch.autograd.grad(forward(), (x, weight, bias), dy)

    return best_median_ms(forward), best_median_ms(forward_backward)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{'shape':18} {'layout':6} {'torch fwd':>9} {'convjit':>8} {'ratio':>6} "
          f"{'torch f+b':>9} {'convjit':>8} {'ratio':>6}   (ratio: torch time / convjit time)")
    for shape in SHAPES:
        for channels_last in (False, True):
            x = torch.randn(*shape)
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            weight, bias, dy = torch.randn(shape[1]), torch.randn(shape[1]), torch.randn_like(x)
            tf, tb = timings(F.batch_norm, x, weight, bias, dy)
            cf_, cb = timings(cf.batch_norm, x, weight, bias, dy)
            print(f"{str(shape):18} {'NHWC' if channels_last else 'NCHW':6} {tf:9.3f} {cf_:8.3f} "
                  f"{tf / cf_:6.2f} {tb:9.3f} {cb:8.3f} {tb / cb:6.2f}", flush=True)


if __name__ == "__main__":
    main()
