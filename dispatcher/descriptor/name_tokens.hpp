// The token layer of descriptor names (descriptor_name.hpp): writing and
// reading '_'-separated tokens, canonical integers and decimals, and the
// parts every op's name shares (shapes, the dtype suffix).
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit::name_tokens {

inline constexpr std::string_view kSymbolicBatch = "B";
inline constexpr std::string_view kEpilogueTag = "ep";

class NameWriter {
 public:
  void token(std::string_view text) {
    if (out_.size() != 0) out_.push_back('_');
    out_.append(text);
  }
  void integer(std::int64_t value) { token(fmt::format("{}", value)); }
  template <std::size_t N>
  void integers(const std::array<std::int64_t, N>& values) {
    for (auto v : values) integer(v);
  }
  template <std::size_t N>
  void shape(const std::array<std::int64_t, N>& dims, bool symbolic_batch) {
    if (symbolic_batch) {
      token(kSymbolicBatch);
    } else {
      integer(dims[0]);
    }
    for (std::size_t i = 1; i < N; ++i) integer(dims[i]);
  }
  // The shortest decimal that reads back as `value` ("1.5", "0.3333333333333333").
  void decimal(double value);
  std::string take() { return fmt::to_string(out_); }

 private:
  fmt::memory_buffer out_;
};

// Canonical decimal only: no sign, no leading zeros, fits in int64.
[[nodiscard]] std::optional<std::int64_t> canonical_integer(std::string_view text);

struct ParseError {
  std::string message;
};

// Reads tokens left to right; every failure throws ParseError naming the
// token, its 1-based position and what was expected.
class TokenReader {
 public:
  explicit TokenReader(std::string_view name);

  [[noreturn]] void fail(std::string_view expected) const;
  [[nodiscard]] bool at_end() const { return index_ >= tokens_.size(); }
  [[nodiscard]] std::string_view peek() const { return at_end() ? "" : tokens_[index_]; }
  std::string_view next(std::string_view expected);
  void back() { --index_; }
  // Consumes the next token if it is `token`.
  bool accept(std::string_view token);

  std::int64_t integer(std::string_view field);
  template <std::size_t N>
  std::array<std::int64_t, N> integers(std::string_view field) {
    std::array<std::int64_t, N> values{};
    for (std::size_t i = 0; i < N; ++i) values[i] = integer(fmt::format("{}[{}]", field, i));
    return values;
  }
  // A positive decimal as NameWriter::decimal writes it, or 0.
  double decimal(std::string_view field);
  // A 5-slot shape whose batch may be the literal B.
  Dims5 shape(std::string_view field, bool& symbolic);

 private:
  std::vector<std::string_view> tokens_;
  std::size_t index_ = 0;
};

// x's and y's shapes and strides (x first), as batchnorm, resize and pool
// names write them; returns whether the batch is the literal B, in both.
bool parse_tensor_pair(TokenReader& r, const char* name, Dims5& dims, Dims5& strides);
void write_tensor_pair(NameWriter& w, const Dims5& dims, const Dims5& strides, bool symbolic);
// The y pair after x's: its batch must be B exactly when x's is.
void parse_matching_y(TokenReader& r, bool symbolic, const char* name, Dims5& dims,
                      Dims5& strides);

// The dtype suffix (absent for f32) and the end of the name.  `tags` lists
// the extension tags that could still have come, for the error message.
void write_dtype(NameWriter& w, DataType dtype);
void parse_dtype_and_end(TokenReader& r, OpDescriptor& d, std::string_view tags);

// fwd or bwd.
void parse_fwd_or_bwd(TokenReader& r, OpDescriptor& d);

// The one of `choices` whose name(choice) is the next token; the error
// lists them all.
template <class Enum, std::size_t N, class Name>
Enum parse_choice(TokenReader& r, const Enum (&choices)[N], Name name, std::string_view what) {
  const std::string_view token = r.next(what);
  for (Enum e : choices)
    if (name(e) == token) return e;
  r.back();
  std::string listed;
  for (Enum e : choices) listed += fmt::format("{}{}", listed.empty() ? "" : ", ", name(e));
  r.fail(fmt::format("{}: one of {}", what, listed));
}

}  // namespace convjit::name_tokens

namespace convjit {

// Per-op name grammars after the prefix token (descriptor_name.cpp reads
// the prefix and dispatches).
void write_batchnorm_name(name_tokens::NameWriter& w, const OpDescriptor& d);
void parse_batchnorm_name(name_tokens::TokenReader& r, OpDescriptor& d);
void write_resize_name(name_tokens::NameWriter& w, const OpDescriptor& d);
void parse_resize_name(name_tokens::TokenReader& r, OpDescriptor& d);

}  // namespace convjit
