// The plane tiles of the kernels for layouts with W contiguous (NCHW and
// its kin; common/plane_tile.cuh): a block computes ROWS x COLS pixels of
// one (batch, channel) plane at one depth, a thread per pixel, from a halo
// staged in shared memory.  Plain macros: the host sizes the grid and
// checks shared memory with them (kernel_source.cpp, kernel_variants.cpp).
#pragma once

#define CONVJIT_PLANE_TILE_ROWS 8
#define CONVJIT_PLANE_TILE_COLS 32
