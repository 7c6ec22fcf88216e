#include "dispatcher/preload/preload_plan.hpp"

#include <cstdint>
#include <string_view>

namespace convjit {

namespace {

bool held(const std::string& tier, std::size_t key) {
  return key < tier.size() && tier[key] == '1';
}
bool wanted(const std::string& tier, std::size_t key) {
  return key < tier.size() && tier[key] == '0';
}

std::uint64_t hash_prefix(std::string_view hex) {
  std::uint64_t value = 0;
  for (char c : hex.substr(0, 16))
    value = value * 16 + static_cast<std::uint64_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  return value;
}

}  // namespace

std::vector<KeyAssignment> assign_preload_work(const std::vector<std::string>& key_hashes,
                                               const PreloadHoldings& holdings) {
  std::vector<KeyAssignment> out(key_hashes.size());
  const std::size_t leaders = holdings.leaders.size();
  for (std::size_t key = 0; key < key_hashes.size(); ++key) {
    if (key_hashes[key].empty() || leaders == 0) continue;
    int holder = held(holdings.shared, key) ? 0 : -1;
    bool needed = wanted(holdings.shared, key);
    for (std::size_t l = 0; l < leaders; ++l) {
      needed |= wanted(holdings.local[l], key);
      if (held(holdings.local[l], key) && holder < 0) holder = holdings.leaders[l];
    }
    if (!needed) continue;
    if (holder >= 0) {
      out[key] = {PreloadAction::send, holder};
      continue;
    }
    const auto chosen = static_cast<std::size_t>(hash_prefix(key_hashes[key]) % leaders);
    out[key] = {PreloadAction::compile, holdings.leaders[chosen]};
  }
  return out;
}

}  // namespace convjit
