// Test helpers: whether a variant's kernel stores y by TMA (and so serves
// beta 0 alone), a setting's variable for one scope, and
// CONVJIT_WGMMA_TMA_STORE=0 for one scope, so that the Hopper conv's
// kernels built in it keep their tiles on the threads' store.
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

// A setting's variable set for one scope (unset after), the settings
// reloaded both times.
class SettingScope {
 public:
  SettingScope(const char* variable, const char* value) : variable_(variable) {
    EXPECT_EQ(setenv(variable, value, 1), 0);
    SettingsStore::instance().reload_environment();
  }
  ~SettingScope() {
    EXPECT_EQ(unsetenv(variable_), 0);
    SettingsStore::instance().reload_environment();
  }
  SettingScope(const SettingScope&) = delete;
  SettingScope& operator=(const SettingScope&) = delete;

 private:
  const char* variable_;
};

class ThreadsStoreScope : public SettingScope {
 public:
  ThreadsStoreScope() : SettingScope("CONVJIT_WGMMA_TMA_STORE", "0") {}
};

}  // namespace convjit::test
