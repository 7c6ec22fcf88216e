// The hot path allocates nothing: once a descriptor is resolved, an API
// call (argument checks, descriptor build and validation, table lookup,
// kernel call) performs no heap allocation on the calling thread.
// Its own executable, because it replaces the global operator new.
//
// The calls run on the reference: oneDNN 2.x's dnnl_primitive_execute
// builds its argument map on every call (about ten small allocations per
// primitive, inside oneDNN), so an onednn call is counted separately and
// checked to allocate the same on every call, never more.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <vector>

#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "support/policy_scope.hpp"
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
  const PolicyScope reference(Policy::reference);
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
  const PolicyScope reference(Policy::reference);
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

// Rules act once, when a call resolves: with a rules file loaded, and a
// rule choosing this call's backend, resolved calls allocate nothing.
TEST(HotPath, ResolvedCallUnderRulesAllocatesNothing) {
  const std::string path = ::testing::TempDir() + "convjit-hot-path-rules.json";
  std::ofstream(path) << R"({"version": 1, "rules": [{"id": "ref", "match": {"op": "conv"},
                             "force": "reference"}]})";
  ASSERT_EQ(convjit_set_rules_file(path.c_str()), CONVJIT_STATUS_SUCCESS);
  auto t = make_conv_tensors<float>({1, 4, 4, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}});
  auto call = [&] {
    ASSERT_TRUE(conv_forward(t.params, t.x.desc(), t.x.data(), t.w.desc(), t.w.data(), t.y.desc(),
                             t.y.data())
                    .is_ok());
    ASSERT_STREQ(convjit_last_backend(), "reference");
  };
  EXPECT_GT(allocations_of(call), 0);
  EXPECT_EQ(allocations_of(call), 0);
  EXPECT_EQ(allocations_of(call), 0);
  (void)convjit_set_rules_file(nullptr);
  std::remove(path.c_str());
}

TEST(HotPath, ResolvedPoolForwardAllocatesNothing) {
  const PolicyScope reference(Policy::reference);
  PoolCase c{1, 2, {6, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, CONVJIT_POOL_MAX, true};
  auto t = make_pool_tensors<float>(c);
  auto call = [&] {
    ASSERT_TRUE(pool_forward(t.params, t.x.desc(), t.x.data(), t.y.desc(), t.y.data()).is_ok());
  };
  call();
  EXPECT_EQ(allocations_of(call), 0);
}

// What an onednn call allocates is oneDNN's per-call argument map: the same
// count on every call (nothing kept, nothing growing), and none of it on a
// scaled call's second run (the output stage's buffer is made once).
TEST(HotPath, ResolvedOnednnCallsAllocateTheSameOnEveryCall) {
  if (!OnednnLibrary::instance().available().is_ok())
    GTEST_SKIP() << "oneDNN is not available: " << OnednnLibrary::instance().available().message();
  const PolicyScope onednn(Policy::onednn);
  auto t = make_conv_tensors<float>({1, 4, 4, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}});
  double alpha = 1.0;
  auto call = [&] {
    ASSERT_TRUE(conv_forward(t.params, t.x.desc(), t.x.data(), t.w.desc(), t.w.data(), t.y.desc(),
                             t.y.data(), alpha, 0.0)
                    .is_ok());
    ASSERT_STREQ(convjit_last_backend(), "onednn");
  };
  call();
  const long steady = allocations_of(call);
  EXPECT_EQ(allocations_of(call), steady);
  alpha = 0.5;
  call();  // the first scaled call makes the output stage's buffer
  EXPECT_EQ(allocations_of(call), steady);
}

}  // namespace
}  // namespace convjit::test
