// The tile policy: how a transpose (or any permutation) is copied in tiles,
// which tile shape it takes, and whether its output is written with
// streaming stores. See host_copy.hpp for how a copy runs.
//
// Two regimes, chosen by one rule (uses_streaming_stores): a copy whose
// output the caches can hold takes the cached tiles and normal stores; a
// larger one takes the memory tiles and streaming stores. The rule trusts the
// reported last-level cache only up to trusted_cache_bytes (32 MiB). A
// virtual machine's guest may report the host's whole cache, shared with
// every other guest (docs/performance.md, "In the copies group", has what
// such a report, taken at its word, did to 128 MiB transposes). A report can
// only mislead the rule upwards (a guest shows the host's caches; none shows
// less than it has),
// and the cap bounds that: a guest's report cannot move the threshold past
// 16 MiB, while a small machine's smaller cache still lowers it. 32 MiB is
// the L3 of the machine the tiles were tuned on (one AMD EPYC core complex,
// which its 8 cores share), so the cap changes nothing there, and it is
// more than a copy's threads can count on of any shared L3 (a server's L3
// holds a few MiB per core). Measured: `python benchmarks/run.py --only
// copies`, rows "2-d T f32 128 MiB: d.T.copy() vs d.copy()" and f64.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "dlbridge/copy/vectors.hpp"
#include "dlbridge/copy/walk.hpp"
#include "dlbridge/cpu_info.hpp"

namespace dlb::detail {

inline constexpr std::int64_t cache_line = 64;

// The most last-level cache the tile policy believes a copy has (see the
// header comment).
inline constexpr std::uint64_t trusted_cache_bytes = std::uint64_t(32) << 20;

// The output size from which copies use streaming stores and the memory
// tiles, for a machine that reports `last_level` bytes of last-level cache:
// half of what the policy trusts of it, so that the source and the output
// both fit.
[[nodiscard]] constexpr std::uint64_t streaming_threshold(std::uint64_t last_level) noexcept {
  return std::min(last_level, trusted_cache_bytes) / 2;
}

// Whether a copy writing `bytes` writes past the caches (stream_16) and
// takes the memory tiles, on this machine.
[[nodiscard]] inline bool uses_streaming_stores(std::int64_t bytes) noexcept {
  return std::uint64_t(bytes) > streaming_threshold(host_cpu().last_level);
}

// The shape of a tile, in elements: `rows` along the source's runs, `cols`
// along the destination's rows; the source lines `prefetch` tiles ahead are
// asked for before they are needed (the hardware prefetchers follow long
// runs, not a tile's short ones). Measured on transposes of 2 MiB (from the
// caches) and 128 MiB (from memory), with power-of-two strides and without
// (benchmarks/copy_engine.py, its "transpose" rows):
// - from the caches, 32 x 32 (16 x 16 for 16-byte elements), and 32 x 64
//   with 32-byte vectors (a tile of 8 or 16 KiB): long runs on both sides,
//   fetched two tiles ahead; with 32-byte vectors, blocks narrower than 64
//   take tiles as wide as they are (32 or 16 columns, see tiles_for);
// - from memory (copies that use streaming stores), one cache line of each
//   source row by two of each destination row, fetched four tiles ahead:
//   many short source runs at once hide the memory's latency, where larger
//   tiles lose a third of the bandwidth.
struct tile_shape {
  std::int64_t rows, cols, prefetch;
};
template <std::size_t Size>
inline constexpr tile_shape cached_tile{std::min<std::int64_t>(32, 256 / std::int64_t(Size)),
                                        std::min<std::int64_t>(32, 256 / std::int64_t(Size)), 2};
template <std::int64_t Cols>
inline constexpr tile_shape cached_tile_avx2{32, Cols, 2};
template <std::size_t Size>
inline constexpr tile_shape streaming_tile{std::max<std::int64_t>(1, cache_line / std::int64_t(Size)),
                                           2 * cache_line / std::int64_t(Size), 4};

// Copies the rows x cols block whose element (r, c) is at
// src + r * src_row + c * src_col to dst + r * dst_row + c * dst_col (steps in
// bytes), a few source rows (c) at a time, each read from start to end.
template <std::size_t Size>
void copy_block(std::byte* dst, std::int64_t dst_row, std::int64_t dst_col, const std::byte* src,
                std::int64_t src_row, std::int64_t src_col, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t edge = block_edge<Size>;
  constexpr auto size = std::int64_t(Size);
  std::int64_t c = 0;
  if constexpr (edge > 1) {
    if (dst_col == size && src_row == size) {
      for (; c + edge <= cols; c += edge) {
        std::int64_t r = 0;
        for (; r + edge <= rows; r += edge)
          transpose_block<Size>(dst + r * dst_row + c * size, dst_row, src + r * size + c * src_col, src_col);
        for (; r < rows; ++r)
          for (std::int64_t k = c; k < c + edge; ++k)
            copy_element<Size>(dst + r * dst_row + k * size, src + r * size + k * src_col);
      }
    }
  }
  for (; c < cols; ++c)
    for (std::int64_t r = 0; r < rows; ++r)
      copy_element<Size>(dst + r * dst_row + c * dst_col, src + r * src_row + c * src_col);
}

// copy_block of a whole tile into the staging buffer, the source running
// along r, with Vector-byte vectors: with constant bounds, the loops unroll
// (measured: a fifth faster from memory, benchmarks/copy_engine.py's 128 MiB
// "transpose" rows).
template <std::size_t Size, tile_shape Tile, std::size_t Vector>
void transpose_tile(std::byte* staging, const std::byte* src, std::int64_t src_col) {
  constexpr std::int64_t edge = block_edge<Size, Vector>, size = std::int64_t(Size), row_bytes = Tile.cols * size;
  for (std::int64_t c = 0; c < Tile.cols; c += edge)
    for (std::int64_t r = 0; r < Tile.rows; r += edge) {
      if constexpr (edge > 1)
        transpose_block_of<Size, Vector>(staging + r * row_bytes + c * size, row_bytes, src + r * size + c * src_col,
                                         src_col);
      else
        copy_element<Size>(staging + r * row_bytes + c * size, src + r * size + c * src_col);
    }
}

// Copies a block in tiles of the given shape. With `streaming`, whole tile
// rows are written with streaming stores where the destination is 16-byte
// aligned.
template <std::size_t Size, tile_shape Tile, std::size_t Vector = 16>
void copy_tiles(const strided_block& b, bool streaming) {
  const auto [dst, src, rows, cols, dst_row, dst_col, src_row, src_col] = b;
  constexpr auto size = std::int64_t(Size);
  constexpr std::int64_t run_bytes = Tile.rows * size, row_bytes = Tile.cols * size;
  // With power-of-two strides the rows of a tile all fall in the same few
  // sets of the L1 cache, too few to hold them: lines would be evicted between
  // the accesses to their parts. So a tile is transposed into this contiguous
  // buffer, then each destination row is written in one go.
  alignas(64) std::byte staging[std::size_t(Tile.rows * row_bytes)];
  const bool staged = dst_col == size;
  streaming = streaming && staged && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 && dst_row % 16 == 0;
  const bool prefetch = src_row == size;  // only runs are worth it
  constexpr std::int64_t ahead = Tile.prefetch * Tile.rows;
  // Tiles go down a band of columns, then to the next band: the source is
  // read in long runs (its rows, along r) and the destination written in
  // short ones, measured faster than the other way round
  // (benchmarks/copy_engine.py's "transpose" rows).
  for (std::int64_t c0 = 0; c0 < cols; c0 += Tile.cols) {
    const std::int64_t n_cols = std::min(cols - c0, Tile.cols);
    for (std::int64_t r0 = 0; r0 < rows; r0 += Tile.rows) {
      const std::int64_t n_rows = std::min(rows - r0, Tile.rows);
      const std::byte* s = src + r0 * src_row + c0 * src_col;
      if (prefetch && r0 + ahead < rows)
        for (std::int64_t c = 0; c < n_cols; ++c)
          for (std::int64_t i = 0; i < run_bytes; i += cache_line)
            __builtin_prefetch(s + ahead * size + c * src_col + i, 0);
      std::byte* d = dst + r0 * dst_row + c0 * dst_col;
      if (!staged) {
        copy_block<Size>(d, dst_row, dst_col, s, src_row, src_col, n_rows, n_cols);
        continue;
      }
      if (n_rows == Tile.rows && n_cols == Tile.cols && src_row == size)
        transpose_tile<Size, Tile, Vector>(staging, s, src_col);
      else
        copy_block<Size>(staging, row_bytes, size, s, src_row, src_col, n_rows, n_cols);
      for (std::int64_t r = 0; r < n_rows; ++r) {
        std::byte* out = d + r * dst_row;
        const std::byte* in = staging + r * row_bytes;
        if (n_cols < Tile.cols)  // a few elements: a memcpy call would cost more
          copy_row<Size>(out, in, n_cols, size, size);
        else if (streaming)
          for (std::int64_t i = 0; i < row_bytes; i += 16) stream_16(out + i, in + i);
        else
          copy_run_of<row_bytes, Vector>(out, in);
      }
    }
  }
}

#if defined(DLB_AVX2)
// copy_tiles with 32-byte vectors, all of it compiled for AVX2.
template <std::size_t Size, tile_shape Tile>
DLB_AVX2 __attribute__((flatten)) void copy_tiles_avx2(const strided_block& b, bool streaming) {
  copy_tiles<Size, Tile, 32>(b, streaming);
}
#endif

// How a copy runs: in how many pieces (threads), with streaming stores or
// not, with AVX2 where the CPU has it. copy_strided chooses from the size of
// the copy and the machine (settings_for); tests and benchmarks choose freely.
struct copy_settings {
  unsigned parts = 1;
  bool streaming = false;
  bool avx2 = false;
};

// The tile loop for blocks `cols` elements of Size bytes wide under `how`.
// From the caches with AVX2, a block narrower than the 64-column tile takes
// the widest of 32 and 16 columns that it fills: a tile wider than its block
// copies through the partial-tile path, element by element (measured: the
// 2 MiB 4-d rows of `python benchmarks/run.py --only copies`, a batch of
// transposes 32 or 16 columns wide, ran slower than in tiles of their width).
template <std::size_t Size>
[[nodiscard]] auto tiles_for(const copy_settings& how, std::int64_t cols) {
#if defined(DLB_AVX2)
  if constexpr (block_edge<Size> > 1) {
    if (how.avx2) {
      if (how.streaming) return copy_tiles_avx2<Size, streaming_tile<Size>>;
      if (cols >= 64) return copy_tiles_avx2<Size, cached_tile_avx2<64>>;
      if (cols >= 32) return copy_tiles_avx2<Size, cached_tile_avx2<32>>;
      if (cols >= 16) return copy_tiles_avx2<Size, cached_tile_avx2<16>>;
    }
  }
#else
  (void)cols;
#endif
  return how.streaming ? copy_tiles<Size, streaming_tile<Size>> : copy_tiles<Size, cached_tile<Size>>;
}

}  // namespace dlb::detail
