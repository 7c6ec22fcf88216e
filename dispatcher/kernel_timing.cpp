#include "kernel_timing.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "cuda/cuda_driver.hpp"

namespace convjit {

namespace {

// An event pair, destroyed with the timing however it ends.
class EventPair {
 public:
  EventPair() = default;
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    const auto& api = CudaDriver::instance().api();
    if (start_) (void)api.event_destroy(start_);
    if (stop_) (void)api.event_destroy(stop_);
  }
  [[nodiscard]] Status create() {
    const CudaDriver& driver = CudaDriver::instance();
    if (Status s = driver.check(driver.api().event_create(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
        !s.is_ok())
      return s;
    return driver.check(driver.api().event_create(&stop_, CU_EVENT_DEFAULT), "cuEventCreate");
  }

  // Milliseconds of one call, recorded around it on `stream`.
  [[nodiscard]] Result<double> time(const Kernel& kernel, const ExecArgs& args) const {
    const CudaDriver& driver = CudaDriver::instance();
    const auto& api = driver.api();
    const auto stream = static_cast<CUstream>(args.stream);
    if (Status s = driver.check(api.event_record(start_, stream), "cuEventRecord"); !s.is_ok()) return s;
    if (Status s = kernel.execute(args); !s.is_ok()) return s;
    if (Status s = driver.check(api.event_record(stop_, stream), "cuEventRecord"); !s.is_ok()) return s;
    if (Status s = driver.check(api.event_synchronize(stop_), "cuEventSynchronize"); !s.is_ok()) return s;
    float ms = 0;
    if (Status s = driver.check(api.event_elapsed_time(&ms, start_, stop_), "cuEventElapsedTime");
        !s.is_ok())
      return s;
    return static_cast<double>(ms);
  }

 private:
  CUevent start_ = nullptr;
  CUevent stop_ = nullptr;
};

Result<std::vector<double>> device_times(const Kernel& kernel, const ExecArgs& args, int calls) {
  if (const Status& timing = CudaDriver::instance().timing_available(); !timing.is_ok())
    return timing;
  EventPair events;
  if (Status s = events.create(); !s.is_ok()) return s;
  std::vector<double> times;
  for (int i = 0; i < calls; ++i) {
    auto ms = events.time(kernel, args);
    if (!ms.is_ok()) return ms.status();
    times.push_back(ms.value());
  }
  return times;
}

Result<std::vector<double>> host_times(const Kernel& kernel, const ExecArgs& args, int calls) {
  std::vector<double> times;
  for (int i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (Status s = kernel.execute(args); !s.is_ok()) return s;
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return times;
}

}  // namespace

Result<double> median_kernel_ms(const Kernel& kernel, const ExecArgs& args, bool on_device,
                                int calls) {
  if (calls < 1) return Status::invalid("timing needs at least one call (calls >= 1)");
  if (Status s = kernel.execute(args); !s.is_ok()) return s;  // warm-up: caches, clocks, workspaces
  auto times = on_device ? device_times(kernel, args, calls) : host_times(kernel, args, calls);
  if (!times.is_ok()) return times.status();
  std::vector<double>& t = times.value();
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

}  // namespace convjit
