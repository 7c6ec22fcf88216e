// A plan's operands (convjit_operands_t) as the ExecArgs its kernel runs
// on: which the op reads and writes follows the descriptor, and one it
// needs that is NULL is an error naming it and what it is for.
#pragma once

#include "convjit/convjit.h"
#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

// `args` carries alpha, beta and exec's stream and workspace; the operands
// are added to it.
[[nodiscard]] Status bind_plan_operands(const OpDescriptor& desc, const convjit_operands_t& ops,
                                        ExecArgs& args);

}  // namespace convjit
