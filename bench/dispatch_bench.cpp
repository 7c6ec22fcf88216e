// Dispatch overhead through the C++ API (and so the C API):
// - a resolved call: argument checks, the raw-argument cache lookup and the
//   call into a tuned library whose kernel does nothing;
// - the same with a rules file of 32 rules loaded, one matching the call:
//   rules act once per descriptor, so the two should not differ;
// - the same on the reference backend (a 1-element conv);
// - the first call of a new descriptor: build, validate, probe the cache
//   path for two library names, choose the reference.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "convjit/convjit.hpp"

namespace {

namespace fs = std::filesystem;
using namespace convjit;

// The no-op library: beside this program (the build tree and a GPU bundle
// both put it there), else where the build wrote it.
fs::path noop_library() {
  std::error_code error;
  const fs::path beside = fs::read_symlink("/proc/self/exe", error).parent_path() /
                          fs::path(CONVJIT_BENCH_NOOP_LIBRARY).filename();
  return !error && fs::exists(beside) ? beside : fs::path(CONVJIT_BENCH_NOOP_LIBRARY);
}

// A private cache directory holding the no-op library under the tiny
// conv's name, for the duration of one benchmark.
class NoopCache {
 public:
  NoopCache() {
    std::string pattern = (fs::temp_directory_path() / "convjit-bench-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return;
    dir_ = pattern;
    fs::copy_file(noop_library(),
                  dir_ / (std::string("lib") + CONVJIT_BENCH_TINY_NAME + ".so"));
    (void)convjit_set_cache_path(dir_.c_str());
  }
  ~NoopCache() {
    (void)convjit_set_cache_path(nullptr);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

 private:
  fs::path dir_;
};

// A 1x1 conv on `batch` single-pixel, single-channel images.
struct TinyConv {
  TensorDesc x, w, y;
  ConvParams params{2};
  std::vector<float> xv, wv{3.0f}, yv;
  explicit TinyConv(std::int64_t batch = 1)
      : xv(static_cast<std::size_t>(batch), 2.0f), yv(static_cast<std::size_t>(batch)) {
    (void)TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {batch, 1, 1, 1});
    (void)TensorDesc::contiguous(w, CONVJIT_DTYPE_F32, {1, 1, 1, 1});
    (void)TensorDesc::contiguous(y, CONVJIT_DTYPE_F32, {batch, 1, 1, 1});
  }
  Status forward() { return conv_forward(params, x, xv.data(), w, wv.data(), y, yv.data()); }
};

void BM_ResolvedCallNoopTunedKernel(benchmark::State& state) {
  NoopCache cache;
  TinyConv conv;
  if (!conv.forward().is_ok() || last_backend() != "tuned-library") {
    state.SkipWithError("the no-op tuned library was not used");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(conv.forward());
}
BENCHMARK(BM_ResolvedCallNoopTunedKernel);

// 31 rules for other calls and one for this call that leaves its library.
class RulesLoaded {
 public:
  RulesLoaded() : path_(fs::temp_directory_path() / fmt_path()) {
    std::ofstream out(path_);
    out << R"({"version": 1, "rules": [)";
    for (int i = 0; i < 31; ++i)
      out << R"({"id": "other)" << i << R"(", "match": {"op": "conv", "k": )" << 100 + i
          << R"(}, "force": "reference"},)";
    out << R"({"id": "this", "match": {"op": "conv", "k": 1}, "deny": "jit[direct]"}]})";
    out.close();
    ok_ = convjit_set_rules_file(path_.c_str()) == CONVJIT_STATUS_SUCCESS;
  }
  ~RulesLoaded() {
    (void)convjit_set_rules_file(nullptr);
    fs::remove(path_);
  }
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  static std::string fmt_path() {
    return "convjit-bench-rules-" + std::to_string(::getpid()) + ".json";
  }
  fs::path path_;
  bool ok_ = false;
};

void BM_ResolvedCallNoopTunedKernelUnderRules(benchmark::State& state) {
  NoopCache cache;
  RulesLoaded rules;
  TinyConv conv;
  if (!rules.ok() || !conv.forward().is_ok() || last_backend() != "tuned-library") {
    state.SkipWithError("the rules did not load, or the no-op tuned library was not used");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(conv.forward());
}
BENCHMARK(BM_ResolvedCallNoopTunedKernelUnderRules);

void BM_ResolvedCallReferenceTinyConv(benchmark::State& state) {
  TinyConv conv(3);
  if (!conv.forward().is_ok()) state.SkipWithError("setup failed");
  for (auto _ : state) benchmark::DoNotOptimize(conv.forward());
}
BENCHMARK(BM_ResolvedCallReferenceTinyConv);

// Each iteration's x has a new (irrelevant) batch stride, so each call is a
// descriptor never seen before, while the compute stays one multiply.
void BM_FirstCallResolve(benchmark::State& state) {
  TinyConv conv;
  std::int64_t batch_stride = 1;
  for (auto _ : state) {
    conv.x.strides[0] = ++batch_stride;
    benchmark::DoNotOptimize(conv.forward());
  }
}
BENCHMARK(BM_FirstCallResolve)->Iterations(3000);

}  // namespace
