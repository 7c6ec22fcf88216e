#include "dispatcher/tuning/kernel_timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "dispatcher/cuda/device_buffer.hpp"

namespace convjit {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// An event pair in the current context, destroyed however the timing ends.
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

  // Records start, makes `calls` calls, drains the stream: milliseconds
  // per call.
  [[nodiscard]] Result<double> time(const Kernel& kernel, const ExecArgs& args, int calls) const {
    const CudaDriver& driver = CudaDriver::instance();
    const auto& api = driver.api();
    if (Status s = driver.check(api.event_record(start_, static_cast<CUstream>(args.stream)),
                                "cuEventRecord");
        !s.is_ok())
      return s;
    for (int i = 0; i < calls; ++i)
      if (Status s = kernel.execute(args); !s.is_ok()) return s;
    if (Status s = drain(args); !s.is_ok()) return s;
    float ms = 0;
    if (Status s = driver.check(api.event_elapsed_time(&ms, start_, stop_), "cuEventElapsedTime");
        !s.is_ok())
      return s;
    return static_cast<double>(ms) / calls;
  }

  // Records stop on the call's stream and waits for it: everything queued
  // there so far has run.
  [[nodiscard]] Status drain(const ExecArgs& args) const {
    const CudaDriver& driver = CudaDriver::instance();
    const auto& api = driver.api();
    if (Status s = driver.check(api.event_record(stop_, static_cast<CUstream>(args.stream)),
                                "cuEventRecord");
        !s.is_ok())
      return s;
    return driver.check(api.event_synchronize(stop_), "cuEventSynchronize");
  }

 private:
  CUevent start_ = nullptr;
  CUevent stop_ = nullptr;
};

Result<std::vector<double>> device_times(const Kernel& kernel, const ExecArgs& args,
                                         const DeviceContext& device, int batches) {
  if (const Status& timing = CudaDriver::instance().timing_available(); !timing.is_ok())
    return timing;
  const ContextScope scope = device.enter();  // events live in the kernel's context
  if (!scope.status().is_ok()) return scope.status();
  EventPair events;
  if (Status s = events.create(); !s.is_ok()) return s;
  // Warm-up: caches, clocks, workspaces, and the estimate that sizes a batch.
  const auto start = Clock::now();
  if (Status s = kernel.execute(args); !s.is_ok()) return s;
  if (Status s = events.drain(args); !s.is_ok()) return s;
  const int calls = calls_per_batch(ms_since(start));
  std::vector<double> times;
  for (int i = 0; i < batches; ++i) {
    auto ms = events.time(kernel, args, calls);
    if (!ms.is_ok()) return ms.status();
    times.push_back(ms.value());
  }
  return times;
}

Result<std::vector<double>> host_times(const Kernel& kernel, const ExecArgs& args, int calls) {
  if (Status s = kernel.execute(args); !s.is_ok()) return s;  // warm-up
  std::vector<double> times;
  for (int i = 0; i < calls; ++i) {
    const auto start = Clock::now();
    if (Status s = kernel.execute(args); !s.is_ok()) return s;
    times.push_back(ms_since(start));
  }
  return times;
}

}  // namespace

int calls_per_batch(double warmup_ms) {
  if (!(warmup_ms > 0)) return kMaxCallsPerBatch;  // below the clock's resolution
  if (warmup_ms >= kTargetBatchMs) return 1;
  return static_cast<int>(std::min<double>(std::ceil(kTargetBatchMs / warmup_ms), kMaxCallsPerBatch));
}

double median_of(std::span<double> samples) {
  const auto middle = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

Result<double> median_kernel_ms(const Kernel& kernel, const ExecArgs& args,
                                const DeviceContext* device, int batches) {
  if (batches < 1) return Status::invalid("timing needs at least one sample (batches >= 1)");
  auto times = device != nullptr ? device_times(kernel, args, *device, batches)
                                 : host_times(kernel, args, batches);
  if (!times.is_ok()) return times.status();
  return median_of(times.value());
}

}  // namespace convjit
