#include "dispatcher/c_api/plan_operands.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace convjit {

namespace {

using Needed = std::vector<std::pair<const void*, const char*>>;

// The tensor operands `d` needs, with what each is for.
Needed needed_tensors(const OpDescriptor& d, const convjit_operands_t& o) {
  switch (d.kind) {
    case OpKind::conv:
      if (d.direction == Direction::bwddata) return {{o.w, "w"}, {o.dy, "dy"}, {o.out, "out (dx)"}};
      if (d.direction == Direction::bwdfilt) return {{o.x, "x"}, {o.dy, "dy"}, {o.out, "out (dw)"}};
      return {
          {o.x, "x"},
          {o.w, "w"},
          {o.out, "out (y)"},
          {d.has_bias() ? o.bias : &o, "bias (the descriptor's epilogue adds one)"},
          {d.has_residual() ? o.residual : &o, "residual (the descriptor's epilogue adds one)"}};
    case OpKind::bias_grad:
      return {{o.dy, "dy"}, {o.out, "out (db)"}};
    case OpKind::pool:
      if (d.direction == Direction::fwd) return {{o.x, "x"}, {o.out, "out (y)"}};
      return {{d.pool_mode == PoolingMode::max ? o.x : &o, "x (max pooling's backward reads it)"},
              {o.dy, "dy"},
              {o.out, "out (dx)"}};
    case OpKind::resize:
      if (d.direction == Direction::fwd) return {{o.x, "x"}, {o.out, "out (y)"}};
      return {{o.dy, "dy"}, {o.out, "out (dx)"}};
    case OpKind::batchnorm:
      if (d.direction == Direction::fwd) return {{o.x, "x"}, {o.out, "out (y)"}};
      return {{o.x, "x"},
              {o.dy, "dy"},
              {d.has_norm_flag(kNormGradInput) ? o.out : &o, "out (dx: the mask selects it)"}};
  }
  return {};
}

// A batchnorm's per-channel operands it needs.
Needed needed_channels(const OpDescriptor& d, const convjit_norm_operands_t& n) {
  const bool inference = d.has_norm_flag(kNormInference);
  const bool bwd = d.direction == Direction::bwd;
  const auto when = [&n](bool needed, const void* p) { return needed ? p : &n; };
  return {
      {when(d.has_norm_flag(kNormScale), n.scale), "norm.scale (the descriptor has a scale)"},
      {when(d.has_norm_flag(kNormShift) && (!bwd || d.activation != Activation::identity), n.shift),
       "norm.shift (the descriptor has a shift)"},
      {when(inference, n.running_mean), "norm.running_mean (inference reads it)"},
      {when(inference, n.running_var), "norm.running_var (inference reads it)"},
      {when(bwd && !inference, n.saved_mean), "norm.saved_mean (a training bwd reads it)"},
      {when(bwd && !inference, n.saved_invstd), "norm.saved_invstd (a training bwd reads it)"},
      {when(bwd && d.has_norm_flag(kNormGradScale), n.scale_grad),
       "norm.scale_grad (the mask selects it)"},
      {when(bwd && d.has_norm_flag(kNormGradShift), n.shift_grad),
       "norm.shift_grad (the mask selects it)"},
  };
}

Status first_missing(const Needed& needed, const OpDescriptor& d) {
  for (const auto& [pointer, what] : needed)
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
