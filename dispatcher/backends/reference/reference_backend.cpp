#include "dispatcher/backends/reference/reference_backend.hpp"

#include "dispatcher/backends/reference/batchnorm_reference.hpp"
#include "dispatcher/backends/reference/conv_reference.hpp"
#include "dispatcher/backends/reference/pool_reference.hpp"
#include "dispatcher/backends/reference/resize_reference.hpp"

namespace convjit {

namespace {

class ReferenceKernel final : public Kernel {
 public:
  explicit ReferenceKernel(const OpDescriptor& desc) : desc_(desc) {}

  [[nodiscard]] Status execute(const ExecArgs& args) const override {
    run_reference(desc_, args);
    return Status::ok();
  }

 private:
  OpDescriptor desc_;
};

}  // namespace

void run_reference(const OpDescriptor& desc, const ExecArgs& args) {
  switch (desc.kind) {
    case OpKind::conv:
      reference::conv_reference(desc, args);
      break;
    case OpKind::pool:
      reference::pool_reference(desc, args);
      break;
    case OpKind::bias_grad:
      reference::bias_grad_reference(desc, args);
      break;
    case OpKind::batchnorm:
      reference::batchnorm_reference(desc, args);
      break;
    case OpKind::resize:
      reference::resize_reference(desc, args);
      break;
  }
}

Status ReferenceBackend::check_support(const OpDescriptor& desc,
                                       const convjit_device_t& device) const {
  if (device.kind != CONVJIT_DEVICE_HOST)
    return Status::not_available("the reference backend runs on the host device only");
  if (desc.symbolic_batch)
    return Status::unsupported("a symbolic-batch descriptor has no batch to compute");
  return Status::ok();
}

Result<std::unique_ptr<Kernel>> ReferenceBackend::build(const OpDescriptor& desc,
                                                        const convjit_device_t&, BuildTrace&) {
  return std::unique_ptr<Kernel>(std::make_unique<ReferenceKernel>(desc));
}

}  // namespace convjit
