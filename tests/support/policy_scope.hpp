// Test helper: a dispatch policy for one scope, the previous setting back
// after (tests of the reference pin it, so they judge the reference and not
// the backend `auto` would pick on this machine).
#pragma once

#include <gtest/gtest.h>

#include <optional>

#include "dispatcher/settings.hpp"

namespace convjit::test {

class PolicyScope {
 public:
  explicit PolicyScope(Policy policy) { SettingsStore::instance().set_policy(policy); }
  ~PolicyScope() { SettingsStore::instance().set_policy(std::nullopt); }
  PolicyScope(const PolicyScope&) = delete;
  PolicyScope& operator=(const PolicyScope&) = delete;
};

}  // namespace convjit::test
