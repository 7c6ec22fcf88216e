// How the Hopper convs (conv/conv_fwd_wgmma.cuh, conv/conv_bwdfilt_wgmma.cuh)
// cut their work.  Plain macros: the host sizes the grid, the tensor maps'
// boxes and the shared memory with them (dispatcher/backends/jit/
// wgmma_conv.cpp), the templates their tiles and their ring of stages.
#pragma once

#define CONVJIT_WGMMA_PIXELS 128   // fwd M: output pixels per tile
#define CONVJIT_WGMMA_FILTERS 128  // fwd N, bwdfilt M: filters per tile
// A fwd's or bwddata's widest K step: 128 bytes of 16-bit channels of
// one tap.  Convs of 32 or 16 channels (the reduced ones: a fwd's C, a
// bwddata's K) step by that many instead (Problem::STEP), 64 or 32 bytes.
#define CONVJIT_WGMMA_CHANNELS 64
// bwdfilt: a K step of 64 output pixels; each operand's 128 rows of M or
// N (filters; taps x channels) come as two boxes of 64 channels.
#define CONVJIT_WGMMA_STEP_PIXELS 64
// A row-tap tile's TMA store: the slots (staged rows) a consumer's
// anchors' output rows may take (conv/wgmma_conv_tile.cuh's StoreRows):
// a ping-pong consumer's staging of 64 filters holds 256 rows of 128
// bytes within its 128 x 64 f32 outputs' room.
#define CONVJIT_WGMMA_ROW_STORE_SLOTS 256
// ... and its boxes: pieces of this many pixels of a row.
#define CONVJIT_WGMMA_STORE_PIECE 8
// bwdfilt: the most slices of the pixels whose sums a tile's cluster adds
// (Problem::SUM_IN_CLUSTER): the portable cluster size.
#define CONVJIT_WGMMA_CLUSTER_SLICES 8
#define CONVJIT_WGMMA_MAX_STAGES 16  // the mbarriers the templates declare
// The consumers' own mbarriers (wgmma_pipeline.cuh): two consumers'
// epilogues and, in ping-pong, their turns at the ring.
#define CONVJIT_WGMMA_CONSUMER_BARRIERS 4
// A block's threads: the producer's warpgroup of 128 and the consumers'
// (the kernels' __launch_bounds__, the host's launch).
#define CONVJIT_WGMMA_BLOCK_THREADS(consumers) (128 * (1 + (consumers)))
