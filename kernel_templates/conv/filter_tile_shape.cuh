// How the filters' copy (conv/packed_filters.cuh, convjit_kernel_prepare)
// cuts its work where it copies tiles through shared memory.  Plain
// macros: the host sizes the grid with them (dispatcher/backends/jit/
// filter_copy.cpp), the template its tile.
//
// A tile is 128 or 256 (row, run element) pairs of the copy, all their
// taps: w's runs (contiguous taps) of 8 rows by 16 or 32 run elements
// where a row steps through w by the taps (the backward-data order's
// channels), else of 2 or 4 rows by 64 run elements (the forward order's
// filters).  Either way w's contiguous stretches are 16-byte multiples
// for any taps.  The wide tiles serve copies of more pairs than 128-pair
// tiles would cover in one round of 8 blocks on each of an H100's or
// H200's 132 SMs: each round costs the copy its latency, where a block's
// own work is a fraction of it (analyser: 512 x 512 3 x 3 filters, 1024
// blocks, 3.3-3.7 us against 6.3-6.9 in 2048; 128 x 128 ones, 128
// blocks, 2.1-2.3 us against 2.7-2.9 in 64).
#pragma once

#define CONVJIT_FILTER_TILE_WIDE(pairs) ((pairs) > 132 * 8 * 128)
#define CONVJIT_FILTER_TILE_ROWS(rows_inner, wide) ((rows_inner) ? 8 : (wide) ? 4 : 2)
#define CONVJIT_FILTER_TILE_RUN(rows_inner, wide) (!(rows_inner) ? 64 : (wide) ? 32 : 16)
// The most pairs a tile holds, in shared memory as f32: 1 KiB a tap; at
// most 48 of the 48 KiB a block may declare statically (so not 7 x 7
// filters, which keep the gathering copy).
#define CONVJIT_FILTER_TILE_PAIRS 256
#define CONVJIT_FILTER_TILE_MAX_TAPS 48
// A tile's array for filters of `taps` taps: what the most pairs take, at
// most what the most taps take (a declared array takes its shared memory
// whether or not its branch runs).
#define CONVJIT_FILTER_TILE_FLOATS(taps) \
  (CONVJIT_FILTER_TILE_PAIRS *           \
   ((taps) < CONVJIT_FILTER_TILE_MAX_TAPS ? (taps) : CONVJIT_FILTER_TILE_MAX_TAPS))
