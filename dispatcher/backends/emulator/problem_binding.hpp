// The emulator's `Problem`: the members the JIT prelude declares as
// constexpr (kernel_source.cpp), here process-wide variables bound before
// each emulated launch.  Emulated launches therefore run one at a time
// (kernel_emulator.cpp holds the lock).
#pragma once

#include <span>
#include <string>

#include "convjit/status.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"

// Every Problem member any template may read.
// clang-format off
#define CONVJIT_PROBLEM_MEMBERS(X)                                                    \
  X(BLOCK) X(N) X(C) X(K) X(G) X(CG) X(MODE) X(SPLIT) X(PACKED) X(SPAN) X(ITERS)       \
  X(D) X(H) X(W) X(OD) X(OH) X(OW) X(T) X(R) X(S)                                     \
  X(PD) X(PH) X(PW) X(QD) X(QH) X(QW) X(SD) X(SH) X(SW) X(DD) X(DH) X(DW)             \
  X(XS0) X(XS1) X(XS2) X(XS3) X(XS4) X(YS0) X(YS1) X(YS2) X(YS3) X(YS4)               \
  X(WS0) X(WS1) X(WS2) X(WS3) X(WS4) X(ACT) X(BIAS) X(RESIDUAL)                      \
  X(COORD) X(RD) X(RH) X(RW) X(TD) X(TH) X(TW)                                        \
  X(COUNT) X(EPS) X(INFERENCE) X(SCALE) X(SHIFT) X(ONNX)                              \
  X(GRAD_INPUT) X(GRAD_SCALE) X(GRAD_SHIFT) X(RANK) X(STAGES) X(STEP) X(FLIP) X(PHASED) X(BLOCKS_PER_SM) \
  X(AD) X(AH) X(AW) X(TILE_N) X(PARTIALS) X(CONSUMERS) X(FILTERS_MN) X(FILL_PHASES) X(PINGPONG) X(CLUSTER) X(CLUSTER_PIXELS) X(ROW_TAPS) X(TMA_STORE) X(STREAM_K) X(SUM_IN_CLUSTER) X(PARTIAL_SUMS) \
  X(FOLD) X(FOFFSET) X(FC) X(FW) X(FS) X(FPW) X(FSW) X(FDW)                              \
  X(FXS0) X(FXS1) X(FXS2) X(FXS3) X(FXS4) X(FWS0) X(FWS1) X(FWS2) X(FWS3) X(FWS4)
// clang-format on

namespace convjit::emulated {

struct Problem {
#define CONVJIT_DECLARE_PROBLEM_MEMBER(name) static inline long long name = 0;
  CONVJIT_PROBLEM_MEMBERS(CONVJIT_DECLARE_PROBLEM_MEMBER)
#undef CONVJIT_DECLARE_PROBLEM_MEMBER
};

}  // namespace convjit::emulated

namespace convjit::emulator {

// Sets every member `constants` names and zeroes the rest; a name the
// emulator does not know is an error (the prelude and this list drifted).
[[nodiscard]] Status bind_problem(std::span<const ProblemConstant> constants);

}  // namespace convjit::emulator
