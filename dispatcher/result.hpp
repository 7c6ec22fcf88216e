// Result<T>: a value or the Status explaining why there is none.  A small
// stand-in for C++23's std::expected, which g++ 12 does not offer in C++20.
#pragma once

#include <utility>
#include <variant>

#include "convjit/status.hpp"

namespace convjit {

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {}  // NOLINT: implicit by design

  [[nodiscard]] bool is_ok() const { return std::holds_alternative<T>(state_); }
  [[nodiscard]] const T& value() const& { return std::get<T>(state_); }
  [[nodiscard]] T& value() & { return std::get<T>(state_); }
  [[nodiscard]] T&& value() && { return std::get<T>(std::move(state_)); }
  [[nodiscard]] Status status() const { return is_ok() ? Status::ok() : std::get<Status>(state_); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace convjit
