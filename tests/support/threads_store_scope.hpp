// Test helper: CONVJIT_WGMMA_TMA_STORE=0 for one scope, so that the
// Hopper conv's kernels built in it keep their tiles on the threads' store
// (a kernel that stores by TMA serves beta 0 alone); the variable unset
// after.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

#include "dispatcher/settings.hpp"

namespace convjit::test {

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
