// The GPU backends (the JIT and cuDNN) on a real GPU against the host
// reference: random problems of every op and the reference model layers,
// outputs poisoned with NaN first.  cuDNN gets the random sets with
// symmetric padding, floor-mode pools and no pool dilation, which it
// expresses (cudnn_problem.hpp; test_cudnn_backend.cpp checks that it
// declines none of them); the JIT gets the general sets.  cuDNN's max-pool
// backward gets tie-free inputs (support/tie_free_pool_input.hpp).  Beyond
// the plain call: alpha and beta, a stream of the test's own, a workspace
// the caller passes, several threads at once, and another device, each
// leaving the caller's current context as it was.  Without a CUDA device
// every test is skipped with the reason.
#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <random>
#include <thread>

#include "dispatcher/backends/cudnn/cudnn_backend.hpp"
#include "dispatcher/backends/jit/jit_backend.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/pixel_filters.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"
#include "dispatcher/cuda/device_buffer.hpp"
#include "dispatcher/cuda/gpu_arch.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"
#include "dispatcher/dispatcher.hpp"
#include "dispatcher/models/model_table.hpp"
#include "dispatcher/settings.hpp"
#include "support/folded_stems.hpp"
#include "support/jit_problem_set.hpp"
#include "support/narrow_bwdfilts.hpp"
#include "support/reference_comparison.hpp"
#include "support/temp_directory.hpp"
#include "support/threads_store_scope.hpp"
#include "support/tie_free_pool_input.hpp"

namespace convjit {
namespace {

constexpr convjit_device_t kGpu{CONVJIT_DEVICE_CUDA, 0};

// How a check calls the GPU beyond the plain call.
struct CallOptions {
  double alpha = 1.0, beta = 0.0;
  CUstream stream = nullptr;  // waited for before the output is read
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// Whether a tensor of rank `rank` is dense NCHW (dims of 1 take any stride).
bool dense_nchw(const Dims5& dims, const Dims5& strides, int rank) {
  const Dims5 dense = contiguous_strides(dims, rank, /*channels_last=*/false);
  for (std::size_t i = 0; i < static_cast<std::size_t>(rank); ++i)
    if (dims[i] != 1 && strides[i] != dense[i]) return false;
  return true;
}

// cuDNN's backward convolutions (its legacy API, which the backend calls)
// take dense NCHW activations only: on an H200 with cuDNN 9.14, system and
// wheel alike, every algorithm the heuristics offered for channels-last or
// padded-row activations reported NOT_SUPPORTED, cuDNN's log saying
// "!isTensorNCHW_CHWpacked(xDesc)" (bench/results/2026-11-26-h200).  The
// backend then declines, and a dispatcher serves the call from the next
// backend; on dense NCHW it must serve.  A fwd conv of channels-last
// activations (random_channels_last_conv: f16, bf16 or f32, K C R S or
// K R S C filters) was declined the same way on an H200 with cuDNN 9
// (bench/results/2026-11-28-h200), while the model tables' bf16 ones were
// served: so any direction off dense NCHW.
bool cudnn_may_decline(const OpDescriptor& d, const Status& s) {
  return d.is_conv() && s.code() == CONVJIT_STATUS_UNSUPPORTED &&
         s.message().find("cuDNN's heuristics offer no usable algorithm") != std::string::npos &&
         !(dense_nchw(d.x_dims, d.x_strides, d.rank()) && dense_nchw(d.y_dims, d.y_strides, d.rank()));
}

// The thread's current context, as the driver reports it (the product's
// driver table has no use for cuCtxGetCurrent, so the test looks it up).
CUcontext current_context() {
  static const auto get = reinterpret_cast<CUresult (*)(CUcontext*)>(
      ::dlsym(::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), "cuCtxGetCurrent"));
  CUcontext context = nullptr;
  EXPECT_EQ(get(&context), CUDA_SUCCESS);
  return context;
}

// A non-blocking stream in `context`: no implicit ordering with the legacy
// default stream, so a check that forgot to wait for it would read early.
class TestStream {
 public:
  explicit TestStream(const DeviceContext& context) : context_(context) {
    const ContextScope scope = context_.enter();
    EXPECT_EQ(CudaDriver::instance().api().stream_create(&stream_, CU_STREAM_NON_BLOCKING),
              CUDA_SUCCESS);
  }
  ~TestStream() {
    const ContextScope scope = context_.enter();
    (void)CudaDriver::instance().api().stream_destroy(stream_);
  }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  [[nodiscard]] CUstream get() const { return stream_; }

 private:
  const DeviceContext& context_;
  CUstream stream_ = nullptr;
};

// The parameter names the backend: "jit" or "cudnn", then for a suite of
// one variant a test (GpuHopperConfig), "/" and the variant.
class GpuBackend : public ::testing::TestWithParam<std::string> {
 protected:
  [[nodiscard]] std::string backend() const { return GetParam().substr(0, GetParam().find('/')); }

  void SetUp() override {
    auto context = DeviceContext::open(0);
    if (!context.is_ok()) GTEST_SKIP() << "no CUDA device: " << context.status().message();
    context_ = context.value();
    std::vector<std::unique_ptr<Backend>> gpu_chain;
    if (backend() == "jit") gpu_chain.push_back(std::make_unique<JitBackend>());
    if (backend() == "cudnn") gpu_chain.push_back(std::make_unique<CudnnBackend>());
    backend_ = gpu_chain.front().get();
    gpu_ = std::make_unique<Dispatcher>(std::move(gpu_chain));
  }

  // cuDNN's random sets stay within what it expresses.
  bool symmetric() const { return backend() == "cudnn"; }

  // Runs each op the Hopper conv serves in every configuration that serves
  // it (`every`; or only configuration `only`), or in the one auto leads
  // with; how many runs.
  int check_hopper(const std::vector<OpDescriptor>& ops, bool every, std::string_view only = {});

  // Runs `d` on the GPU through the dispatcher and compares with the host
  // reference.
  void check(const OpDescriptor& d, std::mt19937& rng, const CallOptions& options = {}) {
    check_with(
        d, rng, [&](const ExecArgs& args) { return gpu_->execute(d, kGpu, args); }, options);
  }

  // The same, with `run` calling the GPU.
  void check_with(const OpDescriptor& d, std::mt19937& rng,
                  const std::function<Status(const ExecArgs&)>& run,
                  const CallOptions& options = {}) {
    SCOPED_TRACE(descriptor_name(d));
    test::HostOperands host = test::random_operands(d, rng, options.alpha, options.beta);
    if (ties_matter(d)) test::make_pool_input_tie_free(d, host.x, rng);
    const Status support = backend_->check_support(d, kGpu);
    // cuDNN's bias gradient takes no bf16 (cudnn_problem.cpp): declined up
    // front, never a failed call.
    if (backend() == "cudnn" && d.kind == OpKind::bias_grad && d.dtype == DataType::bf16) {
      EXPECT_EQ(support.code(), CONVJIT_STATUS_UNSUPPORTED) << support.message();
      return;
    }
    ASSERT_TRUE(support.is_ok()) << support.message();
    auto gx = staged(host.x), gw = staged(host.w), gdy = staged(host.dy), gout = staged(host.out);
    auto gbias = staged(host.bias), gresidual = staged(host.residual);
    ExecArgs args = host.args(d, gout->get());
    if (args.x) args.x = gx->get();
    if (args.w) args.w = gw->get();
    if (args.dy) args.dy = gdy->get();
    if (args.bias) args.bias = gbias->get();
    if (args.residual) args.residual = gresidual->get();
    args.stream = options.stream;
    args.workspace = options.workspace, args.workspace_bytes = options.workspace_bytes;
    const CUcontext before = current_context();
    const Status gpu = run(args);
    EXPECT_EQ(current_context(), before) << "the call left another context current";
    if (gpu.code() == CONVJIT_STATUS_UNSUPPORTED && variant_run_) {
      std::cout << "[ SKIPPED  ] variant not supported here: " << gpu.message() << "\n";
      return;
    }
    if (backend() == "cudnn" && cudnn_may_decline(d, gpu)) {
      std::cout << "[ DECLINED ] " << descriptor_name(d) << ": " << gpu.message() << "\n";
      return;
    }
    ASSERT_TRUE(gpu.is_ok()) << gpu.message();
    ASSERT_TRUE(wait_for(options.stream).is_ok());
    std::vector<unsigned char> got(host.out.size());
    ASSERT_TRUE(gout->download(got.data()).is_ok());
    test::expect_matches_reference(d, host, got);
  }

  // cuDNN sends a tied maximum's gradient to an element of its choosing,
  // the reference to the first (tie_free_pool_input.hpp).
  bool ties_matter(const OpDescriptor& d) const {
    return backend() == "cudnn" && d.is_pool() && d.pool_mode == PoolingMode::max &&
           d.direction == Direction::bwd;
  }

  Status wait_for(CUstream stream) const {
    if (stream == nullptr) return context_->synchronize();
    const ContextScope scope = context_->enter();
    return CudaDriver::instance().check(CudaDriver::instance().api().stream_synchronize(stream),
                                        "cuStreamSynchronize");
  }

  // A device copy of `host`.
  std::unique_ptr<DeviceBuffer> staged(const std::vector<unsigned char>& host) {
    auto buffer = DeviceBuffer::allocate(context_, host.size());
    EXPECT_TRUE(buffer.is_ok()) << buffer.status().message();
    EXPECT_TRUE(buffer.value()->upload(host.data()).is_ok());
    return std::move(buffer).value();
  }

  std::shared_ptr<DeviceContext> context_;
  Backend* backend_ = nullptr;
  std::unique_ptr<Dispatcher> gpu_;
  bool variant_run_ = false;  // a variant cuDNN refuses at execute is skipped, with the reason
};

TEST_P(GpuBackend, RandomConvolutionsInEveryDirectionAndDtype) {
  std::mt19937 rng(2026);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_conv_descriptors(rng, dtype, 18, symmetric())) check(d, rng);
}

TEST_P(GpuBackend, RandomPoolingInEveryModeAndDirection) {
  std::mt19937 rng(7);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_pool_descriptors(rng, dtype, 12, symmetric())) check(d, rng);
}

TEST_P(GpuBackend, RandomBiasGradients) {
  std::mt19937 rng(5);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_bias_descriptors(rng, dtype, 12)) check(d, rng);
}

TEST_P(GpuBackend, EveryLayerOfTheReferenceModels) {
  std::mt19937 rng(11);
  for (const char* name : {"resnet50", "yolo11n", "cosmoflow"})
    for (const OpDescriptor& d :
         test::model_descriptors(name, {2, std::string(name) == "cosmoflow" ? 32 : 64}))
      check(d, rng);
}

// Each variant the tuned policy may choose (every usable cuDNN algorithm)
// is correct on its own, not only the heuristics' first.
TEST_P(GpuBackend, EveryVariantMatchesTheReference) {
  std::mt19937 rng(13);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_conv_descriptors(rng, dtype, 6, symmetric())) {
      BuildTrace trace;
      auto variants = backend_->build_variants(d, kGpu, trace);
      if (backend() == "cudnn" && !variants.is_ok() && cudnn_may_decline(d, variants.status()))
        continue;
      ASSERT_TRUE(variants.is_ok()) << variants.status().message();
      ASSERT_FALSE(variants.value().empty());
      variant_run_ = true;
      for (const KernelVariant& v : variants.value()) {
        SCOPED_TRACE("variant " + v.id);
        check_with(d, rng, [&](const ExecArgs& args) { return v.kernel->execute(args); });
      }
    }
}

// A conv fwd's fused epilogue (every activation, with and without the
// bias and the residual, alpha and beta) in each variant: cuDNN's
// algorithms followed by the epilogue pass; every JIT variant, the Hopper
// conv's on sm_90.  Channels-last convs with channels a multiple of 8
// (the Hopper conv's), and planar ones.
TEST_P(GpuBackend, FusedEpiloguesMatchTheReferenceInEveryVariant) {
  std::mt19937 rng(19);
  constexpr Activation kActivations[] = {Activation::identity, Activation::relu,
                                         Activation::silu, Activation::sigmoid};
  variant_run_ = true;
  int trial = 0, served = 0;
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (int i = 0; i < 6; ++i, ++trial) {
      test::ConvCase c = test::random_channels_last_conv(rng, 1 + i % 3);
      if (i % 3 == 2) c.layout = test::TestLayout::nchw;
      if (symmetric()) c.pad_end = c.pad_begin;  // cuDNN pads both sides alike
      OpDescriptor d = test::conv_descriptors(c, dtype, {Direction::fwd}).at(0);
      d.activation = kActivations[trial % 4];
      d.epilogue_operands = (trial + trial / 4) % 4;
      BuildTrace trace;
      auto variants = backend_->build_variants(d, kGpu, trace);
      if (backend() == "cudnn" && !variants.is_ok() && cudnn_may_decline(d, variants.status()))
        continue;
      ASSERT_TRUE(variants.is_ok()) << variants.status().message();
      const CallOptions blend{trial % 3 ? 1.0 : 0.75, trial % 2 ? 0.5 : 0.0};
      for (const KernelVariant& v : variants.value()) {
        SCOPED_TRACE("variant " + v.id);
        check_with(d, rng, [&](const ExecArgs& args) { return v.kernel->execute(args); }, blend);
      }
      ++served;
    }
  EXPECT_GE(served, 6);  // the planar ones, every third, at least
}

// alpha scales the result and beta blends the output's old contents in
// (the C API's contract), in every op and direction.
TEST_P(GpuBackend, AlphaAndBetaScaleAndAccumulate) {
  std::mt19937 rng(17);
  const CallOptions blend{0.5, 0.75};
  for (DataType dtype : {DataType::f32, DataType::bf16}) {
    for (const OpDescriptor& d : test::random_conv_descriptors(rng, dtype, 4, symmetric()))
      check(d, rng, blend);
    for (const OpDescriptor& d : test::random_pool_descriptors(rng, dtype, 2, symmetric()))
      check(d, rng, blend);
    for (const OpDescriptor& d : test::random_bias_descriptors(rng, dtype, 3)) check(d, rng, blend);
  }
}

// On a non-blocking stream of the caller's: the work is queued there (the
// check waits for that stream only), with and without a caller workspace.
TEST_P(GpuBackend, RunsOnTheCallersStreamWithTheCallersWorkspace) {
  const TestStream stream(*context_);
  // As large as the cuDNN cap, so whichever algorithm serves fits in it.
  auto workspace = DeviceBuffer::allocate(context_, std::size_t{kDefaultCudnnWorkspaceLimitMib} << 20);
  ASSERT_TRUE(workspace.is_ok()) << workspace.status().message();
  std::mt19937 rng(19);
  for (DataType dtype : {DataType::f32, DataType::f16}) {
    for (const OpDescriptor& d : test::random_conv_descriptors(rng, dtype, 4, symmetric())) {
      check(d, rng, {1.0, 0.0, stream.get()});
      check(d, rng,
            {1.0, 0.0, stream.get(), workspace.value()->get(), workspace.value()->bytes()});
    }
    for (const OpDescriptor& d : test::random_pool_descriptors(rng, dtype, 2, symmetric()))
      check(d, rng, {1.0, 0.0, stream.get(), workspace.value()->get(), workspace.value()->bytes()});
  }
}

// Several threads at once, each on a stream of its own and on the legacy
// and per-thread default streams, through one dispatcher: each thread
// starts with no context current and must end with none.
TEST_P(GpuBackend, SeveralThreadsAtOnceEachOnItsOwnStream) {
  constexpr int kThreads = 6;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([this, t] {
      EXPECT_EQ(current_context(), nullptr);
      std::mt19937 rng(100 + t);
      const TestStream own(*context_);
      const CUstream streams[] = {own.get(), nullptr, CU_STREAM_PER_THREAD};
      for (const OpDescriptor& d : test::random_conv_descriptors(rng, DataType::f32, 2, symmetric()))
        check(d, rng, {1.0, 0.0, streams[t % 3]});
      EXPECT_EQ(current_context(), nullptr);
    });
  for (auto& thread : threads) thread.join();
}

// Resizes in every mode, and YOLO11n's upsamples: the JIT's gather
// kernels (cuDNN has no resize).  One test per dtype, so that the GPU
// check's shards compile their kernels side by side: in one test, NVRTC
// alone ran past a shard's 190 s on an H200.
class GpuResize : public GpuBackend {
 protected:
  void check_random(DataType dtype) {
    std::mt19937 rng(23 + static_cast<int>(dtype));
    for (const OpDescriptor& d : test::random_resize_descriptors(rng, dtype, 12)) check(d, rng);
  }
};

TEST_P(GpuResize, RandomResizesInF32) { check_random(DataType::f32); }
TEST_P(GpuResize, RandomResizesInF16) { check_random(DataType::f16); }
TEST_P(GpuResize, RandomResizesInBf16) { check_random(DataType::bf16); }

TEST_P(GpuResize, TheModelsUpsamplesInBothLayouts) {
  std::mt19937 rng(23);
  for (bool channels_last : {false, true})
    for (const OpDescriptor& d : test::model_descriptors(
             "yolo11n", {2, 64, channels_last, DataType::bf16}, /*every_op=*/true))
      if (d.is_resize()) check(d, rng, {0.5, 0.25});
}

INSTANTIATE_TEST_SUITE_P(Jit, GpuResize, ::testing::Values("jit"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// The Hopper conv (TMA im2col, an mbarrier ring, wgmma), chosen by name,
// on sm_90: random channels-last convs in f16 and bf16 in every
// configuration that serves them, fwd, bwdfilt and bwddata (strided, by
// phases, and of stride 1), one test a configuration and direction
// (GpuHopperConfig) so that gpu-check's workers compile them side by
// side; and the convs of ResNet-50 and YOLO11n it serves in every
// direction, in the configuration auto leads with there (bf16,
// channels-last, batch 2).
// For the row-tap tiles (`row_taps`), convs of 2 to 4 taps along W at
// stride 1 there, of 64-channel K steps (test::random_row_tap_conv); for
// the clusters that share a pixel tile (`cluster_pixels`), filters and
// channels that make one or two whole clusters of filter tiles, the last
// part-filled.
std::vector<OpDescriptor> random_hopper_convs(Direction direction, const WgmmaConvConfig& config) {
  std::mt19937 rng(43);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const auto whole_clusters = [&] {
    const std::int64_t n = config.filters;
    return (pick(1, 2) * config.cluster - 1) * n + 8 * pick(1, n / 8);
  };
  std::vector<OpDescriptor> ops;
  for (DataType dtype : {DataType::bf16, DataType::f16})
    for (int i = 0; i < 12; ++i) {
      const bool row_taps = config.row_taps;
      test::ConvCase c = row_taps ? test::random_row_tap_conv(rng, 1 + i % 3, 4)
                                  : test::random_channels_last_conv(rng, 1 + i % 3);
      if (config.cluster_pixels) c.channels = whole_clusters(), c.filters = whole_clusters();
      ops.push_back(test::conv_descriptors(c, dtype, {Direction::fwd}).at(0));
      test::ConvCase rounded = c;  // dy's channels, a multiple of 8
      rounded.filters = (c.filters + 7) / 8 * 8;
      ops.push_back(test::conv_descriptors(rounded, dtype, {Direction::bwdfilt}).at(0));
      ops.push_back(test::conv_descriptors(rounded, dtype, {Direction::bwddata}).at(0));
      c.stride.assign(c.input.size(), 1);
      c.filters = 8 * (1 + i + (row_taps ? 4 : 0));  // dy's channels, a multiple of 8
      ops.push_back(test::conv_descriptors(c, dtype, {Direction::bwddata}).at(0));
    }
  std::erase_if(ops, [&](const OpDescriptor& d) { return d.direction != direction; });
  return ops;
}

int GpuBackend::check_hopper(const std::vector<OpDescriptor>& ops, bool every,
                             std::string_view only) {
  std::mt19937 rng(44);
  int served = 0;
  for (const OpDescriptor& d : ops) {
    const std::string_view lead = wgmma_lead_config(d).id;
    for (const WgmmaConvConfig& config : kWgmmaConfigs) {
      if (!every && config.id != lead) continue;
      if (!only.empty() && config.id != only) continue;
      if (!wgmma_conv_support(d, config).is_ok()) continue;  // a bwdfilt: 128 x 128 only
      SCOPED_TRACE(fmt::format("{} {}", config.id, descriptor_name(d)));
      BuildTrace trace;
      auto kernel = backend_->build_variant(d, kGpu, config.id, trace);
      EXPECT_TRUE(kernel.is_ok()) << kernel.status().message();
      if (!kernel.is_ok()) continue;
      check_with(d, rng, [&](const ExecArgs& args) { return kernel.value()->execute(args); });
      ++served;
    }
  }
  RecordProperty("runs", served);
  return served;
}

#define CONVJIT_SKIP_UNLESS_HOPPER_JIT()                                                          \
  do {                                                                                            \
    if (backend() != "jit") GTEST_SKIP() << "a JIT variant";                                      \
    const std::string arch = CudaDriver::instance().arch_of(0);                                   \
    if (arch_number(arch) != 90) GTEST_SKIP() << arch << " is not sm_90: the kernel is sm_90a's"; \
  } while (false)

// One configuration a test (Jit/GpuHopperConfig.*/<configuration>), so
// that gpu-check's workers compile them side by side: as one test a
// direction, the nine configurations' bwddata took 183 s on a fresh H200,
// past the 120 s its budget gave the tests (bench/results/2026-12-04-h200).
// Each configuration serves most of the random convs (its support
// counted here, so a configuration refused everywhere fails); a bwdfilt
// only the 128 x 128 tiles of a block a tile.
class GpuHopperConfig : public GpuBackend {
 protected:
  [[nodiscard]] std::string_view config_id() const {
    return std::string_view(GetParam()).substr(GetParam().find('/') + 1);
  }
  void check_random(Direction direction) {
    const WgmmaConvConfig& config = *find_wgmma_config(config_id());
    const std::vector<OpDescriptor> ops = random_hopper_convs(direction, config);
    const auto served = std::count_if(ops.begin(), ops.end(), [&](const OpDescriptor& d) {
      return wgmma_conv_support(d, config).is_ok();
    });
    if (served == 0 && direction == Direction::bwdfilt)
      GTEST_SKIP() << config.id << " serves no bwdfilt";
    EXPECT_GE(2 * served, static_cast<std::ptrdiff_t>(ops.size())) << config.id;
    EXPECT_EQ(check_hopper(ops, true, config.id), served);
  }
};

TEST_P(GpuHopperConfig, MatchesTheReferenceInFwd) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  check_random(Direction::fwd);
}

TEST_P(GpuHopperConfig, MatchesTheReferenceInBwddata) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  check_random(Direction::bwddata);
}

TEST_P(GpuHopperConfig, MatchesTheReferenceInBwdfilt) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  check_random(Direction::bwdfilt);
}

std::vector<std::string> hopper_config_params() {
  std::vector<std::string> params;
  for (const WgmmaConvConfig& config : kWgmmaConfigs)
    params.push_back(fmt::format("jit/{}", config.id));
  return params;
}

INSTANTIATE_TEST_SUITE_P(Jit, GpuHopperConfig, ::testing::ValuesIn(hopper_config_params()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param.substr(param.param.find('/') + 1);
                         });

// The ping-pong tiles on grids where each block takes several tiles (the
// random convs above fit a tile a block): a 1x1 fwd of 640 tiles of
// 128 x 128 (1280 of 128 x 64) on 132 blocks, beta 0 (the TMA store) and
// alpha/beta (the threads' store, and the TMA kernel's fallback), and a
// strided
// 3x3 bwddata whose four phases take 3 to 12 K steps, so that the ring's
// steps and the consumers' turns run across tiles as on a GPU they must;
// in each ping-pong configuration, the clusters on the fwd.  The grid is
// cut to the device's SMs, or to the clusters it holds at once, where
// they are fewer.
TEST_P(GpuBackend, ThePingPongTilesTakeSeveralTilesABlock) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  test::ConvCase c;
  c.batch = 10, c.channels = 64, c.filters = 256, c.input = {64, 64}, c.kernel = {1, 1};
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nhwc;
  test::ConvCase strided = c;
  strided.channels = 32, strided.filters = 64 * 3 + 8, strided.kernel = {3, 3};
  strided.stride = {2, 2}, strided.pad_begin = {1, 1}, strided.pad_end = {1, 1};
  const std::vector<OpDescriptor> ops = {
      test::conv_descriptors(c, DataType::bf16, {Direction::fwd}).at(0),
      test::conv_descriptors(strided, DataType::f16, {Direction::bwddata}).at(0)};
  std::mt19937 rng(45);
  int served = 0;
  for (const OpDescriptor& d : ops)
    for (const WgmmaConvConfig& config : kWgmmaConfigs) {
      // The clusters do not serve a strided bwddata.
      if (!config.ping_pong || !wgmma_conv_support(d, config).is_ok()) continue;
      SCOPED_TRACE(fmt::format("{} {}", config.id, descriptor_name(d)));
      auto source = kernel_source(d, config.id);
      ASSERT_TRUE(source.is_ok()) << source.status().message();
      ASSERT_GT(source.value().entries.back().persistent_tiles,
                2 * source.value().entries.back().tiles);
      BuildTrace trace;
      auto kernel = backend_->build_variant(d, kGpu, config.id, trace);
      ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
      const auto run = [&](const ExecArgs& args) { return kernel.value()->execute(args); };
      check_with(d, rng, run, CallOptions{0.5, 0.25});
      // At beta 0 the fwd's tiles go to y by TMA: each consumer's next
      // tile waits for its last copy's reads before it stages.  With beta
      // (above, on its TMA fallback) they take the threads' store where
      // CONVJIT_WGMMA_TMA_STORE=0 keeps them.
      if (d.direction == Direction::fwd) {
        EXPECT_TRUE(wgmma_conv_launch(d, config).tma_store);
        check_with(d, rng, run);
        const test::ThreadsStoreScope threads;
        auto blended = backend_->build_variant(d, kGpu, config.id, trace);
        ASSERT_TRUE(blended.is_ok()) << blended.status().message();
        check_with(
            d, rng, [&](const ExecArgs& args) { return blended.value()->execute(args); },
            CallOptions{0.5, 0.25});
      }
      ++served;
    }
  EXPECT_EQ(served, 7);  // two ping-pong tiles on both, the three clusters on the fwd
}

// Stream-K (CONVJIT_WGMMA_STREAM_K=1) in both ping-pong tiles on a conv
// of 20 tiles of 27 K steps (the emulator's StreamKShares... case): three
// calls on the kernel's own workspace, whose counters the parts leave
// zero for the next, then three on a caller's workspace filled with ones
// (all bits), whose counters the JIT zeroes before each launch.
TEST_P(GpuBackend, StreamKAddsATilesPartsOnTheGpu) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  const test::SettingScope stream_k("CONVJIT_WGMMA_STREAM_K", "1");
  test::ConvCase c;
  c.batch = 2, c.channels = 136, c.filters = 40, c.input = {40, 32}, c.kernel = {3, 3};
  c.pad_begin = {1, 1}, c.pad_end = {1, 1};
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nhwc;
  const OpDescriptor d = test::conv_descriptors(c, DataType::bf16, {Direction::fwd}).at(0);
  std::mt19937 rng(46);
  for (const WgmmaConvConfig& config : kWgmmaConfigs) {
    if (!config.ping_pong || config.cluster > 1) continue;
    SCOPED_TRACE(fmt::format("{} {}", config.id, descriptor_name(d)));
    ASSERT_GT(wgmma_conv_launch(d, config).stream_k, 0);
    BuildTrace trace;
    auto kernel = backend_->build_variant(d, kGpu, config.id, trace);
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
    const auto run = [&](const ExecArgs& args) { return kernel.value()->execute(args); };
    for (int call = 0; call < 3; ++call) check_with(d, rng, run, CallOptions{1.0, call * 0.5});
    const std::size_t bytes = kernel.value()->workspace_bytes();
    const std::unique_ptr<DeviceBuffer> workspace = staged(std::vector<unsigned char>(bytes, 0xff));
    ASSERT_NE(workspace, nullptr);
    for (int call = 0; call < 3; ++call)
      check_with(d, rng, run, CallOptions{1.0, call * 0.5, nullptr, workspace->get(), bytes});
  }
}

// Convs whose few tiles and long K the launch cuts into slices (split-K,
// as test_emulated_wgmma_conv.cpp's SlicesTheReduction... checks them in
// the emulator): a fwd with a fused SiLU, bias and residual (K R S C
// filters: the partial sums open the workspace) and with K C R S filters
// (after the copy), a stride-1 bwddata, and a strided one by phases.
std::vector<OpDescriptor> sliced_hopper_convs() {
  test::ConvCase c;
  c.batch = 1, c.channels = 456, c.filters = 136, c.input = {9, 7}, c.kernel = {3, 3};
  c.stride = {1, 1}, c.dilation = {1, 1}, c.pad_begin = {1, 0}, c.pad_end = {0, 1};
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nhwc;
  OpDescriptor fused = test::conv_descriptors(c, DataType::bf16, {Direction::fwd}).at(0);
  fused.activation = Activation::silu;
  fused.epilogue_operands = kEpilogueBias | kEpilogueResidual;
  std::vector<OpDescriptor> ops = {fused};
  c.filter_layout = test::TestLayout::nchw;
  ops.push_back(test::conv_descriptors(c, DataType::f16, {Direction::fwd}).at(0));
  c.filters = 264, c.pad_begin = {1, 1}, c.pad_end = {1, 1};
  ops.push_back(test::conv_descriptors(c, DataType::bf16, {Direction::bwddata}).at(0));
  c.channels = 72, c.filters = 512, c.input = {9, 10}, c.kernel = {5, 5}, c.stride = {2, 2};
  c.pad_begin = {2, 2}, c.pad_end = {2, 1};
  ops.push_back(test::conv_descriptors(c, DataType::bf16, {Direction::bwddata}).at(0));
  return ops;
}

TEST_P(GpuBackend, TheHopperConvSlicesLongReductions) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  EXPECT_GE(check_hopper(sliced_hopper_convs(), true), 12);  // every configuration
}

// Stems whose taps the fold puts into their channels (tap_fold.hpp), in
// every configuration (support/folded_stems.hpp, as the emulator runs
// them), and ResNet-50's stem on a small image: the first pass's x' and
// w', then the folded conv; a bwdfilt's x', dw' and its unfolding, in
// the two configurations of a bwdfilt, where dy is channels-last.  The
// narrow bwdfilts (support/narrow_bwdfilts.hpp), whose x' is x's chunks
// copied, fold too.
TEST_P(GpuBackend, TheHopperConvFoldsTheTapsOfStems) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  std::vector<OpDescriptor> ops, grads;
  std::vector<test::ConvCase> cases = test::folded_stem_cases();
  cases.push_back(test::small_resnet50_stem());
  for (DataType dtype : {DataType::bf16, DataType::f16}) {
    for (const test::ConvCase& c : cases) {
      ops.push_back(test::conv_descriptors(c, dtype, {Direction::fwd}).at(0));
      if (c.layout != test::TestLayout::nchw)
        grads.push_back(test::conv_descriptors(c, dtype, {Direction::bwdfilt}).at(0));
    }
    for (const test::ConvCase& c : test::narrow_bwdfilt_cases())
      grads.push_back(test::conv_descriptors(c, dtype, {Direction::bwdfilt}).at(0));
  }
  // Every configuration but the row-tap tiles, which a folded conv's one
  // tap along W leaves nothing to take.
  const auto folding =
      std::count_if(std::begin(kWgmmaConfigs), std::end(kWgmmaConfigs),
                    [](const WgmmaConvConfig& config) { return !config.row_taps; });
  EXPECT_EQ(check_hopper(ops, true), static_cast<int>(ops.size()) * static_cast<int>(folding));
  EXPECT_EQ(check_hopper(grads, true), static_cast<int>(grads.size() * 2));
}

// The models' convs of one direction, in the configuration auto leads with.
std::vector<OpDescriptor> model_convs(Direction direction) {
  std::vector<OpDescriptor> ops;
  for (const char* model : {"resnet50", "yolo11n"})
    for (const OpDescriptor& d : test::model_descriptors(model, {2, 64, true, DataType::bf16}))
      if (d.is_conv() && d.direction == direction) ops.push_back(d);
  return ops;
}

TEST_P(GpuBackend, TheHopperConvServesTheModelsFwdLayers) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  EXPECT_GT(check_hopper(model_convs(Direction::fwd), false), 40);
}

TEST_P(GpuBackend, TheHopperConvServesTheModelsBwddataLayers) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  EXPECT_GT(check_hopper(model_convs(Direction::bwddata), false), 40);
}

TEST_P(GpuBackend, TheHopperConvServesTheModelsBwdfiltLayers) {
  CONVJIT_SKIP_UNLESS_HOPPER_JIT();
  EXPECT_GT(check_hopper(model_convs(Direction::bwdfilt), false), 40);
}

// The pixels kernel (few filters over short reductions), chosen by name,
// on any GPU: random fwd and bwddata convs as the emulator's test draws
// them (1D/2D/3D, strides, dilations, padding at every edge, every
// layout, 1 to 40 filters, f32/f16/bf16; strided bwddata by phases), and
// YOLO11n's small-channel layers on 2 images of 40 x 150: the fwd with the
// fused Conv+BN+SiLU's bias and a residual, the bwddata (b1's of stride 2
// by phases) with alpha and beta.
TEST_P(GpuBackend, ThePixelFiltersMatchTheReference) {
  if (backend() != "jit") GTEST_SKIP() << "a JIT variant";
  std::mt19937 rng(47);
  const DataType dtypes[] = {DataType::f32, DataType::f16, DataType::bf16};
  int served = 0;
  const auto run = [&](const OpDescriptor& d, const CallOptions& options) {
    BuildTrace trace;
    auto kernel = backend_->build_variant(d, kGpu, kPixelsVariant, trace);
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
    check_with(
        d, rng, [&](const ExecArgs& args) { return kernel.value()->execute(args); }, options);
    ++served;
  };
  for (int i = 0; i < 36; ++i) {
    test::ConvCase c;
    c.batch = 1 + i % 2;
    c.channels = 1 + (i * 5) % 9;
    c.filters = test::kPixelFilterCounts[i % 9];
    test::randomize_windows(c, rng, 1 + i % 3, i % 3 == 2 ? 6 : 37);
    const Direction direction = i % 2 ? Direction::bwddata : Direction::fwd;
    if (direction == Direction::bwddata) std::swap(c.channels, c.filters);
    const OpDescriptor d = test::conv_descriptors(c, dtypes[i % 3], {direction}).at(0);
    if (!pixel_filters_support(d).is_ok()) continue;  // a halo past the shared memory
    SCOPED_TRACE(c.describe());
    run(d, CallOptions{i % 3 == 1 ? 0.5 : 1.0, i % 3 == 1 ? 0.25 : 0.0});
  }
  EXPECT_GE(served, 18);  // half: the rest's halos do not fit
  const std::int64_t shapes[][3] = {{3, 16, 2}, {16, 8, 1}, {8, 16, 1}, {16, 32, 2}};
  for (const auto& [channels, filters, stride] : shapes)
    for (test::TestLayout layout : {test::TestLayout::nhwc, test::TestLayout::nchw}) {
      const test::ConvCase c = test::small_channel_3x3(channels, filters, stride, layout, {40, 150});
      SCOPED_TRACE(c.describe());
      OpDescriptor d = test::conv_descriptors(c, DataType::bf16, {Direction::fwd}).at(0);
      if (pixel_filters_support(d).is_ok()) {
        d.activation = Activation::silu;
        d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
        run(d, CallOptions{1.0, 0.5});
      }
      run(test::conv_descriptors(c, DataType::bf16, {Direction::bwddata}).at(0),
          CallOptions{0.5, 0.25});
    }
  EXPECT_GE(served, 18 + 14);  // the fwd of b1's conv alone is not served
}

// On sm_90 the auto choice is the Hopper conv where it applies.  A call
// whose x and w are views one element into larger tensors, which TMA cannot
// address, falls back to a variant without TMA, chosen or named.
TEST_P(GpuBackend, AMisalignedViewFallsBackFromTheHopperConv) {
  if (backend() != "jit") GTEST_SKIP() << "a JIT variant";
  const std::string arch = CudaDriver::instance().arch_of(0);
  if (arch_number(arch) != 90) GTEST_SKIP() << arch << " is not sm_90: the kernel is sm_90a's";
  test::ConvCase c;
  c.batch = 2, c.channels = 64, c.filters = 64, c.input = {8, 8}, c.kernel = {3, 3};
  c.pad_begin = {1, 1};
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nhwc;
  const OpDescriptor d = test::conv_descriptors(c, DataType::bf16, {Direction::fwd}).at(0);
  const std::string_view lead = wgmma_lead_config(d).id;
  ASSERT_EQ(jit_variants(d, variant_context(arch)).front(), lead);
  std::mt19937 rng(44);
  const test::HostOperands host = test::random_operands(d, rng, 1.0, 0.0);
  const auto shifted = [](const std::vector<unsigned char>& v) {
    std::vector<unsigned char> out(2 + v.size());
    std::copy(v.begin(), v.end(), out.begin() + 2);
    return out;
  };
  auto gx = staged(shifted(host.x)), gw = staged(shifted(host.w)), gout = staged(host.out);
  ExecArgs args = host.args(d, gout->get());
  args.x = static_cast<unsigned char*>(gx->get()) + 2;
  args.w = static_cast<unsigned char*>(gw->get()) + 2;
  BuildTrace trace;
  auto chosen = backend_->build(d, kGpu, trace);
  ASSERT_TRUE(chosen.is_ok()) << chosen.status().message();
  EXPECT_EQ(trace.variant, lead);
  ASSERT_TRUE(chosen.value()->execute(args).is_ok());
  ASSERT_TRUE(wait_for(nullptr).is_ok());
  std::vector<unsigned char> got(host.out.size());
  ASSERT_TRUE(gout->download(got.data()).is_ok());
  test::expect_matches_reference(d, host, got);
  auto named = backend_->build_variant(d, kGpu, kWgmmaVariant, trace);
  ASSERT_TRUE(named.is_ok()) << named.status().message();
  std::vector<unsigned char> again(host.out.size());
  ASSERT_TRUE(gout->upload(host.out.data()).is_ok());
  ASSERT_TRUE(named.value()->execute(args).is_ok());
  ASSERT_TRUE(wait_for(nullptr).is_ok());
  ASSERT_TRUE(gout->download(again.data()).is_ok());
  test::expect_matches_reference(d, host, again);
}

// A kernel that copies K C R S filters into another order (a GEMM tile's
// or the Hopper conv's first pass) copies them once while calls promise w
// unchanged (ExecArgs::w_version, from convjit_exec_t): a call after w was
// overwritten under the same version still computes with the first
// filters, so the copy was skipped.  A new version, version 0 and a
// caller's workspace copy the filters the call passes, and a caller's
// workspace leaves the kernel's own copy as it was.  Filters at two
// addresses (two layers of one descriptor) keep a copy each.
TEST_P(GpuBackend, AKernelReusesItsCopyOfWWhileCallsPromiseWUnchanged) {
  if (backend() != "jit") GTEST_SKIP() << "a JIT variant";
  const std::string arch = CudaDriver::instance().arch_of(0);
  test::ConvCase c;
  c.batch = 2, c.channels = 64, c.filters = 64, c.input = {8, 8}, c.kernel = {3, 3};
  c.pad_begin = {1, 1};
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nchw;
  std::mt19937 rng(47);
  for (Direction direction : {Direction::fwd, Direction::bwddata}) {
    const OpDescriptor d = test::descriptor(c, DataType::f16, direction);
    std::string copying;  // the heuristic's first variant that copies w
    for (const std::string& id : jit_variants(d, variant_context(arch))) {
      auto source = kernel_source(d, id);
      if (source.is_ok() && source.value().entries.front().copies_filters) {
        copying = id;
        break;
      }
    }
    ASSERT_FALSE(copying.empty()) << "no variant copies the K C R S filters";
    SCOPED_TRACE(fmt::format("{} in {}", descriptor_name(d), copying));
    BuildTrace trace;
    auto kernel = backend_->build_variant(d, kGpu, copying, trace);
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
    const test::HostOperands first = test::random_operands(d, rng, 1.0, 0.0);
    test::HostOperands second = first;
    second.w = test::random_bytes(d.dtype, first.w.size(), rng);
    auto gx = staged(first.x), gw = staged(first.w), gdy = staged(first.dy);
    auto gout = staged(first.out);
    auto callers = DeviceBuffer::allocate(context_, kernel.value()->workspace_bytes());
    ASSERT_TRUE(callers.is_ok()) << callers.status().message();
    ExecArgs args = first.args(d, gout->get());
    if (args.x) args.x = gx->get();
    if (args.dy) args.dy = gdy->get();
    args.w = gw->get();
    const auto run = [&](std::uint64_t version, bool own_workspace,
                         const test::HostOperands& expected) {
      args.w_version = version;
      args.workspace = own_workspace ? nullptr : callers.value()->get();
      args.workspace_bytes = own_workspace ? 0 : callers.value()->bytes();
      ASSERT_TRUE(gout->upload(first.out.data()).is_ok());
      ASSERT_TRUE(kernel.value()->execute(args).is_ok());
      ASSERT_TRUE(wait_for(nullptr).is_ok());
      std::vector<unsigned char> got(first.out.size());
      ASSERT_TRUE(gout->download(got.data()).is_ok());
      test::expect_matches_reference(d, expected, got);
    };
    const auto write_w = [&](const test::HostOperands& from) {
      ASSERT_TRUE(gw->upload(from.w.data()).is_ok());
    };
    struct Step {
      const char* what;
      const test::HostOperands* written;  // w's contents before the call; null: as they are
      std::uint64_t version;
      bool own_workspace;
      const test::HostOperands* expected;
    };
    const Step steps[] = {
        {"the first call: copied", nullptr, 1, true, &first},
        {"version 1 again, w overwritten: the first filters' copy", &second, 1, true, &first},
        {"version 2: copied", nullptr, 2, true, &second},
        {"version 0: copied", &first, 0, true, &first},
        {"version 2 after version 0, which forgot version 2's copy: copied", &second, 2, true,
         &second},
        {"the caller's workspace: copied, whatever the version", &first, 2, false, &first},
        {"the kernel's own copy is still the one version 2 made", nullptr, 2, true, &second}};
    for (const Step& step : steps) {
      SCOPED_TRACE(step.what);
      if (step.written != nullptr) write_w(*step.written);
      run(step.version, step.own_workspace, *step.expected);
    }
    // Two layers of one descriptor, their filters at two addresses, keep
    // their copies side by side: each call, after both were overwritten
    // under the same version, computes with its own first filters.
    auto gw2 = staged(second.w);
    write_w(first);
    const auto run_layer = [&](void* w, const test::HostOperands& expected) {
      args.w = w;
      run(5, true, expected);
    };
    run_layer(gw->get(), first);
    run_layer(gw2->get(), second);
    write_w(second);
    ASSERT_TRUE(gw2->upload(first.w.data()).is_ok());
    {
      SCOPED_TRACE("both overwritten under version 5: each layer's own copy");
      run_layer(gw->get(), first);
      run_layer(gw2->get(), second);
      run_layer(gw->get(), first);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(JitAndCudnn, GpuBackend, ::testing::Values("jit", "cudnn"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// The tuned policy on a GPU: the JIT and every usable cuDNN algorithm are
// timed with CUDA events, the winner is checked and stored, and a later
// dispatcher rebuilds it from the stored decision.
TEST(GpuTunedPolicy, MeasuresTheJitAndEachCudnnAlgorithmAndStoresTheWinner) {
  auto context = DeviceContext::open(0);
  if (!context.is_ok()) GTEST_SKIP() << "no CUDA device: " << context.status().message();
  const test::TempDirectory cache("convjit-gpu-tuning");
  ASSERT_EQ(convjit_set_cache_path(cache.string().c_str()), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_policy("tuned"), CONVJIT_STATUS_SUCCESS);
  auto both = [] {
    std::vector<std::unique_ptr<Backend>> chain;
    chain.push_back(std::make_unique<JitBackend>());
    chain.push_back(std::make_unique<CudnnBackend>());
    return std::make_unique<Dispatcher>(std::move(chain));
  };
  const auto ops = test::model_descriptors("resnet50", {8, 64});
  const auto conv3x3 = std::find_if(ops.begin(), ops.end(), [](const OpDescriptor& op) {
    return op.is_conv() && op.direction == Direction::fwd && op.w_dims[3] == 3;
  });
  ASSERT_NE(conv3x3, ops.end());
  const OpDescriptor& d = *conv3x3;
  auto first = both();
  auto measured = first->resolve(d, kGpu);
  ASSERT_TRUE(measured.is_ok()) << measured.status().message();
  const std::string& why = measured.value()->reason;
  EXPECT_NE(why.find("measured: "), std::string::npos) << why;
  EXPECT_NE(why.find("jit["), std::string::npos) << why;  // each JIT variant is measured
  EXPECT_NE(why.find("cudnn[algo"), std::string::npos) << why;
  EXPECT_NE(why.find("decision saved as decisions/v1/"), std::string::npos) << why;
  auto later = both();
  auto stored = later->resolve(d, kGpu);
  ASSERT_TRUE(stored.is_ok()) << stored.status().message();
  EXPECT_EQ(stored.value()->backend, measured.value()->backend);
  EXPECT_NE(stored.value()->reason.find("tuning decision stored earlier"), std::string::npos)
      << stored.value()->reason;
  (void)convjit_set_policy(nullptr);
  (void)convjit_set_cache_path(nullptr);
}

// A caller working on device 0 with its context current runs an op on
// device 1: the op runs there, and device 0's context is current after.
TEST(GpuDevices, AnOpOnAnotherDeviceLeavesTheCallersContextCurrent) {
  auto home = DeviceContext::open(0);
  if (!home.is_ok()) GTEST_SKIP() << "no CUDA device: " << home.status().message();
  int count = 0;
  ASSERT_EQ(CudaDriver::instance().api().device_get_count(&count), CUDA_SUCCESS);
  if (count < 2) GTEST_SKIP() << "one CUDA device; this test needs two";
  auto other = DeviceContext::open(1);
  ASSERT_TRUE(other.is_ok()) << other.status().message();
  const convjit_device_t second{CONVJIT_DEVICE_CUDA, 1};
  std::mt19937 rng(23);
  const ContextScope callers = home.value()->enter();
  for (const char* policy : {"jit", "cudnn"}) {
    SCOPED_TRACE(policy);
    std::vector<std::unique_ptr<Backend>> chain;
    if (std::string(policy) == "jit") chain.push_back(std::make_unique<JitBackend>());
    else chain.push_back(std::make_unique<CudnnBackend>());
    Dispatcher dispatcher(std::move(chain));
    for (const OpDescriptor& d : test::random_conv_descriptors(rng, DataType::f32, 3, true)) {
      SCOPED_TRACE(descriptor_name(d));
      const test::HostOperands host = test::random_operands(d, rng);
      auto buffer = [&](const std::vector<unsigned char>& bytes) {
        auto b = DeviceBuffer::allocate(other.value(), bytes.size());
        EXPECT_TRUE(b.is_ok() && b.value()->upload(bytes.data()).is_ok());
        return std::move(b).value();
      };
      auto gx = buffer(host.x), gw = buffer(host.w), gdy = buffer(host.dy), gout = buffer(host.out);
      ExecArgs args = host.args(d, gout->get());
      if (args.x) args.x = gx->get();
      if (args.w) args.w = gw->get();
      if (args.dy) args.dy = gdy->get();
      const Status run = dispatcher.execute(d, second, args);
      ASSERT_TRUE(run.is_ok()) << run.message();
      EXPECT_EQ(current_context(), home.value()->get());
      ASSERT_TRUE(other.value()->synchronize().is_ok());
      std::vector<unsigned char> got(host.out.size());
      ASSERT_TRUE(gout->download(got.data()).is_ok());
      EXPECT_EQ(current_context(), home.value()->get());
      test::expect_matches_reference(d, host, got);
    }
  }
}

// The JIT's batchnorm kernels on the GPU against the reference: the models'
// batchnorms in both directions and layouts, every per-channel result
// compared (the emulator's test, test_emulated_batchnorm.cpp, covers the
// odd shapes and flags).  Tolerance: the dtype's for y and dx, 1e-4
// relative for the per-channel values (f32 sums against f64).
class GpuBatchNorm : public ::testing::Test {
 protected:
  void SetUp() override {
    auto context = DeviceContext::open(0);
    if (!context.is_ok()) GTEST_SKIP() << "no CUDA device: " << context.status().message();
    context_ = context.value();
    std::vector<std::unique_ptr<Backend>> chain;
    chain.push_back(std::make_unique<JitBackend>());
    gpu_ = std::make_unique<Dispatcher>(std::move(chain));
  }

  std::unique_ptr<DeviceBuffer> staged(const void* host, std::size_t bytes) {
    auto buffer = DeviceBuffer::allocate(context_, bytes);
    EXPECT_TRUE(buffer.is_ok()) << buffer.status().message();
    EXPECT_TRUE(buffer.value()->upload(host).is_ok());
    return std::move(buffer).value();
  }

  void check(const OpDescriptor& d, std::mt19937& rng) {
    SCOPED_TRACE(descriptor_name(d));
    const bool writes_out = d.direction == Direction::fwd || d.has_norm_flag(kNormGradInput);
    const auto channels = static_cast<std::size_t>(d.x_dims[1]);
    std::vector<unsigned char> x = test::random_bytes(d.dtype, slot_bytes(d, Slot::x), rng);
    std::vector<unsigned char> dy = test::random_bytes(d.dtype, slot_bytes(d, Slot::y), rng);
    std::vector<unsigned char> out(writes_out ? output_bytes(d) : 0, 0xff);
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    std::vector<std::vector<float>> per_channel(8, std::vector<float>(channels));
    for (auto& v : per_channel)
      for (float& e : v) e = u(rng);
    // Host and device operands: per_channel[i] is NormOperands' i-th member.
    auto host_args = [&](std::vector<std::vector<float>>& p, void* o) {
      ExecArgs a;
      a.x = x.data(), a.dy = dy.data(), a.out = o;
      a.norm = {p[0].data(), p[1].data(), p[2].data(), p[3].data(),
                p[4].data(), p[5].data(), p[6].data(), p[7].data(), 0.3};
      return a;
    };
    std::vector<std::vector<float>> want = per_channel;
    std::vector<unsigned char> want_out = out;
    run_reference(d, host_args(want, want_out.data()));
    std::vector<std::unique_ptr<DeviceBuffer>> device;
    for (auto& v : per_channel) device.push_back(staged(v.data(), channels * sizeof(float)));
    auto gx = staged(x.data(), x.size()), gdy = staged(dy.data(), dy.size());
    auto gout = writes_out ? staged(out.data(), out.size()) : nullptr;
    ExecArgs args;
    args.x = gx->get(), args.dy = d.direction == Direction::bwd ? gdy->get() : nullptr;
    args.out = writes_out ? gout->get() : nullptr;
    args.norm = {device[0]->get(), device[1]->get(), device[2]->get(), device[3]->get(),
                 device[4]->get(), device[5]->get(), device[6]->get(), device[7]->get(), 0.3};
    const Status s = gpu_->execute(d, kGpu, args);
    ASSERT_TRUE(s.is_ok()) << s.message();
    ASSERT_TRUE(context_->synchronize().is_ok());
    if (writes_out) {
      std::vector<unsigned char> got(out.size());
      ASSERT_TRUE(gout->download(got.data()).is_ok());
      const double rtol = kernel_tolerance(d);
      for (std::size_t i = 0; i < got.size() / element_size(d.dtype); ++i) {
        const double expected = load_element(want_out.data(), i, d.dtype);
        if (std::isnan(expected)) continue;  // a gap of a strided output
        ASSERT_NEAR(load_element(got.data(), i, d.dtype), expected,
                    rtol * (1 + std::abs(expected)))
            << "element " << i;
      }
    }
    for (std::size_t m = 2; m < 8; ++m) {
      std::vector<float> got(channels);
      ASSERT_TRUE(device[m]->download(got.data()).is_ok());
      for (std::size_t c = 0; c < channels; ++c)
        EXPECT_NEAR(got[c], want[m][c], 1e-4 * (1 + std::abs(want[m][c])))
            << "operand " << m << " channel " << c;
    }
  }

  std::shared_ptr<DeviceContext> context_;
  std::unique_ptr<Dispatcher> gpu_;
};

TEST_F(GpuBatchNorm, TheModelsBatchNormsInBothLayoutsAndDirections) {
  std::mt19937 rng(29);
  int norms = 0;
  for (const char* model : {"yolo11n", "resnet50"})
    for (bool channels_last : {false, true})
      for (const OpDescriptor& d : test::model_descriptors(
               model, {2, 64, channels_last, DataType::bf16}, /*every_op=*/true))
        if (d.is_batchnorm() && norms++ < 60) check(d, rng);
  EXPECT_GT(norms, 60);
}

}  // namespace
}  // namespace convjit
