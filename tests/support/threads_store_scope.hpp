// Test helpers: whether a variant's kernel stores y by TMA (and so serves
// beta 0 alone), and CONVJIT_WGMMA_TMA_STORE=0 for one scope, so that the
// Hopper conv's kernels built in it keep their tiles on the threads' store
// (the variable unset after).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/settings.hpp"
#include "dispatcher/tensor_maps/tensor_map_argument.hpp"

namespace convjit::test {

inline bool stores_by_tma(const OpDescriptor& d, std::string_view variant) {
  auto source = kernel_source(d, variant);
  return source.is_ok() && stores_output_by_tma(source.value().tensor_maps);
}

class ThreadsStoreScope {
 public:
  ThreadsStoreScope() {
    EXPECT_EQ(setenv("CONVJIT_WGMMA_TMA_STORE", "0", 1), 0);
    SettingsStore::instance().reload_environment();
  }
  ~ThreadsStoreScope() {
    EXPECT_EQ(unsetenv("CONVJIT_WGMMA_TMA_STORE"), 0);
    SettingsStore::instance().reload_environment();
  }
  ThreadsStoreScope(const ThreadsStoreScope&) = delete;
  ThreadsStoreScope& operator=(const ThreadsStoreScope&) = delete;
};

}  // namespace convjit::test
