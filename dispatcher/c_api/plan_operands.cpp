#include "dispatcher/c_api/plan_operands.hpp"

#include <fmt/format.h>

#include <array>
#include <span>
#include <utility>

namespace convjit {

namespace {

// The operands an op needs, with what each is for.  Fixed capacity: a plan's
// every call checks them, and the hot path allocates nothing.
class Needed {
 public:
  Needed& operator()(const void* pointer, const char* what, bool needed = true) {
    if (needed) entries_[count_++] = {pointer, what};
    return *this;
  }
  [[nodiscard]] std::span<const std::pair<const void*, const char*>> list() const {
    return {entries_.data(), count_};
  }

 private:
  std::array<std::pair<const void*, const char*>, 8> entries_{};
  std::size_t count_ = 0;
};

Needed needed_tensors(const OpDescriptor& d, const convjit_operands_t& o) {
  Needed n;
  const bool fwd = d.direction == Direction::fwd;
  switch (d.kind) {
    case OpKind::conv:
      if (d.direction == Direction::bwddata) return n(o.w, "w")(o.dy, "dy")(o.out, "out (dx)");
      if (d.direction == Direction::bwdfilt) return n(o.x, "x")(o.dy, "dy")(o.out, "out (dw)");
      return n(o.x, "x")(o.w, "w")(o.out, "out (y)")(
          o.bias, "bias (the descriptor's epilogue adds one)", d.has_bias())(
          o.residual, "residual (the descriptor's epilogue adds one)", d.has_residual());
    case OpKind::bias_grad:
      return n(o.dy, "dy")(o.out, "out (db)");
    case OpKind::pool:
      if (fwd) return n(o.x, "x")(o.out, "out (y)");
      return n(o.x, "x (max pooling's backward reads it)", d.pool_mode == PoolingMode::max)(
          o.dy, "dy")(o.out, "out (dx)");
    case OpKind::resize:
      return fwd ? n(o.x, "x")(o.out, "out (y)") : n(o.dy, "dy")(o.out, "out (dx)");
    case OpKind::batchnorm:
      if (fwd) return n(o.x, "x")(o.out, "out (y)");
      return n(o.x, "x")(o.dy, "dy")(o.out, "out (dx: the mask selects it)",
                                     d.has_norm_flag(kNormGradInput));
  }
  return n;
}

Needed needed_channels(const OpDescriptor& d, const convjit_norm_operands_t& o) {
  const bool inference = d.has_norm_flag(kNormInference);
  const bool training_bwd = d.direction == Direction::bwd && !inference;
  const bool bwd = d.direction == Direction::bwd;
  Needed n;
  n(o.scale, "norm.scale (the descriptor has a scale)", d.has_norm_flag(kNormScale));
  n(o.shift, "norm.shift (the descriptor has a shift)",
    d.has_norm_flag(kNormShift) && (!bwd || d.activation != Activation::identity));
  n(o.running_mean, "norm.running_mean (inference reads it)", inference);
  n(o.running_var, "norm.running_var (inference reads it)", inference);
  n(o.saved_mean, "norm.saved_mean (a training bwd reads it)", training_bwd);
  n(o.saved_invstd, "norm.saved_invstd (a training bwd reads it)", training_bwd);
  n(o.scale_grad, "norm.scale_grad (the mask selects it)", bwd && d.has_norm_flag(kNormGradScale));
  n(o.shift_grad, "norm.shift_grad (the mask selects it)", bwd && d.has_norm_flag(kNormGradShift));
  return n;
}

Status first_missing(const Needed& needed, const OpDescriptor& d) {
  for (const auto& [pointer, what] : needed.list())
    if (pointer == nullptr)
      return Status::invalid(fmt::format("operands.{} is NULL; the plan's {} {} needs it", what,
                                         op_kind_name(d.kind), direction_name(d.direction)));
  return Status::ok();
}

}  // namespace

Status bind_plan_operands(const OpDescriptor& d, const convjit_operands_t& o, ExecArgs& args) {
  if (Status s = first_missing(needed_tensors(d, o), d); !s.is_ok()) return s;
  args.x = o.x, args.w = o.w, args.dy = o.dy, args.out = o.out;
  args.bias = o.bias, args.residual = o.residual;
  if (!d.is_batchnorm()) return Status::ok();
  const convjit_norm_operands_t& n = o.norm;
  if (Status s = first_missing(needed_channels(d, n), d); !s.is_ok()) return s;
  const bool training_fwd = d.direction == Direction::fwd && !d.has_norm_flag(kNormInference);
  if (training_fwd && (n.running_mean == nullptr) != (n.running_var == nullptr))
    return Status::invalid(
        "operands.norm.running_mean and running_var must both be given (to update them) or "
        "both be NULL");
  NormOperands& norm = args.norm;
  norm.scale = n.scale, norm.shift = n.shift;
  norm.running_mean = n.running_mean, norm.running_var = n.running_var;
  norm.mean = n.saved_mean, norm.invstd = n.saved_invstd;
  norm.scale_grad = n.scale_grad, norm.shift_grad = n.shift_grad;
  norm.momentum = n.momentum;
  return Status::ok();
}

}  // namespace convjit
