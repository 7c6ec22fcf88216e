#include "dispatcher/backends/cudnn/cudnn_handles.hpp"

#include <fmt/format.h>

#include <array>

namespace convjit {

namespace {

constexpr int kMaxDevices = 64;

struct ThreadHandle {
  cudnnHandle_t handle = nullptr;
  void* stream = nullptr;
};

// Destroys this thread's handles when it exits.
struct ThreadHandles {
  const CudnnLibrary* cudnn = nullptr;
  std::array<ThreadHandle, kMaxDevices> devices{};
  ~ThreadHandles() {
    for (const ThreadHandle& h : devices)
      if (h.handle != nullptr) (void)cudnn->api().destroy(h.handle);
  }
};

thread_local ThreadHandles t_handles;

}  // namespace

Result<cudnnHandle_t> cudnn_handle(const CudnnLibrary& cudnn, int ordinal, void* stream) {
  if (ordinal < 0 || ordinal >= kMaxDevices)
    return Status::invalid(fmt::format("CUDA device {} is beyond the {} devices convjit's cuDNN "
                                       "backend serves",
                                       ordinal, kMaxDevices));
  ThreadHandle& h = t_handles.devices[static_cast<std::size_t>(ordinal)];
  if (h.handle == nullptr) {
    if (Status s = cudnn.check(cudnn.api().create(&h.handle), "cudnnCreate"); !s.is_ok()) {
      h.handle = nullptr;
      return s;
    }
    t_handles.cudnn = &cudnn;
    h.stream = nullptr;  // a new handle runs on the default stream
  }
  if (h.stream != stream) {
    if (Status s = cudnn.check(cudnn.api().set_stream(h.handle, static_cast<cudaStream_t>(stream)),
                               "cudnnSetStream");
        !s.is_ok())
      return s;
    h.stream = stream;
  }
  return h.handle;
}

}  // namespace convjit
