// The tuned policy: candidates measured, checked against the reference,
// the winner persisted and read back by later dispatchers (as by later
// processes) without measuring; and the decision store itself.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cache/tuning_decisions.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/dispatcher.hpp"
#include "dispatcher/tuning/kernel_timing.hpp"
#include "dispatcher/tuning/tuning.hpp"
#include "support/host_device.hpp"
#include "support/problems.hpp"
#include "support/temp_directory.hpp"

namespace convjit::test {
namespace {

namespace fs = std::filesystem;

// A kernel computing with the reference, after an optional delay, or
// writing a wrong answer; counts its calls.
class FakeKernel final : public Kernel {
 public:
  FakeKernel(const OpDescriptor& desc, std::chrono::microseconds delay, bool wrong,
             std::atomic<int>& calls)
      : desc_(desc), delay_(delay), wrong_(wrong), calls_(calls) {}
  Status execute(const ExecArgs& args) const override {
    ++calls_;
    std::this_thread::sleep_for(delay_);
    run_reference(desc_, args);
    if (wrong_) static_cast<float*>(args.out)[0] = std::nanf("");
    return Status::ok();
  }

 private:
  OpDescriptor desc_;
  std::chrono::microseconds delay_;
  bool wrong_;
  std::atomic<int>& calls_;
};

class FakeBackend final : public Backend {
 public:
  FakeBackend(std::string_view name, std::chrono::microseconds delay, bool wrong,
              std::atomic<int>& calls)
      : name_(name), delay_(delay), wrong_(wrong), calls_(calls) {}
  std::string_view name() const override { return name_; }
  Status check_support(const OpDescriptor&, const convjit_device_t&) const override {
    return Status::ok();
  }
  Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc, const convjit_device_t&,
                                        BuildTrace&) override {
    return std::unique_ptr<Kernel>(std::make_unique<FakeKernel>(desc, delay_, wrong_, calls_));
  }

 private:
  std::string_view name_;  // a literal: static, as Backend::name() requires
  std::chrono::microseconds delay_;
  bool wrong_;
  std::atomic<int>& calls_;
};

// One backend with three variants, as cuDNN offers several algorithms:
// "slow" (20 ms a call), "wrong" (no delay, a wrong answer) and "fast" (3 ms).
class VariantBackend final : public Backend {
 public:
  struct Counts {
    std::atomic<int> calls_slow{0}, calls_wrong{0}, calls_fast{0};
    std::atomic<int> variant_lists{0};  // build_variants calls
    std::vector<std::string> rebuilt;   // build_variant ids
  };
  explicit VariantBackend(Counts& counts, bool offers_fast = true)
      : counts_(counts), offers_fast_(offers_fast) {}
  std::string_view name() const override { return "variants"; }
  Status check_support(const OpDescriptor&, const convjit_device_t&) const override {
    return Status::ok();
  }
  Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc, const convjit_device_t& device,
                                        BuildTrace& trace) override {
    return build_variant(desc, device, "slow", trace);
  }
  Result<std::vector<KernelVariant>> build_variants(const OpDescriptor& desc,
                                                    const convjit_device_t&, BuildTrace&) override {
    ++counts_.variant_lists;
    std::vector<KernelVariant> out;
    for (const char* id : {"slow", "wrong", "fast"})
      if (auto k = make(desc, id)) out.push_back({id, std::move(k)});
    return out;
  }
  Result<std::unique_ptr<Kernel>> build_variant(const OpDescriptor& desc, const convjit_device_t&,
                                                std::string_view id, BuildTrace&) override {
    counts_.rebuilt.emplace_back(id);
    if (auto k = make(desc, id)) return k;
    return Status::not_available("no variant " + std::string(id));
  }

 private:
  std::unique_ptr<Kernel> make(const OpDescriptor& desc, std::string_view id) const {
    // Delays far apart, so a loaded machine cannot reorder the medians.
    if (id == "slow")
      return std::make_unique<FakeKernel>(desc, std::chrono::milliseconds(20), false,
                                          counts_.calls_slow);
    if (id == "wrong")
      return std::make_unique<FakeKernel>(desc, std::chrono::microseconds(0), true,
                                          counts_.calls_wrong);
    if (id == "fast" && offers_fast_)  // slower than "wrong", so "wrong" is checked first
      return std::make_unique<FakeKernel>(desc, std::chrono::milliseconds(3), false,
                                          counts_.calls_fast);
    return nullptr;
  }
  Counts& counts_;
  bool offers_fast_;
};

class TunedPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(convjit_set_cache_path(cache_.c_str()), CONVJIT_STATUS_SUCCESS);
    ASSERT_EQ(convjit_set_policy("tuned"), CONVJIT_STATUS_SUCCESS);
    auto x = t_.x.desc(), w = t_.w.desc(), y = t_.y.desc();
    desc_ = make_conv_descriptor(&t_.params, Direction::fwd, &x, &w, &y).value();
  }
  void TearDown() override {
    (void)convjit_set_policy(nullptr);
    (void)convjit_set_cache_path(nullptr);
  }

  // slow (2 ms a call) and fast candidates, the fast one optionally wrong.
  std::unique_ptr<Dispatcher> dispatcher(bool fast_is_wrong = false) {
    std::vector<std::unique_ptr<Backend>> chain;
    chain.push_back(std::make_unique<FakeBackend>("slow", std::chrono::milliseconds(2), false,
                                                  slow_calls_));
    chain.push_back(std::make_unique<FakeBackend>("fast", std::chrono::microseconds(0),
                                                  fast_is_wrong, fast_calls_));
    return std::make_unique<Dispatcher>(std::move(chain));
  }

  std::size_t stored_decisions() const {
    std::size_t n = 0;
    if (fs::exists(fs::path(cache_) / "decisions"))
      for (const auto& e : fs::recursive_directory_iterator(fs::path(cache_) / "decisions"))
        n += e.path().extension() == ".json";
    return n;
  }

  // Batch 3, so the check against the reference runs on the batch-1 slice.
  ConvTensors<float> t_ = make_conv_tensors<float>({3, 2, 4, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}});
  OpDescriptor desc_;
  TempDirectory temp_{"convjit-tuning"};
  std::string cache_ = temp_.string();
  std::atomic<int> slow_calls_{0}, fast_calls_{0};
};

TEST_F(TunedPolicy, TheFastestCorrectCandidateWinsAndItsDecisionIsStored) {
  auto d = dispatcher();
  auto resolved = d->resolve(desc_, kHost);
  ASSERT_TRUE(resolved.is_ok()) << resolved.status().message();
  EXPECT_EQ(resolved.value()->backend, "fast");
  const std::string& why = resolved.value()->reason;
  EXPECT_NE(why.find("measured: fast "), std::string::npos) << why;
  EXPECT_NE(why.find(", slow "), std::string::npos) << why;  // slower, listed after
  EXPECT_NE(why.find("; fast won, "), std::string::npos) << why;
  EXPECT_NE(why.find("x as fast as slow"), std::string::npos) << why;
  EXPECT_NE(why.find("decision saved as decisions/v1/"), std::string::npos) << why;
  EXPECT_GE(slow_calls_.load(), 6);  // warm-up and five timed calls
  EXPECT_EQ(stored_decisions(), 1u);
}

TEST_F(TunedPolicy, LaterDispatchersReadTheDecisionWithoutMeasuring) {
  ASSERT_TRUE(dispatcher()->resolve(desc_, kHost).is_ok());
  slow_calls_ = 0, fast_calls_ = 0;
  for (const char* policy : {"tuned", "auto"}) {
    ASSERT_EQ(convjit_set_policy(policy), CONVJIT_STATUS_SUCCESS);
    auto later = dispatcher();  // a new process would start like this
    auto resolved = later->resolve(desc_, kHost);
    ASSERT_TRUE(resolved.is_ok()) << resolved.status().message();
    EXPECT_EQ(resolved.value()->backend, "fast") << policy;
    EXPECT_NE(resolved.value()->reason.find("tuning decision stored earlier (fast "),
              std::string::npos)
        << resolved.value()->reason;
  }
  EXPECT_EQ(slow_calls_.load(), 0);
  EXPECT_EQ(fast_calls_.load(), 0);
}

// dw and db sum over the batch: the check must zero the other entries'
// inputs for the batch-1 reference to match a correct full-batch result.
TEST_F(TunedPolicy, CorrectCandidatesPassTheCheckInEveryDirection) {
  auto x = t_.x.desc(), w = t_.w.desc(), y = t_.y.desc();
  auto d = dispatcher();
  for (Direction direction : {Direction::bwddata, Direction::bwdfilt}) {
    const OpDescriptor desc = make_conv_descriptor(&t_.params, direction, &x, &w, &y).value();
    auto resolved = d->resolve(desc, kHost);
    ASSERT_TRUE(resolved.is_ok()) << resolved.status().message();
    EXPECT_EQ(resolved.value()->backend, "fast") << resolved.value()->reason;
  }
  auto bias = make_bias_grad_descriptor(&y);
  ASSERT_TRUE(bias.is_ok());
  auto resolved = d->resolve(bias.value(), kHost);
  ASSERT_TRUE(resolved.is_ok()) << resolved.status().message();
  EXPECT_EQ(resolved.value()->backend, "fast") << resolved.value()->reason;
}

TEST_F(TunedPolicy, AutoWithoutADecisionWalksTheChainInOrder) {
  ASSERT_EQ(convjit_set_policy("auto"), CONVJIT_STATUS_SUCCESS);
  auto d = dispatcher();  // owns the resolution, so it must outlive `resolved`
  auto resolved = d->resolve(desc_, kHost);
  ASSERT_TRUE(resolved.is_ok());
  EXPECT_EQ(resolved.value()->backend, "slow");  // first in the chain
  EXPECT_EQ(stored_decisions(), 0u);
}

TEST_F(TunedPolicy, AFasterCandidateWithWrongResultsLoses) {
  auto d = dispatcher(/*fast_is_wrong=*/true);
  auto resolved = d->resolve(desc_, kHost);
  ASSERT_TRUE(resolved.is_ok()) << resolved.status().message();
  EXPECT_EQ(resolved.value()->backend, "slow");
  EXPECT_NE(resolved.value()->reason.find("but wrong (max error inf > 1e-04)"),
            std::string::npos)
      << resolved.value()->reason;
}

TEST_F(TunedPolicy, ADecisionForABackendNoLongerThereIsMeasuredAgain) {
  ASSERT_TRUE(dispatcher()->resolve(desc_, kHost).is_ok());
  std::vector<std::unique_ptr<Backend>> chain;
  chain.push_back(std::make_unique<ReferenceBackend>());
  Dispatcher without_fast(std::move(chain));
  auto resolved = without_fast.resolve(desc_, kHost);
  ASSERT_TRUE(resolved.is_ok()) << resolved.status().message();
  EXPECT_EQ(resolved.value()->backend, "reference");
  EXPECT_NE(resolved.value()->reason.find("measured: reference"), std::string::npos)
      << resolved.value()->reason;
}

TEST_F(TunedPolicy, EveryVariantIsMeasuredAndTheWinningOneIsStoredAndRebuilt) {
  VariantBackend::Counts counts;
  auto one_backend = [&](bool offers_fast) {
    std::vector<std::unique_ptr<Backend>> chain;
    chain.push_back(std::make_unique<VariantBackend>(counts, offers_fast));
    return std::make_unique<Dispatcher>(std::move(chain));
  };
  auto first = one_backend(true);  // owns the resolution read below
  auto resolved = first->resolve(desc_, kHost);
  ASSERT_TRUE(resolved.is_ok()) << resolved.status().message();
  const std::string& why = resolved.value()->reason;
  EXPECT_NE(why.find("variants[slow] "), std::string::npos) << why;
  EXPECT_NE(why.find("variants[wrong] "), std::string::npos) << why;
  EXPECT_NE(why.find("but wrong"), std::string::npos) << why;
  EXPECT_NE(why.find("; variants[fast] won, "), std::string::npos) << why;
  EXPECT_NE(why.find("x as fast as variants[slow]"), std::string::npos) << why;  // not [wrong]
  EXPECT_GE(counts.calls_slow.load(), 6);
  EXPECT_GE(counts.calls_wrong.load(), 6);
  fs::path stored;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(cache_) / "decisions"))
    if (e.path().extension() == ".json") stored = e.path();
  std::ifstream in(stored);
  const auto json = nlohmann::json::parse(in);
  EXPECT_EQ(json["backend"], "variants");
  EXPECT_EQ(json["variant"], "fast");

  // A later process rebuilds just that variant, measuring nothing.
  counts.variant_lists = 0, counts.calls_slow = 0, counts.calls_fast = 0;
  counts.rebuilt.clear();
  ASSERT_EQ(convjit_set_policy("auto"), CONVJIT_STATUS_SUCCESS);
  auto later_dispatcher = one_backend(true);
  auto later = later_dispatcher->resolve(desc_, kHost);
  ASSERT_TRUE(later.is_ok()) << later.status().message();
  EXPECT_EQ(counts.rebuilt, std::vector<std::string>{"fast"});
  EXPECT_EQ(counts.variant_lists.load(), 0);
  EXPECT_EQ(counts.calls_slow.load(), 0);

  // A variant the backend no longer offers means measuring again (tuned)
  // or, under auto, the chain's ordinary choice.
  counts.rebuilt.clear();
  auto gone_dispatcher = one_backend(false);
  auto gone = gone_dispatcher->resolve(desc_, kHost);
  ASSERT_TRUE(gone.is_ok()) << gone.status().message();
  EXPECT_EQ(counts.rebuilt, (std::vector<std::string>{"fast", "slow"}));
  ASSERT_EQ(convjit_set_policy("tuned"), CONVJIT_STATUS_SUCCESS);
  counts.variant_lists = 0;
  auto remeasuring_dispatcher = one_backend(false);
  auto remeasured = remeasuring_dispatcher->resolve(desc_, kHost);
  ASSERT_TRUE(remeasured.is_ok()) << remeasured.status().message();
  EXPECT_EQ(counts.variant_lists.load(), 1);
  EXPECT_NE(remeasured.value()->reason.find("measured: "), std::string::npos)
      << remeasured.value()->reason;
}

TEST(BatchSlice, KeepsStridesAndSetsTheBatchToOne) {
  auto t = make_conv_tensors<float>({4, 2, 3, 1, {5, 5}, {3, 3}});
  auto x = t.x.desc(), w = t.w.desc(), y = t.y.desc();
  const OpDescriptor d = make_conv_descriptor(&t.params, Direction::bwddata, &x, &w, &y).value();
  const OpDescriptor s = batch_slice(d);
  EXPECT_EQ(s.x_dims[0], 1);
  EXPECT_EQ(s.y_dims[0], 1);
  EXPECT_EQ(s.x_strides, d.x_strides);
  EXPECT_EQ(s.y_strides, d.y_strides);
  EXPECT_EQ(s.w_dims, d.w_dims);
}

class DecisionStore : public ::testing::Test {
 protected:
  static TuningKeyFields fields() {
    return {"conv2d_x_fwd", "NVIDIA H100 80GB HBM3", "sm_90", "9.19.0", "13.0", "0.1.0"};
  }
  TempDirectory temp_{"convjit-decisions"};
  fs::path root_ = temp_.path();
};

TEST_F(DecisionStore, RoundTripsAndEveryKeyFieldChangesTheKey) {
  const TuningDecisions store({root_.string()});
  const TuningKey key = make_tuning_key(fields());
  EXPECT_FALSE(store.lookup(key).is_ok());
  ASSERT_TRUE(store.store(key, {.backend = "cudnn", .variant = "algo1-fma", .summary = "cudnn 0.1 ms, jit 0.2 ms"}).is_ok());
  auto found = store.lookup(key);
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(found.value().backend, "cudnn");
  EXPECT_EQ(found.value().variant, "algo1-fma");
  EXPECT_EQ(found.value().summary, "cudnn 0.1 ms, jit 0.2 ms");
  EXPECT_EQ(fs::status(root_ / "decisions").permissions() & fs::perms::all, fs::perms::owner_all);
  for (std::string TuningKeyFields::*field :
       {&TuningKeyFields::descriptor, &TuningKeyFields::device, &TuningKeyFields::arch,
        &TuningKeyFields::cudnn_version, &TuningKeyFields::nvrtc_version,
        &TuningKeyFields::convjit_version}) {
    TuningKeyFields other = fields();
    other.*field += "x";
    const TuningKey changed = make_tuning_key(other);
    EXPECT_NE(changed.relative_path, key.relative_path);
    EXPECT_FALSE(store.lookup(changed).is_ok());
  }
}

TEST_F(DecisionStore, DamagedOrForeignFilesAreMissesNotErrors) {
  const TuningDecisions store({root_.string()});
  const TuningKey key = make_tuning_key(fields());
  ASSERT_TRUE(store.store(key, {.backend = "jit"}).is_ok());
  const fs::path file = root_ / key.relative_path;
  std::ofstream(file) << "{\"format\": 1, \"preimage\": \"trunc";
  EXPECT_FALSE(store.lookup(key).is_ok());
  // Another key's decision under this key's name (a hash collision).
  TuningKeyFields other = fields();
  other.device = "host";
  std::ofstream(file) << nlohmann::json{{"format", 1},
                                        {"preimage", make_tuning_key(other).preimage},
                                        {"backend", "jit"}}
                             .dump();
  EXPECT_FALSE(store.lookup(key).is_ok());
  // Fields of the wrong type (a hand edit, say) are misses too, not exceptions.
  for (const char* field : {"backend", "variant", "summary", "preimage"}) {
    nlohmann::json json{{"format", 1}, {"preimage", key.preimage}, {"backend", "jit"}};
    json[field] = 42;
    std::ofstream(file) << json.dump();
    EXPECT_FALSE(store.lookup(key).is_ok()) << field;
  }
}

TEST_F(DecisionStore, ADecisionWrittenBeforeVariantsExistedNamesTheBackendsOnlyKernel) {
  const TuningDecisions store({root_.string()});
  const TuningKey key = make_tuning_key(fields());
  ASSERT_TRUE(store.store(key, {.backend = "jit", .variant = "x"}).is_ok());
  std::ofstream(root_ / key.relative_path)
      << nlohmann::json{{"format", 1}, {"preimage", key.preimage}, {"backend", "jit"}}.dump();
  auto found = store.lookup(key);
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(found.value().backend, "jit");
  EXPECT_EQ(found.value().variant, "");
}

TEST_F(DecisionStore, LookupsCreateNothingAndReadOnlyDirectoriesAreSearched) {
  const fs::path shared = root_ / "shared", mine = root_ / "mine";
  const TuningKey key = make_tuning_key(fields());
  ASSERT_TRUE(TuningDecisions({shared.string()}).store(key, {.backend = "cudnn", .summary = "from a colleague"}).is_ok());
  fs::permissions(shared, fs::perms::owner_read | fs::perms::owner_exec);
  const TuningDecisions store({shared.string(), mine.string()});
  EXPECT_EQ(store.lookup(key).value().summary, "from a colleague");
  EXPECT_FALSE(fs::exists(mine));  // a lookup never creates directories
  if (::geteuid() != 0) {          // root writes anywhere
    ASSERT_TRUE(store.store(make_tuning_key({"other"}), {.backend = "jit"}).is_ok());
    EXPECT_TRUE(fs::exists(mine / "decisions"));
  }
  EXPECT_EQ(TuningDecisions({mine.string()}).clear(), ::geteuid() != 0 ? 1u : 0u);
}

// A GPU sample is a batch of back-to-back calls sized from the warm-up
// call (kernel_timing.hpp): long kernels one call, short ones enough for
// about 1 ms, never more than the cap.
TEST(KernelTiming, ABatchLastsAboutTheTargetWithinItsBounds) {
  EXPECT_EQ(calls_per_batch(5.0), 1);
  EXPECT_EQ(calls_per_batch(kTargetBatchMs), 1);
  EXPECT_EQ(calls_per_batch(0.4), 3);  // ceil(1 / 0.4)
  EXPECT_EQ(calls_per_batch(0.1), 10);
  EXPECT_EQ(calls_per_batch(0.001), kMaxCallsPerBatch);
  EXPECT_EQ(calls_per_batch(0.0), kMaxCallsPerBatch);  // under the clock's resolution
  for (double ms = 0.003; ms < 2; ms *= 1.7) {
    const int calls = calls_per_batch(ms);
    EXPECT_GE(calls, 1);
    EXPECT_LE(calls, kMaxCallsPerBatch);
    if (calls > 1 && calls < kMaxCallsPerBatch) {
      EXPECT_GE(calls * ms, kTargetBatchMs) << ms;
    }
    if (calls > 1) {
      EXPECT_LT((calls - 1) * ms, kTargetBatchMs) << ms;
    }
  }
}

TEST(KernelTiming, TheMedianIgnoresOneSlowSample) {
  std::vector<double> samples{0.30, 0.10, 9.00, 0.20, 0.25};
  EXPECT_EQ(median_of(samples), 0.25);
  std::vector<double> one{1.5};
  EXPECT_EQ(median_of(one), 1.5);
}

TEST(KernelTiming, OnTheHostEachSampleIsOneCallAfterAWarmUp) {
  struct CountingKernel final : Kernel {
    mutable int calls = 0;
    [[nodiscard]] Status execute(const ExecArgs&) const override {
      ++calls;
      return Status::ok();
    }
  } kernel;
  auto ms = median_kernel_ms(kernel, ExecArgs{}, nullptr, 4);
  ASSERT_TRUE(ms.is_ok()) << ms.status().message();
  EXPECT_EQ(kernel.calls, 5);
  EXPECT_GE(ms.value(), 0.0);
  EXPECT_EQ(median_kernel_ms(kernel, ExecArgs{}, nullptr, 0).status().code(),
            CONVJIT_STATUS_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace convjit::test
