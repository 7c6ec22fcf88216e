// The sanitizer run (tools/test --sanitize) sets CONVJIT_TEST_REDUCED.
// Instrumented, the sweeps over every layer of the reference models would
// take most of CI's time while repeating the same code paths layer after
// layer, so there they keep every third operation.  The random problem sets
// always run whole.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <vector>

namespace convjit::test {

inline bool reduced_run() { return std::getenv("CONVJIT_TEST_REDUCED") != nullptr; }

template <class T>
std::vector<T> sweep(std::vector<T> all) {
  if (!reduced_run()) return all;
  std::vector<T> kept;
  for (std::size_t i = 0; i < all.size(); i += 3) kept.push_back(std::move(all[i]));
  return kept;
}

}  // namespace convjit::test
