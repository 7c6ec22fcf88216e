// The primitives a oneDNN kernel runs, in order, with every memory object and
// buffer they use made at build.  The caller's operands are bound to their
// memory objects at each run, so a run allocates nothing of convjit's.
//
// A program's primitives share its stream, scratchpads and buffers: its
// kernel runs one call at a time (under the kernel's own mutex, never a
// global lock).
#pragma once

#include <vector>

#include "dispatcher/backend.hpp"
#include "dispatcher/backends/onednn/onednn_handles.hpp"

namespace convjit {

// The caller's operands a memory object can stand for: ExecArgs' x, w, dy,
// the result the kernel chooses per call (the output or a buffer of its
// own), and a batchnorm's per-channel inputs (NormOperands).
enum class OnednnOperand { x, w, dy, result, scale, shift, mean, running_mean, running_var };

// A memory object on a buffer the program owns.
struct OnednnOwned {
  dnnl_memory_t memory = nullptr;
  void* data = nullptr;
};

class OnednnProgram {
 public:
  explicit OnednnProgram(OnednnStream stream) : stream_(std::move(stream)) {}

  // A memory object for the caller's `operand`, laid out as `md`.
  [[nodiscard]] Result<dnnl_memory_t> operand_memory(OnednnOperand operand,
                                                     const dnnl_memory_desc_t& md);
  // A memory object on a buffer of md's size; `what` names it in errors.
  [[nodiscard]] Result<OnednnOwned> owned_memory(const dnnl_memory_desc_t& md, const char* what);
  // A memory object on `data`, a buffer its kernel owns and keeps.
  [[nodiscard]] Result<dnnl_memory_t> borrowed_memory(const dnnl_memory_desc_t& md, void* data);
  // Runs `pd`'s primitive with `args`, plus a scratchpad of its own when it
  // asks for one.
  [[nodiscard]] Status add_step(const_dnnl_primitive_desc_t pd, std::vector<dnnl_exec_arg_t> args);

  // Binds the operands (`result` for OnednnOperand::result), runs every
  // step and waits for them.
  [[nodiscard]] Status run(const ExecArgs& args, void* result) const;

 private:
  struct Step {
    OnednnPrimitive primitive;
    std::vector<dnnl_exec_arg_t> args;
  };
  struct Bound {
    OnednnOperand operand;
    dnnl_memory_t memory;
  };

  [[nodiscard]] Status bind(const ExecArgs& args, void* result) const;

  OnednnStream stream_;
  std::vector<OnednnMemory> memories_;
  std::vector<HostBuffer> buffers_;
  std::vector<Bound> bound_;
  std::vector<Step> steps_;
};

}  // namespace convjit
