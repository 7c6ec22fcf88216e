// The JIT's costs on this machine (no GPU needed):
// - cold NVRTC compile per template over the YOLO11n descriptor set
//   (counters: median and p90 in ms per template);
// - cold NVRTC compile of the Hopper conv (sm_90a) where auto leads with it
//   on ResNet-50's convs, channels-last bf16 at batch 32 (median and p90
//   per direction: the goal is 0.4 s median);
// - warm load of the whole YOLO11n set from the persistent cache (key
//   derivation, file read, checksum and key check) in a fresh process state.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "dispatcher/backends/jit/jit_module_cache.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/models/model_table.hpp"

namespace {

namespace fs = std::filesystem;
using namespace convjit;

std::vector<OpDescriptor> yolo_set() {
  const auto ops = expand_model(*find_model("yolo11n"), {1});
  std::vector<OpDescriptor> descs;
  for (const ModelOp& op : ops.value()) descs.push_back(op.desc);
  return descs;
}

std::string template_family(const OpDescriptor& d) {
  return kernel_source(d).value().template_name;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

void BM_NvrtcColdCompileYolo11n(benchmark::State& state) {
  const auto descs = yolo_set();
  std::map<std::string, std::vector<double>> ms;
  for (auto _ : state)
    for (const OpDescriptor& d : descs) {
      auto module = compile_kernel(kernel_source(d).value(), "sm_90");
      if (!module.is_ok()) state.SkipWithError(module.status().message().c_str());
      ms[template_family(d)].push_back(module.value().compile_ms);
      ms["all"].push_back(module.value().compile_ms);
    }
  for (const auto& [family, times] : ms) {
    state.counters[family + " median ms"] = percentile(times, 0.5);
    state.counters[family + " p90 ms"] = percentile(times, 0.9);
  }
}
BENCHMARK(BM_NvrtcColdCompileYolo11n)->Iterations(1)->Unit(benchmark::kSecond);

void BM_NvrtcColdCompileHopperConvResnet50(benchmark::State& state) {
  const auto ops = expand_model(*find_model("resnet50"), {32, 0, true, DataType::bf16});
  if (!ops.is_ok()) return state.SkipWithError(ops.status().message().c_str());
  const VariantContext context = variant_context("sm_90");
  std::set<std::string> seen;
  std::map<std::string, std::vector<double>> ms;
  for (auto _ : state)
    for (const ModelOp& op : ops.value()) {
      const std::vector<std::string> variants = jit_variants(op.desc, context);
      if (variants.empty() || find_wgmma_config(variants.front()) == nullptr ||
          !seen.insert(descriptor_name(op.desc)).second)
        continue;
      auto source = kernel_source(op.desc, variants.front());
      if (!source.is_ok()) return state.SkipWithError(source.status().message().c_str());
      auto module = compile_kernel(source.value(), "sm_90");
      if (!module.is_ok()) return state.SkipWithError(module.status().message().c_str());
      ms[std::string(direction_name(op.desc.direction))].push_back(module.value().compile_ms);
      ms["all"].push_back(module.value().compile_ms);
    }
  for (const auto& [direction, times] : ms) {
    state.counters[direction + " kernels"] = static_cast<double>(times.size());
    state.counters[direction + " median ms"] = percentile(times, 0.5);
    state.counters[direction + " p90 ms"] = percentile(times, 0.9);
  }
}
BENCHMARK(BM_NvrtcColdCompileHopperConvResnet50)->Iterations(1)->Unit(benchmark::kSecond);

void BM_WarmLoadYolo11nFromCache(benchmark::State& state) {
  std::string pattern = (fs::temp_directory_path() / "convjit-bench-cache-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return state.SkipWithError("mkdtemp failed");
  const auto descs = yolo_set();
  {
    JitCache warmup({pattern});
    for (const OpDescriptor& d : descs) (void)prepare_jit_module(warmup, d, "sm_90");
  }
  for (auto _ : state) {
    JitCache cache({pattern});
    for (const OpDescriptor& d : descs) {
      auto prepared = prepare_jit_module(cache, d, "sm_90");
      if (!prepared.is_ok() || prepared.value().compiled)
        state.SkipWithError("a warm load compiled");
      benchmark::DoNotOptimize(prepared);
    }
  }
  state.counters["descriptors"] = static_cast<double>(descs.size());
  fs::remove_all(pattern);
}
BENCHMARK(BM_WarmLoadYolo11nFromCache)->Unit(benchmark::kMillisecond);

}  // namespace
