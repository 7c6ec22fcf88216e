// BatchNorm backward in 16-byte channel vectors, for channels-last
// layouts: norm/batchnorm_bwd.cuh's entries with a block per slice of the
// pixels, a thread per vector of channels, in the sums' first level, and a
// thread per channel vector and strip of pixels for dx.
#define CONVJIT_NORM_VECTORS 1
#include "norm/batchnorm_bwd.cuh"
