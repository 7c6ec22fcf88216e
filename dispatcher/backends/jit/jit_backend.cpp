#include "dispatcher/backends/jit/jit_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "cache/cache_tiers.hpp"
#include "dispatcher/backends/jit/jit_module_cache.hpp"
#include "dispatcher/backends/jit/kernel_operands.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "dispatcher/cuda/context_scope.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/cuda/device_buffer.hpp"
#include "dispatcher/cuda/kernel_launch.hpp"
#include "dispatcher/kernel_workspace.hpp"
#include "dispatcher/packed_filter_copies.hpp"
#include "dispatcher/settings.hpp"
#include "dispatcher/tensor_maps/tensor_map_encoder.hpp"

namespace convjit {

namespace {

struct LaunchEntry {
  CUfunction function = nullptr;
  LaunchShape shape;
  bool copies_filters = false;  // KernelEntry::copies_filters
};

// A kernel launches with more than 48 KiB of dynamic shared memory only
// after it opts in, up to the device's limit.
Status allow_dynamic_shared(const CudaDriver& driver, const LaunchEntry& e, const std::string& name) {
  if (e.shape.dynamic_shared_bytes <= kStaticSharedLimit) return Status::ok();
  const Status s = driver.check(
      driver.api().func_set_attribute(e.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      static_cast<int>(e.shape.dynamic_shared_bytes)),
      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  if (s.is_ok()) return s;
  return Status(s.code(), fmt::format("{} asks for {} bytes of dynamic shared memory, beyond what "
                                      "this device allows a block: {}",
                                      name, e.shape.dynamic_shared_bytes, s.message()));
}

// One loaded module in a device's primary context, its entry points and the
// workspaces it keeps for callers that pass none.  Launches are asynchronous
// on the caller's stream; each entry enters the context with a ContextScope
// and leaves the caller's current context as it found it.
class JitKernel final : public Kernel {
 public:
  JitKernel(const CudaDriver& driver, std::shared_ptr<DeviceContext> context,
            const OpDescriptor& desc, std::vector<TensorMapArgument> tensor_maps)
      : driver_(driver),
        context_(std::move(context)),
        desc_(desc),
        inputs_(kernel_inputs(desc)),
        tensor_maps_(std::move(tensor_maps)) {}
  ~JitKernel() override {
    const ContextScope scope = context_->enter();
    workspaces_.reset();  // frees device memory, so before the context goes
    if (module_) (void)driver_.api().module_unload(module_);
  }  // context_ is released after the scope pops it
  JitKernel(const JitKernel&) = delete;
  JitKernel& operator=(const JitKernel&) = delete;

  // `sms`: the device's SMs, which a persistent grid is cut to.
  Status load(const CacheEntry& entry, int sms) {
    const auto& api = driver_.api();
    const ContextScope scope = context_->enter();
    if (!scope.status().is_ok()) return scope.status();
    if (Status s =
            driver_.check(api.module_load_data(&module_, entry.payload.data()), "cuModuleLoadData");
        !s.is_ok())
      return s;
    const auto meta = nlohmann::json::parse(entry.metadata, nullptr, false);
    if (!meta.is_object() || !meta.contains("entries"))
      return Status::invalid("JIT cache metadata is malformed");
    for (const auto& e : meta["entries"]) {
      LaunchEntry launch{nullptr,
                         {e.value("blocks", 1u), e.value("block_size", 256u),
                          e.value("dynamic_shared_bytes", 0u), e.value("cluster_blocks", 1u)},
                         e.value("copies_filters", false)};
      const std::string name = e.value("name", "");
      if (Status s = driver_.check(api.module_get_function(&launch.function, module_, name.c_str()),
                                   "cuModuleGetFunction");
          !s.is_ok())
        return s;
      if (Status s = allow_dynamic_shared(driver_, launch, name); !s.is_ok()) return s;
      if (e.value("persistent", false))
        launch.shape.blocks =
            persistent_grid(launch.shape.blocks, sms, launch.shape.cluster_blocks,
                            max_active_clusters(api, launch.function, launch.shape));
      copies_filters_ |= launch.copies_filters;
      entries_.push_back(launch);
    }
    zeroed_offset_ = meta.value("zeroed_offset", std::size_t{0});
    zeroed_bytes_ = meta.value("zeroed_bytes", std::size_t{0});
    workspaces_ = make_device_workspaces(meta.value("workspace_bytes", std::size_t{0}),
                                         zeroed_offset_, zeroed_bytes_);
    return Status::ok();
  }

  // Allocates the first stream's workspace now, so running out of memory
  // shows at build, where cuDNN can still serve.
  [[nodiscard]] Status reserve_workspace() {
    const ContextScope scope = context_->enter();
    if (!scope.status().is_ok()) return scope.status();
    return workspaces_->reserve();
  }

  [[nodiscard]] std::size_t workspace_bytes() const override { return workspaces_->bytes(); }

  // Whether this call's operands meet TMA's alignment for every map (the
  // kernel's own workspace, used where the caller passes none, always does).
  [[nodiscard]] bool tensor_maps_aligned(const ExecArgs& args) const {
    return convjit::tensor_maps_aligned(
        tensor_maps_, {input_pointer(args, inputs_.in0), input_pointer(args, inputs_.in1),
                       args.out, args.workspace});
  }
  [[nodiscard]] bool uses_tma() const { return !tensor_maps_.empty(); }
  // Whether this kernel serves the call: its maps can address the
  // operands, and it blends y by beta where the call asks.
  [[nodiscard]] bool serves(const ExecArgs& args) const {
    return tensor_maps_aligned(args) && check_output_beta(tensor_maps_, args.beta).is_ok();
  }

  [[nodiscard]] Status execute(const ExecArgs& args) const override {
    if (desc_.has_epilogue())
      if (Status s = check_epilogue_operands(desc_, args); !s.is_ok()) return s;
    if (Status s = check_output_beta(tensor_maps_, args.beta); !s.is_ok()) return s;
    const ContextScope scope = context_->enter();
    if (!scope.status().is_ok()) return scope.status();
    const void* in0 = input_pointer(args, inputs_.in0);
    const void* in1 = input_pointer(args, inputs_.in1);
    void* out = args.out;
    float alpha = static_cast<float>(args.alpha), beta = static_cast<float>(args.beta);
    // A call that keeps its copy of w gets a buffer of its own for that w.
    const bool keeps_copy = copies_filters_ && args.w_version != 0;
    auto scratch = workspaces_->for_call(args, "this JIT kernel", keeps_copy ? args.w : nullptr);
    if (!scratch.is_ok()) return scratch.status();
    void* workspace = scratch.value();
    const void* bias = args.bias;
    const void* residual = args.residual;
    // A conv fwd's entries take the epilogue operands too, and TMA kernels
    // those and then their maps, encoded for this call's pointers (a map
    // holds its tensor's address; kernel_abi.cuh).  The driver reads as
    // many parameters as the entry declares.  A batchnorm's entries take
    // its per-channel operands after the workspace instead.
    NormOperands norm = args.norm;
    DeviceTensorMaps maps;
    if (!tensor_maps_.empty()) {
      auto encoded = encode_tensor_maps(driver_, tensor_maps_, {in0, in1, out, workspace});
      if (!encoded.is_ok()) return encoded.status();
      maps = encoded.value();
    }
    if (Status s = zero_callers_counters(args, workspace); !s.is_ok()) return s;
    void* params[] = {&in0, &in1, &out, &alpha, &beta, &workspace, &bias, &residual, &maps};
    if (takes_norm_operands(desc_)) params[6] = &norm;
    const bool owned = args.workspace == nullptr;
    const bool reuse = packed_filters_.holds(workspace, owned, args.w, args.w_version);
    for (const LaunchEntry& e : entries_) {
      if (e.copies_filters && reuse) continue;
      if (Status s = launch_kernel(driver_, e.function, e.shape, static_cast<CUstream>(args.stream),
                                   params);
          !s.is_ok())
        return s;
      if (e.copies_filters) packed_filters_.record(workspace, owned, args.w, args.w_version);
    }
    return Status::ok();
  }

 private:
  // The bytes the kernel must find zero (Stream-K's counters), in a
  // caller's workspace, whose contents are unknown; the kernel's own
  // starts zeroed and the kernel leaves them so.
  [[nodiscard]] Status zero_callers_counters(const ExecArgs& args, void* workspace) const {
    if (zeroed_bytes_ == 0 || args.workspace == nullptr) return Status::ok();
    const auto at = reinterpret_cast<CUdeviceptr>(workspace) + zeroed_offset_;
    return driver_.check(
        driver_.api().memset_d8_async(at, 0, zeroed_bytes_, static_cast<CUstream>(args.stream)),
        "cuMemsetD8Async (the workspace's counters)");
  }

  const CudaDriver& driver_;
  std::shared_ptr<DeviceContext> context_;  // the device's primary context, retained
  OpDescriptor desc_;
  KernelInputs inputs_;
  CUmodule module_ = nullptr;
  std::vector<LaunchEntry> entries_;
  bool copies_filters_ = false;  // an entry copies w (LaunchEntry::copies_filters)
  std::unique_ptr<StreamWorkspaces> workspaces_;
  mutable PackedFilterCopies packed_filters_;   // what each of workspaces_ holds a copy of
  std::vector<TensorMapArgument> tensor_maps_;  // the source's; none: no TMA
  std::size_t zeroed_offset_ = 0, zeroed_bytes_ = 0;  // KernelSource::zeroed_bytes
};

// A TMA kernel, with the variant it falls back on for a call it does not
// serve: operands TMA cannot address (a view one element into a larger
// tensor), or a beta other than 0 where it stores y by TMA (a rare call
// in a forward pass, which the Hopper conv's kernels leave to keep their
// compile time).  That call runs as it would without TMA instead of
// failing, whether the TMA kernel was the heuristic's choice, the tuned
// policy's or named.
class TmaFallbackKernel final : public Kernel {
 public:
  TmaFallbackKernel(std::unique_ptr<JitKernel> tma, std::unique_ptr<Kernel> fallback)
      : tma_(std::move(tma)), fallback_(std::move(fallback)) {}

  [[nodiscard]] Status execute(const ExecArgs& args) const override {
    return tma_->serves(args) ? tma_->execute(args) : fallback_->execute(args);
  }
  [[nodiscard]] std::size_t workspace_bytes() const override {
    return std::max(tma_->workspace_bytes(), fallback_->workspace_bytes());
  }

 private:
  std::unique_ptr<JitKernel> tma_;
  std::unique_ptr<Kernel> fallback_;
};

// The heuristic's first variant that reads no operand through TMA.
std::optional<std::string> first_variant_without_tma(const OpDescriptor& desc,
                                                     const std::string& arch) {
  for (const std::string& id : jit_variants(desc, variant_context(arch))) {
    auto source = kernel_source(desc, id);
    if (source.is_ok() && source.value().tensor_maps.empty()) return id;
  }
  return std::nullopt;
}

// `tma` paired with its fallback, which `backend` builds.
Result<std::unique_ptr<Kernel>> with_tma_fallback(JitBackend& backend, const OpDescriptor& desc,
                                                  const convjit_device_t& device,
                                                  const std::string& arch,
                                                  std::unique_ptr<JitKernel> tma,
                                                  BuildTrace& trace) {
  const std::optional<std::string> fallback_id = first_variant_without_tma(desc, arch);
  if (!fallback_id) return std::unique_ptr<Kernel>(std::move(tma));
  const std::string chosen = trace.variant;
  auto fallback = backend.build_variant(desc, device, *fallback_id, trace);
  trace.variant = chosen;
  if (!fallback.is_ok()) return fallback.status();
  return std::unique_ptr<Kernel>(
      std::make_unique<TmaFallbackKernel>(std::move(tma), std::move(fallback).value()));
}

}  // namespace

Status JitBackend::check_support(const OpDescriptor& desc, const convjit_device_t& device) const {
  if (device.kind != CONVJIT_DEVICE_CUDA)
    return Status::not_available(
        "the JIT backend runs on CUDA devices; the host uses oneDNN and the reference");
  if (Status s = jit_supports(desc); !s.is_ok()) return s;
  const CudaDriver& driver = CudaDriver::instance();
  if (!driver.available().is_ok()) return driver.available();
  if (const Status& nvrtc = NvrtcLibrary::instance().available(); !nvrtc.is_ok()) return nvrtc;
  const std::string arch = driver.arch_of(device.ordinal);
  if (arch.empty())
    return Status::not_available(fmt::format("CUDA device {} cannot be queried", device.ordinal));
  return jit_supports_arch(desc, arch);
}

std::shared_ptr<JitCache> JitBackend::cache_for_settings() {
  const auto settings = SettingsStore::instance().snapshot();
  std::lock_guard lock(cache_mutex_);
  const JitCacheTiers tiers = jit_cache_tiers(*settings);
  if (!cache_ || cache_path_ != tiers.shared || local_cache_path_ != tiers.local) {
    cache_path_ = tiers.shared;
    local_cache_path_ = tiers.local;
    cache_ = std::make_shared<JitCache>(tiers);
  }
  return cache_;
}

Result<std::unique_ptr<Kernel>> JitBackend::build(const OpDescriptor& desc,
                                                  const convjit_device_t& device,
                                                  BuildTrace& trace) {
  return build_variant(desc, device, "", trace);
}

Result<std::vector<KernelVariant>> JitBackend::build_variants(const OpDescriptor& desc,
                                                              const convjit_device_t& device,
                                                              BuildTrace& trace) {
  const std::string arch = CudaDriver::instance().arch_of(device.ordinal);
  return build_each_variant(jit_variants(desc, variant_context(arch)), [&](std::string_view id) {
    return build_variant(desc, device, id, trace);
  });
}

std::optional<std::vector<std::string>> JitBackend::variant_ids(
    const OpDescriptor& desc, const convjit_device_t& device) const {
  return jit_variants(desc, variant_context(CudaDriver::instance().arch_of(device.ordinal)));
}

// "" builds the heuristic's choice.
Result<std::unique_ptr<Kernel>> JitBackend::build_variant(const OpDescriptor& desc,
                                                          const convjit_device_t& device,
                                                          std::string_view variant,
                                                          BuildTrace& trace) {
  const CudaDriver& driver = CudaDriver::instance();
  const std::string arch = driver.arch_of(device.ordinal);
  if (arch.empty())
    return Status::not_available(fmt::format("CUDA device {} cannot be queried", device.ordinal));
  const std::shared_ptr<JitCache> cache = cache_for_settings();
  auto context = DeviceContext::open(device.ordinal);
  if (!context.is_ok()) return context.status();
  // A cached CUBIN the driver refuses is quarantined and compiled afresh once.
  Status last;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto prepared = prepare_jit_module(*cache, desc, arch, variant);
    if (!prepared.is_ok()) return prepared.status();
    trace.probes.push_back(
        {cache->writable_directory(),
         fmt::format("{} (variant {})",
                     prepared.value().compiled ? "compiled with NVRTC for " + arch
                                               : std::string("loaded from the JIT cache"),
                     prepared.value().variant)});
    auto kernel =
        std::make_unique<JitKernel>(driver, context.value(), desc, prepared.value().tensor_maps);
    last = kernel->load(prepared.value().entry, driver.sm_count_of(device.ordinal));
    if (last.is_ok()) {
      if (Status s = kernel->reserve_workspace(); !s.is_ok()) return s;  // not the cache's fault
      trace.variant = prepared.value().variant;
      if (!kernel->uses_tma()) return std::unique_ptr<Kernel>(std::move(kernel));
      return with_tma_fallback(*this, desc, device, arch, std::move(kernel), trace);
    }
    if (prepared.value().compiled) break;  // a fresh CUBIN failed: not the cache's fault
    auto key = jit_module_key(desc, arch, variant);
    if (key.is_ok()) cache->quarantine_entry(key.value(), last.message());
  }
  return last;
}

}  // namespace convjit
