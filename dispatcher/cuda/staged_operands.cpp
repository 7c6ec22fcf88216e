#include "dispatcher/cuda/staged_operands.hpp"

namespace convjit {

StagedOperands::StagedOperands(std::shared_ptr<DeviceContext> context, const OperandBuffers& host)
    : host_(host), context_(std::move(context)), args_(host.args) {
  if (!context_) return;
  if (args_.x) args_.x = copy(host.x);
  if (args_.w) args_.w = copy(host.w);
  if (args_.dy) args_.dy = copy(host.dy);
  if (args_.bias) args_.bias = copy(host.bias);
  if (args_.residual) args_.residual = copy(host.residual);
  NormOperands& n = args_.norm;
  if (n.scale) n.scale = copy(host.scale);
  if (n.shift) n.shift = copy(host.shift);
  for (auto [pointer, bytes] : {std::pair{&n.running_mean, &host.running_mean},
                                {&n.running_var, &host.running_var}, {&n.mean, &host.mean},
                                {&n.invstd, &host.invstd}, {&n.scale_grad, &host.scale_grad},
                                {&n.shift_grad, &host.shift_grad}})
    if (*pointer) *pointer = copy(*bytes);
  args_.out = copy(host.out);  // last: output() reads it back
}

Result<std::vector<unsigned char>> StagedOperands::output() const {
  if (!context_) return host_.out;
  std::vector<unsigned char> out(host_.out.size());
  if (Status s = context_->synchronize(); !s.is_ok()) return s;
  if (Status s = buffers_.back()->download(out.data()); !s.is_ok()) return s;
  return out;
}

void* StagedOperands::copy(const std::vector<unsigned char>& bytes) {
  if (!status_.is_ok()) return nullptr;
  auto buffer = DeviceBuffer::allocate(context_, bytes.size());
  status_ = buffer.is_ok() ? buffer.value()->upload(bytes.data()) : buffer.status();
  if (!status_.is_ok()) return nullptr;
  buffers_.push_back(std::move(buffer).value());
  return buffers_.back()->get();
}

}  // namespace convjit
