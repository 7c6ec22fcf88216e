// resize<N>d names (grammar in descriptor_name.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "dispatcher/descriptor/name_tokens.hpp"

namespace convjit {

namespace {

using name_tokens::NameWriter;
using name_tokens::TokenReader;

constexpr std::string_view kScalesTag = "sc";

}  // namespace

void write_resize_name(NameWriter& w, const OpDescriptor& d) {
  const bool symbolic = d.symbolic_batch != 0;
  name_tokens::write_tensor_pair(w, d.x_dims, d.x_strides, symbolic);
  name_tokens::write_tensor_pair(w, d.y_dims, d.y_strides, symbolic);
  w.token(resize_mode_name(d.resize_mode));
  w.token(resize_coordinates_name(d.resize_coordinates));
  w.token(direction_name(d.direction));
  if (d.resize_scale_bits != Dims3{}) {
    w.token(kScalesTag);
    for (int i = 0; i < kMaxSpatialDims; ++i) w.decimal(d.resize_scale(i));
  }
  name_tokens::write_dtype(w, d.dtype);
}

void parse_resize_name(TokenReader& r, OpDescriptor& d) {
  const bool symbolic = name_tokens::parse_tensor_pair(r, "x", d.x_dims, d.x_strides);
  name_tokens::parse_matching_y(r, symbolic, "y", d.y_dims, d.y_strides);
  d.symbolic_batch = symbolic ? 1 : 0;
  d.resize_mode = name_tokens::parse_choice(r, kResizeModes, resize_mode_name, "a resize mode");
  d.resize_coordinates = name_tokens::parse_choice(r, kResizeCoordinates, resize_coordinates_name,
                                                   "a coordinate transformation");
  name_tokens::parse_fwd_or_bwd(r, d);
  if (r.accept(kScalesTag)) {
    for (std::size_t i = 0; i < kMaxSpatialDims; ++i)
      d.resize_scale_bits[i] =
          std::bit_cast<std::int64_t>(r.decimal(fmt::format("scale[{}]", i)));
    if (d.resize_scale_bits == Dims3{}) {
      r.back();
      r.fail("a non-zero scale (omit 'sc' when the scales come from the shapes)");
    }
  }
  name_tokens::parse_dtype_and_end(r, d, "sc, ");
}

}  // namespace convjit
