// Where `run --model` and `bench` execute: CUDA device 0 when a driver and a
// GPU are there, else the host.  On a GPU each op's operands are staged in
// device memory and every timed call is waited for.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "cuda/device_buffer.hpp"
#include "dispatcher.hpp"
#include "model_table.hpp"
#include "operand_buffers.hpp"

namespace convjit::cli {

class RunDevice {
 public:
  RunDevice();
  [[nodiscard]] bool is_gpu() const { return context_ != nullptr; }
  [[nodiscard]] convjit_device_t device() const;
  [[nodiscard]] const char* label() const { return is_gpu() ? "cuda:0" : "host"; }

  // The op's arguments on this device; device copies live until the next call.
  ExecArgs stage(const OperandBuffers& host, const ModelOp& op);

  // Milliseconds for one call through `dispatcher`, including the wait for
  // the device.  Failures throw RuntimeError naming the layer.
  double timed_call(Dispatcher& dispatcher, const ModelOp& op, const ExecArgs& args,
                    std::string_view* backend = nullptr);

  // The staged output, on the host.
  [[nodiscard]] std::vector<unsigned char> output(const OperandBuffers& host,
                                                  const ModelOp& op) const;

 private:
  void* copy(const std::vector<unsigned char>& bytes, const ModelOp& op);

  std::shared_ptr<DeviceContext> context_;
  std::vector<std::unique_ptr<DeviceBuffer>> staged_;  // out last
};

// Throws RuntimeError "<layer> <direction>: <message>" unless `s` is OK.
void check_op(const Status& s, const ModelOp& op);

}  // namespace convjit::cli
