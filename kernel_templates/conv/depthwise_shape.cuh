// How the depthwise kernels cut their work.  Plain macros: the host sizes
// the grid and checks shared memory with them (kernel_source.cpp,
// kernel_variants.cpp), the templates size their registers and tiles.
//
// Channels-last (conv/depthwise_{fwd,bwddata}.cuh): a thread owns one
// 16-byte vector of channels (common/vector_memory.cuh's kChunkElements)
// at CONVJIT_DEPTHWISE_STRIP consecutive pixels along the innermost
// spatial dimension, so that each filter tap it loads serves that many
// pixels.
//
// W contiguous (conv/depthwise_{fwd,bwddata}_tile.cuh): plane tiles
// (common/plane_tile_shape.cuh).
#pragma once

#define CONVJIT_DEPTHWISE_STRIP 4
