// A oneDNN kernel for a convolution, pooling, resize or bias gradient: its
// program (onednn_program.hpp) and what follows it.
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

#include "dispatcher/backends/onednn/onednn_program.hpp"

namespace convjit {

class OnednnKernel final : public Kernel {
 public:
  OnednnKernel(const OpDescriptor& desc, OnednnStream stream, DataType result_type);

  // Build-time assembly, in the order the primitives run.
  [[nodiscard]] OnednnProgram& program() { return program_; }
  // Makes the result buffer now (outputs whose type differs from the
  // result's, and fused epilogues, always need it).
  [[nodiscard]] Status reserve_result_buffer();

  [[nodiscard]] Status execute(const ExecArgs& args) const override;

 private:
  [[nodiscard]] bool writes_output_directly(const ExecArgs& args) const;
  [[nodiscard]] Status ensure_result_buffer() const;

  OpDescriptor desc_;
  OnednnProgram program_;
  DataType result_type_;
  std::size_t result_bytes_ = 0;
  bool guard_nan_ = false;  // max_pool_nan_guard.hpp
  mutable HostBuffer result_buffer_;
  mutable std::mutex mutex_;
};

}  // namespace convjit
