// The raw arguments of an API call (op, device, policy, parameter and
// tensor-descriptor structs), copied byte for byte.  Equal bytes mean equal
// operations, so a call whose key was seen before skips building and
// validating its descriptor: the hot path copies and compares ~400 bytes
// instead.  Unequal bytes that describe the same op (different garbage in
// padding or unused array entries) only cost a cache miss, never a wrong
// answer; the init helpers zero everything, so reused descriptors hit.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "convjit/convjit.h"

namespace convjit {

class ApiCallKey {
 public:
  // The largest call, with room to spare: the op, device kind, ordinal and
  // policy words, an epilogue word (a fused conv's), params (pool params
  // are the larger) and three tensor descriptors.
  static constexpr std::size_t kCapacityBytes =
      5 * 8 + sizeof(convjit_pool_params_t) + 3 * sizeof(convjit_tensor_desc_t);
  static_assert(sizeof(convjit_pool_params_t) >= sizeof(convjit_conv_params_t));

  ApiCallKey& add(std::int64_t word) { return add_bytes(&word, sizeof word); }

  template <class Struct>
  ApiCallKey& add(const Struct& raw) {
    static_assert(std::is_trivially_copyable_v<Struct>);
    static_assert(sizeof(Struct) % 8 == 0, "whole words keep hash() and == over written bytes");
    return add_bytes(&raw, sizeof raw);
  }

  // Picks a cache slot.  The whole key is compared on lookup, so the hash
  // need not be strong, only cheap: four xor lanes (words i, i+4, ... fold
  // together), each mixed once at the end.  XXH3's long-input path would
  // cost more than the rest of the hot path.
  [[nodiscard]] std::uint64_t hash() const {
    std::uint64_t a = size_, b = 0x9e3779b97f4a7c15ull, c = 0xc2b2ae3d27d4eb4full,
                  d = 0x165667b19e3779f9ull;
    const std::size_t n = size_ / 8;
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
      a ^= load_word(i), b ^= load_word(i + 1), c ^= load_word(i + 2), d ^= load_word(i + 3);
    for (; i < n; ++i) b ^= load_word(i) * 0xff51afd7ed558ccdull;
    std::uint64_t h = 0;
    for (std::uint64_t v : {a, b, c, d}) h = (h ^ v) * 0x9e3779b97f4a7c15ull, h ^= h >> 31;
    return h;
  }

  friend bool operator==(const ApiCallKey& a, const ApiCallKey& b) {
    return a.size_ == b.size_ && std::memcmp(a.bytes_.data(), b.bytes_.data(), a.size_) == 0;
  }

 private:
  ApiCallKey& add_bytes(const void* data, std::size_t n) {
    std::memcpy(bytes_.data() + size_, data, n);
    size_ += n;
    return *this;
  }
  [[nodiscard]] std::uint64_t load_word(std::size_t i) const {
    std::uint64_t w;
    std::memcpy(&w, bytes_.data() + 8 * i, sizeof w);
    return w;
  }

  std::array<unsigned char, kCapacityBytes> bytes_;  // only the first size_ are ever read
  std::size_t size_ = 0;
};

}  // namespace convjit
