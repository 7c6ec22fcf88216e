// cuDNN handles: one per thread and device, bound to the caller's stream.
//
// cuDNN allows many threads to call it, but not to share a handle at the
// same time, so each thread keeps its own: a call takes no lock.  A handle
// belongs to the device whose context was current when it was made; the
// caller makes that device's primary context current first.
#pragma once

#include "dispatcher/backends/cudnn/cudnn_library.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

// This thread's handle for CUDA device `ordinal`, set to `stream` (the
// stream is set only when it changed since the last call).
[[nodiscard]] Result<cudnnHandle_t> cudnn_handle(const CudnnLibrary& cudnn, int ordinal,
                                                 void* stream);

}  // namespace convjit
