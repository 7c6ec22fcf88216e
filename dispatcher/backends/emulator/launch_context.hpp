// The state every emulated thread can reach: the CUDA built-in indices
// (per host thread, switched with each fiber), and the one launch in
// flight with its buffers and violation log.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace convjit::emulator {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};

class EmulatedBuffers;
class ViolationLog;

struct LaunchContext {
  std::string kernel_label;  // "conv_fwd.cuh (f16) convjit_kernel"
  EmulatedBuffers* buffers = nullptr;
  ViolationLog* violations = nullptr;
  std::size_t dynamic_shared_bytes = 0;  // the running entry's (kernel_source.hpp)
  // count_memory's run of a few blocks alone: the others' arrivals on a
  // counter (common/arrival_counter.cuh) never come, so each is the last.
  bool sampled = false;
};

// The launch in flight; kernel_emulator.cpp runs launches one at a time.
LaunchContext& launch_context();

// The running thread's linear index in the grid (launches are 1D).
long long global_thread_index();

// Reports `what` with the kernel and the running block and thread.
void report_violation(std::string_view what);

}  // namespace convjit::emulator

// CUDA's built-in variables, found by unqualified lookup from the templates
// compiled inside convjit::emulated.
namespace convjit::emulated {
inline thread_local emulator::Dim3 threadIdx, blockIdx, blockDim, gridDim;
}  // namespace convjit::emulated
