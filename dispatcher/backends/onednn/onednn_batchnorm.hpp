// A batchnorm on oneDNN 2's batch_normalization, and what convjit adds to it.
//
// oneDNN computes the batch's mean and biased variance and normalises; it
// keeps no running statistics, saves the variance where convjit saves
// invstd, fuses no activation into a batch normalization, and neither
// scales by alpha nor blends by beta.  So the kernel runs oneDNN in f32 on
// x's layout (reordering a bf16 or f16 operand into it), into an f32
// result, and adds:
//   fwd: the activation, an eltwise primitive in place on the result;
//     after a training fwd, invstd = 1/sqrt(var + eps) and the running
//     update with n/(n-1) for PyTorch's unbiased variance (ONNX's
//     population one), on the host;
//   bwd: the variance oneDNN reads, from the saved invstd; with an
//     activation, dy through its slope (eltwise backward) at the
//     pre-activation that a forward on the saved statistics recomputes;
//   the output: the result reordered into the caller's layout and type (a
//     bf16 or f16 output rounded once), or alpha r + beta out on the host.
// An f32 call with nothing to add writes the caller's output directly.
// The parameter gradients are summed on the host in f64 from the f32 dy
// oneDNN read: its own f32 sums, which it computes whenever a scale or
// shift is used (oneDNN 2.6 implements no data-only backward with one), are
// dropped.  An absent scale or shift is ones or zeros.
#pragma once

#include <memory>

#include "dispatcher/backend.hpp"
#include "dispatcher/backends/onednn/onednn_problem.hpp"

namespace convjit {

// The kernel for batchnorm `desc` (as onednn_problem saw it); UNSUPPORTED
// when oneDNN has no implementation.  `note` says which oneDNN chose.
[[nodiscard]] Result<std::unique_ptr<Kernel>> build_onednn_batchnorm(const OpDescriptor& desc,
                                                                     const OnednnProblem& problem,
                                                                     std::string& note);

}  // namespace convjit
