// A fused conv fwd served by a backend that computes only the plain conv
// (cuDNN): its plain kernel, then the JIT's epilogue pass
// (conv/epilogue_pass.cuh, variant kEpiloguePassVariant), which reads the
// conv's result where the plain kernel wrote it.
#pragma once

#include <memory>

#include "dispatcher/backend.hpp"
#include "dispatcher/cuda/device_buffer.hpp"
#include "dispatcher/kernel_workspace.hpp"

namespace convjit {

// The same op without its epilogue: the conv a non-fusing backend runs.
[[nodiscard]] OpDescriptor without_epilogue(const OpDescriptor& desc);

// The bytes of the buffer the plain conv writes when beta is not 0: y's span.
[[nodiscard]] std::size_t epilogue_temporary_bytes(const OpDescriptor& desc);

// `plain` runs without_epilogue(desc); `pass` is the epilogue alone, taking
// the conv's result as x.  With beta 0 the plain conv writes y and the pass
// works in place; otherwise the conv writes a buffer of `temporaries` (one
// per stream, epilogue_temporary_bytes(desc) each), and the pass blends
// beta y in.  The caller's workspace, if any, goes to the plain kernel.
// `context` (null on the host) is entered around every use of the
// temporaries, their release included, as device memory needs.
[[nodiscard]] std::unique_ptr<Kernel> epilogue_after(std::unique_ptr<Kernel> plain,
                                                     std::unique_ptr<Kernel> pass,
                                                     std::unique_ptr<StreamWorkspaces> temporaries,
                                                     std::shared_ptr<DeviceContext> context);

}  // namespace convjit
