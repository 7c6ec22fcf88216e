// Per-call overhead of the dispatch path for an already resolved descriptor:
// API argument checks, descriptor build and validation, table lookup and
// the kernel call, on a 1-element problem whose compute is negligible.
#include <benchmark/benchmark.h>

#include "convjit/convjit.hpp"

namespace {

void BM_ResolvedTinyConvForward(benchmark::State& state) {
  using namespace convjit;
  TensorDesc x, w, y;
  (void)TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {1, 1, 1, 1});
  (void)TensorDesc::contiguous(w, CONVJIT_DTYPE_F32, {1, 1, 1, 1});
  (void)TensorDesc::contiguous(y, CONVJIT_DTYPE_F32, {1, 1, 1, 1});
  const ConvParams params(2);
  float xv = 2, wv = 3, yv = 0;
  if (!conv_forward(params, x, &xv, w, &wv, y, &yv).is_ok()) state.SkipWithError("setup failed");
  for (auto _ : state) {
    benchmark::DoNotOptimize(conv_forward(params, x, &xv, w, &wv, y, &yv));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ResolvedTinyConvForward);

}  // namespace
