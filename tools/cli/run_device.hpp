// Where `run --model` and `bench` execute: CUDA device 0 when a driver and a
// GPU are there, else the host.  On a GPU each op's operands are staged in
// device memory and every timed call is waited for.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "dispatcher/cuda/staged_operands.hpp"
#include "dispatcher/dispatcher.hpp"
#include "dispatcher/models/model_table.hpp"

namespace convjit::cli {

class RunDevice {
 public:
  RunDevice();
  [[nodiscard]] bool is_gpu() const { return context_ != nullptr; }
  // The GPU's context, or null on the host.
  [[nodiscard]] const DeviceContext* context() const { return context_.get(); }
  [[nodiscard]] convjit_device_t device() const;
  [[nodiscard]] const char* label() const { return is_gpu() ? "cuda:0" : "host"; }

  // The op's arguments on this device; device copies live until the next
  // call.  `host` must outlive them.
  ExecArgs stage(const OperandBuffers& host, const ModelOp& op);

  // Milliseconds for one call through the dispatcher, including the wait
  // for the device.  Failures throw RuntimeError naming the layer.
  double timed_call(const ModelOp& op, const ExecArgs& args, std::string_view* backend = nullptr);

  // The staged output, on the host.
  [[nodiscard]] std::vector<unsigned char> output(const ModelOp& op) const;

 private:
  std::shared_ptr<DeviceContext> context_;
  std::unique_ptr<StagedOperands> staged_;
};

// Throws RuntimeError "<layer> <direction>: <message>" unless `s` is OK.
void check_op(const Status& s, const ModelOp& op);

}  // namespace convjit::cli
