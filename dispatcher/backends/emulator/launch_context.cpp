#include "dispatcher/backends/emulator/launch_context.hpp"

#include <fmt/format.h>

#include "dispatcher/backends/emulator/violation_log.hpp"

namespace convjit::emulator {

LaunchContext& launch_context() {
  static LaunchContext context;
  return context;
}

long long global_thread_index() {
  return static_cast<long long>(emulated::blockIdx.x) * emulated::blockDim.x +
         emulated::threadIdx.x;
}

void report_violation(std::string_view what) {
  LaunchContext& launch = launch_context();
  if (launch.violations == nullptr) return;
  launch.violations->report(fmt::format("{}: block {} thread {} (global thread {}) {}",
                                        launch.kernel_label, emulated::blockIdx.x,
                                        emulated::threadIdx.x, global_thread_index(), what),
                            global_thread_index());
}

}  // namespace convjit::emulator
