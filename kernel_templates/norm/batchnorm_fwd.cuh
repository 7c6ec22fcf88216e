// BatchNorm forward: y = alpha * act((x - mean) * invstd * scale + shift)
// + beta * y.  Training takes three entries (norm/batchnorm_common.cuh):
// convjit_kernel_prepare sums each slice of each channel, a block per
// slice; convjit_kernel_finish turns the sums into the channel's mean and
// invstd, saves them and updates the running statistics, a thread per
// channel; convjit_kernel normalises, a thread per element of y.
// Inference runs convjit_kernel alone, on the running statistics.
#include "norm/batchnorm_common.cuh"

CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* /*unused*/,
                                      convjit_device::storage_t* /*y*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace,
                                      const convjit_device::NormParams /*norm*/) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  CONVJIT_SHARED_ARRAY(float, warp_sums, P::BLOCK / kWarpSize);
  // One block per (channel, slice): the launch has exactly C x SPLIT.
  const index_t c = blockIdx.x % P::C, part = blockIdx.x / P::C;
  const Slice slice = slice_of(part);
  const float x0 = load(x[c * P::XS1]);
  float sum = 0.0f, squares = 0.0f;
  for (index_t q = slice.first + threadIdx.x; q < slice.last; q += P::BLOCK) {
    const float v = load(x[x_pixel(q) + c * P::XS1]) - x0;
    sum += v;
    squares += v * v;
  }
  sum = block_sum(sum, warp_sums);
  squares = block_sum(squares, warp_sums);
  if (threadIdx.x == 0) {
    workspace[partial_at(part, c)] = sum;
    workspace[partial_at(part, c) + 1] = squares;
  }
}

CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* __restrict__ x,
                                     const convjit_device::storage_t* /*unused*/,
                                     convjit_device::storage_t* /*y*/, float /*alpha*/,
                                     float /*beta*/, convjit_device::scratch_t* workspace,
                                     const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  const float n = static_cast<float>(P::COUNT);
  for (index_t c = thread_index(); c < P::C; c += thread_count()) {
    float sum = 0.0f, squares = 0.0f;
    for (index_t part = 0; part < P::SPLIT; ++part) {
      sum += workspace[partial_at(part, c)];
      squares += workspace[partial_at(part, c) + 1];
    }
    const float shifted_mean = sum / n;
    float var = squares / n - shifted_mean * shifted_mean;
    var = var < 0.0f ? 0.0f : var;  // a NaN stays
    const float mean = load(x[c * P::XS1]) + shifted_mean;
    const float invstd = 1.0f / sqrtf(var + epsilon());
    workspace[channel_at(c)] = mean;
    workspace[channel_at(c) + 1] = invstd;
    if (norm.mean != nullptr) norm.mean[c] = mean;
    if (norm.invstd != nullptr) norm.invstd[c] = invstd;
    if (norm.running_mean == nullptr) continue;
    // PyTorch: running = (1 - m) running + m batch, the unbiased variance;
    // ONNX: running = m running + (1 - m) batch, the population variance.
    const float keep = P::ONNX ? norm.momentum : 1.0f - norm.momentum;
    const float batch_var = P::ONNX ? var : var * n / (n - 1.0f);
    norm.running_mean[c] = keep * norm.running_mean[c] + (1.0f - keep) * mean;
    norm.running_var[c] = keep * norm.running_var[c] + (1.0f - keep) * batch_var;
  }
}

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* /*unused*/,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* workspace,
                              const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  const index_t pixels = P::COUNT;
  for (index_t i = thread_index(); i < pixels * P::C; i += thread_count()) {
    // Pixels fastest within a channel where x is channels-first, channels
    // fastest where it is channels-last: a warp's loads run along memory.
    const bool channels_last = P::XS1 == 1;
    const index_t c = channels_last ? i % P::C : i / pixels;
    const index_t q = channels_last ? i / P::C : i % pixels;
    const ChannelStats s = channel_stats(c, workspace, norm, true);
    const float v = (load(x[x_pixel(q) + c * P::XS1]) - s.mean) * s.invstd * s.scale + s.shift;
    scale_store(y + y_pixel(q) + c * P::YS1, activate(P::ACT, v), alpha, beta);
  }
}
