// batchnorm<N>d names (grammar in descriptor_name.hpp).
#include <fmt/format.h>

#include <bit>

#include "dispatcher/descriptor/name_tokens.hpp"

namespace convjit {

namespace {

using name_tokens::NameWriter;
using name_tokens::TokenReader;

constexpr std::string_view kInferenceTag = "inference";
constexpr std::string_view kNoScaleTag = "noscale";
constexpr std::string_view kNoShiftTag = "noshift";
constexpr std::string_view kOnnxTag = "onnx";
constexpr std::string_view kGradsTag = "grads";
constexpr std::string_view kEpsilonTag = "eps";

struct GradToken {
  std::string_view token;
  NormFlag flag;
};
constexpr GradToken kGrads[] = {
    {"dx", kNormGradInput}, {"dscale", kNormGradScale}, {"dshift", kNormGradShift}};

void parse_grads(TokenReader& r, OpDescriptor& d) {
  for (const GradToken& g : kGrads)
    if (r.accept(g.token)) d.norm_flags |= g.flag;
  const std::int32_t mask = d.norm_flags & kNormGradMask;
  if (mask == 0 || mask == kNormGradMask) {
    if (mask == 0) r.fail("dx, dscale or dshift after 'grads', in that order");
    r.back();
    r.fail("fewer than all three gradients (omit 'grads' for dx, dscale and dshift)");
  }
}

constexpr Activation kBatchnormActivations[] = {Activation::relu, Activation::silu};

}  // namespace

void write_batchnorm_name(NameWriter& w, const OpDescriptor& d) {
  const bool symbolic = d.symbolic_batch != 0;
  name_tokens::write_tensor_pair(w, d.x_dims, d.x_strides, symbolic);
  name_tokens::write_tensor_pair(w, d.y_dims, d.y_strides, symbolic);
  w.token(direction_name(d.direction));
  if (d.has_norm_flag(kNormInference)) w.token(kInferenceTag);
  if (!d.has_norm_flag(kNormScale)) w.token(kNoScaleTag);
  if (!d.has_norm_flag(kNormShift)) w.token(kNoShiftTag);
  if (d.has_norm_flag(kNormOnnxRunningStats)) w.token(kOnnxTag);
  if (d.norm_epsilon() != kDefaultNormEpsilon) {
    w.token(kEpsilonTag);
    w.decimal(d.norm_epsilon());
  }
  if (d.direction == Direction::bwd && (d.norm_flags & kNormGradMask) != kNormGradMask) {
    w.token(kGradsTag);
    for (const GradToken& g : kGrads)
      if (d.has_norm_flag(g.flag)) w.token(g.token);
  }
  if (d.activation != Activation::identity) {
    w.token(name_tokens::kEpilogueTag);
    w.token(activation_name(d.activation));
  }
  name_tokens::write_dtype(w, d.dtype);
}

void parse_batchnorm_name(TokenReader& r, OpDescriptor& d) {
  const bool symbolic = name_tokens::parse_tensor_pair(r, "x", d.x_dims, d.x_strides);
  name_tokens::parse_matching_y(r, symbolic, "y", d.y_dims, d.y_strides);
  d.symbolic_batch = symbolic ? 1 : 0;
  name_tokens::parse_fwd_or_bwd(r, d);
  d.norm_flags = kNormScale | kNormShift;
  if (r.accept(kInferenceTag)) d.norm_flags |= kNormInference;
  if (r.accept(kNoScaleTag)) d.norm_flags &= ~kNormScale;
  if (r.accept(kNoShiftTag)) d.norm_flags &= ~kNormShift;
  if (r.accept(kOnnxTag)) d.norm_flags |= kNormOnnxRunningStats;
  d.norm_epsilon_bits = std::bit_cast<std::int64_t>(kDefaultNormEpsilon);
  if (r.accept(kEpsilonTag)) {
    const double epsilon = r.decimal("epsilon");
    if (epsilon == kDefaultNormEpsilon) {
      r.back();
      r.fail("an epsilon other than 1e-05 (omit 'eps' for the default)");
    }
    d.norm_epsilon_bits = std::bit_cast<std::int64_t>(epsilon);
  }
  if (d.direction == Direction::bwd) {
    if (r.accept(kGradsTag)) {
      parse_grads(r, d);
    } else {
      d.norm_flags |= kNormGradMask;
    }
  }
  if (r.accept(name_tokens::kEpilogueTag))
    d.activation = name_tokens::parse_choice(r, kBatchnormActivations, activation_name,
                                             "the fused activation after 'ep'");
  name_tokens::parse_dtype_and_end(
      r, d,
      d.direction == Direction::bwd ? "inference, noscale, noshift, eps, grads, ep, "
                                    : "inference, noscale, noshift, onnx, eps, ep, ");
}

}  // namespace convjit
