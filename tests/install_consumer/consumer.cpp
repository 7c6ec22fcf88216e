// Uses the installed C++ API: a global average pool of 1..4 must give 2.5.
#include <convjit/convjit.hpp>
#include <cstdio>

int main() {
  convjit::TensorDesc x, y;
  if (!convjit::TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {1, 1, 2, 2}).is_ok() ||
      !convjit::TensorDesc::contiguous(y, CONVJIT_DTYPE_F32, {1, 1, 1, 1}).is_ok())
    return 1;
  convjit::PoolParams pool(2, CONVJIT_POOL_AVG_EXCLUDE_PAD);
  pool.window[0] = pool.window[1] = 2;
  const float xv[4] = {1, 2, 3, 4};
  float yv = 0;
  const convjit::Status s = convjit::pool_forward(pool, x, xv, y, &yv);
  if (!s.is_ok()) {
    std::fprintf(stderr, "consumer_cpp: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("global average = %g\n", yv);
  return yv == 2.5f ? 0 : 1;
}
