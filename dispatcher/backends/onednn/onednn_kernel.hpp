// A oneDNN kernel: the primitives one descriptor runs, in order, with every
// memory object and buffer they use made at build.  The caller's operands
// are bound to the memory objects at each call, so execute() allocates
// nothing of convjit's.
//
// A kernel's primitives share its stream, scratchpad and buffers, so one
// call at a time runs them: the kernel's own mutex, never a global lock.
// oneDNN parallelises each primitive over the OpenMP threads anyway, so
// concurrent calls on one descriptor would gain little.
//
// The last primitive writes the op's result into "result" memory laid out
// as the caller's output.  Where it has the output's type and the call
// neither scales nor fuses an epilogue, that memory is the caller's output;
// otherwise it is a buffer the output stage (onednn_output_stage.hpp) reads.
// For an f32 output that buffer is made on the first call that needs it:
// plain unscaled calls never pay for it.
//
// A max pooling whose x holds a NaN runs on the reference instead
// (max_pool_nan_guard.hpp).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "dispatcher/backend.hpp"
#include "dispatcher/backends/onednn/onednn_handles.hpp"

namespace convjit {

// The caller's operands a memory object can stand for.
enum class OnednnOperand { x, w, dy, result };

class OnednnKernel final : public Kernel {
 public:
  OnednnKernel(const OpDescriptor& desc, OnednnStream stream, DataType result_type);

  // Build-time assembly, in the order the primitives run.

  // A memory object for the caller's `operand`, laid out as `md`.
  [[nodiscard]] Result<dnnl_memory_t> operand_memory(OnednnOperand operand,
                                                     const dnnl_memory_desc_t& md);
  // A memory object on a buffer the kernel owns; `what` names it in errors.
  [[nodiscard]] Result<dnnl_memory_t> owned_memory(const dnnl_memory_desc_t& md, const char* what);
  // Runs `pd`'s primitive with `args`, plus a scratchpad of its own when it
  // asks for one.
  [[nodiscard]] Status add_step(const_dnnl_primitive_desc_t pd, std::vector<dnnl_exec_arg_t> args);
  // Makes the result buffer now (outputs whose type differs from the
  // result's, and fused epilogues, always need it).
  [[nodiscard]] Status reserve_result_buffer();

  [[nodiscard]] Status execute(const ExecArgs& args) const override;

 private:
  struct Step {
    OnednnPrimitive primitive;
    std::vector<dnnl_exec_arg_t> args;
  };
  struct Bound {
    OnednnOperand operand;
    dnnl_memory_t memory;
  };

  [[nodiscard]] bool writes_output_directly(const ExecArgs& args) const;
  [[nodiscard]] Status bind(const ExecArgs& args, void* result) const;
  [[nodiscard]] Status ensure_result_buffer() const;

  OpDescriptor desc_;
  OnednnStream stream_;
  DataType result_type_;
  std::size_t result_bytes_ = 0;
  bool guard_nan_ = false;  // max_pool_nan_guard.hpp
  std::vector<OnednnMemory> memories_;
  std::vector<HostBuffer> buffers_;
  std::vector<Bound> bound_;
  std::vector<Step> steps_;
  mutable HostBuffer result_buffer_;
  mutable std::mutex mutex_;
};

}  // namespace convjit
