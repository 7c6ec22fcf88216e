// What the emulator's warp collectives compute once every lane has
// arrived, following the PTX ISA: shfl.sync's lane arithmetic, vote.sync,
// ldmatrix's and mma.sync's fragment layouts.  Each lane's payload lives on
// its stack while it waits (warp_collective.hpp).
#pragma once

#include <cstdint>

#include "dispatcher/backends/emulator/warp_collective.hpp"

namespace convjit::emulator {

class SharedRegion;

// ---- shfl.sync ---------------------------------------------------------------

enum class ShuffleMode : std::uint8_t { idx, up, down, bfly };

struct ShufflePayload {
  ShuffleMode mode = ShuffleMode::idx;
  int b = 0;  // source lane, delta or lane mask
  int width = 32;
  std::uint64_t value = 0;  // this lane's var; 4 or 8 bytes
  std::uint64_t result = 0;
};
void complete_shuffle(const WarpLanes& lanes);
[[nodiscard]] const char* shuffle_name(ShuffleMode mode);

// ---- vote.sync and bar.warp.sync ------------------------------------------------

struct VotePayload {
  bool predicate = false;
  unsigned ballot = 0;  // lanes of the mask whose predicate holds
  unsigned arrived = 0;
};
void complete_vote(const WarpLanes& lanes);
void complete_syncwarp(const WarpLanes& lanes);

// ---- ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16 ----------------------

struct LdmatrixPayload {
  SharedRegion* region = nullptr;  // the row this lane addresses, if it is used
  long long index = 0;
  int matrices = 1;  // 1, 2 or 4
  bool trans = false;
  unsigned* out = nullptr;  // `matrices` registers
};
void complete_ldmatrix(const WarpLanes& lanes);

// ---- mma.sync.aligned ------------------------------------------------------------

struct MmaPayload {
  const unsigned* a = nullptr;
  const unsigned* b = nullptr;
  const float* c = nullptr;
  float* d = nullptr;
};
// m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32: a[4], b[2], c[4], d[4].
void complete_mma_m16n8k16_f16(const WarpLanes& lanes);
void complete_mma_m16n8k16_bf16(const WarpLanes& lanes);
// m16n8k8.row.col.f32.tf32.tf32.f32: a[4], b[2], c[4], d[4].  The tensor
// core reads a tf32 register's top 19 bits; cvt.rna.tf32.f32 is the
// caller's (to_tf32).
void complete_mma_m16n8k8_tf32(const WarpLanes& lanes);

// cvt.rna.tf32.f32: round to 10 mantissa bits, ties away from zero.
[[nodiscard]] unsigned round_to_tf32(float value);

}  // namespace convjit::emulator
