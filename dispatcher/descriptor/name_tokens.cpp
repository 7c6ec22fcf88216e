#include "dispatcher/descriptor/name_tokens.hpp"

#include <charconv>
#include <cmath>

namespace convjit::name_tokens {

void NameWriter::decimal(double value) {
  // std::to_chars without a precision is the shortest round-trip form.
  std::array<char, 32> text{};
  const auto result = std::to_chars(text.data(), text.data() + text.size(), value);
  token(std::string_view(text.data(), static_cast<std::size_t>(result.ptr - text.data())));
}

std::optional<std::int64_t> canonical_integer(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool canonical = !text.empty() && text[0] != '-' && (text.size() == 1 || text[0] != '0');
  if (error != std::errc() || end != text.data() + text.size() || !canonical) return std::nullopt;
  return value;
}

TokenReader::TokenReader(std::string_view name) {
  std::size_t start = 0;
  while (true) {
    const std::size_t end = name.find('_', start);
    tokens_.push_back(name.substr(start, end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

void TokenReader::fail(std::string_view expected) const {
  if (at_end())
    throw ParseError{fmt::format("the name ends after {} tokens where {} was expected",
                                 tokens_.size(), expected)};
  throw ParseError{
      fmt::format("token {} '{}': expected {}", index_ + 1, tokens_[index_], expected)};
}

std::string_view TokenReader::next(std::string_view expected) {
  if (at_end()) fail(expected);
  return tokens_[index_++];
}

bool TokenReader::accept(std::string_view token) {
  if (at_end() || tokens_[index_] != token) return false;
  ++index_;
  return true;
}

std::int64_t TokenReader::integer(std::string_view field) {
  const auto value = canonical_integer(next(field));
  if (!value) {
    back();
    fail(fmt::format("{} as a non-negative integer without leading zeros", field));
  }
  return *value;
}

double TokenReader::decimal(std::string_view field) {
  const std::string_view text = next(field);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  NameWriter canonical;
  if (error == std::errc() && end == text.data() + text.size()) canonical.decimal(value);
  if (canonical.take() != text || !(value >= 0) || std::signbit(value) || std::isinf(value)) {
    back();
    fail(fmt::format("{} as a non-negative decimal in its shortest form", field));
  }
  return value;
}

Dims5 TokenReader::shape(std::string_view field, bool& symbolic) {
  symbolic = peek() == kSymbolicBatch;
  Dims5 dims{};
  if (symbolic) {
    next(field);
  } else if (!canonical_integer(peek())) {
    fail(fmt::format("{}[0] as an integer or B", field));
  } else {
    dims[0] = integer(field);
  }
  for (std::size_t i = 1; i < dims.size(); ++i) dims[i] = integer(fmt::format("{}[{}]", field, i));
  return dims;
}

bool parse_tensor_pair(TokenReader& r, const char* name, Dims5& dims, Dims5& strides) {
  bool symbolic = false;
  dims = r.shape(fmt::format("{} shape", name), symbolic);
  strides = r.integers<kMaxRank>(fmt::format("{} strides", name));
  return symbolic;
}

void write_tensor_pair(NameWriter& w, const Dims5& dims, const Dims5& strides, bool symbolic) {
  w.shape(dims, symbolic);
  w.integers(strides);
}

void parse_matching_y(TokenReader& r, bool symbolic, const char* name, Dims5& dims,
                      Dims5& strides) {
  if (symbolic != (r.peek() == kSymbolicBatch))
    r.fail(symbolic ? fmt::format("B as the {} batch, as the x batch is B", name)
                    : fmt::format("an integer {} batch, as the x batch is concrete", name));
  parse_tensor_pair(r, name, dims, strides);
}

void write_dtype(NameWriter& w, DataType dtype) {
  if (dtype != DataType::f32) w.token(dtype_name(dtype));
}

void parse_dtype_and_end(TokenReader& r, OpDescriptor& d, std::string_view tags) {
  if (!r.at_end()) {
    const std::string_view token = r.next("a dtype");
    const auto dtype = parse_dtype(token);
    if (!dtype || *dtype == DataType::f32) {
      r.back();
      r.fail(
          fmt::format("{}f16, bf16, f64 or the end of the name (f32 is the default)", tags));
    }
    d.dtype = *dtype;
  }
  if (!r.at_end()) r.fail("the end of the name");
}

void parse_fwd_or_bwd(TokenReader& r, OpDescriptor& d) {
  const std::string_view token = r.next("the op direction");
  if (token == "fwd" || token == "bwd") {
    d.direction = token == "fwd" ? Direction::fwd : Direction::bwd;
    return;
  }
  r.back();
  r.fail("fwd or bwd");
}

}  // namespace convjit::name_tokens
