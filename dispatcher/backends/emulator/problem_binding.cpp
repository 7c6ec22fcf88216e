#include "dispatcher/backends/emulator/problem_binding.hpp"

#include <fmt/format.h>

#include <string_view>

namespace convjit::emulator {

namespace {

long long* member(std::string_view name) {
#define CONVJIT_MATCH_PROBLEM_MEMBER(field) \
  if (name == #field) return &emulated::Problem::field;
  CONVJIT_PROBLEM_MEMBERS(CONVJIT_MATCH_PROBLEM_MEMBER)
#undef CONVJIT_MATCH_PROBLEM_MEMBER
  return nullptr;
}

}  // namespace

Status bind_problem(std::span<const ProblemConstant> constants) {
#define CONVJIT_RESET_PROBLEM_MEMBER(field) emulated::Problem::field = 0;
  CONVJIT_PROBLEM_MEMBERS(CONVJIT_RESET_PROBLEM_MEMBER)
#undef CONVJIT_RESET_PROBLEM_MEMBER
  for (const ProblemConstant& c : constants) {
    long long* slot = member(c.name);
    if (slot == nullptr)
      return Status(CONVJIT_STATUS_INTERNAL_ERROR,
                    fmt::format("the kernel prelude declares Problem::{}, which the emulator does "
                                "not know; add it to "
                                "CONVJIT_PROBLEM_MEMBERS in emulator/problem_binding.hpp",
                                c.name));
    *slot = c.value;
  }
  return Status::ok();
}

}  // namespace convjit::emulator
