#include "dispatcher/backends/jit/epilogue_after.hpp"

#include "dispatcher/cuda/context_scope.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"

namespace convjit {

namespace {

class EpilogueAfterKernel final : public Kernel {
 public:
  EpilogueAfterKernel(std::unique_ptr<Kernel> plain, std::unique_ptr<Kernel> pass,
                      std::unique_ptr<StreamWorkspaces> temporaries,
                      std::shared_ptr<DeviceContext> context)
      : plain_(std::move(plain)),
        pass_(std::move(pass)),
        temporaries_(std::move(temporaries)),
        context_(std::move(context)) {}
  ~EpilogueAfterKernel() override {
    if (!context_) return;
    const ContextScope scope = context_->enter();
    temporaries_.reset();  // device memory goes before the context is released
  }
  EpilogueAfterKernel(const EpilogueAfterKernel&) = delete;
  EpilogueAfterKernel& operator=(const EpilogueAfterKernel&) = delete;

  [[nodiscard]] Status execute(const ExecArgs& args) const override {
    ExecArgs conv = args;
    conv.alpha = 1.0, conv.beta = 0.0;
    conv.bias = conv.residual = nullptr;
    if (args.beta != 0.0) {
      auto temporary = temporary_for(args);
      if (!temporary.is_ok()) return temporary.status();
      conv.out = temporary.value();
    }
    if (Status s = plain_->execute(conv); !s.is_ok()) return s;
    ExecArgs pass = args;
    pass.x = conv.out, pass.w = nullptr;
    pass.workspace = nullptr, pass.workspace_bytes = 0;
    return pass_->execute(pass);
  }

  [[nodiscard]] std::size_t workspace_bytes() const override { return plain_->workspace_bytes(); }

 private:
  // The stream's buffer: ours, never the caller's workspace.
  [[nodiscard]] Result<void*> temporary_for(const ExecArgs& args) const {
    ExecArgs own = args;
    own.workspace = nullptr, own.workspace_bytes = 0;
    if (!context_) return temporaries_->for_call(own, "a fused conv's plain result");
    const ContextScope scope = context_->enter();
    if (!scope.status().is_ok()) return scope.status();
    return temporaries_->for_call(own, "a fused conv's plain result");
  }

  std::unique_ptr<Kernel> plain_, pass_;
  std::unique_ptr<StreamWorkspaces> temporaries_;
  std::shared_ptr<DeviceContext> context_;
};

}  // namespace

OpDescriptor without_epilogue(const OpDescriptor& desc) {
  OpDescriptor plain = desc;
  plain.activation = Activation::identity;
  plain.epilogue_operands = 0;
  return plain;
}

std::size_t epilogue_temporary_bytes(const OpDescriptor& desc) { return slot_bytes(desc, Slot::y); }

std::unique_ptr<Kernel> epilogue_after(std::unique_ptr<Kernel> plain, std::unique_ptr<Kernel> pass,
                                       std::unique_ptr<StreamWorkspaces> temporaries,
                                       std::shared_ptr<DeviceContext> context) {
  return std::make_unique<EpilogueAfterKernel>(std::move(plain), std::move(pass),
                                               std::move(temporaries), std::move(context));
}

}  // namespace convjit
