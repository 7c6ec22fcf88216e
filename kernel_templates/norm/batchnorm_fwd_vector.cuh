// BatchNorm forward in 16-byte channel vectors, for channels-last layouts:
// norm/batchnorm_fwd.cuh's entries with a block per slice of the pixels,
// a thread per vector of channels, in the statistics' first level, and a
// thread per channel vector and strip of pixels in the normalisation.
#define CONVJIT_NORM_VECTORS 1
#include "norm/batchnorm_fwd.cuh"
