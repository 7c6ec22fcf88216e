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
  staged_.clear();
  if (!is_gpu()) return host.args;
  ExecArgs args = host.args;
  args.x = args.x ? copy(host.x, op) : nullptr;
  args.w = args.w ? copy(host.w, op) : nullptr;
  args.dy = args.dy ? copy(host.dy, op) : nullptr;
  args.out = copy(host.out, op);
  return args;
}

double RunDevice::timed_call(Dispatcher& dispatcher, const ModelOp& op, const ExecArgs& args,
                             std::string_view* backend) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  check_op(dispatcher.execute(op.desc, device(), args, backend), op);
  if (is_gpu()) check_op(context_->synchronize(), op);
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<unsigned char> RunDevice::output(const OperandBuffers& host, const ModelOp& op) const {
  if (!is_gpu()) return host.out;
  std::vector<unsigned char> out(host.out.size());
  check_op(staged_.back()->download(out.data()), op);
  return out;
}

void* RunDevice::copy(const std::vector<unsigned char>& bytes, const ModelOp& op) {
  auto buffer = DeviceBuffer::allocate(context_, bytes.size());
  check_op(buffer.status(), op);
  check_op(buffer.value()->upload(bytes.data()), op);
  staged_.push_back(std::move(buffer).value());
  return staged_.back()->get();
}

}  // namespace convjit::cli
