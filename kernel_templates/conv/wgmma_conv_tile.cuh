// The output tiles of the Hopper convs whose operands are both K-major
// (conv_fwd_wgmma.cuh, conv_bwddata_wgmma.cuh): 128 pixels by N channels
// a consumer warpgroup, N = 128 or 64 (32 where 64 would pad at least
// half of them).  A tile is one consumer's (in ping-pong each consumer
// takes its own), or two consumers' side by side along the pixels (256
// x N) or along the filters (128 x 256: Problem::TILE_N, the tile's
// filters, 256 and each consumer 128 of them).  A, the tile's pixels by
// a K step's channels of one tap (Problem::STEP: 64, or 32 or 16 where
// the conv reduces no more), and B, the tile's filters by the same
// channels, each a box swizzled by its rows' bytes (128, 64 or 32), make
// a stage of the ring (wgmma_pipeline.cuh); with row taps
// (Problem::ROW_TAPS), A's box a consumer holds a window row's taps and
// B a box a tap.
// The tile's consumer multiplies its 128 rows of A by its N rows of B.
// N = 64 serves layers of 64 filters or fewer without multiplying the
// other 64's zeros.  Along the filters, the two consumers read the same
// A: a K step brings half the im2col rows of 256 x 128's for the same
// bytes and FLOPs.
// Here are the consumer's main loop over the stages, split-K's slices
// of the K steps and their partial sums, Stream-K's parts of tiles, and
// the epilogue that writes the tile through an Output:
//   struct Output {
//     index_t offset(index_t m) const;  // pixel m's element, -1: not stored
//     index_t channels, channel_stride; // the N side: channels, their stride
//     bool vectors;                     // 16-byte chunks of 8 channels
//   };
// after an Epilogue's math on each chunk of 8 channels of a pixel
// (ScaledEpilogue below, or a conv fwd's FusedEpilogue of
// common/fused_epilogue.cuh):
//   void apply(float (&acc)[8], index_t pixel, index_t c0, index_t count,
//              index_t stride, bool vector) const;
// or, where the tile goes to y by TMA (store_by_tma: no residual), on
// each value of filter k:
//   float value(float acc, index_t at, index_t k) const;
#pragma once
#include "common/arrival_counter.cuh"
#include "common/channel_vectors.cuh"
#include "common/epilogue.cuh"
#include "common/mbarrier.cuh"
#include "common/tma.cuh"
#include "common/vector_memory.cuh"
#include "common/wgmma.cuh"
#include "conv/im2col_loads.cuh"
#include "conv/wgmma_conv_shape.cuh"
#include "conv/wgmma_pipeline.cuh"

namespace convjit_device {
namespace wgmma_conv_tile {

using namespace wgmma_pipeline;

// kBlockM: a consumer's pixels.
constexpr int kBlockM = CONVJIT_WGMMA_PIXELS;
// A K step's channels (Problem::STEP), and the bytes of a row of A and of
// K-major B: the span of the swizzle TMA writes them with and wgmma reads
// them through, whose pattern repeats every 8 rows.  Functions, not
// constants: the emulator binds Problem at run time.
__device__ __forceinline__ int step_channels() { return static_cast<int>(Problem::STEP); }
__device__ __forceinline__ unsigned step_row_bytes() {
  return static_cast<unsigned>(step_channels()) * 2;
}
__device__ __forceinline__ wgmma_swizzle_t step_swizzle() {
  return step_row_bytes() == 128  ? wgmma_swizzle_128
         : step_row_bytes() == 64 ? wgmma_swizzle_64
                                  : wgmma_swizzle_32;
}
// A consumer's A per stage.
__device__ __forceinline__ unsigned operand_bytes() { return kBlockM * step_row_bytes(); }
// A tile's consumers along its filters (two where Problem::TILE_N is
// twice a consumer's 128) and along its pixels, and this consumer's
// place along each.
constexpr int kConsumerFilters = CONVJIT_WGMMA_FILTERS;
__device__ __forceinline__ int filter_consumers() {
  return Problem::TILE_N > kConsumerFilters ? static_cast<int>(Problem::TILE_N) / kConsumerFilters
                                            : 1;
}
__device__ __forceinline__ int pixel_consumers() { return tile_consumers() / filter_consumers(); }
__device__ __forceinline__ int pixel_consumer_index() {
  return tile_consumer_index() / filter_consumers();
}
__device__ __forceinline__ int filter_consumer_index() {
  return tile_consumer_index() % filter_consumers();
}
// A tile's pixels and filters (a consumer's N each along the filters),
// and its A per stage.
__device__ __forceinline__ int tile_pixels() { return pixel_consumers() * kBlockM; }
template <int N>
__device__ __forceinline__ int tile_filters() {
  return filter_consumers() * N;
}
// The taps a stage takes along a window row (Problem::ROW_TAPS): one, or
// all S of them at stride 1 along W, where each consumer's box of A is
// its 128 anchors (im2col_loads.cuh's widened rows) plus the window's
// reach, (S - 1) DW, at the row's first tap: tap s is the same box s DW
// rows down.  B then holds a box of the tile's filters for each tap.
__device__ __forceinline__ int row_taps() { return static_cast<int>(Problem::ROW_TAPS); }
__device__ __forceinline__ unsigned a_box_rows() {
  const index_t reach = row_taps() > 1 ? (Problem::S - 1) * Problem::DW : 0;
  return kBlockM + static_cast<unsigned>(reach);
}
// A consumer's region of A in a stage: its box, rounded up to the
// swizzle's 8-row repeat, so that every region (and so every B box after
// them) starts where a pattern does.  Tap s's descriptor starts s DW rows
// into it, base offset 0: wgmma swizzles by address, and the pattern TMA
// wrote starts at the region's 1024-byte boundary (the PTX ISA's base
// offset is the pattern's, not the matrix's).
__device__ __forceinline__ unsigned a_region_bytes() {
  return (a_box_rows() + 7) / 8 * 8 * step_row_bytes();
}
__device__ __forceinline__ unsigned a_bytes() {
  return static_cast<unsigned>(pixel_consumers()) * a_region_bytes();
}
// B's box at one tap: the tile's filters, a row each.
template <int N>
__device__ __forceinline__ unsigned b_tap_bytes() {
  return static_cast<unsigned>(tile_filters<N>()) * step_row_bytes();
}
// A stage: A's regions, then B's boxes, one a tap.
template <int N>
__device__ __forceinline__ unsigned stage_bytes() {
  return a_bytes() + static_cast<unsigned>(row_taps()) * b_tap_bytes<N>();
}
// The bytes a stage's loads bring (its mbarrier's transaction count): all
// of it but the regions' rounding.
template <int N>
__device__ __forceinline__ unsigned loaded_bytes() {
  return static_cast<unsigned>(pixel_consumers()) * a_box_rows() * step_row_bytes() +
         static_cast<unsigned>(row_taps()) * b_tap_bytes<N>();
}

// B MN-major (Problem::FILTERS_MN): boxes of 64 of its N rows (128
// bytes, 128-byte swizzled) by the K step's channels, each row of the box
// one k.
constexpr int kMnBoxColumns = CONVJIT_WGMMA_CHANNELS;
__device__ __forceinline__ unsigned mn_box_bytes() {
  return static_cast<unsigned>(step_channels()) * kMnBoxColumns * 2;
}

// A K step's B, as consume() reads it, from map 1 at tap (s, r, t) of
// the filters it maps: K-major, one box of the tile's filters (from n0)
// by the step's channels from c0 (w, or a packed copy); or with
// Problem::FILTERS_MN (a bwddata's w in place, its channels contiguous)
// a box of 64 MN-major rows for every 64 of the tile's filters, w's
// channels from n0 (B's N) by the step's filters from c0 (B's K).
// In clusters that share a filter tile (wgmma_pipeline.cuh) the first
// block loads B into every block of its cluster; the others load none.
template <class Shared, class Barrier>
__device__ __forceinline__ void load_filter_box(Shared b, const tensor_map_t& map, Barrier full,
                                                const int (&coords)[5]) {
  if (!clustered() || cluster_shares_pixels())
    tma_load_tile<5>(b, map, full, coords);
  else if (loads_shared_operand())
    tma_load_tile_multicast<5>(b, map, full, coords, cluster_mask());
}
template <int N, class Shared, class Barrier>
__device__ __forceinline__ void load_filters(Shared b, const tensor_map_t& map, Barrier full,
                                             int c0, int s, int r, int t, int n0) {
  if (!Problem::FILTERS_MN) {
    load_filter_box(b, map, full, {c0, s, r, t, n0});
    return;
  }
  for (int box = 0; box < tile_filters<N>() / kMnBoxColumns; ++box)
    load_filter_box(&b[box * mn_box_bytes() / 4], map, full,
                    {n0 + box * kMnBoxColumns, s, r, t, c0});
}

// One k16 slice of a consumer's rows: A's top and bottom 64 rows by B,
// B transposed (MN-major) or not; the bottom ones only where they hold
// pixels (a last pixel tile of 64 rows or fewer pads the rest).
template <int N, int TransB>
__device__ __forceinline__ void multiply_slice(wgmma_accumulators<N>& top,
                                               wgmma_accumulators<N>& bottom, unsigned long long a,
                                               unsigned long long b, bool accumulate,
                                               bool bottom_rows) {
  const unsigned long long half_a = operand_bytes() / 2 >> 4;  // rows 64-127, 16-byte units
  wgmma_ss<N, Operand, 0, TransB>(top, a, b, accumulate);
  if (bottom_rows) wgmma_ss<N, Operand, 0, TransB>(bottom, a + half_a, b, accumulate);
}

// A consumer's loop: per stage and row tap, a k16 slice of the two m64nN
// wgmmas over its 128 rows of A and its N rows of B (its filters' box,
// or boxes where MN-major) per 16 channels of the step (4, 2 or 1); a
// slice is 32 bytes further along A's swizzled rows, and along B's
// (K-major) or 16 rows further down B's boxes (MN-major, whose leading
// offset steps from one box to the next).  Row tap s reads A s DW rows
// down its region, and the tap's own box of B.  A K-major operand's
// 8-row groups are 8 of its rows apart, the swizzle's repeat; an MN-major
// box's rows are 128 bytes.
template <int N, class Tiles, class Ring>
__device__ __forceinline__ void consume(Tiles tiles, const Ring& ring, int steps,
                                        wgmma_accumulators<N>& top, wgmma_accumulators<N>& bottom,
                                        bool bottom_rows) {
  const unsigned rows = static_cast<unsigned>(pixel_consumer_index()) * a_region_bytes() / 4;
  const unsigned tap_rows = static_cast<unsigned>(Problem::DW) * step_row_bytes() / 4;
  const bool mn = Problem::FILTERS_MN != 0;
  const unsigned filters =
      a_bytes() / 4 + static_cast<unsigned>(filter_consumer_index()) *
                          (mn ? N / kMnBoxColumns * mn_box_bytes() : N * step_row_bytes()) / 4;
  const unsigned row_group = 8 * step_row_bytes();
  const unsigned b_leading = mn ? mn_box_bytes() : 16, b_slice = mn ? 2 * kSwizzleRowGroup : 32;
  const unsigned b_row_group = mn ? kSwizzleRowGroup : row_group;
  const wgmma_swizzle_t b_swizzle = mn ? wgmma_swizzle_128 : step_swizzle();
  consume_steps(ring, steps, stage_bytes<N>() / 4, top, bottom, [&](unsigned at, bool accumulated) {
    for (int tap = 0; tap < row_taps(); ++tap) {
      const unsigned t = static_cast<unsigned>(tap);
      const unsigned long long a =
          wgmma_descriptor(&tiles[at + rows + t * tap_rows], 16, row_group, step_swizzle());
      const unsigned long long b = wgmma_descriptor(&tiles[at + filters + t * b_tap_bytes<N>() / 4],
                                                    b_leading, b_row_group, b_swizzle);
      for (int slice = 0; slice < step_channels() / 16; ++slice) {
        const unsigned long long a_offset = static_cast<unsigned long long>(slice) * 32 >> 4;
        const unsigned long long b_offset = static_cast<unsigned long long>(slice) * b_slice >> 4;
        const bool accumulate = accumulated || tap > 0 || slice > 0;
        CONVJIT_IF_CONSTANT (Problem::FILTERS_MN != 0)
          multiply_slice<N, 1>(top, bottom, a + a_offset, b + b_offset, accumulate, bottom_rows);
        else
          multiply_slice<N, 0>(top, bottom, a + a_offset, b + b_offset, accumulate, bottom_rows);
      }
    }
  });
}

// The epilogue, in two halves around a block barrier.  First each
// consumer thread puts its accumulators, in f32, into the tile `staged`
// (row-major, a pixel's N filters a row of N floats) in shared memory that
// the main loop no longer needs.  Then the consumer writes y a chunk of 8
// filters at a time (16 bytes of y, and of the bias and residual, where
// its filters are contiguous and aligned): the Epilogue's math, beta's
// blend, and one rounding.
//
// The staged tile's 16-byte chunks are XOR-swizzled so that both halves
// are conflict-free in shared memory's phases.  The accumulators' stores,
// 8 bytes each (a pair of columns), serve a half-warp at a time: 4 rows, the same
// two adjacent chunks of each, which 2 (row % 4) moves to 4 different
// pairs.  The epilogue's 16-byte loads serve a quarter-warp at a time: 8
// lanes, every other chunk of one row (the first or the second half of
// their 8 values), which fall on 4 of the 8 chunk positions' banks unless
// the chunk's bit 3 moves the last four by one.  With the row % 8 alone,
// both took twice the wavefronts (the analyser's count).  A 32-wide row
// is 8 chunks, a quarter-warp two rows' every other chunk: the odd row's
// move by one (its pairs of stored chunks stay pairs).
template <int N>
__device__ __forceinline__ int staged_index(int row, int col) {
  // Unsigned: signed division and remainder cost a dozen instructions an
  // element where the epilogue's loop runs thousands of elements a block.
  const unsigned r = static_cast<unsigned>(row), c = static_cast<unsigned>(col);
  const unsigned odd_row = N == 32 ? r % 2 : 0;
  const unsigned chunk = (c / 4) ^ (r % 4 * 2) ^ (c / 32 % 2) ^ odd_row;
  return static_cast<int>(r * N + chunk * 4 + c % 4);
}
// The consumers' staged tiles lie one after the other along the filters,
// each of N columns: where the one of the consumer `along` the filters
// starts, and the tile's element (row, col) among them.
template <int N>
__device__ __forceinline__ unsigned staged_region(unsigned along) {
  return along * static_cast<unsigned>(tile_pixels()) * N;
}
template <int N>
__device__ __forceinline__ int tile_staged_index(int row, int col) {
  const unsigned c = static_cast<unsigned>(col);
  return static_cast<int>(staged_region<N>(c / N)) + staged_index<N>(row, static_cast<int>(c % N));
}

// A thread's accumulators are its origin plus constant steps
// (accumulator_place): the steps' rows are 0 or 8, so the swizzle is the
// same for both of the thread's rows, and it leaves chunks 16 apart (64
// columns) alike.  So the places of the origin's eight column groups
// j % 8, swizzled once, give every other by constant offsets.  Written
// per element, the 64 or 128 unrolled XORs took NVVM some 0.4 s of a
// kernel's 1.1 s to simplify.
template <int N, class Staged>
__device__ __forceinline__ void stage_accumulators(Staged staged, wgmma_accumulators<N>& acc,
                                                   int row0) {
  constexpr int kGroups = 8;
  const AccumulatorPlace origin = accumulator_origin();
  int group[kGroups];
#pragma unroll
  for (int j = 0; j < kGroups; ++j)
    group[j] = staged_index<N>(row0 + origin.row, origin.col + 8 * j);
    // Each pair of adjacent columns one 8-byte store, as ptxas would pair
    // them anyway: said so, the emulator and the analyser count the stores
    // the GPU runs (and as PTX's own, NVVM's time: store_shared_64).
#pragma unroll
  for (int i = 0; i < N / 2; i += 2) {
    const AccumulatorPlace step = accumulator_step(i);
    const int j = step.col / 8;
    store_shared_64(staged, group[j % kGroups] + step.row * N + step.col - 8 * (j % kGroups),
                    Vec64{{__float_as_uint(acc[i]), __float_as_uint(acc[i + 1])}});
  }
}

// alpha alone: the epilogue of an op without a fused one.
struct ScaledEpilogue {
  float alpha;
  __device__ __forceinline__ float value(float acc, index_t /*at*/, index_t /*k*/) const {
    return alpha * acc;
  }
  __device__ __forceinline__ void apply(float (&acc)[kChunkElements], index_t /*pixel*/,
                                        index_t /*c0*/, index_t /*count*/, index_t /*stride*/,
                                        bool /*vector*/) const {
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j) acc[j] *= alpha;
  }
};

// y's chunks of `rows` rows of the tile (all its filters), by `threads`
// threads from `t`:
// read(row, col, v) gives the tile's 8 values from (row, col), and
// offset_of(row) the row's pixel in y (Output::offset, -1: not stored).
template <int N, class Read, class OffsetOf, class Output, class Epilogue>
__device__ __forceinline__ void store_tile(Read read, OffsetOf offset_of, int rows, int t,
                                           int threads, storage_t* y, const Output& output,
                                           int filter0, const Epilogue& epilogue, float beta) {
  const int chunks = tile_filters<N>() / kChunkElements;  // per row
  const bool vectors = output.vectors && chunk_aligned(y);
  for (int item = t; item < rows * chunks; item += threads) {
    const int row = item / chunks, col = item % chunks * kChunkElements;
    const index_t filter = filter0 + col, offset = offset_of(row);
    if (offset < 0 || filter >= output.channels) continue;
    float v[kChunkElements];
    read(row, col, v);
    epilogue.apply(v, offset, filter, output.channels, output.channel_stride, vectors);
    write_channels(y, offset, filter, output.channels, output.channel_stride, vectors, v, 1.0f,
                   beta);
  }
}

// Split-K (Problem::SPLIT slices): a block's K steps, slice s of a tile
// taking [s steps / SPLIT, (s + 1) steps / SPLIT).
struct Slice {
  int first, steps;
};
__device__ __forceinline__ Slice k_slice(index_t split, int steps) {
  const index_t first = split * steps / Problem::SPLIT;
  const index_t end = (split + 1) * steps / Problem::SPLIT;
  return {static_cast<int>(first), static_cast<int>(end - first)};
}

// The partial sums of slice `split` for tile `tile` of `tiles`: the
// tile's pixels x filters f32, row-major, in the workspace from
// Problem::PARTIALS; null with one slice.
template <int N>
__device__ __forceinline__ scratch_t* partial_tile(scratch_t* workspace, index_t split,
                                                   index_t tile, index_t tiles) {
  if (Problem::SPLIT == 1) return nullptr;
  return workspace + Problem::PARTIALS + (split * tiles + tile) * tile_pixels() * tile_filters<N>();
}

// 64 rows' accumulators (rows row0 to row0 + 63, columns from col0) to
// their partial sums: a thread's accumulators come in pairs of adjacent
// columns, 8 bytes a store (a warp's 8 rows of 32 bytes: whole sectors).
template <int N>
__device__ __forceinline__ void store_partials(scratch_t* partial, wgmma_accumulators<N>& acc,
                                               int row0, int col0) {
#pragma unroll
  for (int i = 0; i < N / 2; i += 2) {
    const AccumulatorPlace at = accumulator_place(i);
    store_global_64(partial + (row0 + at.row) * tile_filters<N>() + col0 + at.col,
                    Vec64{{__float_as_uint(acc[i]), __float_as_uint(acc[i + 1])}});
  }
}

// The rows' pixels in y, kept in shared memory after the staged f32 tile
// (the ring holds both: wgmma_conv.cpp checks it) for the epilogue's
// loop, which writes a row's chunks from several threads: Output::offset
// divides by y's extents in 64 bits, some 60 instructions a row, once a
// row here instead of once a chunk.
template <int N>
__device__ __forceinline__ int row_offset_index(int row) {
  return tile_pixels() * tile_filters<N>() + 2 * row;
}
template <int N, class Staged, class Output>
__device__ __forceinline__ void stage_row_offsets(Staged staged, const Output& output,
                                                  index_t pixel0, int t, int threads) {
  // A row a thread, as the block's threads are the tile's rows: unrolled,
  // the loop would only add copies of the divisions that never run.
#pragma unroll 1
  for (int row = t; row < tile_pixels(); row += threads)
    store_offset(&staged[row_offset_index<N>(row)], output.offset(pixel0 + row));
}
template <int N, class Staged>
__device__ __forceinline__ index_t staged_row_offset(Staged staged, int row) {
  return load_offset(&staged[row_offset_index<N>(row)]);
}

// Where a consumer stages its tile: in the ring, which its tile's
// consumers have done with; in ping-pong, where the other consumer's main
// loop goes on in the ring, in its own place after it (the host's
// shared memory: WgmmaConvConfig::shared_bytes).
template <int N, class Tiles>
__device__ __forceinline__ auto staging(Tiles smem) {
  const unsigned ring_floats = static_cast<unsigned>(Problem::STAGES) * stage_bytes<N>() / 4;
  const unsigned staged_floats = static_cast<unsigned>(row_offset_index<N>(tile_pixels()));
  return &smem[ping_pong() ? ring_floats + static_cast<unsigned>(consumer_index()) * staged_floats
                           : 0u];
}

// The TMA store (Problem::TMA_STORE: y's pixels are rows of one stride,
// the host's map 2 over them).  Each consumer thread applies the epilogue
// to its accumulators where wgmma left them, rounds each value once to
// y's type, and stages the pair of adjacent filters it holds as one
// 32-bit word, in the layout TMA's swizzle gives a box of 128-byte
// (64-byte) rows: a box for each 64 of the consumer's filters (32 where
// N is), a row a pixel.  One thread then stores the tile's boxes, and the
// consumer goes on while the copy engine writes y (in ping-pong, to its
// next tile; the staging's next writers wait for the copy to have read
// it).  Of the threads' store loop this leaves the staging: a
// quarter-warp's 8 rows hit 8 different 16-byte chunks of the 32 banks.
// A tile of one tap a K step stores its consumer's 128 pixels as one box
// of map 2, y as (filters, pixels); a row-tap tile's anchors are no
// rectangle of y, and go by pieces of rows (StoreRows below).
template <int N>
__device__ constexpr int store_box_filters() {
  return N < 64 ? N : 64;
}
template <int N>
__device__ constexpr unsigned store_row_bytes() {
  return static_cast<unsigned>(store_box_filters<N>()) * 2;
}
template <int N>
__device__ constexpr int store_boxes() {
  return N / store_box_filters<N>();
}
__device__ __forceinline__ bool stores_with_tma() { return Problem::TMA_STORE != 0; }
constexpr int kStoreMap = 2;

// A row-tap tile's anchors run over output rows widened by the window's
// reach (anchor_row), so map 2 is y as (filters, W, rows), in boxes of a
// piece: 8 pixels of one row.  Each row of the consumer's anchors is
// staged from a slot on a piece's start, one after the other, each as
// many slots as the widened row rounded up to whole pieces, so that every
// anchor has its own (the reach's and those past y's too: each thread
// stores all its values, as the warp's store instructions do); the host
// keeps them within kRowStoreSlots (wgmma_store_map.cpp's
// row_store_slots).  A piece whose pixels are all the consumer's goes by
// TMA, which clips its pixels past OW; the consumer's first and last
// anchors may cut a piece each, whose pixels its threads store from the
// staging (the piece's others are the neighbouring consumer's).  Where a
// widened row is no whole number of pieces, a quarter-warp's 8 rows that
// straddle two output rows may share a swizzle row, and their staging
// takes a second wavefront.
constexpr int kRowStoreSlots = CONVJIT_WGMMA_ROW_STORE_SLOTS;
constexpr int kStorePiece = CONVJIT_WGMMA_STORE_PIECE;

// A box's slots (its rows): a consumer's pixels, or a row-tap tile's rows.
__device__ __forceinline__ unsigned store_slots() {
  return row_taps() > 1 ? kRowStoreSlots : kBlockM;
}
template <int N>
__device__ __forceinline__ unsigned store_box_bytes() {
  return store_slots() * store_row_bytes<N>();
}

// A consumer's anchors of a row-tap tile, `count` of them from `first`
// (to y's last anchor at most): their rows (from the first's, `row0`)
// and places along W, and their slots, in 32-bit steps from the first
// anchor (a consumer's anchors span a few rows).
struct StoreRows {
  index_t first, row0;
  int lead, count;  // the first anchor's place along the widened row

  __device__ __forceinline__ static int width() { return static_cast<int>(anchor_row()); }
  __device__ __forceinline__ static int row_slots() {
    return (width() + kStorePiece - 1) / kStorePiece * kStorePiece;
  }
  // Anchor i's row (from row0) and place along W.
  __device__ __forceinline__ int row(int i) const { return (lead + i) / width(); }
  __device__ __forceinline__ int w(int i) const { return (lead + i) % width(); }
  __device__ __forceinline__ int rows() const { return row(count - 1) + 1; }
  // Row r's anchors among the consumer's, [begin, stop) along W.
  __device__ __forceinline__ int begin(int r) const { return r == 0 ? lead : 0; }
  __device__ __forceinline__ int stop(int r) const {
    return r == rows() - 1 ? w(count - 1) + 1 : width();
  }
  // The piece from w0 (a multiple of 8) of row r is all the consumer's
  // (but for its pixels past OW, which no one stores).
  __device__ __forceinline__ bool whole(int r, int w0) const {
    const int pixels = static_cast<int>(Problem::OW);
    return w0 >= begin(r) && (w0 + kStorePiece < pixels ? w0 + kStorePiece : pixels) <= stop(r);
  }
  // Row r's place w0's slot: rows a whole number of pieces apart, the
  // first row's first piece at slot 0.
  __device__ __forceinline__ int slot_at(int r, int w0) const {
    return r * row_slots() + w0 - lead / kStorePiece * kStorePiece;
  }
  // Anchor i's: slot_at(row(i), w(i)), each row before it adding its
  // rounding to whole pieces.
  __device__ __forceinline__ int slot(int i) const {
    return i + lead % kStorePiece + row(i) * (row_slots() - width());
  }
};
__device__ __forceinline__ StoreRows store_rows(index_t first) {
  const index_t anchors = Problem::N * Problem::OD * Problem::OH * anchor_row();
  const index_t end = first + kBlockM < anchors ? first + kBlockM : anchors;
  return {first, first / anchor_row(), static_cast<int>(first % anchor_row()),
          static_cast<int>(end - first)};
}

// Element (row, col)'s byte in a box: TMA's swizzle XORs a row's 16-byte
// chunk index with its 128-byte line's index within the 1024-byte repeat
// (all 3 bits of it for 128-byte rows, 2 for 64).
template <int N>
__device__ __forceinline__ unsigned store_box_byte(unsigned row, unsigned col) {
  const unsigned linear = row * store_row_bytes<N>() + col * 2;
  return linear ^ ((linear >> 7) & (store_row_bytes<N>() / 16 - 1)) << 4;
}

// A half of a consumer's accumulators (rows `row0` on, 0 or 64) into its
// boxes, value(col, acc) each: y's value at the consumer's column `col`,
// row r at slot_of(r).  As stage_accumulators, the 8 column groups of
// each of the thread's two rows (8 apart) are swizzled once, every other
// element's place a constant away.
template <int N, class Boxes, class SlotOf, class Value>
__device__ __forceinline__ void stage_values(Boxes boxes, wgmma_accumulators<N>& acc, int row0,
                                             SlotOf slot_of, Value value) {
  constexpr int kGroups = store_box_filters<N>() / 8;
  const AccumulatorPlace origin = accumulator_origin();
  unsigned group[2][kGroups];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int slot = slot_of(row0 + origin.row + 8 * h);
    // Without row taps the second row's places are the first's 8 rows on
    // (the swizzle's repeat): said so, NVVM need not find it out.
#pragma unroll
    for (int j = 0; j < kGroups; ++j)
      group[h][j] = h > 0 && row_taps() == 1
                        ? group[0][j] + 8 * store_row_bytes<N>()
                        : store_box_byte<N>(static_cast<unsigned>(slot),
                                            static_cast<unsigned>(origin.col + 8 * j));
  }
#pragma unroll
  for (int i = 0; i < N / 2; i += 2) {
    const AccumulatorPlace step = accumulator_step(i);
    const int j = step.col / 8, col = origin.col + step.col;
    const unsigned at = static_cast<unsigned>(j / kGroups) * store_box_bytes<N>() +
                        group[step.row / 8][j % kGroups];
    const unsigned pair =
        bits_of_value(value(col, acc[i])) | bits_of_value(value(col + 1, acc[i + 1])) << 16;
    store_shared_32(boxes, static_cast<int>(at / 4), pair);
  }
}

// The tile's boxes, from thread 0 of its consumers: each consumer's N
// filters from filter0 + its column, its 128 pixels from pixel0 + its
// row, or with row taps its rows' whole pieces.  TMA skips the filters
// and pixels past y's.
template <int N, class Staged>
__device__ __forceinline__ void store_tile_boxes(const tensor_map_t& map, Staged staged,
                                                 index_t pixel0, int filter0) {
  const int boxes = filter_consumers() * store_boxes<N>();
  for (int p = 0; p < pixel_consumers(); ++p) {
    const index_t first = pixel0 + p * kBlockM;
    const auto box = [&](int f, int slot) {
      const unsigned at = static_cast<unsigned>(p * boxes + f) * store_box_bytes<N>() +
                          static_cast<unsigned>(slot) * store_row_bytes<N>();
      return &staged[at / 4];
    };
    CONVJIT_IF_CONSTANT (Problem::ROW_TAPS == 1) {
      for (int f = 0; f < boxes; ++f)
        tma_store_tile<2>(map, box(f, 0),
                          {filter0 + f * store_box_filters<N>(), static_cast<int>(first)});
      continue;
    }
    const StoreRows rows = store_rows(first);
    const int pixels = static_cast<int>(Problem::OW);
#pragma unroll 1
    for (int r = 0; r < rows.rows(); ++r)
#pragma unroll 1
      for (int w0 = rows.begin(r) / kStorePiece * kStorePiece;
           w0 < (rows.stop(r) < pixels ? rows.stop(r) : pixels); w0 += kStorePiece)
        if (rows.whole(r, w0))
          for (int f = 0; f < boxes; ++f)
            tma_store_tile<3>(
                map, box(f, rows.slot_at(r, w0)),
                {filter0 + f * store_box_filters<N>(), w0, static_cast<int>(rows.row0 + r)});
  }
  tma_store_commit();
}

// The pieces a row-tap consumer's first and last anchors cut (within its
// first and last 8), from its staged boxes (`own`), a chunk of 8 of its
// filters (from col0) a thread.  The staging holds y's values already:
// each chunk is copied as it is, one 16-byte store (the TMA store's map
// promises y's pixels 16-byte aligned rows of whole chunks).
template <int N, class Staged, class Output>
__device__ __forceinline__ void store_cut_pieces(Staged own, const StoreRows& rows, storage_t* y,
                                                 const Output& output, index_t col0) {
  constexpr int kChunks = N / kChunkElements;  // an anchor's
#pragma unroll 1
  for (int item = tile_thread() % static_cast<int>(kWarpgroupSize);
       item < 2 * kStorePiece * kChunks; item += static_cast<int>(kWarpgroupSize)) {
    const int k = item / kChunks, c = item % kChunks * kChunkElements;
    const int i = k < kStorePiece ? k : rows.count - 2 * kStorePiece + k;
    const index_t m = rows.first + i, filter = col0 + c;
    if (i >= rows.count || (k >= kStorePiece && i < kStorePiece) || filter >= output.channels)
      continue;
    const int w = rows.w(i);
    if (w >= static_cast<int>(Problem::OW) ||
        rows.whole(rows.row(i), w / kStorePiece * kStorePiece))
      continue;
    const unsigned at = static_cast<unsigned>(c / store_box_filters<N>()) * store_box_bytes<N>() +
                        store_box_byte<N>(static_cast<unsigned>(rows.slot(i)),
                                          static_cast<unsigned>(c % store_box_filters<N>()));
    store_128(y + output.offset(m) + filter, load_128(&own[at / 4]));
  }
}

// The staging's last TMA store has read it: before a consumer's next
// tile stages there, and before its block exits.
__device__ __forceinline__ void await_staged_reads() {
  if (stores_with_tma() && tile_thread() == 0) tma_store_wait_read<0>();
}

// A consumer's tile to y by TMA (where y is not read: the kernel serves
// beta 0, and the host stores no tile with a fused residual so): at the
// epilogue
// barrier's phase 0 the tile's consumers are past their last wgmma and
// the staging's last copy has read it; each thread stages its values
// (the epilogue's) and fences them for the async proxy; at phase 1
// thread 0 stores the boxes, and with row taps the consumer's threads
// the pieces its ends cut.  A filter past y's stages the last one's
// value (one TMA never writes), a select where a branch an element cost
// NVRTC time.  Values that read y, per element in the unrolled staging,
// took NVRTC twice as long to compile: those tiles go through the
// threads' store.
template <int N, class Tiles, class Barriers, class Output, class Epilogue>
__device__ __forceinline__ void store_by_tma(Tiles smem, Barriers consumers,
                                             const tensor_map_t& map, wgmma_accumulators<N>& top,
                                             wgmma_accumulators<N>& bottom, storage_t* y,
                                             const Output& output, index_t pixel0, int filter0,
                                             const Epilogue& epilogue) {
  const auto barrier = epilogue_barrier(consumers);
  await_staged_reads();
  mbarrier_arrive(barrier);
  mbarrier_wait_parity(barrier, 0);
  const auto staged = staging<N>(smem);
  const unsigned consumer =
      static_cast<unsigned>(pixel_consumer_index() * filter_consumers() + filter_consumer_index());
  const auto own = &staged[consumer * store_boxes<N>() * store_box_bytes<N>() / 4];
  const int col0 = filter0 + filter_consumer_index() * N;
  const index_t last = output.channels - 1;
  const auto value = [&](int col, float acc) {
    const index_t k = col0 + col;
    return epilogue.value(acc, 0, k < last ? k : last);
  };
  const StoreRows rows = store_rows(pixel0 + pixel_consumer_index() * kBlockM);
  // The row-tap code is compiled only into the row-tap kernels.
  CONVJIT_IF_CONSTANT (Problem::ROW_TAPS > 1) {
    const auto slot = [&](int row) { return rows.slot(row); };
    stage_values<N>(own, top, 0, slot, value);
    stage_values<N>(own, bottom, 64, slot, value);
  } else {
    const auto slot = [](int row) { return row; };
    stage_values<N>(own, top, 0, slot, value);
    stage_values<N>(own, bottom, 64, slot, value);
  }
  fence_proxy_async();
  mbarrier_arrive(barrier);
  mbarrier_wait_parity(barrier, 1);
  if (tile_thread() == 0) store_tile_boxes<N>(map, staged, pixel0, filter0);
  CONVJIT_IF_CONSTANT (Problem::ROW_TAPS > 1) store_cut_pieces<N>(own, rows, y, output, col0);
}

// Stream-K (Problem::STREAM_K blocks, in ping-pong): the K steps of all
// the tiles, `units`, cut evenly among the G blocks (a constant, so that
// the cuts divide by it without a 64-bit division's call, which spilled a
// 128-filter consumer's registers; the JIT launches them all whatever
// the GPU's SMs, which no block waits for), block b running units
// [b units / G, (b + 1) units / G) in order, so that a tile's steps may
// be parts of several neighbouring blocks' (a block's first and last
// work; the others are whole tiles).  A part's consumer copies its staged
// f32 sums to its slot in the workspace, 2b for a block's first work,
// 2b + 1 for its last, and counts itself on the tile's counter
// (common/arrival_counter.cuh); the last to count adds all the parts'
// sums, its own included, in the order of their steps (the same sum on
// every run) into its staging, zeroes the counter for the next launch
// (a kernel's own workspace starts zeroed; the JIT zeroes a caller's
// first), and stores the tile by its threads.  No block waits for
// another, so the grid need not all be resident at once.
__device__ __forceinline__ index_t stream_k_start(index_t block, index_t units) {
  return block * units / Problem::STREAM_K;
}
// The block whose units hold `unit` (blocks of no units hold none).
__device__ __forceinline__ index_t stream_k_block(index_t unit, index_t units) {
  index_t block = unit * Problem::STREAM_K / units;
#pragma unroll 1
  while (stream_k_start(block + 1, units) <= unit) ++block;
  return block;
}
// A tile's parts: those of blocks [first, end).  Block b's slot is 2b,
// but 2b + 1 for the first block's where its units start before the tile
// (the part is the block's last work, not its first).
struct TileParts {
  int first, end, lead;

  __device__ __forceinline__ int slot(int block) const {
    return 2 * block + (block == first ? lead : 0);
  }
};
// Those of the tile whose `steps` K steps start at unit `first` of `units`.
__device__ __forceinline__ TileParts tile_parts(index_t first, index_t steps, index_t units) {
  const index_t begin = stream_k_block(first, units);
  return {static_cast<int>(begin), static_cast<int>(stream_k_block(first + steps - 1, units)) + 1,
          stream_k_start(begin, units) < first ? 1 : 0};
}
// Where a consumer's sums go instead of y: split-K's slice's partial sums
// (Problem::SPLIT > 1), or with Stream-K a part's (fewer than a tile's
// `steps` K steps, of all the tiles' `units`; tiles of pixels by
// `filter_tiles` tiles of filters) into the workspace.  The part and its
// tile are told from the consumer's steps and first pixel and filter,
// which it keeps anyway: a 128-filter consumer that kept them too through
// its main loop spilled.
struct TileSums {
  scratch_t* partial;
  scratch_t* workspace;
  index_t steps, units, filter_tiles;

  template <int N>
  __device__ __forceinline__ index_t tile(index_t pixel0, int filter0) const {
    return pixel0 / kBlockM * filter_tiles + filter0 / N;
  }
};

// A part's sums: its consumer's staged f32 tile (staged_index's layout;
// the parts of a tile all alike), copied 16 bytes a thread at a time; and
// the tiles' counters after the slots.
template <int N>
__device__ __forceinline__ scratch_t* part_sums(scratch_t* workspace, index_t slot) {
  return workspace + Problem::PARTIALS + slot * kBlockM * N;
}
template <int N>
__device__ __forceinline__ scratch_t* tile_counter(scratch_t* workspace, index_t tile) {
  return workspace + Problem::PARTIALS + 2 * Problem::STREAM_K * kBlockM * N + tile;
}
template <int N>
__device__ __forceinline__ int staged_chunks() {
  return kBlockM * N / 4;
}

// A Stream-K part's consumer once its staging holds its f32 tile and
// rows' offsets (the epilogue's phase 1; the block's `block_tile`-th
// work): the tile to its slot, counted on the tile's counter.  True for
// the last to count, whose staging then holds the tile's sums, for the
// store loop.  The flag that tells the consumer's threads is the staged
// tile's first word, between phases 2 and 3 of the epilogue's barrier;
// the sums follow phase 4, and the store loop phase 5 (an even count, as
// the barrier's parities ask of each tile).  Staged, not from registers:
// a part's accumulators read out on a path of their own spilled a
// 128-filter consumer's registers.
template <int N, class Staged, class Barrier>
__device__ __forceinline__ bool sums_tile_parts(Staged staged, Barrier barrier,
                                                const TileSums& sums, index_t tile_index,
                                                int block_tile) {
  scratch_t* const workspace = sums.workspace;
  scratch_t* own = part_sums<N>(workspace, 2 * blockIdx.x + (block_tile > 0 ? 1 : 0));
  const int t = tile_thread();
#pragma unroll 1
  for (int c = t; c < staged_chunks<N>(); c += kWarpgroupSize)
    store_128(own + 4 * c, load_128(&staged[4 * c]));
  const TileParts tile = tile_parts(tile_index * sums.steps, sums.steps, sums.units);
  __threadfence();
  mbarrier_arrive(barrier);
  mbarrier_wait_parity(barrier, 0);
  if (t == 0) {
    scratch_t* counter = tile_counter<N>(workspace, tile_index);
    const bool finishes = arrives_last(counter, tile.end - tile.first);
    if (finishes) *counter = 0.0f;
    staged[0] = finishes ? 1.0f : 0.0f;
  }
  mbarrier_arrive(barrier);
  mbarrier_wait_parity(barrier, 1);
  const bool finishes = staged[0] != 0.0f;
  if (!finishes) return false;
  __threadfence();
  mbarrier_arrive(barrier);
  mbarrier_wait_parity(barrier, 0);
#pragma unroll 1
  for (int c = t; c < staged_chunks<N>(); c += kWarpgroupSize) {
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 1
    for (int b = tile.first; b < tile.end; ++b) {
      const Vec128 four = load_128_l2(part_sums<N>(workspace, tile.slot(b)) + 4 * c);
#pragma unroll
      for (int j = 0; j < 4; ++j) sum[j] += __uint_as_float(four.w[j]);
    }
    store_128(&staged[4 * c], Vec128{{__float_as_uint(sum[0]), __float_as_uint(sum[1]),
                                      __float_as_uint(sum[2]), __float_as_uint(sum[3])}});
  }
  mbarrier_arrive(barrier);
  mbarrier_wait_parity(barrier, 1);
  return true;
}

// A consumer's whole part for one tile: the main loop (in ping-pong, at
// its turn: block_tile is the tile's place among the block's), then its
// 128 rows by N columns of the tile (from pixel0 and filter0; the tile's
// first `pixels` rows hold pixels, and a consumer whose bottom 64 rows
// hold none skips their wgmmas: their accumulators, which nothing stores,
// keep what they held, as zeroing them made NVRTC spill the bwddata
// tiles' accumulators) to y or,
// with slices, to its slice's partial sums (`sums`); a Stream-K part
// stores the tile only where its consumer counts last (sums_tile_parts).
// To y, they go through shared memory (staging): with Problem::TMA_STORE
// by TMA, from maps.map[kStoreMap] (store_by_tma); else each consumer
// stages its f32 values at their own place, and all the tile's threads
// store the whole tile: its tile's
// consumers are past their last wgmma, and done reading the tile before
// (a ping-pong consumer's), once they all reach the epilogue's barrier
// (phase 0), and the staged rows are whole at phase 1.  Without K steps
// the tile is zero (y = beta y, after the epilogue's bias, residual and
// activation).
template <int N, class Tiles, class Ring, class Barriers, class Output, class Epilogue>
__device__ __forceinline__ void consume_and_store(Tiles smem, const Ring& ring, int steps,
                                                  Barriers consumers, int block_tile, storage_t* y,
                                                  const Output& output, index_t pixel0,
                                                  index_t pixels, int filter0,
                                                  const Epilogue& epilogue, float beta,
                                                  const TileSums& sums, const tensor_maps_t& maps) {
  const int row0 = pixel_consumer_index() * kBlockM, col0 = filter_consumer_index() * N;
  const bool bottom_rows = pixels > row0 + 64;
  wgmma_accumulators<N> top, bottom;
  wait_turn(consumers, block_tile);
  consume<N>(smem, ring, steps, top, bottom, bottom_rows);
  pass_turn(consumers);
  if (steps == 0)
    for (int i = 0; i < N / 2; ++i) {
      top[i] = 0.0f;
      bottom[i] = 0.0f;
    }
  if (Problem::SPLIT > 1) {
    store_partials<N>(sums.partial, top, row0, col0);
    store_partials<N>(sums.partial, bottom, row0 + 64, col0);
    return;
  }
  // A kernel that stores by TMA serves launches of beta 0 alone (the
  // host's check_output_beta; the JIT runs the others on its TMA
  // fallback): with the threads' store for beta compiled in too, NVRTC
  // took a quarter longer over it.
  CONVJIT_IF_CONSTANT (Problem::TMA_STORE != 0) {
    store_by_tma<N>(smem, consumers, maps.map[kStoreMap], top, bottom, y, output, pixel0, filter0,
                    epilogue);
    return;
  }
  const int t = tile_thread(), threads = static_cast<int>(tile_threads());
  const auto staged = staging<N>(smem);
  const auto barrier = epilogue_barrier(consumers);
  mbarrier_arrive(barrier);
  mbarrier_wait_parity(barrier, 0);
  const auto own = &staged[staged_region<N>(static_cast<unsigned>(filter_consumer_index()))];

  stage_accumulators<N>(own, top, row0);
  stage_accumulators<N>(own, bottom, row0 + 64);
  stage_row_offsets<N>(staged, output, pixel0, t, threads);
  mbarrier_arrive(barrier);
  mbarrier_wait_parity(barrier, 1);
  // Stream-K kernels store by their threads (the host's tma_store_map).
  CONVJIT_IF_CONSTANT (Problem::STREAM_K != 0) {
    if (steps < sums.steps &&
        !sums_tile_parts<N>(own, barrier, sums, sums.tile<N>(pixel0, filter0), block_tile))
      return;
  }
  // A chunk's 8 values are two swizzled runs of 4 (16 bytes each).
  store_tile<N>(
      [&](int row, int col, float(&v)[kChunkElements]) {
#pragma unroll
        for (int q = 0; q < kChunkElements; q += 4) {
          const Vec128 four = load_128(&staged[tile_staged_index<N>(row, col + q)]);
#pragma unroll
          for (int j = 0; j < 4; ++j) v[q + j] = __uint_as_float(four.w[j]);
        }
      },
      [&](int row) { return staged_row_offset<N>(staged, row); }, tile_pixels(), t, threads, y,
      output, filter0, epilogue, beta);
}

// A block's part: its work (block_work: its tile, in ping-pong every
// G-th, or its Stream-K parts), work_of(i) each index's Work (its K
// steps in .slice.steps); the producer runs produce(ring, work) for each,
// the consumers store(ring, work, j) for theirs (j: the work's place
// among the block's), `ring` counting from the work's first step.
template <class Ring, class Barriers, class Next, class WorkOf, class Produce, class Store>
__device__ __forceinline__ void run_block_work(const Ring& stages, Barriers consumers,
                                               const BlockWork<Next>& work, WorkOf work_of,
                                               Produce produce, Store store) {
  const auto steps = [&](index_t i) { return work_of(i).slice.steps; };
  run_warpgroups(
      stages, consumers,
      [&] {
        stages.drain(for_block_tiles(work, 1, 0, steps, [&](index_t i, int, int first) {
          produce(stages.from(first), work_of(i));
        }));
      },
      [&] {
        for_block_tiles(work, static_cast<int>(Problem::CONSUMERS), consumer_index(), steps,
                        [&](index_t i, int j, int first) { store(stages.from(first), work_of(i), j); });
        await_staged_reads();
      });
}
// The same over `blocks` indices (the tiles times their slices): a
// block's own, or in ping-pong every G-th.
template <class Ring, class Barriers, class WorkOf, class Produce, class Store>
__device__ __forceinline__ void run_block_tiles(const Ring& stages, Barriers consumers,
                                                index_t blocks, WorkOf work_of, Produce produce,
                                                Store store) {
  run_block_work(stages, consumers, block_tiles(blocks), work_of, produce, store);
}

// The second pass of split-K: a chunk of 8 of a tile's elements a
// thread, blockDim.x threads a block, so (pixels x N / 8) / blockDim.x
// blocks a tile (the host's launch).  Each element its slices' partial sums added
// in slice order (the same sum on every run, no atomics), then the
// epilogue and y as for one slice.
template <int N>
__device__ __forceinline__ index_t finish_blocks_per_tile() {
  return tile_pixels() * (tile_filters<N>() / kChunkElements) / static_cast<index_t>(blockDim.x);
}
// The tile this block of the second pass finishes.
template <int N>
__device__ __forceinline__ index_t finished_tile() {
  return static_cast<index_t>(blockIdx.x) / finish_blocks_per_tile<N>();
}
template <int N, class Output, class Epilogue>
__device__ __forceinline__ void finish_tile(scratch_t* workspace, index_t tile, index_t tiles,
                                           storage_t* y, const Output& output, index_t pixel0,
                                           int filter0, const Epilogue& epilogue, float beta) {
  const index_t part = static_cast<index_t>(blockIdx.x) % finish_blocks_per_tile<N>();
  store_tile<N>(
      [&](int row, int col, float (&v)[kChunkElements]) {
        for (int j = 0; j < kChunkElements; ++j) v[j] = 0.0f;
        for (index_t split = 0; split < Problem::SPLIT; ++split) {
          scratch_t* partial =
              partial_tile<N>(workspace, split, tile, tiles) + row * tile_filters<N>() + col;
#pragma unroll
          for (int q = 0; q < kChunkElements; q += 4) {
            const Vec128 four = load_128(partial + q);
#pragma unroll
            for (int j = 0; j < 4; ++j) v[q + j] += __uint_as_float(four.w[j]);
          }
        }
      },
      [&](int row) { return output.offset(pixel0 + row); }, tile_pixels(),
      static_cast<int>(part * blockDim.x + threadIdx.x),
      static_cast<int>(finish_blocks_per_tile<N>() * blockDim.x), y, output, filter0, epilogue,
      beta);
}

}  // namespace wgmma_conv_tile
}  // namespace convjit_device
