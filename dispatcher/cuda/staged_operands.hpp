// An operation's operands where a backend runs it: the host buffers
// themselves, or device copies in a CUDA device's primary context.  The
// tuned policy, `run --model` and `bench` feed kernels through it.
#pragma once

#include <memory>
#include <vector>

#include "dispatcher/cuda/device_buffer.hpp"
#include "dispatcher/tuning/operand_buffers.hpp"

namespace convjit {

class StagedOperands {
 public:
  // `context` null: the host.  Copies what the op reads, and its output.
  StagedOperands(std::shared_ptr<DeviceContext> context, const OperandBuffers& host);

  // OK, or why a copy to the device failed (args() is then unusable).
  [[nodiscard]] const Status& status() const { return status_; }
  [[nodiscard]] const ExecArgs& args() const { return args_; }
  [[nodiscard]] DeviceContext* context() const { return context_.get(); }

  // The output after the last call, on the host (waits for the device).
  [[nodiscard]] Result<std::vector<unsigned char>> output() const;

 private:
  void* copy(const std::vector<unsigned char>& bytes);

  const OperandBuffers& host_;
  std::shared_ptr<DeviceContext> context_;
  ExecArgs args_;
  Status status_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;  // out last
};

}  // namespace convjit
