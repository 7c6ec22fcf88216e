// How the batchnorm's channel-vector kernels (norm/batchnorm_*_vector.cuh)
// cut their elementwise pass: a thread owns one 16-byte vector of channels
// at CONVJIT_NORM_STRIP consecutive pixels along W, and reads their
// statistics once for all of them.  A plain macro: the host sizes the
// grid with it (kernel_source.cpp).
#pragma once

#define CONVJIT_NORM_STRIP 8
