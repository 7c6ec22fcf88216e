// What the batchnorm templates (norm/batchnorm_{fwd,bwd}{,_vector}.cuh)
// share: their per-channel operands, where a channel's values lie, the
// per-channel statistics and the activation's slope.
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
#include "norm/batchnorm_shape.cuh"

namespace convjit_device {

// A batchnorm entry's per-channel operands, f32 (null where the call has
// none), passed by value after the workspace.  The host passes its
// NormOperands (dispatcher/exec_args.hpp), the same layout
// (dispatcher/backends/jit/kernel_operands.hpp pins it).
struct NormParams {
  const scratch_t* scale;
  const scratch_t* shift;
  scratch_t* running_mean;
  scratch_t* running_var;
  scratch_t* mean;
  scratch_t* invstd;
  scratch_t* scale_grad;
  scratch_t* shift_grad;
  double momentum;
};

namespace batchnorm {

typedef Problem P;

// The workspace: the slices' two sums per channel, then the two values
// per channel the elementwise pass reads (the forward's mean and invstd,
// the backward's mean gradient terms), each an array of C, so that a
// vector of channels reads them in 16-byte loads.
__device__ __forceinline__ index_t partial_at(index_t part, index_t c) {
  return (part * P::C + c) * 2;
}
__device__ __forceinline__ index_t first_stat_at(index_t c) { return P::SPLIT * P::C * 2 + c; }
__device__ __forceinline__ index_t second_stat_at(index_t c) { return first_stat_at(P::C) + c; }

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

constexpr int kNormStrip = CONVJIT_NORM_STRIP;

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
    s.mean = workspace[first_stat_at(c)];
    s.invstd = workspace[second_stat_at(c)];
  } else {
    s.mean = norm.mean[c];
    s.invstd = norm.invstd[c];
  }
  s.scale = P::SCALE ? static_cast<float>(norm.scale[c]) : 1.0f;
  s.shift = P::SHIFT ? static_cast<float>(norm.shift[c]) : 0.0f;
  return s;
}

// Element i of a thread-per-element pass: its channel and pixel, pixels
// fastest within a channel where x is channels-first, channels fastest
// where it is channels-last, so that a warp's accesses run along memory.
struct Element {
  index_t c, q;
};
__device__ __forceinline__ Element element_at(index_t i) {
  if (P::XS1 == 1) return {i % P::C, i / P::C};
  return {i / P::COUNT, i % P::COUNT};
}

// Whether a tensor with x's (y's) strides moves in 16-byte channel vectors.
__device__ __forceinline__ bool x_vectors(const storage_t* x) {
  return chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4) && chunk_aligned(x);
}
__device__ __forceinline__ bool y_vectors(const storage_t* y) {
  return chunked(P::C, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) && chunk_aligned(y);
}

// Calls f(x's offset, y's offset) at each pixel of a channel item's strip.
template <class F>
__device__ __forceinline__ void for_each_strip_pixel(const ChannelItem& it, F&& f) {
  const index_t end = it.w0 + kNormStrip < P::W ? it.w0 + kNormStrip : P::W;
  for (index_t w = it.w0; w < end; ++w)
    f(it.n * P::XS0 + it.d * P::XS2 + it.h * P::XS3 + w * P::XS4,
      it.n * P::YS0 + it.d * P::YS2 + it.h * P::YS3 + w * P::YS4);
}

// Channels c0 ... of a per-channel f32 array (0 past the last channel),
// in 16-byte loads where the channel count and the array's alignment
// allow (c0 is a multiple of the vector).
__device__ __forceinline__ void read_floats(const scratch_t* p, index_t c0,
                                            float (&v)[kChunkElements]) {
  if (P::C % 4 == 0 && chunk_aligned(p)) {
#pragma unroll
    for (int k = 0; k < kChunkElements; k += 4) {
      const Vec128 w = c0 + k < P::C ? load_128(p + c0 + k) : Vec128{};
#pragma unroll
      for (int m = 0; m < 4; ++m) v[k + m] = __uint_as_float(w.w[m]);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j)
    v[j] = c0 + j < P::C ? static_cast<float>(p[c0 + j]) : 0.0f;
}

// channel_stats for channels c0 ..., a vector at a time (zeros past the
// last channel).
__device__ __forceinline__ void vector_stats(index_t c0, const scratch_t* workspace,
                                             const NormParams& norm, bool forward,
                                             ChannelStats (&s)[kChunkElements]) {
  // scale and shift zeroed: read only where given, which an optimiser
  // cannot see through P::SCALE and P::SHIFT in the emulator's builds.
  float mean[kChunkElements], invstd[kChunkElements];
  float scale[kChunkElements] = {}, shift[kChunkElements] = {};
  if (P::INFERENCE) {
    read_floats(norm.running_mean, c0, mean);
    read_floats(norm.running_var, c0, invstd);
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j) invstd[j] = 1.0f / sqrtf(invstd[j] + epsilon());
  } else {
    read_floats(forward ? workspace + first_stat_at(0) : norm.mean, c0, mean);
    read_floats(forward ? workspace + second_stat_at(0) : norm.invstd, c0, invstd);
  }
  if (P::SCALE) read_floats(norm.scale, c0, scale);
  if (P::SHIFT) read_floats(norm.shift, c0, shift);
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j)
    s[j] = {mean[j], invstd[j], P::SCALE ? scale[j] : 1.0f, P::SHIFT ? shift[j] : 0.0f};
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
