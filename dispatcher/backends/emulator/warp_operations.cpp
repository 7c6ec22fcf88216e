#include "dispatcher/backends/emulator/warp_operations.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"
#include "dispatcher/descriptor/half_precision.hpp"

namespace convjit::emulator {

namespace {

template <class Payload>
Payload* payload(const WarpLanes& lanes, unsigned lane) {
  const WarpArrival* a = lanes.lane[lane];
  return a == nullptr ? nullptr : static_cast<Payload*>(a->payload);
}

constexpr std::uint64_t kPoisonBits = ~std::uint64_t{0};  // NaN in every float format

}  // namespace

// ---- shfl.sync ---------------------------------------------------------------

const char* shuffle_name(ShuffleMode mode) {
  switch (mode) {
    case ShuffleMode::up:
      return "__shfl_up_sync";
    case ShuffleMode::down:
      return "__shfl_down_sync";
    case ShuffleMode::bfly:
      return "__shfl_xor_sync";
    default:
      return "__shfl_sync";
  }
}

// PTX's shfl.sync: c packs the segment mask (32 - width) and the clamp.
void complete_shuffle(const WarpLanes& lanes) {
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    auto* p = payload<ShufflePayload>(lanes, lane);
    if (p == nullptr) continue;
    const int segmask = (32 - p->width) & 0x1f;
    const int clamp = p->mode == ShuffleMode::up ? 0 : 0x1f;
    const int me = static_cast<int>(lane), b = p->b & 0x1f;
    const int max_lane = (me & segmask) | (clamp & ~segmask);
    const int min_lane = me & segmask;
    int j = me;
    bool in_range = true;
    switch (p->mode) {
      case ShuffleMode::up:
        j = me - b, in_range = j >= max_lane;
        break;
      case ShuffleMode::down:
        j = me + b, in_range = j <= max_lane;
        break;
      case ShuffleMode::bfly:
        j = me ^ b, in_range = j <= max_lane;
        break;
      case ShuffleMode::idx:
        j = min_lane | (b & ~segmask), in_range = j <= max_lane;
        break;
    }
    if (!in_range) j = me;
    const auto* source = payload<ShufflePayload>(lanes, static_cast<unsigned>(j));
    if (source != nullptr) {
      p->result = source->value;
      continue;
    }
    p->result = kPoisonBits;
    as_thread(lanes.first_thread + lane, [&] {
      report_violation(fmt::format(
          "{} reads lane {}, which {} (mask {:#010x}): the result is undefined on the GPU",
          shuffle_name(p->mode), j,
          (lanes.mask >> j & 1u) ? "never arrived" : "the mask leaves out", lanes.mask));
    });
  }
}

// ---- vote.sync and bar.warp.sync ------------------------------------------------

void complete_vote(const WarpLanes& lanes) {
  unsigned ballot = 0, arrived = 0;
  for (unsigned lane = 0; lane < kWarpSize; ++lane)
    if (const auto* p = payload<VotePayload>(lanes, lane)) {
      arrived |= 1u << lane;
      if (p->predicate) ballot |= 1u << lane;
    }
  for (unsigned lane = 0; lane < kWarpSize; ++lane)
    if (auto* p = payload<VotePayload>(lanes, lane)) p->ballot = ballot, p->arrived = arrived;
}

void complete_syncwarp(const WarpLanes& /*lanes*/) {}

// ---- ldmatrix ------------------------------------------------------------------

namespace {

// One 8x8 b16 matrix, rows as the lanes addressing them hold them in
// shared memory.
using Matrix8 = std::array<std::array<std::uint16_t, 8>, 8>;

void read_row(const WarpLanes& lanes, unsigned lane, std::array<std::uint16_t, 8>& row) {
  row.fill(0xffff);
  const auto* p = payload<LdmatrixPayload>(lanes, lane);
  if (p == nullptr || p->region == nullptr) return;
  as_thread(lanes.first_thread + lane, [&] {
    SharedRegion& region = *p->region;
    const std::size_t element = region.element_bytes();
    if (element != 2 && element != 4) {
      report_violation(fmt::format("ldmatrix reads shared {}, whose {}-byte elements are not "
                                   "b16 or b16 pairs",
                                   region.name(), element));
      return;
    }
    if ((p->index * static_cast<long long>(element)) % 16 != 0) {
      report_violation(fmt::format(
          "ldmatrix row address shared {}[{}] is not 16-byte aligned: it faults on the GPU",
          region.name(), p->index));
      return;
    }
    std::array<std::byte, 16> bytes{};
    const auto count = static_cast<long long>(16 / element);
    for (long long i = 0; i < count; ++i) {
      const void* at = region.element(p->index + i, Access::read);
      if (at == nullptr) return;
      std::memcpy(bytes.data() + i * static_cast<long long>(element), at, element);
    }
    std::memcpy(row.data(), bytes.data(), bytes.size());
  });
}

}  // namespace

void complete_ldmatrix(const WarpLanes& lanes) {
  const LdmatrixPayload* first = nullptr;
  for (unsigned lane = 0; lane < kWarpSize && first == nullptr; ++lane)
    first = payload<LdmatrixPayload>(lanes, lane);
  if (first == nullptr) return;
  for (int m = 0; m < first->matrices; ++m) {
    Matrix8 matrix;
    for (unsigned r = 0; r < 8; ++r) read_row(lanes, static_cast<unsigned>(m) * 8 + r, matrix[r]);
    for (unsigned lane = 0; lane < kWarpSize; ++lane) {
      auto* p = payload<LdmatrixPayload>(lanes, lane);
      if (p == nullptr) continue;
      const unsigned group = lane / 4, pair = lane % 4 * 2;
      const std::uint16_t lo = p->trans ? matrix[pair][group] : matrix[group][pair];
      const std::uint16_t hi = p->trans ? matrix[pair + 1][group] : matrix[group][pair + 1];
      p->out[m] = lo | static_cast<unsigned>(hi) << 16;
    }
  }
}

// ---- mma.sync --------------------------------------------------------------------

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Operands {
  float a[16][16], b[16][8], c[16][8];
};

float f16_at(unsigned reg, unsigned half) {
  return half_to_float(Half{static_cast<std::uint16_t>(reg >> (16 * half))});
}
float bf16_at(unsigned reg, unsigned half) {
  return bf16_to_float(BFloat16{static_cast<std::uint16_t>(reg >> (16 * half))});
}

// C and D: c0,c1 in row groupID, c2,c3 eight rows below; columns in pairs.
void gather_c(const MmaPayload* p, unsigned group, unsigned quad, Operands& o) {
  for (unsigned i = 0; i < 4; ++i)
    o.c[group + (i >= 2 ? 8 : 0)][quad * 2 + (i & 1)] = p == nullptr ? kNaN : p->c[i];
}

void multiply_and_scatter(const WarpLanes& lanes, const Operands& o, unsigned k) {
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    auto* p = payload<MmaPayload>(lanes, lane);
    if (p == nullptr) continue;
    const unsigned group = lane / 4, quad = lane % 4;
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned row = group + (i >= 2 ? 8 : 0), col = quad * 2 + (i & 1);
      // Exact products summed in f64 and rounded once: the tensor core's
      // order is unspecified, so no order is more faithful than another.
      double sum = o.c[row][col];
      for (unsigned kk = 0; kk < k; ++kk) sum += double{o.a[row][kk]} * double{o.b[kk][col]};
      p->d[i] = static_cast<float>(sum);
    }
  }
}

template <float (*decode)(unsigned, unsigned)>
void complete_m16n8k16(const WarpLanes& lanes) {
  Operands o;
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    const auto* p = payload<MmaPayload>(lanes, lane);
    const unsigned group = lane / 4, quad = lane % 4;
    // A: a0..a7 in four registers, two per register, low half first.
    for (unsigned i = 0; i < 8; ++i) {
      const unsigned row = group + ((i / 2) % 2 == 1 ? 8 : 0);
      const unsigned col = quad * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      o.a[row][col] = p == nullptr ? kNaN : decode(p->a[i / 2], i & 1);
    }
    // B: b0..b3 in two registers; column groupID.
    for (unsigned i = 0; i < 4; ++i)
      o.b[quad * 2 + (i & 1) + (i >= 2 ? 8 : 0)][group] =
          p == nullptr ? kNaN : decode(p->b[i / 2], i & 1);
    gather_c(p, group, quad, o);
  }
  multiply_and_scatter(lanes, o, 16);
}

float tf32_value(unsigned reg) { return std::bit_cast<float>(reg & 0xffffe000u); }

}  // namespace

void complete_mma_m16n8k16_f16(const WarpLanes& lanes) { complete_m16n8k16<&f16_at>(lanes); }
void complete_mma_m16n8k16_bf16(const WarpLanes& lanes) { complete_m16n8k16<&bf16_at>(lanes); }

void complete_mma_m16n8k8_tf32(const WarpLanes& lanes) {
  Operands o;
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    const auto* p = payload<MmaPayload>(lanes, lane);
    const unsigned group = lane / 4, quad = lane % 4;
    // A: a0, a2 in row groupID, a1, a3 eight below; a2, a3 four columns on.
    for (unsigned i = 0; i < 4; ++i)
      o.a[group + (i % 2 == 1 ? 8 : 0)][quad + (i >= 2 ? 4 : 0)] =
          p == nullptr ? kNaN : tf32_value(p->a[i]);
    for (unsigned i = 0; i < 2; ++i)
      o.b[quad + (i == 1 ? 4 : 0)][group] = p == nullptr ? kNaN : tf32_value(p->b[i]);
    gather_c(p, group, quad, o);
  }
  multiply_and_scatter(lanes, o, 8);
}

unsigned round_to_tf32(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if (!std::isfinite(value)) return bits;
  return (bits + 0x1000u) & 0xffffe000u;
}

}  // namespace convjit::emulator
