#define CONVJIT_DTYPE 0
struct Problem {
  static constexpr long long BLOCK = 256, N = 768, MODE = 0;
};
#include "tma.cuh"
