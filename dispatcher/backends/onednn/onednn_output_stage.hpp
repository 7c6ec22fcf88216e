// What follows a oneDNN primitive when its result cannot be the caller's
// output as it stands: out = alpha r + beta out, or a conv fwd's fused
// epilogue act(alpha r + bias [+ residual]) + beta out, from the result r
// that oneDNN wrote into a buffer laid out as the output (f32 where oneDNN
// can accumulate into it, so a bf16 or f16 output is rounded once).
//
// It reuses the reference's arithmetic (tensor_view.hpp,
// epilogue_reference.hpp), so the two agree on how alpha, beta and the
// epilogue combine, down to never reading out when beta is 0.
#pragma once

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit {

// Writes `result` (of `result_type`, laid out as the output) into
// args.out as the op's alpha, beta and epilogue say.
void apply_output_stage(const OpDescriptor& desc, DataType result_type, const void* result,
                        const ExecArgs& args);

}  // namespace convjit
