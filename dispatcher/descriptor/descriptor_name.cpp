#include "dispatcher/descriptor/descriptor_name.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "dispatcher/descriptor/descriptor_validation.hpp"
#include "dispatcher/descriptor/name_tokens.hpp"

namespace convjit {

namespace {

using name_tokens::NameWriter;
using name_tokens::ParseError;
using name_tokens::TokenReader;
using name_tokens::kEpilogueTag;

constexpr std::string_view kPadEndTag = "pe";
constexpr std::string_view kWeightStridesTag = "ws";
constexpr std::string_view kBiasTag = "bias";
constexpr std::string_view kResidualTag = "res";
constexpr Activation kActivations[] = {Activation::identity, Activation::relu, Activation::silu,
                                       Activation::sigmoid};

struct PrefixInfo {
  std::string_view stem;
  OpKind kind;
  PoolingMode mode;
};
constexpr PrefixInfo kPrefixes[] = {
    {"conv", OpKind::conv, PoolingMode::none},
    {"maxpool", OpKind::pool, PoolingMode::max},
    {"avgpool", OpKind::pool, PoolingMode::avg_exclude_pad},
    {"avgpadpool", OpKind::pool, PoolingMode::avg_include_pad},
    {"biasgrad", OpKind::bias_grad, PoolingMode::none},
    {"batchnorm", OpKind::batchnorm, PoolingMode::none},
    {"resize", OpKind::resize, PoolingMode::none},
};

std::string_view prefix_stem(const OpDescriptor& d) {
  for (const auto& p : kPrefixes)
    if (p.kind == d.kind && p.mode == d.pool_mode) return p.stem;
  return "?";
}

Dims5 contiguous_weight_strides(const OpDescriptor& d) {
  return contiguous_strides(d.w_dims, d.rank(), /*channels_last=*/false);
}

// ---- formatting -----------------------------------------------------------

void write_extensions(NameWriter& w, const OpDescriptor& d) {
  if (d.pad_end != d.pad_begin) {
    w.token(kPadEndTag);
    w.integers(d.pad_end);
  }
  if (d.is_conv() && d.w_strides != contiguous_weight_strides(d)) {
    w.token(kWeightStridesTag);
    w.integers(d.w_strides);
  }
  if (d.has_epilogue()) {
    w.token(kEpilogueTag);
    w.token(activation_name(d.activation));
    if (d.has_bias()) w.token(kBiasTag);
    if (d.has_residual()) w.token(kResidualTag);
  }
  name_tokens::write_dtype(w, d.dtype);
}

// ---- parsing --------------------------------------------------------------

void parse_prefix(TokenReader& r, OpDescriptor& d) {
  const std::string_view token = r.next("an op prefix");
  for (const auto& p : kPrefixes) {
    if (token.size() != p.stem.size() + 2 || !token.starts_with(p.stem) || token.back() != 'd')
      continue;
    const char digit = token[p.stem.size()];
    if (digit < '1' || digit > '3') break;
    d.kind = p.kind;
    d.pool_mode = p.mode;
    d.spatial_dims = digit - '0';
    return;
  }
  r.back();
  r.fail(
      "conv<N>d, maxpool<N>d, avgpool<N>d, avgpadpool<N>d, biasgrad<N>d, batchnorm<N>d or "
      "resize<N>d with N in 1..3");
}

void parse_direction(TokenReader& r, OpDescriptor& d) {
  const std::string_view token = r.next("the op direction");
  if (d.is_conv()) {
    if (token == "fwd") {
      d.direction = Direction::fwd;
      return;
    }
    if (token == "bwddata") {
      d.direction = Direction::bwddata;
      return;
    }
    if (token == "bwdfilt") {
      d.direction = Direction::bwdfilt;
      return;
    }
    r.back();
    r.fail("fwd, bwddata or bwdfilt");
  }
  r.back();
  name_tokens::parse_fwd_or_bwd(r, d);
}

// The extension tags that may still come after `last` (the last one
// read, or "" for none), for error messages.
std::string extension_tags(const OpDescriptor& d, std::string_view last) {
  std::string tags;
  const bool fwd = d.is_conv() && d.direction == Direction::fwd;
  for (const auto& [tag, applies] : {std::pair{kPadEndTag, d.kind != OpKind::bias_grad},
                                     std::pair{kWeightStridesTag, d.is_conv()},
                                     std::pair{kEpilogueTag, fwd}}) {
    if (!last.empty()) {
      if (tag == last) last = "";
      continue;
    }
    if (applies) tags += fmt::format("{}, ", tag);
  }
  return tags;
}

// ep_<activation>[_bias][_res], after the tag.
void parse_epilogue(TokenReader& r, OpDescriptor& d) {
  r.next("ep");
  const std::string_view act = r.next("an activation");
  const auto* found = std::find_if(std::begin(kActivations), std::end(kActivations),
                                   [&](Activation a) { return activation_name(a) == act; });
  if (found == std::end(kActivations)) {
    r.back();
    r.fail("an activation: identity, relu, silu or sigmoid");
  }
  d.activation = *found;
  if (r.peek() == kBiasTag) r.next("bias"), d.epilogue_operands |= kEpilogueBias;
  if (r.peek() == kResidualTag) r.next("res"), d.epilogue_operands |= kEpilogueResidual;
  if (!d.has_epilogue()) {
    r.back();
    r.fail("bias or res after ep_identity (omit 'ep' for the plain conv)");
  }
}

void parse_extensions(TokenReader& r, OpDescriptor& d) {
  d.pad_end = d.pad_begin;
  if (d.is_conv()) d.w_strides = contiguous_weight_strides(d);
  std::string_view last;  // the last tag read
  if (d.kind != OpKind::bias_grad && r.peek() == kPadEndTag) {
    last = r.next("pe");
    d.pad_end = r.integers<kMaxSpatialDims>("pad end");
    if (d.pad_end == d.pad_begin) {
      r.back();
      r.fail("a pad end different from the pads (omit 'pe' for symmetric padding)");
    }
  }
  if (d.is_conv() && r.peek() == kWeightStridesTag) {
    last = r.next("ws");
    d.w_strides = r.integers<kMaxRank>("w strides");
    if (d.w_strides == contiguous_weight_strides(d)) {
      r.back();
      r.fail("non-contiguous w strides (omit 'ws' for contiguous weights)");
    }
  }
  if (d.is_conv() && d.direction == Direction::fwd && r.peek() == kEpilogueTag) {
    last = kEpilogueTag;
    parse_epilogue(r, d);
  }
  name_tokens::parse_dtype_and_end(r, d, extension_tags(d, last));
}

OpDescriptor parse_tokens(TokenReader& r) {
  OpDescriptor d;
  parse_prefix(r, d);
  if (d.kind == OpKind::batchnorm) {
    parse_batchnorm_name(r, d);
    return d;
  }
  if (d.kind == OpKind::resize) {
    parse_resize_name(r, d);
    return d;
  }
  if (d.kind == OpKind::bias_grad) {
    d.direction = Direction::bwd;
    d.symbolic_batch = name_tokens::parse_tensor_pair(r, "dy", d.y_dims, d.y_strides);
    parse_extensions(r, d);
    return d;
  }
  const bool symbolic = name_tokens::parse_tensor_pair(r, "x", d.x_dims, d.x_strides);
  if (d.is_conv()) {
    d.w_dims = r.integers<kMaxRank>("w shape");
  } else {
    d.window = r.integers<kMaxSpatialDims>("window");
  }
  name_tokens::parse_matching_y(r, symbolic, "y", d.y_dims, d.y_strides);
  d.symbolic_batch = symbolic ? 1 : 0;
  d.pad_begin = r.integers<kMaxSpatialDims>("pads");
  d.stride = r.integers<kMaxSpatialDims>("strides");
  d.dilation = r.integers<kMaxSpatialDims>("dilations");
  if (d.is_conv()) d.groups = r.integer("groups");
  parse_direction(r, d);
  parse_extensions(r, d);
  return d;
}

std::string_view strip_library_wrapper(std::string_view name) {
  if (name.starts_with("lib") && name.ends_with(".so")) return name.substr(3, name.size() - 6);
  return name;
}

}  // namespace

std::string descriptor_name(const OpDescriptor& d) {
  NameWriter w;
  w.token(fmt::format("{}{}d", prefix_stem(d), d.spatial_dims));
  const bool symbolic = d.symbolic_batch != 0;
  if (d.kind == OpKind::batchnorm) {
    write_batchnorm_name(w, d);
    return w.take();
  }
  if (d.kind == OpKind::resize) {
    write_resize_name(w, d);
    return w.take();
  }
  if (d.kind == OpKind::bias_grad) {
    w.shape(d.y_dims, symbolic);
    w.integers(d.y_strides);
    write_extensions(w, d);
    return w.take();
  }
  w.shape(d.x_dims, symbolic);
  w.integers(d.x_strides);
  if (d.is_conv()) {
    w.integers(d.w_dims);
  } else {
    w.integers(d.window);
  }
  w.shape(d.y_dims, symbolic);
  w.integers(d.y_strides);
  w.integers(d.pad_begin);
  w.integers(d.stride);
  w.integers(d.dilation);
  if (d.is_conv()) w.integer(d.groups);
  w.token(direction_name(d.direction));
  write_extensions(w, d);
  return w.take();
}

OpDescriptor with_symbolic_batch(const OpDescriptor& desc) {
  OpDescriptor symbolic = desc;
  symbolic.symbolic_batch = 1;
  if (desc.kind != OpKind::bias_grad) symbolic.x_dims[0] = 0;
  symbolic.y_dims[0] = 0;
  return symbolic;
}

OpDescriptor with_batch(const OpDescriptor& symbolic, std::int64_t batch) {
  OpDescriptor concrete = symbolic;
  concrete.symbolic_batch = 0;
  if (symbolic.kind != OpKind::bias_grad) concrete.x_dims[0] = batch;
  concrete.y_dims[0] = batch;
  return concrete;
}

Result<OpDescriptor> parse_descriptor_name(std::string_view name) {
  const std::string_view bare = strip_library_wrapper(name);
  OpDescriptor desc;
  try {
    TokenReader reader(bare);
    desc = parse_tokens(reader);
  } catch (const ParseError& error) {
    return Status::invalid(fmt::format("malformed descriptor name '{}': {}", bare, error.message));
  }
  Status valid = validate_descriptor(desc);
  if (!valid.is_ok())
    return Status::invalid(
        fmt::format("descriptor name '{}' describes an invalid op: {}", bare, valid.message()));
  return desc;
}

}  // namespace convjit
