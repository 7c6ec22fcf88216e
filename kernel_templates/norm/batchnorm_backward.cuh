// The batchnorm backward's pieces (norm/batchnorm_bwd{,_vector}.cuh), from
// the saved statistics (training) or the running ones (inference),
// through the fused activation's slope at the recomputed forward:
//   g = dy * act'(xhat * scale + shift), xhat = (x - mean) * invstd,
//   scale_grad = sum g xhat, shift_grad = sum g,
//   dx = scale * invstd * (g - mean(g) - xhat mean(g xhat))
// (inference drops the two means): the terms the sums add, the finish
// that writes the parameter gradients, and dx per element or per channel
// vector.
#pragma once
#include "norm/batchnorm_reduction.cuh"

namespace convjit_device {
namespace batchnorm {

struct Gradient {
  float g, xhat;
};

__device__ __forceinline__ Gradient gradient(float x, float dy, const ChannelStats& s) {
  const float xhat = (x - s.mean) * s.invstd;
  const float g = P::ACT == 0 ? dy : dy * activation_slope(xhat * s.scale + s.shift);
  return {g, xhat};
}

struct GradientPlane {
  const storage_t* x;
  const storage_t* dy;
  index_t c;
  ChannelStats s;
  __device__ __forceinline__ void operator()(index_t q, float& a, float& b) const {
    const Gradient d =
        gradient(load(x[x_pixel(q) + c * P::XS1]), load(dy[y_pixel(q) + c * P::YS1]), s);
    a += d.g;
    b += d.g * d.xhat;
  }
};

struct GradientVector {
  const storage_t* x;
  const storage_t* dy;
  index_t c0;
  bool x_vector, dy_vector;
  ChannelStats s[kChunkElements];
  __device__ __forceinline__ void operator()(index_t q, float (&a)[kChunkElements],
                                             float (&b)[kChunkElements]) const {
    float xv[kChunkElements], g[kChunkElements];
    read_channels(x, x_pixel(q), c0, P::C, P::XS1, x_vector, xv);
    read_channels(dy, y_pixel(q), c0, P::C, P::YS1, dy_vector, g);
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j) {
      const Gradient d = gradient(xv[j], g[j], s[j]);
      a[j] += d.g;
      b[j] += d.g * d.xhat;
    }
  }
};

__device__ __forceinline__ GradientPlane gradient_plane(const storage_t* x, const storage_t* dy,
                                                        index_t c, const scratch_t* workspace,
                                                        const NormParams& norm) {
  return {x, dy, c, channel_stats(c, workspace, norm, false)};
}

__device__ __forceinline__ GradientVector gradient_vector(const storage_t* x, const storage_t* dy,
                                                          index_t c0, const scratch_t* workspace,
                                                          const NormParams& norm) {
  GradientVector t{x, dy, c0, x_vectors(x), y_vectors(dy), {}};
  vector_stats(c0, workspace, norm, false, t.s);
  return t;
}

// Channel blockIdx.x's parameter gradients, as asked for, and the means
// dx subtracts, left in the workspace.
__device__ __forceinline__ void finish_gradients(scratch_t* workspace, const NormParams& norm) {
  const Totals t = channel_totals(workspace);
  if (threadIdx.x != 0) return;
  const index_t c = blockIdx.x;
  const float n = static_cast<float>(P::COUNT);
  if (P::GRAD_SCALE) norm.scale_grad[c] = t.b;
  if (P::GRAD_SHIFT) norm.shift_grad[c] = t.a;
  workspace[first_stat_at(c)] = P::INFERENCE ? 0.0f : t.a / n;
  workspace[second_stat_at(c)] = P::INFERENCE ? 0.0f : t.b / n;
}

__device__ __forceinline__ float input_gradient(const Gradient& d, const ChannelStats& s,
                                                float mean_g, float mean_gx) {
  return s.scale * s.invstd * (d.g - mean_g - d.xhat * mean_gx);
}

// dx, a thread per element (ordered as normalize_elements orders them).
__device__ __forceinline__ void dx_elements(const storage_t* x, const storage_t* dy, storage_t* dx,
                                            float alpha, float beta, const scratch_t* workspace,
                                            const NormParams& norm) {
  for (index_t i = thread_index(); i < P::COUNT * P::C; i += thread_count()) {
    const auto [c, q] = element_at(i);
    const ChannelStats s = channel_stats(c, workspace, norm, false);
    const Gradient d =
        gradient(load(x[x_pixel(q) + c * P::XS1]), load(dy[y_pixel(q) + c * P::YS1]), s);
    scale_store(dx + x_pixel(q) + c * P::XS1,
                input_gradient(d, s, workspace[first_stat_at(c)], workspace[second_stat_at(c)]),
                alpha, beta);
  }
}

// dx, a thread per vector of channels and strip of kNormStrip pixels.
__device__ __forceinline__ void dx_vectors(const storage_t* x, const storage_t* dy, storage_t* dx,
                                           float alpha, float beta, const scratch_t* workspace,
                                           const NormParams& norm) {
  const bool x_vector = x_vectors(x), dy_vector = y_vectors(dy), dx_vector = x_vectors(dx);
  const index_t items = channel_items<kNormStrip>(P::C, P::D, P::H, P::W);
  for (index_t i = thread_index(); i < items; i += thread_count()) {
    const ChannelItem it = channel_item<kNormStrip>(i, P::C, P::D, P::H, P::W);
    ChannelStats s[kChunkElements];
    vector_stats(it.c0, workspace, norm, false, s);
    float mean_g[kChunkElements], mean_gx[kChunkElements];
    read_floats(workspace + first_stat_at(0), it.c0, mean_g);
    read_floats(workspace + second_stat_at(0), it.c0, mean_gx);
    for_each_strip_pixel(it, [&](index_t xp, index_t yp) {
      float xv[kChunkElements], g[kChunkElements];
      read_channels(x, xp, it.c0, P::C, P::XS1, x_vector, xv);
      read_channels(dy, yp, it.c0, P::C, P::YS1, dy_vector, g);
#pragma unroll
      for (int j = 0; j < kChunkElements; ++j)
        g[j] = input_gradient(gradient(xv[j], g[j], s[j]), s[j], mean_g[j], mean_gx[j]);
      write_channels(dx, xp, it.c0, P::C, P::XS1, dx_vector, g, alpha, beta);
    });
  }
}

}  // namespace batchnorm
}  // namespace convjit_device
