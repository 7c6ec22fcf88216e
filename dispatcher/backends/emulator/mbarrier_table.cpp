#include "dispatcher/backends/emulator/mbarrier_table.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"

namespace convjit::emulator {

namespace {

constexpr long long kCountLimit = (1LL << 20) - 1;  // arrivals and tx-count, per the ISA

std::string element_name(const MbarrierKey& key) {
  return fmt::format("{}[{}]", key.region->name(), key.index);
}

}  // namespace

void join_clock(OrderClock& into, const OrderClock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (std::size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

MbarrierTable::State* MbarrierTable::find(const MbarrierKey& key, const char* operation) {
  const auto it = barriers_.find(key);
  if (it != barriers_.end()) return &it->second;
  report_violation(
      fmt::format("{} on shared {}, which holds no live mbarrier: mbarrier.init it "
                  "first (and not after mbarrier.inval)",
                  operation, element_name(key)));
  return nullptr;
}

void MbarrierTable::complete_if_done(State& s) {
  if (s.pending != 0 || s.tx != 0) return;
  ++s.phase;
  s.pending = s.expected;
  s.released = std::move(s.gathering);
  s.gathering.clear();
}

bool MbarrierTable::init(const MbarrierKey& key, long long count) {
  if (count < 1 || count > kCountLimit) {
    report_violation(fmt::format("mbarrier.init of shared {} with count {}: it must be 1 to {}",
                                 element_name(key), count, kCountLimit));
    return false;
  }
  if (live(key)) {
    report_violation(
        fmt::format("mbarrier.init of shared {}, a live mbarrier: mbarrier.inval it "
                    "before initialising it again",
                    element_name(key)));
    return false;
  }
  barriers_[key] = State{0, count, count, 0, {}, {}};
  return true;
}

bool MbarrierTable::inval(const MbarrierKey& key) {
  if (find(key, "mbarrier.inval") == nullptr) return false;
  barriers_.erase(key);
  return true;
}

std::uint64_t MbarrierTable::arrive(const MbarrierKey& key, long long count,
                                    const OrderClock& released) {
  State* s = find(key, "mbarrier.arrive");
  if (s == nullptr) return 0;
  const std::uint64_t phase = s->phase;
  if (count < 1 || count > s->pending) {
    report_violation(fmt::format(
        "mbarrier.arrive on shared {} with count {} in phase {}, which has {} of {} arrivals "
        "left: more threads arrive than the barrier was initialised for",
        element_name(key), count, s->phase, s->pending, s->expected));
    return phase;
  }
  s->pending -= count;
  join_clock(s->gathering, released);
  complete_if_done(*s);
  return phase;
}

bool MbarrierTable::expect_tx(const MbarrierKey& key, long long bytes) {
  State* s = find(key, "mbarrier.expect_tx");
  if (s == nullptr) return false;
  if (bytes < 0 || s->tx + bytes > kCountLimit) {
    report_violation(fmt::format(
        "mbarrier.expect_tx of {} bytes on shared {} (tx-count {}): the tx-count must stay "
        "within {}; split the transaction over phases",
        bytes, element_name(key), s->tx, kCountLimit));
    return false;
  }
  s->tx += bytes;
  complete_if_done(*s);  // bytes completed early may be matched now
  return true;
}

bool MbarrierTable::complete_tx(const MbarrierKey& key, long long bytes,
                                const OrderClock* released) {
  State* s = find(key, "mbarrier.complete_tx");
  if (s == nullptr) return false;
  if (bytes < 0 || s->tx - bytes < -kCountLimit) {
    report_violation(fmt::format(
        "mbarrier.complete_tx of {} bytes on shared {} (tx-count {}): the tx-count must stay "
        "within -{}",
        bytes, element_name(key), s->tx, kCountLimit));
    return false;
  }
  s->tx -= bytes;
  if (released != nullptr) join_clock(s->gathering, *released);
  complete_if_done(*s);
  return true;
}

bool MbarrierTable::phase_complete(const MbarrierKey& key, unsigned parity, bool& valid) const {
  const auto it = barriers_.find(key);
  valid = false;
  if (it == barriers_.end()) {
    report_violation(
        fmt::format("mbarrier.try_wait.parity on shared {}, which holds no live "
                    "mbarrier: mbarrier.init it first",
                    element_name(key)));
    return false;
  }
  const State& s = it->second;
  if (parity > 1) {
    report_violation(fmt::format("mbarrier.try_wait.parity on shared {} with parity {}: 0 or 1",
                                 element_name(key), parity));
    return false;
  }
  valid = true;
  return (s.phase & 1u) != parity;
}

bool MbarrierTable::phase_complete(const MbarrierKey& key, unsigned parity) const {
  const auto it = barriers_.find(key);
  return it == barriers_.end() || (it->second.phase & 1u) != parity;
}

const OrderClock& MbarrierTable::released(const MbarrierKey& key) const {
  static const OrderClock kNone;
  const auto it = barriers_.find(key);
  return it == barriers_.end() ? kNone : it->second.released;
}

std::string MbarrierTable::describe(const MbarrierKey& key) const {
  const auto it = barriers_.find(key);
  if (it == barriers_.end()) return element_name(key) + " (no live mbarrier)";
  const State& s = it->second;
  std::string missing = fmt::format("{} of {} arrivals", s.pending, s.expected);
  if (s.tx > 0) missing += fmt::format(" and {} transaction bytes", s.tx);
  if (s.tx < 0)
    missing += fmt::format(" (and {} transaction bytes completed beyond those expected)", -s.tx);
  return fmt::format("{}: phase {}, {} missing", element_name(key), s.phase, missing);
}

}  // namespace convjit::emulator
