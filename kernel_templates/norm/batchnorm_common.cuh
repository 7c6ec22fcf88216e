// What the batchnorm templates (norm/batchnorm_{fwd,bwd}.cuh) share: their
// per-channel operands, where a channel's values lie, the per-channel
// statistics and the activation's slope.
//
// The statistics are reduced in two levels with a fixed order, so that
// every run gives the same bits and no atomics are needed: a block per
// channel and slice of its values (P::SPLIT slices) sums its share, the
// block's threads then warps in order (common/block_sum.cuh), into the
// workspace; a thread per channel then adds the slices in order.  The
// forward sums x - x0 and its square, x0 being the channel's first value:
// the shift keeps the variance's cancellation small wherever the data are
// centred anywhere near a value they hold, at the cost of no pass more.
//
// Problem gives the shapes and strides (N, C, D, H, W, XS*, YS*), COUNT
// (values per channel), SPLIT, EPS (f32 bits), the flags INFERENCE, SCALE,
// SHIFT, ONNX (its running update), GRAD_INPUT, GRAD_SCALE, GRAD_SHIFT,
// and ACT (0 none, 1 relu, 2 silu, fused after the normalisation).
#pragma once
#include "common/block_sum.cuh"
#include "common/epilogue.cuh"
#include "common/fused_epilogue.cuh"
#include "common/grid.cuh"

namespace convjit_device {

// A batchnorm entry's per-channel operands, f32 (null where the call has
// none), passed by value after the workspace.  The host passes the same
// layout (dispatcher/backends/jit/kernel_operands.hpp, KernelNormOperands).
struct NormParams {
  const scratch_t* scale;
  const scratch_t* shift;
  scratch_t* running_mean;
  scratch_t* running_var;
  scratch_t* mean;
  scratch_t* invstd;
  scratch_t* scale_grad;
  scratch_t* shift_grad;
  float momentum;
};

namespace batchnorm {

typedef Problem P;

// The workspace: the slices' two sums per channel, then the channels'
// two values the elementwise pass reads (the forward's mean and invstd,
// the backward's mean gradient terms).
__device__ __forceinline__ index_t partial_at(index_t part, index_t c) {
  return (part * P::C + c) * 2;
}
__device__ __forceinline__ index_t channel_at(index_t c) { return P::SPLIT * P::C * 2 + c * 2; }

// The offset of pixel q (n, d, h, w in that order) of x or y.
__device__ __forceinline__ index_t x_pixel(index_t q) {
  return q / (P::W * P::H * P::D) * P::XS0 + q / (P::W * P::H) % P::D * P::XS2 +
         q / P::W % P::H * P::XS3 + q % P::W * P::XS4;
}
__device__ __forceinline__ index_t y_pixel(index_t q) {
  return q / (P::W * P::H * P::D) * P::YS0 + q / (P::W * P::H) % P::D * P::YS2 +
         q / P::W % P::H * P::YS3 + q % P::W * P::YS4;
}

// Slice `part` of a channel's pixels: [first, last).
struct Slice {
  index_t first, last;
};
__device__ __forceinline__ Slice slice_of(index_t part) {
  const index_t size = (P::COUNT + P::SPLIT - 1) / P::SPLIT;
  const index_t first = part * size;
  return {first, first + size < P::COUNT ? first + size : P::COUNT};
}

__device__ __forceinline__ float epsilon() { return __int_as_float(static_cast<int>(P::EPS)); }

// The statistics a channel is normalised with, and its affine parameters.
struct ChannelStats {
  float mean, invstd, scale, shift;
};

// Inference reads the running statistics; training the batch's, which
// the forward's finish pass left in the workspace and the backward reads
// from the saved mean and invstd.
__device__ __forceinline__ ChannelStats channel_stats(index_t c, const scratch_t* workspace,
                                                      const NormParams& norm, bool forward) {
  ChannelStats s;
  if (P::INFERENCE) {
    s.mean = norm.running_mean[c];
    s.invstd = 1.0f / sqrtf(norm.running_var[c] + epsilon());
  } else if (forward) {
    s.mean = workspace[channel_at(c)];
    s.invstd = workspace[channel_at(c) + 1];
  } else {
    s.mean = norm.mean[c];
    s.invstd = norm.invstd[c];
  }
  s.scale = P::SCALE ? static_cast<float>(norm.scale[c]) : 1.0f;
  s.shift = P::SHIFT ? static_cast<float>(norm.shift[c]) : 0.0f;
  return s;
}

// d act(v) / dv, as PyTorch's threshold_backward and silu_backward.
__device__ __forceinline__ float activation_slope(float v) {
  if (P::ACT == 1) return v > 0.0f ? 1.0f : 0.0f;
  if (P::ACT == 2) {
    const float s = 1.0f / (1.0f + expf(-v));
    return s * (1.0f + v * (1.0f - s));
  }
  return 1.0f;
}

}  // namespace batchnorm
}  // namespace convjit_device
