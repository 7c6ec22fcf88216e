// How the depthwise kernels (conv/depthwise_*.cuh) cut their work: a
// thread owns one 16-byte vector of channels (common/vector_memory.cuh's
// kChunkElements) at CONVJIT_DEPTHWISE_STRIP consecutive pixels along the
// innermost spatial dimension, so that each filter tap it loads serves
// that many pixels.  A plain macro: the host sizes the grid with it
// (kernel_source.cpp), the templates size their registers with it.
#pragma once

#define CONVJIT_DEPTHWISE_STRIP 4
