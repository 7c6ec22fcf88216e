// BatchNorm backward from the saved statistics (training) or the running
// ones (inference), through the fused activation's slope at the
// recomputed forward:
//   g = dy * act'(xhat * scale + shift), xhat = (x - mean) * invstd,
//   scale_grad = sum g xhat, shift_grad = sum g,
//   dx = alpha * scale * invstd * (g - mean(g) - xhat mean(g xhat)) + beta * dx
// (inference drops the two means).  convjit_kernel_prepare sums g and g
// xhat over each slice of each channel, a block per slice;
// convjit_kernel_finish adds the slices in order and writes the
// parameter gradients asked for, a thread per channel; convjit_kernel,
// launched only when dx is asked for, a thread per element of dx.
#include "norm/batchnorm_common.cuh"

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

}  // namespace batchnorm
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* __restrict__ dy,
                                      convjit_device::storage_t* /*dx*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace,
                                      const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  CONVJIT_SHARED_ARRAY(float, warp_sums, P::BLOCK / kWarpSize);
  const index_t c = blockIdx.x % P::C, part = blockIdx.x / P::C;
  const Slice slice = slice_of(part);
  const ChannelStats s = channel_stats(c, workspace, norm, false);
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (index_t q = slice.first + threadIdx.x; q < slice.last; q += P::BLOCK) {
    const Gradient d =
        gradient(load(x[x_pixel(q) + c * P::XS1]), load(dy[y_pixel(q) + c * P::YS1]), s);
    sum_g += d.g;
    sum_gx += d.g * d.xhat;
  }
  sum_g = block_sum(sum_g, warp_sums);
  sum_gx = block_sum(sum_gx, warp_sums);
  if (threadIdx.x == 0) {
    workspace[partial_at(part, c)] = sum_g;
    workspace[partial_at(part, c) + 1] = sum_gx;
  }
}

CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* /*x*/,
                                     const convjit_device::storage_t* /*dy*/,
                                     convjit_device::storage_t* /*dx*/, float /*alpha*/,
                                     float /*beta*/, convjit_device::scratch_t* workspace,
                                     const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  const float n = static_cast<float>(P::COUNT);
  for (index_t c = thread_index(); c < P::C; c += thread_count()) {
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (index_t part = 0; part < P::SPLIT; ++part) {
      sum_g += workspace[partial_at(part, c)];
      sum_gx += workspace[partial_at(part, c) + 1];
    }
    if (P::GRAD_SCALE) norm.scale_grad[c] = sum_gx;
    if (P::GRAD_SHIFT) norm.shift_grad[c] = sum_g;
    workspace[channel_at(c)] = P::INFERENCE ? 0.0f : sum_g / n;
    workspace[channel_at(c) + 1] = P::INFERENCE ? 0.0f : sum_gx / n;
  }
}

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* __restrict__ dx, float alpha, float beta,
                              convjit_device::scratch_t* workspace,
                              const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  const index_t pixels = P::COUNT;
  for (index_t i = thread_index(); i < pixels * P::C; i += thread_count()) {
    const bool channels_last = P::XS1 == 1;
    const index_t c = channels_last ? i % P::C : i / pixels;
    const index_t q = channels_last ? i / P::C : i % pixels;
    const ChannelStats s = channel_stats(c, workspace, norm, false);
    const float mean_g = workspace[channel_at(c)], mean_gx = workspace[channel_at(c) + 1];
    const Gradient d =
        gradient(load(x[x_pixel(q) + c * P::XS1]), load(dy[y_pixel(q) + c * P::YS1]), s);
    scale_store(dx + x_pixel(q) + c * P::XS1,
                s.scale * s.invstd * (d.g - mean_g - d.xhat * mean_gx), alpha, beta);
  }
}
