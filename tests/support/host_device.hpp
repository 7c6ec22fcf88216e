#pragma once
// The host device, where the tests' calls run unless they name a GPU.

#include "convjit/convjit.h"

namespace convjit::test {

inline constexpr convjit_device_t kHost{CONVJIT_DEVICE_HOST, 0};

}  // namespace convjit::test
