#include "run_device.hpp"

#include <fmt/format.h>

#include <chrono>

#include "cli_status.hpp"

namespace convjit::cli {

void check_op(const Status& s, const ModelOp& op) {
  if (!s.is_ok())
    throw RuntimeError(
        fmt::format("{} {}: {}", op.layer, direction_name(op.desc.direction), s.message()));
}

RunDevice::RunDevice() {
  auto context = DeviceContext::open(0);
  if (context.is_ok()) context_ = context.value();
}

convjit_device_t RunDevice::device() const {
  return is_gpu() ? convjit_device_t{CONVJIT_DEVICE_CUDA, 0}
                  : convjit_device_t{CONVJIT_DEVICE_HOST, 0};
}

ExecArgs RunDevice::stage(const OperandBuffers& host, const ModelOp& op) {
  staged_.reset();  // frees the previous op's device copies first
  staged_ = std::make_unique<StagedOperands>(context_, host);
  check_op(staged_->status(), op);
  return staged_->args();
}

double RunDevice::timed_call(const ModelOp& op, const ExecArgs& args, std::string_view* backend) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  check_op(Dispatcher::instance().execute(op.desc, device(), args, backend), op);
  if (is_gpu()) check_op(context_->synchronize(), op);
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<unsigned char> RunDevice::output(const ModelOp& op) const {
  auto out = staged_->output();
  check_op(out.status(), op);
  return std::move(out).value();
}

}  // namespace convjit::cli
