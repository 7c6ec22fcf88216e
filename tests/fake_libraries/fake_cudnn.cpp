// A stand-in for libcudnn that reports FAKE_CUDNN_VERSION (major * 10000 +
// minor * 100 + patch, as cuDNN 9 does) and exports nothing else.
#include <cstddef>

extern "C" std::size_t cudnnGetVersion() { return FAKE_CUDNN_VERSION; }
