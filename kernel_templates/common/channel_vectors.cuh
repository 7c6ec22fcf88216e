// A thread's channel vector: kChunkElements consecutive channels of a
// pixel, which move as one 16-byte access where the layout and the
// pointer allow it (channels-last, the channel count a multiple of the
// vector) and element by element otherwise, for the kernels built for
// bandwidth (depthwise convs, pooling).  Values are f32 in registers.
#pragma once
#include "common/epilogue.cuh"
#include "common/grid.cuh"
#include "common/vector_memory.cuh"

namespace convjit_device {

// kChunkElements channels from c0 at STRIP consecutive pixels from (n, d, h, w0).
struct ChannelItem {
  index_t n, d, h, w0, c0;
};

// The vectors that hold `channels` channels, the last one partial.
__device__ __forceinline__ index_t vector_count(index_t channels) {
  return (channels + kChunkElements - 1) / kChunkElements;
}

// The items of a tensor of N x channels x D x H x W: channel vectors
// fastest, so that a warp's accesses run along the channels of a pixel.
template <int STRIP>
__device__ __forceinline__ index_t channel_items(index_t channels, index_t D, index_t H,
                                                 index_t W) {
  return Problem::N * D * H * ((W + STRIP - 1) / STRIP) * vector_count(channels);
}
template <int STRIP>
__device__ __forceinline__ ChannelItem channel_item(index_t i, index_t channels, index_t D,
                                                    index_t H, index_t W) {
  const index_t vectors = vector_count(channels), strips = (W + STRIP - 1) / STRIP;
  const index_t pixel_row = i / vectors / strips;  // (n, d, h)
  return {pixel_row / (H * D), pixel_row / H % D, pixel_row % H, i / vectors % strips * STRIP,
          i % vectors * kChunkElements};
}

// Channels c0 ... of one pixel (`pixel`: its offset), `count` in all,
// channel c at c * stride: one 16-byte load when `vector`.
__device__ __forceinline__ void read_channels(const storage_t* t, index_t pixel, index_t c0,
                                              index_t count, index_t stride, bool vector,
                                              float (&v)[kChunkElements]) {
  if (vector) {
    unpack_chunk(load_128(t + pixel + c0), v);
    return;
  }
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j)
    v[j] = c0 + j < count ? load(t[pixel + (c0 + j) * stride]) : 0.0f;
}

// out = alpha * acc + beta * out for channels c0 ... of one pixel; out is
// not read when beta is 0.
__device__ __forceinline__ void write_channels(storage_t* out, index_t pixel, index_t c0,
                                               index_t count, index_t stride, bool vector,
                                               const float (&acc)[kChunkElements], float alpha,
                                               float beta) {
  if (!vector) {
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j)
      if (c0 + j < count) scale_store(out + pixel + (c0 + j) * stride, acc[j], alpha, beta);
    return;
  }
  float v[kChunkElements], old[kChunkElements] = {};
  if (beta != 0.0f) unpack_chunk(load_128(out + pixel + c0), old);
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j) {
    v[j] = alpha * acc[j];
    if (beta != 0.0f) v[j] += beta * old[j];
  }
  store_128(out + pixel + c0, pack_chunk(v));
}

}  // namespace convjit_device
