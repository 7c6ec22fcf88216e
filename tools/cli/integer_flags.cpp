#include "integer_flags.hpp"

#include <fmt/format.h>

#include <charconv>

namespace convjit::cli {

namespace {

bool is_decimal(std::string_view text) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

std::string describe(IntegerRange range) {
  constexpr IntegerRange kAny;
  if (range.min == kAny.min && range.max == kAny.max) return "that fits in 64 bits";
  if (range.max == kAny.max) return fmt::format("of at least {}", range.min);
  return fmt::format("from {} to {}", range.min, range.max);
}

}  // namespace

std::int64_t parse_integer_flag(const std::string& flag, std::string_view text,
                                 IntegerRange range) {
  if (!is_decimal(text))
    throw CLI::ValidationError(
        flag, fmt::format("'{}' is not a decimal integer; write digits only, e.g. 16", text));
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range || value < range.min || value > range.max)
    throw CLI::ValidationError(
        flag, fmt::format("{} is out of range: use an integer {}", text, describe(range)));
  return value;
}

std::vector<std::int64_t> parse_integer_list_flag(const std::string& flag, std::string_view text) {
  std::vector<std::int64_t> values;
  std::size_t index = 0;
  for (std::size_t begin = 0;; ++index) {
    const std::size_t comma = text.find(',', begin);
    const std::string_view item = text.substr(begin, comma - begin);
    if (item.empty())
      throw CLI::ValidationError(
          flag, fmt::format("'{}' has an empty item at position {}; give a value between every "
                            "two commas",
                            text, index + 1));
    values.push_back(parse_integer_flag(flag, item));
    if (comma == std::string_view::npos) return values;
    begin = comma + 1;
  }
}

CLI::Option* add_integer_list_flag(CLI::App& command, const std::string& flag,
                                   std::vector<std::int64_t>& target, const std::string& help) {
  return command
      .add_option_function<std::string>(
          flag,
          [&target, flag](const std::string& text) {
            target = parse_integer_list_flag(flag, text);
          },
          help)
      ->type_name("LIST");
}

}  // namespace convjit::cli
