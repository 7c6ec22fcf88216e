// The dispatcher: walks the chain once per (descriptor, device), records
// why it chose a backend, and serves repeated calls from its table.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/dispatcher.hpp"
#include "support/host_device.hpp"
#include "support/problems.hpp"

namespace convjit::test {
namespace {

// Counts builds; optionally declines everything or builds slowly.
class CountingBackend final : public Backend {
 public:
  CountingBackend(bool supports, std::atomic<int>& builds,
                  std::chrono::milliseconds build_time = std::chrono::milliseconds(0))
      : supports_(supports), builds_(builds), build_time_(build_time) {}
  std::string_view name() const override { return "counting"; }
  Status check_support(const OpDescriptor&, const convjit_device_t&) const override {
    return supports_ ? Status::ok() : Status::unsupported("declines on purpose");
  }
  Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc, const convjit_device_t& device,
                                        BuildTrace& trace) override {
    ++builds_;
    std::this_thread::sleep_for(build_time_);
    return reference_.build(desc, device, trace);
  }

 private:
  bool supports_;
  std::atomic<int>& builds_;
  std::chrono::milliseconds build_time_;
  ReferenceBackend reference_;
};

struct Fixture {
  ConvTensors<float> t = make_conv_tensors<float>({1, 2, 3, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}});
  OpDescriptor desc;
  ExecArgs args;

  Fixture() {
    auto x = t.x.desc(), w = t.w.desc(), y = t.y.desc();
    desc = make_conv_descriptor(&t.params, Direction::fwd, &x, &w, &y).value();
    args.x = t.x.data(), args.w = t.w.data(), args.out = t.y.data();
  }
};

std::vector<std::unique_ptr<Backend>> chain_of(std::unique_ptr<Backend> first,
                                               std::unique_ptr<Backend> second = nullptr) {
  std::vector<std::unique_ptr<Backend>> chain;
  chain.push_back(std::move(first));
  if (second) chain.push_back(std::move(second));
  return chain;
}

TEST(Dispatcher, ResolvesOncePerDescriptorAndReusesTheKernel) {
  std::atomic<int> builds{0};
  Dispatcher dispatcher(chain_of(std::make_unique<CountingBackend>(true, builds)));
  Fixture f;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(dispatcher.execute(f.desc, kHost, f.args).is_ok());
  EXPECT_EQ(builds.load(), 1);
  OpDescriptor other = f.desc;
  other.direction = Direction::bwddata;
  ASSERT_TRUE(dispatcher.resolve(other, kHost).is_ok());
  EXPECT_EQ(builds.load(), 2);
}

TEST(Dispatcher, FallsThroughDecliningBackendsAndSaysWhy) {
  std::atomic<int> builds{0};
  Dispatcher dispatcher(chain_of(std::make_unique<CountingBackend>(false, builds),
                                 std::make_unique<ReferenceBackend>()));
  Fixture f;
  auto resolved = dispatcher.resolve(f.desc, kHost);
  ASSERT_TRUE(resolved.is_ok()) << resolved.status().message();
  EXPECT_EQ(resolved.value()->backend, "reference");
  EXPECT_NE(resolved.value()->reason.find("counting: declines on purpose"), std::string::npos)
      << resolved.value()->reason;
  EXPECT_EQ(builds.load(), 0);
}

TEST(Dispatcher, NoBackendForTheDeviceIsAClearNotAvailable) {
  Dispatcher dispatcher(chain_of(std::make_unique<ReferenceBackend>()));
  Fixture f;
  const Status s = dispatcher.execute(f.desc, {CONVJIT_DEVICE_CUDA, 0}, f.args);
  EXPECT_EQ(s.code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_NE(s.message().find("no backend can run conv2d_1_2_6_6_0"), std::string::npos)
      << s.message();
  EXPECT_NE(
      s.message().find("on cuda:0: reference: the reference backend runs on the host device only"),
      std::string::npos)
      << s.message();
}

TEST(Dispatcher, ManyThreadsAskingForANewDescriptorBuildItOnce) {
  std::atomic<int> builds{0};
  Dispatcher dispatcher(
      chain_of(std::make_unique<CountingBackend>(true, builds, std::chrono::milliseconds(50))));
  Fixture f;
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] { EXPECT_TRUE(dispatcher.resolve(f.desc, kHost).is_ok()); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(builds.load(), 1);
}

// Resolves only when another build is in progress at the same time, so it
// succeeds only if different descriptors resolve in parallel.
class RendezvousBackend final : public Backend {
 public:
  std::string_view name() const override { return "rendezvous"; }
  Status check_support(const OpDescriptor&, const convjit_device_t&) const override {
    return Status::ok();
  }
  Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc, const convjit_device_t& device,
                                        BuildTrace& trace) override {
    std::unique_lock lock(mutex_);
    ++arrived_;
    changed_.notify_all();
    if (!changed_.wait_for(lock, std::chrono::seconds(5), [&] { return arrived_ >= 2; }))
      return Status::unsupported("the other resolution never ran alongside");
    lock.unlock();
    return reference_.build(desc, device, trace);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  ReferenceBackend reference_;
};

TEST(Dispatcher, DifferentDescriptorsResolveInParallel) {
  Dispatcher dispatcher(chain_of(std::make_unique<RendezvousBackend>()));
  Fixture f;
  OpDescriptor other = f.desc;
  other.direction = Direction::bwddata;
  Status first, second;
  std::thread a([&] { first = dispatcher.resolve(f.desc, kHost).status(); });
  std::thread b([&] { second = dispatcher.resolve(other, kHost).status(); });
  a.join(), b.join();
  EXPECT_TRUE(first.is_ok()) << first.message();
  EXPECT_TRUE(second.is_ok()) << second.message();
}

TEST(Dispatcher, ManyThreadsShareOneResolution) {
  std::atomic<int> builds{0};
  Dispatcher dispatcher(chain_of(std::make_unique<CountingBackend>(true, builds)));
  Fixture f;
  ASSERT_TRUE(dispatcher.execute(f.desc, kHost, f.args).is_ok());
  const auto expected = f.t.y.values();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      auto y = f.t.y;
      ExecArgs args = f.args;
      args.out = y.data();
      for (int j = 0; j < 20; ++j)
        if (!dispatcher.execute(f.desc, kHost, args).is_ok() || y.values() != expected) ++failures;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(builds.load(), 1);
}

TEST(Dispatcher, SeparateDispatchersDoNotShareCachedKernels) {
  std::atomic<int> first_builds{0}, second_builds{0};
  Fixture f;
  {
    Dispatcher first(chain_of(std::make_unique<CountingBackend>(true, first_builds)));
    ASSERT_TRUE(first.execute(f.desc, kHost, f.args).is_ok());
  }
  Dispatcher second(chain_of(std::make_unique<CountingBackend>(true, second_builds)));
  ASSERT_TRUE(second.execute(f.desc, kHost, f.args).is_ok());
  EXPECT_EQ(second_builds.load(), 1);
}

}  // namespace
}  // namespace convjit::test
