// The batchnorm forward's pieces (norm/batchnorm_fwd{,_vector}.cuh): the
// terms its statistics sum, the finish that turns them into the mean and
// invstd (saving them and updating the running statistics), and the
// normalisation, per element or per channel vector.
//
// The sums are of x - x0 and its square, x0 being the channel's first
// value: the shift keeps the variance's cancellation small wherever the
// data lie anywhere near a value they hold, at no extra pass over x.
#pragma once
#include "norm/batchnorm_reduction.cuh"

namespace convjit_device {
namespace batchnorm {

struct ShiftedPlane {
  const storage_t* x;
  index_t c;
  float x0;
  __device__ __forceinline__ void operator()(index_t q, float& a, float& b) const {
    const float v = load(x[x_pixel(q) + c * P::XS1]) - x0;
    a += v;
    b += v * v;
  }
};

struct ShiftedVector {
  const storage_t* x;
  index_t c0;
  bool vector;
  float x0[kChunkElements];
  __device__ __forceinline__ void operator()(index_t q, float (&a)[kChunkElements],
                                             float (&b)[kChunkElements]) const {
    float v[kChunkElements];
    read_channels(x, x_pixel(q), c0, P::C, P::XS1, vector, v);
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j) {
      const float d = v[j] - x0[j];
      a[j] += d;
      b[j] += d * d;
    }
  }
};

__device__ __forceinline__ float first_value(const storage_t* x, index_t c) {
  return load(x[c * P::XS1]);
}

__device__ __forceinline__ ShiftedPlane shifted_plane(const storage_t* x, index_t c) {
  return {x, c, first_value(x, c)};
}

__device__ __forceinline__ ShiftedVector shifted_vector(const storage_t* x, index_t c0) {
  ShiftedVector t{x, c0, x_vectors(x), {}};
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j) t.x0[j] = c0 + j < P::C ? first_value(x, c0 + j) : 0.0f;
  return t;
}

// Channel blockIdx.x's mean and invstd from its sums: saved, left in the
// workspace for the normalisation, and folded into the running statistics.
__device__ __forceinline__ void finish_statistics(const storage_t* x, scratch_t* workspace,
                                                  const NormParams& norm) {
  const Totals t = channel_totals(workspace);
  if (threadIdx.x != 0) return;
  const index_t c = blockIdx.x;
  const float n = static_cast<float>(P::COUNT);
  const float shifted_mean = t.a / n;
  float var = t.b / n - shifted_mean * shifted_mean;
  var = var < 0.0f ? 0.0f : var;  // a NaN stays
  const float mean = first_value(x, c) + shifted_mean;
  const float invstd = 1.0f / sqrtf(var + epsilon());
  workspace[first_stat_at(c)] = mean;
  workspace[second_stat_at(c)] = invstd;
  if (norm.mean != nullptr) norm.mean[c] = mean;
  if (norm.invstd != nullptr) norm.invstd[c] = invstd;
  if (norm.running_mean == nullptr) return;
  // PyTorch: running = (1 - m) running + m batch, the unbiased variance;
  // ONNX: running = m running + (1 - m) batch, the population variance.
  const float momentum = static_cast<float>(norm.momentum);
  const float keep = P::ONNX ? momentum : 1.0f - momentum;
  const float batch_var = P::ONNX ? var : var * n / (n - 1.0f);
  norm.running_mean[c] = keep * norm.running_mean[c] + (1.0f - keep) * mean;
  norm.running_var[c] = keep * norm.running_var[c] + (1.0f - keep) * batch_var;
}

__device__ __forceinline__ float normalized(float x, const ChannelStats& s) {
  return activate(P::ACT, (x - s.mean) * s.invstd * s.scale + s.shift);
}

// A thread per element (element_at).
__device__ __forceinline__ void normalize_elements(const storage_t* x, storage_t* y, float alpha,
                                                   float beta, const scratch_t* workspace,
                                                   const NormParams& norm) {
  for (index_t i = thread_index(); i < P::COUNT * P::C; i += thread_count()) {
    const auto [c, q] = element_at(i);
    const ChannelStats s = channel_stats(c, workspace, norm, true);
    scale_store(y + y_pixel(q) + c * P::YS1, normalized(load(x[x_pixel(q) + c * P::XS1]), s), alpha,
                beta);
  }
}

// A thread per vector of channels and strip of kNormStrip pixels along W,
// which reads its channels' statistics once.

__device__ __forceinline__ void normalize_vectors(const storage_t* x, storage_t* y, float alpha,
                                                  float beta, const scratch_t* workspace,
                                                  const NormParams& norm) {
  const bool x_vector = x_vectors(x), y_vector = y_vectors(y);
  const index_t items = channel_items<kNormStrip>(P::C, P::D, P::H, P::W);
  for (index_t i = thread_index(); i < items; i += thread_count()) {
    const ChannelItem it = channel_item<kNormStrip>(i, P::C, P::D, P::H, P::W);
    ChannelStats s[kChunkElements];
    vector_stats(it.c0, workspace, norm, true, s);
    for_each_strip_pixel(it, [&](index_t xp, index_t yp) {
      float v[kChunkElements];
      read_channels(x, xp, it.c0, P::C, P::XS1, x_vector, v);
#pragma unroll
      for (int j = 0; j < kChunkElements; ++j) v[j] = normalized(v[j], s[j]);
      write_channels(y, yp, it.c0, P::C, P::YS1, y_vector, v, alpha, beta);
    });
  }
}

}  // namespace batchnorm
}  // namespace convjit_device
