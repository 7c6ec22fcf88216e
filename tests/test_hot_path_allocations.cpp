// The hot path allocates nothing: once a descriptor is resolved, an API
// call (argument checks, descriptor build and validation, table lookup,
// kernel call) performs no heap allocation on the calling thread.
// Its own executable, because it replaces the global operator new.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <vector>

#include "support/problems.hpp"

namespace {
thread_local long t_allocations = 0;
}  // namespace

void* operator new(std::size_t size) {
  ++t_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace convjit::test {
namespace {

template <class Call>
long allocations_of(Call&& call) {
  const long before = t_allocations;
  call();
  return t_allocations - before;
}

TEST(HotPath, ResolvedConvForwardAllocatesNothing) {
  auto t = make_conv_tensors<float>({1, 4, 4, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}});
  auto call = [&] {
    ASSERT_TRUE(conv_forward(t.params, t.x.desc(), t.x.data(), t.w.desc(), t.w.data(), t.y.desc(),
                             t.y.data())
                    .is_ok());
  };
  EXPECT_GT(allocations_of(call), 0);  // the first call resolves: the counter works
  EXPECT_EQ(allocations_of(call), 0);
  EXPECT_EQ(allocations_of(call), 0);
}

// A fused forward, with new bias and residual pointers on every call (a
// trainer's fresh tensors): only whether they are null is part of the key.
TEST(HotPath, ResolvedFusedForwardAllocatesNothing) {
  auto t = make_conv_tensors<float>({1, 4, 4, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}});
  std::vector<float> biases(8, 0.5f);
  HostTensor<float> residual = t.y;
  residual.fill(0.25);
  int call_index = 0;
  auto call = [&] {
    const Epilogue epilogue(CONVJIT_ACTIVATION_SILU, biases.data() + 4 * (call_index++ % 2),
                            residual.data());
    ASSERT_TRUE(conv_forward_fused(t.params, t.x.desc(), t.x.data(), t.w.desc(), t.w.data(),
                                   epilogue, t.y.desc(), t.y.data())
                    .is_ok());
  };
  EXPECT_GT(allocations_of(call), 0);
  EXPECT_EQ(allocations_of(call), 0);
  EXPECT_EQ(allocations_of(call), 0);
}

TEST(HotPath, ResolvedPoolForwardAllocatesNothing) {
  PoolCase c{1, 2, {6, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, CONVJIT_POOL_MAX, true};
  auto t = make_pool_tensors<float>(c);
  auto call = [&] {
    ASSERT_TRUE(pool_forward(t.params, t.x.desc(), t.x.data(), t.y.desc(), t.y.data()).is_ok());
  };
  call();
  EXPECT_EQ(allocations_of(call), 0);
}

}  // namespace
}  // namespace convjit::test
