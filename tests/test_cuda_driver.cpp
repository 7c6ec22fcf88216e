// The CUDA driver's symbol table (cuda/cuda_driver.hpp) against fake driver
// libraries: every required symbol found, the timing functions optional,
// and cuEventElapsedTime standing in for the _v2 name that drivers before
// CUDA 12.8 lack.  ContextScope against the fake's context stack: the
// caller's current context comes back however the scope ends.  A
// persistent grid cut to the device's SMs in whole clusters, and to the
// clusters it holds at once.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "dispatcher/cuda/context_scope.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/cuda/kernel_launch.hpp"

namespace convjit {
namespace {

// A fake driver, opened for one test.
class FakeDriver {
 public:
  explicit FakeDriver(const std::string& name)
      : handle_(::dlopen((std::string(FAKE_LIBRARY_DIR) + "/" + name).c_str(),
                         RTLD_NOW | RTLD_LOCAL)) {}
  ~FakeDriver() {
    if (handle_) ::dlclose(handle_);
  }
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;
  [[nodiscard]] void* handle() const { return handle_; }

 private:
  void* handle_;
};

// A fake driver's symbol table: what resolve_driver_api found in it.
struct Resolved {
  CudaDriverApi api;
  Status timing;
  const char* missing = nullptr;
};
Resolved resolve(const FakeDriver& driver) {
  Resolved r;
  r.missing = resolve_driver_api(driver.handle(), r.api, r.timing);
  return r;
}

TEST(CudaDriverApi, ACurrentDriverResolvesEverySymbolWithTheV2ElapsedTime) {
  const FakeDriver driver("libfake_cuda_driver.so");
  ASSERT_NE(driver.handle(), nullptr) << ::dlerror();
  const Resolved r = resolve(driver);
  EXPECT_EQ(r.missing, nullptr);
  EXPECT_TRUE(r.timing.is_ok()) << r.timing.message();
  EXPECT_EQ(reinterpret_cast<void*>(r.api.event_elapsed_time),
            ::dlsym(driver.handle(), "cuEventElapsedTime_v2"));
  EXPECT_NE(r.api.stream_create, nullptr);
  EXPECT_NE(r.api.stream_destroy, nullptr);
  EXPECT_NE(r.api.func_set_attribute, nullptr);
  EXPECT_NE(r.api.tensor_map_encode_tiled, nullptr);
  EXPECT_NE(r.api.tensor_map_encode_im2col, nullptr);
}

TEST(CudaDriverApi, ADriverBeforeCuda12_8TimesWithThePlainElapsedTime) {
  const FakeDriver driver("libfake_cuda_driver_before_12_8.so");
  ASSERT_NE(driver.handle(), nullptr) << ::dlerror();
  ASSERT_EQ(::dlsym(driver.handle(), "cuEventElapsedTime_v2"), nullptr);
  const Resolved r = resolve(driver);
  EXPECT_EQ(r.missing, nullptr);
  EXPECT_TRUE(r.timing.is_ok()) << r.timing.message();
  EXPECT_EQ(reinterpret_cast<void*>(r.api.event_elapsed_time),
            ::dlsym(driver.handle(), "cuEventElapsedTime"));
}

TEST(CudaDriverApi, WithoutEventsTheDriverStaysUsableAndTimingSaysWhy) {
  const FakeDriver driver("libfake_cuda_driver_without_events.so");
  ASSERT_NE(driver.handle(), nullptr) << ::dlerror();
  const Resolved r = resolve(driver);
  EXPECT_EQ(r.missing, nullptr);
  EXPECT_EQ(r.timing.code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_EQ(r.timing.message(),
            "the CUDA driver lacks cuEventCreate: kernels cannot be timed with CUDA events; "
            "update the driver");
}

TEST(CudaDriverApi, ALibraryThatIsNotTheDriverNamesTheFirstMissingSymbol) {
  void* libm = ::dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(libm, nullptr);
  CudaDriverApi api;
  Status timing;
  EXPECT_STREQ(resolve_driver_api(libm, api, timing), "cuInit");
  ::dlclose(libm);
}

TEST(CudaDriverApi, WithoutADriverTimingIsUnavailableToo) {
  const CudaDriver& driver = CudaDriver::instance();
  if (driver.available().is_ok()) GTEST_SKIP() << "this machine has a driver";
  EXPECT_EQ(driver.timing_available().message(), driver.available().message());
}

// The fake driver's current context.
CUcontext current_context(const FakeDriver& driver) {
  using GetCurrent = CUresult (*)(CUcontext*);
  auto get = reinterpret_cast<GetCurrent>(::dlsym(driver.handle(), "cuCtxGetCurrent"));
  CUcontext context = nullptr;
  EXPECT_EQ(get(&context), CUDA_SUCCESS);
  return context;
}

void set_current_context(const FakeDriver& driver, CUcontext context) {
  using SetCurrent = CUresult (*)(CUcontext);
  auto set = reinterpret_cast<SetCurrent>(::dlsym(driver.handle(), "cuCtxSetCurrent"));
  ASSERT_EQ(set(context), CUDA_SUCCESS);
}

CUcontext fake_context(std::uintptr_t id) { return reinterpret_cast<CUcontext>(id); }

TEST(ContextScope, GivesTheCallersOwnContextBackOnTheWayOut) {
  const FakeDriver driver("libfake_cuda_driver.so");
  ASSERT_NE(driver.handle(), nullptr) << ::dlerror();
  const Resolved r = resolve(driver);
  const CUcontext callers = fake_context(0x1000), convjits = fake_context(0x2000);
  set_current_context(driver, callers);
  {
    const ContextScope scope(r.api, convjits);
    ASSERT_TRUE(scope.status().is_ok()) << scope.status().message();
    EXPECT_EQ(current_context(driver), convjits);
    {
      const ContextScope nested(r.api, convjits);  // an entry point calling another
      EXPECT_EQ(current_context(driver), convjits);
    }
    EXPECT_EQ(current_context(driver), convjits);
  }
  EXPECT_EQ(current_context(driver), callers);
  set_current_context(driver, nullptr);
}

TEST(ContextScope, WorksForACallerWithNoContextCurrent) {
  const FakeDriver driver("libfake_cuda_driver.so");
  ASSERT_NE(driver.handle(), nullptr) << ::dlerror();
  const Resolved r = resolve(driver);
  ASSERT_EQ(current_context(driver), nullptr);
  {
    const ContextScope scope(r.api, fake_context(0x2000));
    EXPECT_EQ(current_context(driver), fake_context(0x2000));
  }
  EXPECT_EQ(current_context(driver), nullptr);
}

TEST(ContextScope, AFailedPushSaysWhyAndPopsNothing) {
  const FakeDriver driver("libfake_cuda_driver.so");
  ASSERT_NE(driver.handle(), nullptr) << ::dlerror();
  const Resolved r = resolve(driver);
  const CUcontext callers = fake_context(0x1000);
  set_current_context(driver, callers);
  {
    const ContextScope scope(r.api, fake_context(0xbad));  // the fake refuses it
    EXPECT_EQ(scope.status().code(), CONVJIT_STATUS_EXECUTION_FAILED);
    EXPECT_EQ(scope.status().message(),
              "cuCtxPushCurrent failed: invalid device context (201)");
  }
  EXPECT_EQ(current_context(driver), callers);
  set_current_context(driver, nullptr);
}

// The Hopper conv's persistent grids are sized for 132 SMs; a device with
// fewer takes as many whole clusters as it has SMs for, at least one.
TEST(PersistentGrid, IsCutToTheDevicesSmsInWholeClusters) {
  EXPECT_EQ(persistent_grid(132, 132, 1), 132u);
  EXPECT_EQ(persistent_grid(132, 132, 2), 132u);
  EXPECT_EQ(persistent_grid(40, 132, 2), 40u) << "fewer tiles than SMs: as sized";
  EXPECT_EQ(persistent_grid(132, 114, 1), 114u) << "an H100 PCIe";
  EXPECT_EQ(persistent_grid(132, 114, 2), 114u);
  EXPECT_EQ(persistent_grid(132, 15, 2), 14u) << "an odd slice: whole clusters";
  EXPECT_EQ(persistent_grid(132, 1, 2), 2u) << "one cluster at least";
  EXPECT_EQ(persistent_grid(132, 0, 2), 132u) << "unknown: unchanged";
  EXPECT_EQ(persistent_grid(132, 16, 0), 16u) << "no cluster dimension: blocks of one";
}

// A cluster takes SMs of one GPC: where the driver says the device holds
// fewer clusters at once than its SMs would (cuOccupancyMaxActiveClusters),
// the grid takes as many, so that no cluster waits for a second wave; the
// driver is asked only of a launch in clusters, and a driver without the
// call (before CUDA 12.0) leaves the SMs' cut.
TEST(PersistentGrid, IsCutToTheClustersTheDeviceHoldsAtOnce) {
  EXPECT_EQ(persistent_grid(132, 132, 4, 31), 124u) << "31 clusters of four, not 33";
  EXPECT_EQ(persistent_grid(100, 132, 4, 31), 100u) << "fewer tiles: as sized";
  EXPECT_EQ(persistent_grid(132, 114, 4, 40), 112u) << "no more than the SMs hold";
  const FakeDriver driver("libfake_cuda_driver.so");
  ASSERT_NE(driver.handle(), nullptr) << ::dlerror();
  Resolved r = resolve(driver);
  ASSERT_NE(r.api.occupancy_max_active_clusters, nullptr);
  const LaunchShape clusters{132, 384, 200 << 10, 4};
  EXPECT_EQ(max_active_clusters(r.api, nullptr, clusters), 31);
  EXPECT_EQ(max_active_clusters(r.api, nullptr, {132, 384, 200 << 10, 1}), 0)
      << "no clusters: the SMs' cut";
  r.api.occupancy_max_active_clusters = nullptr;
  EXPECT_EQ(max_active_clusters(r.api, nullptr, clusters), 0) << "a driver before CUDA 12.0";
}

}  // namespace
}  // namespace convjit
