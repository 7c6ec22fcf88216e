// How the convolution of short reductions over few filters
// (conv/conv_pixels.cuh) cuts its work.  Plain macros: the host sizes
// the grid and the shared memory with them (dispatcher/backends/jit/
// pixel_filters.cpp), the template its tiles.
#pragma once

// A block's tile of output pixels at one depth: ROWS x COLS, a thread
// for each of ROWS x COLS / STRIP strips of STRIP pixels COLS / STRIP
// apart along W (so that a warp's shared reads run along a row).
#define CONVJIT_PIXELS_TILE_ROWS 8
#define CONVJIT_PIXELS_TILE_COLS 64
#define CONVJIT_PIXELS_STRIP 2
// A thread's filters at a time: its accumulators are STRIP x FILTERS
// floats.
#define CONVJIT_PIXELS_FILTERS 16
// A tap's filters in shared memory are rounded up to this many floats:
// the 16-byte reads that fetch them.
#define CONVJIT_PIXELS_TAP_ALIGNMENT 4

// The block's dynamic shared memory at most: the filters and the tile's
// input halo, in f32.
#define CONVJIT_PIXELS_MAX_SHARED_BYTES (96 * 1024)
