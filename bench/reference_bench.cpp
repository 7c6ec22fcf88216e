// The host reference on the heaviest YOLO11n conv shape (64->64 3x3 s2 at
// 160x160, batch 1: 236 M multiply-adds) and ResNet-50's stem max pool.
// The reference must keep such layers to seconds on a 2-core machine.
#include <benchmark/benchmark.h>

#include <vector>

#include "convjit/convjit.hpp"

namespace {

using namespace convjit;

struct YoloLayer {
  TensorDesc x, w, y;
  ConvParams params{2};
  std::vector<float> xv, wv, yv;

  YoloLayer() {
    params.stride[0] = params.stride[1] = 2;
    params.pad_begin[0] = params.pad_begin[1] = params.pad_end[0] = params.pad_end[1] = 1;
    (void)TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {1, 64, 160, 160});
    (void)TensorDesc::contiguous(w, CONVJIT_DTYPE_F32, {64, 64, 3, 3});
    (void)TensorDesc::contiguous(y, CONVJIT_DTYPE_F32, {1, 64, 80, 80});
    xv.assign(64 * 160 * 160, 0.5f);
    wv.assign(64 * 64 * 9, 0.25f);
    yv.assign(64 * 80 * 80, 0.0f);
  }
};

constexpr double kMacs = 80.0 * 80 * 64 * 64 * 9;

void report(benchmark::State& state) {
  state.counters["GMAC/s"] = benchmark::Counter(
      kMacs * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_ReferenceYoloConvForward(benchmark::State& state) {
  YoloLayer l;
  for (auto _ : state)
    if (!conv_forward(l.params, l.x, l.xv.data(), l.w, l.wv.data(), l.y, l.yv.data()).is_ok())
      state.SkipWithError("conv_forward failed");
  report(state);
}
BENCHMARK(BM_ReferenceYoloConvForward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReferenceYoloConvBackwardData(benchmark::State& state) {
  YoloLayer l;
  for (auto _ : state)
    if (!conv_backward_data(l.params, l.y, l.yv.data(), l.w, l.wv.data(), l.x, l.xv.data()).is_ok())
      state.SkipWithError("conv_backward_data failed");
  report(state);
}
BENCHMARK(BM_ReferenceYoloConvBackwardData)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReferenceYoloConvBackwardFilter(benchmark::State& state) {
  YoloLayer l;
  for (auto _ : state)
    if (!conv_backward_filter(l.params, l.x, l.xv.data(), l.y, l.yv.data(), l.w, l.wv.data())
             .is_ok())
      state.SkipWithError("conv_backward_filter failed");
  report(state);
}
BENCHMARK(BM_ReferenceYoloConvBackwardFilter)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReferenceResNetStemMaxPool(benchmark::State& state) {
  TensorDesc x, y;
  (void)TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {1, 64, 112, 112});
  (void)TensorDesc::contiguous(y, CONVJIT_DTYPE_F32, {1, 64, 56, 56});
  PoolParams p(2, CONVJIT_POOL_MAX);
  p.window[0] = p.window[1] = 3;
  p.stride[0] = p.stride[1] = 2;
  p.pad_begin[0] = p.pad_begin[1] = p.pad_end[0] = p.pad_end[1] = 1;
  std::vector<float> xv(64 * 112 * 112, 1.0f), yv(64 * 56 * 56);
  for (auto _ : state)
    if (!pool_forward(p, x, xv.data(), y, yv.data()).is_ok()) state.SkipWithError("pool failed");
}
BENCHMARK(BM_ReferenceResNetStemMaxPool)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
