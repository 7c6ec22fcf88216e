#include "dispatcher/backends/emulator/wgmma_execution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"
#include "dispatcher/backends/emulator/wgmma_layout.hpp"
#include "dispatcher/descriptor/half_precision.hpp"

namespace convjit::emulator {

namespace {

constexpr float kUnread = std::numeric_limits<float>::quiet_NaN();
constexpr unsigned kRowsPerWarp = 16;

const char* type_name(WgmmaType t) {
  return t == WgmmaType::f16 ? "f16" : t == WgmmaType::bf16 ? "bf16" : "tf32";
}
std::size_t operand_bytes(WgmmaType t) { return t == WgmmaType::tf32 ? 4 : 2; }
unsigned k_extent(WgmmaType t) { return t == WgmmaType::tf32 ? 8 : 16; }

// An operand's value from its bits; tf32 keeps the top 19 bits of each
// input, as the tensor cores do.
float decode(WgmmaType t, std::uint32_t bits) {
  switch (t) {
    case WgmmaType::f16:
      return half_to_float(Half{static_cast<std::uint16_t>(bits)});
    case WgmmaType::bf16:
      return bf16_to_float(BFloat16{static_cast<std::uint16_t>(bits)});
    case WgmmaType::tf32:
      break;
  }
  return std::bit_cast<float>(bits & 0xffffe000u);
}

std::string describe(const WgmmaPayload& p) {
  std::string a = p.a_registers != nullptr ? std::string("A in registers")
                                           : fmt::format("A {:#x}", p.a_descriptor);
  return fmt::format("wgmma.mma_async.m64n{}k{}.f32.{} ({}{}, B {:#x}{}, scale-d {})", p.n,
                     k_extent(p.type), type_name(p.type), a, p.trans_a ? " MN-major" : "",
                     p.b_descriptor, p.trans_b ? " MN-major" : "", p.accumulate ? 1 : 0);
}

bool same_operands(const WgmmaPayload& a, const WgmmaPayload& b) {
  return a.n == b.n && a.type == b.type && a.trans_a == b.trans_a && a.trans_b == b.trans_b &&
         a.accumulate == b.accumulate && a.a_descriptor == b.a_descriptor &&
         a.b_descriptor == b.b_descriptor &&
         (a.a_registers == nullptr) == (b.a_registers == nullptr);
}

const WgmmaPayload* payload_of(const WarpLanes& lanes, unsigned lane) {
  return lanes.lane[lane] == nullptr ? nullptr
                                     : static_cast<const WgmmaPayload*>(lanes.lane[lane]->payload);
}

// Reads the operands through the shared window as the warp's lane 0 (the
// running thread), each element an async-proxy read held until the wait.
class OperandReader {
 public:
  OperandReader(WgmmaType type, WgmmaThreadState& holder) : type_(type), holder_(holder) {}

  float read(std::uint32_t address) {
    const std::size_t bytes = operand_bytes(type_);
    BlockScheduler& block = BlockScheduler::current();
    SharedRegion* r = block.region_at(address);
    if (r == nullptr || address % bytes != 0 || address - r->base() + bytes > r->bytes() ||
        (bytes % r->element_bytes() != 0 && r->element_bytes() % bytes != 0)) {
      if (!reported_)
        report_violation(fmt::format(
            "wgmma reads shared address {:#x}, which {}: check the matrix descriptor's start "
            "and byte offsets",
            address,
            r == nullptr ? "no shared array of the block holds"
                         : "is not one whole "
                           "operand element"));
      reported_ = true;
      return kUnread;
    }
    const std::uint32_t offset = address - r->base();
    const auto element = static_cast<long long>(offset / r->element_bytes());
    const auto last = static_cast<long long>((offset + bytes - 1) / r->element_bytes());
    if (!r->begin_async_read(element, last - element + 1, AsyncReader::wgmma)) return kUnread;
    for (long long e = element; e <= last; ++e) holder_.hold_read(r, e);
    std::uint32_t bits = 0;
    std::memcpy(&bits, r->raw(0) + offset, bytes);
    return decode(type_, bits);
  }

 private:
  WgmmaType type_;
  WgmmaThreadState& holder_;
  bool reported_ = false;
};

// The warp's rows of A (16 x K) and all of B (N x K), row-major.
struct WgmmaOperands {
  std::vector<float> a, b;
};

bool read_shared_operands(const WgmmaPayload& p, unsigned w, WgmmaThreadState& holder,
                          WgmmaOperands& o) {
  const unsigned k = k_extent(p.type);
  const std::size_t bytes = operand_bytes(p.type);
  const MatrixDescriptor bd = decode_matrix_descriptor(p.b_descriptor);
  const OperandMajor b_major = p.trans_b ? OperandMajor::mn : OperandMajor::k;
  std::string why = unemulated_descriptor(bd, b_major, bytes);
  const MatrixDescriptor ad = decode_matrix_descriptor(p.a_descriptor);
  const OperandMajor a_major = p.trans_a ? OperandMajor::mn : OperandMajor::k;
  if (why.empty() && p.a_registers == nullptr) why = unemulated_descriptor(ad, a_major, bytes);
  if (!why.empty()) {
    report_violation(fmt::format("{}: {}", describe(p), why));
    return false;
  }
  OperandReader reader(p.type, holder);
  o.a.assign(kRowsPerWarp * k, kUnread);
  o.b.assign(std::size_t{p.n} * k, kUnread);
  for (unsigned n = 0; n < p.n; ++n)
    for (unsigned kk = 0; kk < k; ++kk)
      o.b[n * k + kk] = reader.read(operand_address(bd, b_major, bytes, n, kk));
  if (p.a_registers == nullptr)
    for (unsigned r = 0; r < kRowsPerWarp; ++r)
      for (unsigned kk = 0; kk < k; ++kk)
        o.a[r * k + kk] = reader.read(operand_address(ad, a_major, bytes, 16 * w + r, kk));
  return true;
}

// A from the lanes' registers: 16-bit values two to a register, or tf32.
void gather_register_a(const WarpLanes& lanes, WgmmaType type, unsigned w, WgmmaOperands& o) {
  const unsigned k = k_extent(type);
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    const WgmmaPayload* p = payload_of(lanes, lane);
    if (p == nullptr) continue;
    if (type == WgmmaType::tf32) {
      for (unsigned i = 0; i < 4; ++i) {
        const FragmentPosition at = a_tf32_position(w, lane, i);
        o.a[(at.row - 16 * w) * k + at.col] = decode(type, p->a_registers[i]);
      }
      continue;
    }
    for (unsigned i = 0; i < 8; ++i) {
      const FragmentPosition at = a16_position(w, lane, i);
      o.a[(at.row - 16 * w) * k + at.col] = decode(type, p->a_registers[i / 2] >> (16 * (i % 2)));
    }
  }
}

// Each lane's accumulators: exact products summed in f64, rounded once
// (the tensor cores' order is unspecified).
void multiply(const WarpLanes& lanes, const WgmmaOperands& o, unsigned w) {
  BlockScheduler& block = BlockScheduler::current();
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    const WgmmaPayload* p = payload_of(lanes, lane);
    if (p == nullptr) continue;
    const unsigned k = k_extent(p->type);
    for (unsigned i = 0; i < p->n / 2; ++i) {
      const FragmentPosition at = accumulator_position(w, lane, i);
      const unsigned row = at.row - 16 * w;
      double sum = p->accumulate ? double{p->d->values[i]} : 0.0;
      for (unsigned kk = 0; kk < k; ++kk)
        sum += double{o.a[row * k + kk]} * double{o.b[at.col * k + kk]};
      p->d->values[i] = static_cast<float>(sum);
    }
    block.wgmma_state(lanes.first_thread + lane).hold(p->d);
  }
}

// Every lane gives the same operands and has fenced its accumulators.
bool lanes_ready(const WarpLanes& lanes, const WgmmaPayload& first) {
  BlockScheduler& block = BlockScheduler::current();
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    const WgmmaPayload* p = payload_of(lanes, lane);
    if (p == nullptr) continue;
    const unsigned thread = lanes.first_thread + lane;
    const std::uint32_t fences = block.wgmma_state(thread).fences();
    std::string why;
    if (!same_operands(*p, first))
      why = fmt::format("runs {} while lane 0 of its warp runs {}: every lane gives the same",
                        describe(*p), describe(first));
    else if (fences == 0)
      why = fmt::format("runs {} with no wgmma.fence before it", describe(*p));
    else if (p->d->accessed_after > fences)
      why = fmt::format(
          "runs {} on accumulators it accessed after its last wgmma.fence: a wgmma.fence is "
          "missing between the access and the wgmma",
          describe(*p));
    if (why.empty()) continue;
    as_thread(thread, [&] { report_violation(why); });
    return false;
  }
  return true;
}

template <class Apply>
void for_each_lane_thread(const WarpLanes& lanes, Apply&& apply) {
  BlockScheduler& block = BlockScheduler::current();
  for (unsigned lane = 0; lane < kWarpSize; ++lane)
    if (lanes.lane[lane] != nullptr) apply(block.wgmma_state(lanes.first_thread + lane), lane);
}

}  // namespace

void complete_wgmma(const WarpLanes& lanes) {
  const WgmmaPayload* first = nullptr;
  for (unsigned lane = 0; lane < kWarpSize && first == nullptr; ++lane)
    first = payload_of(lanes, lane);
  if (first == nullptr || !lanes_ready(lanes, *first)) return;
  const unsigned warp = lanes.first_thread / kWarpSize, w = warp % kWarpsPerWarpgroup;
  BlockScheduler& block = BlockScheduler::current();
  block.warpgroup_instructions().note(warp, lanes.first_thread, describe(*first));
  WgmmaOperands o;
  bool read = false;
  as_thread(lanes.first_thread, [&] {
    read = read_shared_operands(*first, w, block.wgmma_state(lanes.first_thread), o);
  });
  if (!read) return;
  if (first->a_registers != nullptr) gather_register_a(lanes, first->type, w, o);
  multiply(lanes, o, w);
}

void complete_wgmma_fence(const WarpLanes& lanes) {
  for_each_lane_thread(lanes, [](WgmmaThreadState& s, unsigned) { s.fence(); });
  BlockScheduler::current().warpgroup_instructions().note(lanes.first_thread / kWarpSize,
                                                          lanes.first_thread, "wgmma.fence");
}

void complete_wgmma_commit(const WarpLanes& lanes) {
  for_each_lane_thread(lanes, [](WgmmaThreadState& s, unsigned) { s.commit(); });
  BlockScheduler::current().warpgroup_instructions().note(lanes.first_thread / kWarpSize,
                                                          lanes.first_thread, "wgmma.commit_group");
}

void complete_wgmma_wait(const WarpLanes& lanes) {
  unsigned newest = 0;
  for_each_lane_thread(lanes, [&](WgmmaThreadState& s, unsigned lane) {
    newest = static_cast<const WgmmaWaitPayload*>(lanes.lane[lane]->payload)->newest;
    s.wait(newest);
  });
  BlockScheduler::current().warpgroup_instructions().note(
      lanes.first_thread / kWarpSize, lanes.first_thread,
      fmt::format("wgmma.wait_group {}", newest));
}

// ---- a thread's wgmmas in flight ------------------------------------------------

void WgmmaThreadState::hold(AccumulatorGuard* d) {
  accumulators_.push_back({d, open_group_});
  d->pending = true;
}

void WgmmaThreadState::hold_read(SharedRegion* region, long long element) {
  reads_.push_back({region, element, open_group_});
}

void WgmmaThreadState::wait(unsigned newest) {
  const auto done = [&](std::uint64_t group) { return group + newest < open_group_; };
  for (const Held& h : accumulators_)
    if (done(h.group)) h.d->pending = false;
  std::erase_if(accumulators_, [&](const Held& h) { return done(h.group); });
  for (const Held& h : accumulators_) h.d->pending = true;  // a later wgmma still holds them
  for (const Read& r : reads_)
    if (done(r.group)) r.region->end_async_read(r.element, 1);
  std::erase_if(reads_, [&](const Read& r) { return done(r.group); });
}

bool WgmmaThreadState::forget(const AccumulatorGuard* d) {
  return std::erase_if(accumulators_, [&](const Held& h) { return h.d == d; }) == 0;
}

void WgmmaThreadState::clear() {
  for (const Read& r : reads_) r.region->end_async_read(r.element, 1);
  *this = {};
}

void access_accumulator(AccumulatorGuard& d, unsigned index, bool write) {
  BlockScheduler& block = BlockScheduler::current();
  if (d.pending)
    report_violation(fmt::format(
        "{} wgmma accumulator {} before the wgmma.wait_group that covers the wgmma writing it",
        write ? "writes" : "reads", index));
  d.accessed_after = block.wgmma_state(block.running_thread()).fences() + 1;
}

}  // namespace convjit::emulator
