// Integer flags, read strictly: an optional minus sign and decimal digits,
// within the flag's range, and for lists every comma-separated item.
// CLI11's own conversion reads 0x/0o/0b prefixes, saturates values beyond
// 64 bits and its list delimiter drops empty items, so a typo in a shape
// silently became another shape; here it is a usage error naming the flag.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace convjit::cli {

struct IntegerRange {
  std::int64_t min = std::numeric_limits<std::int64_t>::min();
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
};

// Throw CLI::ValidationError (a usage error, exit 2) naming `flag`.
[[nodiscard]] std::int64_t parse_integer_flag(const std::string& flag, std::string_view text,
                                              IntegerRange range = {});
[[nodiscard]] std::vector<std::int64_t> parse_integer_list_flag(const std::string& flag,
                                                                std::string_view text);

// `flag` stores into `target`, which keeps its value when the flag is absent.
template <class T>
CLI::Option* add_integer_flag(CLI::App& command, const std::string& flag, T& target,
                              const std::string& help, IntegerRange range = {}) {
  static_assert(std::is_integral_v<T>);
  if (std::cmp_less(range.min, std::numeric_limits<T>::min()))
    range.min = static_cast<std::int64_t>(std::numeric_limits<T>::min());
  if (std::cmp_greater(range.max, std::numeric_limits<T>::max()))
    range.max = static_cast<std::int64_t>(std::numeric_limits<T>::max());
  return command
      .add_option_function<std::string>(
          flag,
          [&target, flag, range](const std::string& text) {
            target = static_cast<T>(parse_integer_flag(flag, text, range));
          },
          help)
      ->type_name("INT");
}

CLI::Option* add_integer_list_flag(CLI::App& command, const std::string& flag,
                                   std::vector<std::int64_t>& target, const std::string& help);

}  // namespace convjit::cli
