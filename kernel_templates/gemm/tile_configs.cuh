// The implicit-GEMM tile configurations the JIT offers, one line each:
//   X(id, BM, BN, WARPS_M, WARPS_N, STAGES)
// BM x BN is the thread block's output tile, split over WARPS_M x
// WARPS_N warps (always 8: the JIT's 256-thread blocks); STAGES is the
// depth of the cp.async pipeline.  A tile row is 64 bytes of the GEMM's
// K (BK = 32 16-bit or 16 32-bit elements), so one stage holds
// (BM + BN) * 64 bytes: every configuration stays within the 48 KiB of
// static shared memory a block may declare.
//
// Plain macros, read by the host (kernel_source.cpp picks among them), by
// the emulator's generated builds (one instantiation per line) and by the
// JIT prelude, which names one of them; the ids are the variant ids.
#pragma once

// Tensor-core tiles (mma.sync): f16 and bf16, and f32 as TF32 when allowed.
// clang-format off
#define CONVJIT_TENSOR_CORE_TILES(X) \
  X(tc128x128, 128, 128, 2, 4, 3)    \
  X(tc128x64,  128,  64, 4, 2, 4)    \
  X(tc64x64,    64,  64, 2, 4, 4)    \
  X(tc128x32,  128,  32, 8, 1, 4)
// Strict f32 on FMA units: each thread an outer-product block of the tile.
#define CONVJIT_SIMT_TILES(X)        \
  X(simt128x64, 128,  64, 4, 2, 3)   \
  X(simt64x64,   64,  64, 2, 4, 3)
// clang-format on
