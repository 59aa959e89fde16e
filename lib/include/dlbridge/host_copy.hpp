// The CPU strided copy and cast engine: any source strides (negative and zero
// included) to any destination layout, on host-accessible memory.
//
// How copy_strided runs. dlb::coalesce merges the axes and orders them by the
// destination's strides, and axes the destination walks backwards are turned
// around (the order of the writes is free since the operands do not overlap).
// Copies of 8 MiB and more are split along one axis among threads
// (for_each_part). Then, by the innermost axis:
// - contiguous on both sides: one memcpy per row, and a single memcpy when
//   the whole array is one run;
// - strided in the source while another axis is walked more closely there
//   (a transpose or any permutation): tiles over those two axes (copy_tiles),
//   so that both sides use whole cache lines; element by element, the source
//   or the destination would touch one cache line, and on large arrays one
//   page, per element. 4- and 8-byte elements move through 16-byte vectors,
//   or 32-byte ones where the CPU has AVX2; the tiles' shape depends on
//   whether the output fits the caches, and larger outputs are written with
//   streaming stores (see streams());
// - otherwise (gaps, broadcasts, narrow blocks): an element loop along the
//   innermost axis.
// Elements are moved as opaque bytes of their size. cast_strided walks the
// same way, converting runs of elements with convert.hpp's typed loops.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#endif

#include "dlbridge/convert.hpp"
#include "dlbridge/cpu_info.hpp"
#include "dlbridge/element.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/plan.hpp"
#include "dlbridge/tensor.hpp"

namespace dlb {

namespace detail {
// Calls f(dst_offset, src_offset), in elements, for every index of the first
// `outer` axes of p, the last of them fastest.
template <class F>
void for_each_outer(const strided_plan& p, std::int32_t outer, F&& f) {
  std::array<std::int64_t, max_ndim + 1> index{};
  std::int64_t dst = 0, src = 0;
  for (;;) {
    f(dst, src);
    std::int32_t axis = outer - 1;
    for (; axis >= 0; --axis) {
      dst += p.dst[axis];
      src += p.src[axis];
      if (++index[axis] < p.extent[axis]) break;
      dst -= p.dst[axis] * p.extent[axis];
      src -= p.src[axis] * p.extent[axis];
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}

// Calls row(dst_offset, src_offset, length, dst_step, src_step) for each
// innermost run of the coalesced iteration space; offsets and steps are in
// elements. Axes are walked in the destination's memory order.
template <class Row>
void for_each_row(extents_t shape, extents_t dst_strides, extents_t src_strides, Row&& row) {
  const strided_plan p = make_strided_plan(shape, dst_strides, src_strides);
  if (p.ndim == 0) return row(0, 0, 1, 1, 1);
  const std::int32_t inner = p.ndim - 1;
  for_each_outer(p, inner, [&](std::int64_t dst, std::int64_t src) {
    row(dst, src, p.extent[inner], p.dst[inner], p.src[inner]);
  });
}

// Walks `axis` the other way round: the same elements, other base pointers
// (elements of dst_size and src_size bytes).
inline void reverse_axis(strided_plan& p, std::int32_t axis, std::int64_t dst_size, std::int64_t src_size,
                         std::byte*& dst, const std::byte*& src) {
  dst += (p.extent[axis] - 1) * p.dst[axis] * dst_size;
  src += (p.extent[axis] - 1) * p.src[axis] * src_size;
  p.dst[axis] = -p.dst[axis];
  p.src[axis] = -p.src[axis];
}

// Blocks narrower than a few elements copy faster as rows than in tiles: a
// few passes over the source, each reading it in order (measured).
inline constexpr std::int64_t min_tile_extent = 8;

// Moves `axis` of p next to the innermost one, the others keeping their
// order, and turns it around if the source walks it backwards: the rows of
// the blocks copy_tiles and cast_tiles take.
inline void make_rows_axis(strided_plan& p, std::int32_t axis, std::int64_t dst_size, std::int64_t src_size,
                           std::byte*& dst, const std::byte*& src) {
  const std::int32_t rows = p.ndim - 2;
  for (std::int32_t i = axis; i < rows; ++i) {
    std::swap(p.extent[i], p.extent[i + 1]);
    std::swap(p.dst[i], p.dst[i + 1]);
    std::swap(p.src[i], p.src[i + 1]);
  }
  if (p.src[rows] < 0) reverse_axis(p, rows, dst_size, src_size, dst, src);
}

// The axis to tile with the innermost one: the one the source walks most
// closely (smallest non-zero |stride|), if it does so more closely than the
// innermost axis; -1 if there is none.
inline std::int32_t tile_axis(const strided_plan& p) {
  // Unsigned: a source stride may be INT64_MIN.
  const auto magnitude = [](std::int64_t v) { return v < 0 ? 0 - std::uint64_t(v) : std::uint64_t(v); };
  const std::int32_t inner = p.ndim - 1;
  std::int32_t best = -1;
  for (std::int32_t axis = 0; axis < inner; ++axis) {
    const std::uint64_t m = magnitude(p.src[axis]);
    if (m != 0 && m < magnitude(p.src[inner]) && (best < 0 || m < magnitude(p.src[best]))) best = axis;
  }
  return best;
}

// One element of Size bytes; a constant-size memcpy is a plain load and store
// at any alignment (NumPy arrays need not be aligned).
template <std::size_t Size>
inline void copy_element(std::byte* dst, const std::byte* src) {
  std::memcpy(dst, src, Size);
}

// Steps in bytes.
template <std::size_t Size>
void copy_row(std::byte* dst, const std::byte* src, std::int64_t length, std::int64_t dst_step,
              std::int64_t src_step) {
  for (std::int64_t i = 0; i < length; ++i) copy_element<Size>(dst + i * dst_step, src + i * src_step);
}

#if defined(__GNUC__)  // GCC and clang: 16-byte vectors (SSE2, NEON) without intrinsics
inline constexpr bool has_vectors = true;
using u32x4 = std::uint32_t __attribute__((vector_size(16)));
using u64x2 = std::uint64_t __attribute__((vector_size(16)));

template <class V>
inline V load_vector(const std::byte* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
inline void store_vector(std::byte* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

// Transposes the square block that fills 16-byte vectors (4x4 elements of 4
// bytes, 2x2 of 8) in registers: whole-vector loads and stores instead of one
// per element. Block row k of dst is at dst + k * dst_row and holds column k
// of the block at src, whose rows are at src + k * src_col; steps in bytes.
template <std::size_t Size>
inline void transpose_block(std::byte* dst, std::int64_t dst_row, const std::byte* src, std::int64_t src_col) {
  if constexpr (Size == 4) {
    const auto a = load_vector<u32x4>(src), b = load_vector<u32x4>(src + src_col),
               c = load_vector<u32x4>(src + 2 * src_col), d = load_vector<u32x4>(src + 3 * src_col);
    const u32x4 ab_lo = __builtin_shufflevector(a, b, 0, 4, 1, 5), ab_hi = __builtin_shufflevector(a, b, 2, 6, 3, 7);
    const u32x4 cd_lo = __builtin_shufflevector(c, d, 0, 4, 1, 5), cd_hi = __builtin_shufflevector(c, d, 2, 6, 3, 7);
    store_vector(dst, u32x4(__builtin_shufflevector(ab_lo, cd_lo, 0, 1, 4, 5)));
    store_vector(dst + dst_row, u32x4(__builtin_shufflevector(ab_lo, cd_lo, 2, 3, 6, 7)));
    store_vector(dst + 2 * dst_row, u32x4(__builtin_shufflevector(ab_hi, cd_hi, 0, 1, 4, 5)));
    store_vector(dst + 3 * dst_row, u32x4(__builtin_shufflevector(ab_hi, cd_hi, 2, 3, 6, 7)));
  } else if constexpr (Size == 8) {
    const auto a = load_vector<u64x2>(src), b = load_vector<u64x2>(src + src_col);
    store_vector(dst, u64x2(__builtin_shufflevector(a, b, 0, 2)));
    store_vector(dst + dst_row, u64x2(__builtin_shufflevector(a, b, 1, 3)));
  }
}
#else
inline constexpr bool has_vectors = false;
template <std::size_t Size>
inline void transpose_block(std::byte*, std::int64_t, const std::byte*, std::int64_t) {}
#endif

// 32-byte vectors (AVX2) on x86, where the CPU has them (has_avx2()): the
// tile loops are compiled a second time for them (copy_tiles_avx2). Twice
// the elements per instruction lift transposes from the caches by a third
// (docs/performance.md).
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define DLB_AVX2 __attribute__((target("avx2")))

[[nodiscard]] inline bool has_avx2() noexcept {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}

// transpose_block with 32-byte vectors: 8x8 elements of 4 bytes, 4x4 of 8.
// Intrinsics: GCC 12 splits the same shuffles written as vector extensions
// into 16-byte halves (measured 2.5 times slower).
template <std::size_t Size>
DLB_AVX2 inline void transpose_block_avx2(std::byte* dst, std::int64_t dst_row, const std::byte* src,
                                          std::int64_t src_col) {
  if constexpr (Size == 4) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + i * src_col));
    for (int i = 0; i < 8; i += 2) {  // interleave pairs of rows
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {  // then pairs of pairs
      r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
      r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {  // then the 16-byte halves
      t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
      t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(reinterpret_cast<float*>(dst + i * dst_row), t[i]);
  } else if constexpr (Size == 8) {
    __m256d r[4], t[4];
    for (int i = 0; i < 4; ++i) r[i] = _mm256_loadu_pd(reinterpret_cast<const double*>(src + i * src_col));
    for (int i = 0; i < 4; i += 2) {
      t[i] = _mm256_unpacklo_pd(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_pd(r[i], r[i + 1]);
    }
    for (int i = 0; i < 2; ++i) {
      r[i] = _mm256_permute2f128_pd(t[i], t[i + 2], 0x20);
      r[i + 2] = _mm256_permute2f128_pd(t[i], t[i + 2], 0x31);
    }
    for (int i = 0; i < 4; ++i) _mm256_storeu_pd(reinterpret_cast<double*>(dst + i * dst_row), r[i]);
  }
}
#else
[[nodiscard]] inline bool has_avx2() noexcept { return false; }
#endif

// Copies Bytes bytes in 16-byte pieces. A constant-size memcpy of a
// hundred bytes or so becomes `rep movs`, slow to start, and so does a loop
// of copies that GCC recognises as one: on x86 each piece passes through a
// register the compiler cannot see into (measured: a third faster than
// `rep movs` on 512-byte rows).
template <std::int64_t Bytes>
inline void copy_run(std::byte* dst, const std::byte* src) {
  static_assert(Bytes % 16 == 0);
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  for (std::int64_t i = 0; i < Bytes; i += 16) {
    __m128i piece = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __asm__("" : "+x"(piece));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), piece);
  }
#elif defined(__GNUC__)
  for (std::int64_t i = 0; i < Bytes; i += 16) store_vector(dst + i, load_vector<u64x2>(src + i));
#else
  std::memcpy(dst, src, Bytes);
#endif
}

// Block edge in elements for transposes with Vector-byte vectors; 1 where
// there are none.
template <std::size_t Size, std::size_t Vector = 16>
inline constexpr std::int64_t block_edge =
    has_vectors && (Size == 4 || Size == 8) ? std::int64_t(Vector / Size) : 1;

#if defined(DLB_AVX2)
// copy_run in 32-byte pieces.
template <std::int64_t Bytes>
DLB_AVX2 inline void copy_run_avx2(std::byte* dst, const std::byte* src) {
  static_assert(Bytes % 32 == 0);
  for (std::int64_t i = 0; i < Bytes; i += 32) {
    __m256i piece = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    __asm__("" : "+x"(piece));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), piece);
  }
}
#endif

// transpose_block and copy_run with Vector-byte vectors.
template <std::size_t Size, std::size_t Vector>
inline void transpose_block_of(std::byte* dst, std::int64_t dst_row, const std::byte* src, std::int64_t src_col) {
#if defined(DLB_AVX2)
  if constexpr (Vector == 32) return transpose_block_avx2<Size>(dst, dst_row, src, src_col);
#endif
  transpose_block<Size>(dst, dst_row, src, src_col);
}
template <std::int64_t Bytes, std::size_t Vector>
inline void copy_run_of(std::byte* dst, const std::byte* src) {
#if defined(DLB_AVX2)
  if constexpr (Vector == 32 && Bytes % 32 == 0) return copy_run_avx2<Bytes>(dst, src);
#endif
  copy_run<Bytes>(dst, src);
}

inline constexpr std::int64_t cache_line = 64;

// The shape of a tile, in elements: `rows` along the source's runs, `cols`
// along the destination's rows; the source lines `prefetch` tiles ahead are
// asked for before they are needed (the hardware prefetchers follow long
// runs, not a tile's short ones). Measured on transposes of 2 MiB (from the
// caches) and 128 MiB (from memory), with power-of-two strides and without
// (docs/performance.md):
// - from the caches, 32 x 32 (16 x 16 for 16-byte elements), and 32 x 64
//   with 32-byte vectors (a tile of 8 or 16 KiB): long runs on both sides,
//   fetched two tiles ahead;
// - from memory (copies that stream, see streams()), one cache line of each
//   source row by two of each destination row, fetched four tiles ahead:
//   many short source runs at once hide the memory's latency, where larger
//   tiles lose a third of the bandwidth.
struct tile_shape {
  std::int64_t rows, cols, prefetch;
};
template <std::size_t Size>
inline constexpr tile_shape cached_tile{std::min<std::int64_t>(32, 256 / std::int64_t(Size)),
                                        std::min<std::int64_t>(32, 256 / std::int64_t(Size)), 2};
inline constexpr tile_shape cached_tile_avx2{32, 64, 2};
template <std::size_t Size>
inline constexpr tile_shape streaming_tile{std::max<std::int64_t>(1, cache_line / std::int64_t(Size)),
                                           2 * cache_line / std::int64_t(Size), 4};

// A block of rows x cols elements, (r, c) at dst + r * dst_row + c * dst_col
// and src + r * src_row + c * src_col (steps in bytes), as copy_tiles and
// cast_tiles take it: the columns are the destination's innermost axis, the
// rows the axis the source walks most closely.
struct block {
  std::byte* dst;
  const std::byte* src;
  std::int64_t rows, cols, dst_row, dst_col, src_row, src_col;
};

// Copies the rows x cols block whose element (r, c) is at
// src + r * src_row + c * src_col to dst + r * dst_row + c * dst_col (steps in
// bytes), a few source rows (c) at a time, each read from start to end.
template <std::size_t Size>
void copy_block(std::byte* dst, std::int64_t dst_row, std::int64_t dst_col, const std::byte* src,
                std::int64_t src_row, std::int64_t src_col, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t block = block_edge<Size>;
  constexpr auto size = std::int64_t(Size);
  std::int64_t c = 0;
  if constexpr (block > 1) {
    if (dst_col == size && src_row == size) {
      for (; c + block <= cols; c += block) {
        std::int64_t r = 0;
        for (; r + block <= rows; r += block)
          transpose_block<Size>(dst + r * dst_row + c * size, dst_row, src + r * size + c * src_col, src_col);
        for (; r < rows; ++r)
          for (std::int64_t k = c; k < c + block; ++k)
            copy_element<Size>(dst + r * dst_row + k * size, src + r * size + k * src_col);
      }
    }
  }
  for (; c < cols; ++c)
    for (std::int64_t r = 0; r < rows; ++r)
      copy_element<Size>(dst + r * dst_row + c * dst_col, src + r * src_row + c * src_col);
}

// Writes 16 bytes past the caches (a streaming store), where the CPU has
// such stores; `p` is 16-byte aligned. An output larger than the last-level
// cache would only evict what is in it, and a normal store first reads the
// line it writes (its "read for ownership"): half again the memory traffic.
inline void stream_16(std::byte* p, const std::byte* from) {
#if defined(__SSE2__)
  _mm_stream_si128(reinterpret_cast<__m128i*>(p), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
#else
  std::memcpy(p, from, 16);
#endif
}

// Orders streaming stores before whatever this thread does next (they are
// weakly ordered, and another thread will read the output).
inline void finish_streaming() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// copy_block of a whole tile into the staging buffer, the source running
// along r, with Vector-byte vectors: with constant bounds, the loops unroll
// (measured: a fifth faster from memory).
template <std::size_t Size, tile_shape Tile, std::size_t Vector>
void transpose_tile(std::byte* staging, const std::byte* src, std::int64_t src_col) {
  constexpr std::int64_t block = block_edge<Size, Vector>, size = std::int64_t(Size), row_bytes = Tile.cols * size;
  for (std::int64_t c = 0; c < Tile.cols; c += block)
    for (std::int64_t r = 0; r < Tile.rows; r += block) {
      if constexpr (block > 1)
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
void copy_tiles(const block& b, bool streaming) {
  const auto [dst, src, rows, cols, dst_row, dst_col, src_row, src_col] = b;
  constexpr auto size = std::int64_t(Size);
  constexpr std::int64_t run_bytes = Tile.rows * size, row_bytes = Tile.cols * size;
  // With power-of-two strides the rows of a tile all fall in the same few
  // sets of the L1 cache, too few to hold them: lines would be evicted between
  // the accesses to their parts. So a tile is transposed into this contiguous
  // buffer, then each destination row is written in one go.
  alignas(64) std::byte staging[Tile.rows * row_bytes];
  const bool staged = dst_col == size;
  streaming = streaming && staged && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 && dst_row % 16 == 0;
  const bool prefetch = src_row == size;  // only runs are worth it
  constexpr std::int64_t ahead = Tile.prefetch * Tile.rows;
  // Tiles go down a band of columns, then to the next band: the source is
  // read in long runs (its rows, along r) and the destination written in
  // short ones, measured faster than the other way round.
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
DLB_AVX2 __attribute__((flatten)) void copy_tiles_avx2(const block& b, bool streaming) {
  copy_tiles<Size, Tile, 32>(b, streaming);
}
#endif

// How a copy runs: in how many pieces (threads), with streaming stores or
// not (see streams()), with AVX2 where the CPU has it. copy_strided
// chooses from the size of the copy and the machine; tests choose freely.
struct copy_settings {
  unsigned parts = 1;
  bool streaming = false;
  bool avx2 = false;
};

// The tile loop for blocks `cols` elements of Size bytes wide under `how`.
// Blocks narrower than an AVX2 tile from the caches take the 16-byte one
// (measured: 32 x 64 tiles of 16-element blocks run at half the speed).
template <std::size_t Size>
[[nodiscard]] auto tiles_for(const copy_settings& how, std::int64_t cols) {
#if defined(DLB_AVX2)
  if constexpr (block_edge<Size> > 1) {
    if (how.avx2 && how.streaming) return copy_tiles_avx2<Size, streaming_tile<Size>>;
    if (how.avx2 && cols >= cached_tile_avx2.cols) return copy_tiles_avx2<Size, cached_tile_avx2>;
  }
#else
  (void)cols;
#endif
  return how.streaming ? copy_tiles<Size, streaming_tile<Size>> : copy_tiles<Size, cached_tile<Size>>;
}

// The walk of a coalesced plan (not 0-d) that copies and casts share, with
// elements of dst_size and src_size bytes: axes the destination walks
// backwards are turned around, then by the innermost axis, for every index
// of the others:
// - runs(dst, src, length) where it is contiguous on both sides;
// - tiles(block) over it and the axis the source walks most closely, where
//   that is another one (a transpose or permutation) and both are at least
//   min_tile_extent long;
// - else rows(dst, src, length, dst_step, src_step), steps in bytes.
template <class Runs, class Tiles, class Rows>
void walk_plan(strided_plan p, std::int64_t dst_size, std::int64_t src_size, std::byte* dst, const std::byte* src,
               Runs&& runs, Tiles&& tiles, Rows&& rows) {
  for (std::int32_t axis = 0; axis < p.ndim; ++axis)
    if (p.dst[axis] < 0) reverse_axis(p, axis, dst_size, src_size, dst, src);
  const std::int32_t inner = p.ndim - 1;
  const std::int64_t length = p.extent[inner];
  if (p.dst[inner] == 1 && p.src[inner] == 1) {
    for_each_outer(p, inner,
                   [&](std::int64_t d, std::int64_t s) { runs(dst + d * dst_size, src + s * src_size, length); });
    return;
  }
  const std::int32_t axis = tile_axis(p);
  if (axis >= 0 && p.extent[axis] >= min_tile_extent && length >= min_tile_extent) {
    make_rows_axis(p, axis, dst_size, src_size, dst, src);
    const std::int32_t r = inner - 1;
    for_each_outer(p, r, [&](std::int64_t d, std::int64_t s) {
      tiles(block{dst + d * dst_size, src + s * src_size, p.extent[r], length, p.dst[r] * dst_size,
                  p.dst[inner] * dst_size, p.src[r] * src_size, p.src[inner] * src_size});
    });
    return;
  }
  for_each_outer(p, inner, [&](std::int64_t d, std::int64_t s) {
    rows(dst + d * dst_size, src + s * src_size, length, p.dst[inner] * dst_size, p.src[inner] * src_size);
  });
}

// copy_strided for elements of Size bytes over a coalesced plan.
template <std::size_t Size>
void copy_by_plan(const strided_plan& p, std::byte* dst, const std::byte* src, const copy_settings& how) {
  constexpr auto size = std::int64_t(Size);
  if (p.ndim == 0) return copy_element<Size>(dst, src);
  walk_plan(
      p, size, size, dst, src,
      [](std::byte* d, const std::byte* s, std::int64_t length) { std::memcpy(d, s, std::size_t(length * size)); },
      [&](const block& b) { tiles_for<Size>(how, b.cols)(b, how.streaming); },
      copy_row<Size>);
}

inline std::atomic<unsigned> copy_thread_limit{0};  // 0: the default, copy_threads()
}  // namespace detail

// The most threads a copy or cast on the CPU uses; copies of less than a
// few MiB use one. By default one per CPU this process may run on, at most 8
// (more rarely adds memory bandwidth).
[[nodiscard]] inline unsigned copy_threads() noexcept {
  const unsigned limit = detail::copy_thread_limit.load(std::memory_order_relaxed);
  return limit ? limit : std::min(detail::host_cpu().cpus, 8u);
}

// Sets copy_threads(); 0 restores the default. Results are the same, to the
// bit, whatever the number of threads.
inline void set_copy_threads(unsigned threads) noexcept {
  detail::copy_thread_limit.store(threads, std::memory_order_relaxed);
}

namespace detail {
// The number of threads to split a copy writing `bytes` among: one per
// 4 MiB, up to copy_threads(). Starting a thread costs some tens of
// microseconds, a few percent of copying 4 MiB.
[[nodiscard]] inline unsigned copy_parts(std::int64_t bytes) noexcept {
  constexpr std::int64_t min_part_bytes = std::int64_t(4) << 20;
  return unsigned(std::clamp<std::int64_t>(bytes / min_part_bytes, 1, copy_threads()));
}

// Whether a copy writing `bytes` writes past the caches (see stream_16):
// when its output would fill half the last-level cache.
[[nodiscard]] inline bool streams(std::int64_t bytes) noexcept {
  return std::uint64_t(bytes) > host_cpu().last_level / 2;
}

// Runs f(part, dst_offset, src_offset) for `parts` pieces of plan p, each on
// its own thread, the first on the calling one; offsets are those of the
// piece's first element, in elements. The pieces split one axis: the
// outermost with at least `parts` indices, else the longest, into runs of
// whole 64-element blocks where it is long enough, so that tiles stay whole.
// Where a thread cannot be started, its piece runs on the calling thread.
// f must not throw.
template <class F>
void for_each_part(const strided_plan& p, unsigned parts, F&& f) {
  if (parts <= 1 || p.ndim == 0) return f(p, std::int64_t(0), std::int64_t(0));
  std::int32_t axis = -1, longest = 0;
  for (std::int32_t a = 0; a < p.ndim && axis < 0; ++a) {
    if (p.extent[a] >= std::int64_t(parts)) axis = a;
    if (p.extent[a] > p.extent[longest]) longest = a;
  }
  if (axis < 0) {
    axis = longest;
    parts = unsigned(p.extent[axis]);
  }
  const std::int64_t extent = p.extent[axis];
  std::int64_t step = (extent + parts - 1) / parts;
  if (extent >= 64 * std::int64_t(parts)) step = (step + 63) / 64 * 64;
  auto run = [&](std::int64_t first) {
    strided_plan part = p;
    part.extent[axis] = std::min(step, extent - first);
    part.count = p.count / extent * part.extent[axis];
    f(part, first * p.dst[axis], first * p.src[axis]);
  };
  std::vector<std::thread> threads;
  threads.reserve(parts);
  for (std::int64_t first = step; first < extent; first += step) {
    try {
      threads.emplace_back(run, first);
    } catch (const std::system_error&) {  // no thread to be had
      run(first);
    }
  }
  run(0);
  for (auto& t : threads) t.join();
}

// The settings copy_strided uses for a copy writing `bytes`.
[[nodiscard]] inline copy_settings settings_for(std::int64_t bytes) {
  return {copy_parts(bytes), streams(bytes), has_avx2()};
}

// copy_strided's work over its plan (`itemsize`-byte elements).
inline void copy_plan(strided_plan plan, std::size_t itemsize, std::byte* dst, const std::byte* src,
                      const copy_settings& how) {
  auto unit = std::int64_t(itemsize);
  if (unit != 1 && unit != 2 && unit != 4 && unit != 8 && unit != 16) {
    split_into_bytes(plan, unit);
    unit = 1;
  }
  for_each_part(plan, how.parts, [&](const strided_plan& part, std::int64_t dst_offset, std::int64_t src_offset) {
    std::byte* d = dst + dst_offset * unit;
    const std::byte* s = src + src_offset * unit;
    switch (unit) {
      case 1: copy_by_plan<1>(part, d, s, how); break;
      case 2: copy_by_plan<2>(part, d, s, how); break;
      case 4: copy_by_plan<4>(part, d, s, how); break;
      case 8: copy_by_plan<8>(part, d, s, how); break;
      default: copy_by_plan<16>(part, d, s, how); break;
    }
    if (how.streaming) finish_streaming();
  });
}
}  // namespace detail

// Copies the elements of `shape` from src to dst, which must not overlap.
// Packed sub-byte dtypes must be C-contiguous on both sides. Every element of
// both must be in memory. (validate() accepts spans up to 2^64 - 1 bytes wide;
// the walk forms offsets up to one stride past an axis's end, at most twice
// the span, which stay inside int64 for spans below 2^62 bytes: any span of
// memory that exists.) Large copies are split among copy_threads() threads.
inline void copy_strided(extents_t shape, dtype type, const void* src, extents_t src_strides, void* dst,
                         extents_t dst_strides) {
  const auto count = element_count(shape);
  if (!count || *count == 0) return;
  const auto bytes = std::int64_t(type.storage_bytes(std::uint64_t(*count)));
  if (type.is_subbyte()) {
    std::memcpy(dst, src, std::size_t(bytes));
    return;
  }
  detail::copy_plan(detail::make_strided_plan(shape, dst_strides, src_strides), type.itemsize(),
                    static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), detail::settings_for(bytes));
}

namespace detail {
// Converts n contiguous elements: with the typed loop of convert.hpp where
// the pair has one, else with store(load()) for each.
struct run_converter {
  convert_fn typed;
  dtype from, to;

  void operator()(std::byte* dst, const std::byte* src, std::int64_t n) const {
    if (typed) return typed(dst, src, n);
    const auto from_size = std::int64_t(from.itemsize()), to_size = std::int64_t(to.itemsize());
    for (std::int64_t i = 0; i < n; ++i) store(to, dst + i * to_size, load(from, src + i * from_size));
  }
};

// copy_row for elements of `size` bytes, any size.
inline void copy_row_of(std::int64_t size, std::byte* dst, const std::byte* src, std::int64_t length,
                        std::int64_t dst_step, std::int64_t src_step) {
  switch (size) {
    case 1: return copy_row<1>(dst, src, length, dst_step, src_step);
    case 2: return copy_row<2>(dst, src, length, dst_step, src_step);
    case 4: return copy_row<4>(dst, src, length, dst_step, src_step);
    case 8: return copy_row<8>(dst, src, length, dst_step, src_step);
    default:
      for (std::int64_t i = 0; i < length; ++i) std::memcpy(dst + i * dst_step, src + i * src_step, std::size_t(size));
  }
}

// Casts go through buffers of this many elements: a tile of 32 x 32, or a
// piece of a strided row, gathered in the source's dtype, converted by one
// call of the run converter, then written out.
inline constexpr std::int64_t cast_tile_edge = 32, cast_buffer = cast_tile_edge * cast_tile_edge;

// A block as copy_tiles takes it, cast: the source elements (SrcSize bytes)
// of a tile are transposed into a buffer as in copy_tiles, converted as one
// run, and each destination row written from the result (to_size bytes).
template <std::size_t SrcSize>
void cast_tiles(const block& b, std::int64_t to_size, const run_converter& convert) {
  const auto [dst, src, rows, cols, dst_row, dst_col, src_row, src_col] = b;
  constexpr std::int64_t edge = cast_tile_edge, size = std::int64_t(SrcSize);
  alignas(64) std::byte gathered[cast_buffer * SrcSize] = {};  // what partial tiles leave is converted too
  alignas(64) std::byte converted[cast_buffer * 8];
  const bool prefetch = src_row == size;  // as copy_tiles does, two tiles ahead
  for (std::int64_t c0 = 0; c0 < cols; c0 += edge) {
    const std::int64_t n_cols = std::min(cols - c0, edge);
    for (std::int64_t r0 = 0; r0 < rows; r0 += edge) {
      const std::int64_t n_rows = std::min(rows - r0, edge);
      const std::byte* s = src + r0 * src_row + c0 * src_col;
      if (prefetch && r0 + 2 * edge < rows)
        for (std::int64_t c = 0; c < n_cols; ++c)
          for (std::int64_t i = 0; i < edge * size; i += cache_line)
            __builtin_prefetch(s + 2 * edge * size + c * src_col + i, 0);
      copy_block<SrcSize>(gathered, edge * size, size, s, src_row, src_col, n_rows, n_cols);
      convert(converted, gathered, n_rows * edge);  // whole buffer rows: the ends past n_cols are not written out
      std::byte* d = dst + r0 * dst_row + c0 * dst_col;
      for (std::int64_t r = 0; r < n_rows; ++r) {
        const std::byte* row = converted + r * edge * to_size;
        if (dst_col == to_size)
          std::memcpy(d + r * dst_row, row, std::size_t(n_cols * to_size));
        else
          copy_row_of(to_size, d + r * dst_row, row, n_cols, dst_col, to_size);
      }
    }
  }
}

// cast_strided over a coalesced plan: contiguous runs converted in place,
// transposes in tiles (cast_tiles), other rows in pieces gathered into a
// buffer, converted, and scattered.
template <std::size_t SrcSize>
void cast_by_plan(const strided_plan& p, std::byte* dst, const std::byte* src, const run_converter& convert) {
  constexpr auto from_size = std::int64_t(SrcSize);
  const auto to_size = std::int64_t(convert.to.itemsize());
  if (p.ndim == 0) return convert(dst, src, 1);
  walk_plan(
      p, to_size, from_size, dst, src, convert,
      [&](const block& b) { cast_tiles<SrcSize>(b, to_size, convert); },
      [&](std::byte* d, const std::byte* s, std::int64_t length, std::int64_t dst_step, std::int64_t src_step) {
        alignas(64) std::byte gathered[cast_buffer * SrcSize];
        alignas(64) std::byte converted[cast_buffer * 8];
        for (std::int64_t first = 0; first < length; first += cast_buffer) {
          const std::int64_t n = std::min(length - first, cast_buffer);
          copy_row<SrcSize>(gathered, s + first * src_step, n, from_size, src_step);
          convert(converted, gathered, n);
          copy_row_of(to_size, d + first * dst_step, converted, n, dst_step, to_size);
        }
      });
}

// cast_strided's work over its plan (elements of 1, 2, 4 or 8 bytes on both
// sides), split into `parts` pieces.
inline void cast_plan(const strided_plan& plan, const run_converter& convert, std::byte* dst, const std::byte* src,
                      unsigned parts) {
  const auto from_size = std::int64_t(convert.from.itemsize()), to_size = std::int64_t(convert.to.itemsize());
  for_each_part(plan, parts, [&](const strided_plan& part, std::int64_t dst_offset, std::int64_t src_offset) {
    std::byte* d = dst + dst_offset * to_size;
    const std::byte* s = src + src_offset * from_size;
    switch (from_size) {
      case 1: return cast_by_plan<1>(part, d, s, convert);
      case 2: return cast_by_plan<2>(part, d, s, convert);
      case 4: return cast_by_plan<4>(part, d, s, convert);
      default: return cast_by_plan<8>(part, d, s, convert);
    }
  });
}
}  // namespace detail

// Converts the elements of `shape` from one dtype to another (see store() for
// the rounding and overflow rules); copies them as they are when the dtypes
// are the same. Large casts are split among copy_threads() threads, as
// copies are.
inline void cast_strided(extents_t shape, dtype from, const void* src, extents_t src_strides, dtype to,
                         void* dst, extents_t dst_strides) {
  if (from == to) return copy_strided(shape, from, src, src_strides, dst, dst_strides);
  const auto count = element_count(shape);
  if (!count || *count == 0) return;
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  const auto word = [](dtype t) {
    const std::size_t n = t.itemsize();
    return !t.is_subbyte() && (n == 1 || n == 2 || n == 4 || n == 8);
  };
  if (!word(from) || !word(to)) {
    // Packed sub-byte operands are contiguous: address them by element index.
    // complex128 and odd sizes (vectors of 3 lanes) are rare enough to go one
    // element at a time.
    auto address = [](auto* base, dtype t, std::int64_t offset) {
      return t.is_subbyte() ? base : base + offset * std::int64_t(t.itemsize());
    };
    auto index = [](dtype t, std::int64_t offset) { return t.is_subbyte() ? offset : 0; };
    return detail::for_each_row(shape, dst_strides, src_strides,
                                [&](std::int64_t dst_offset, std::int64_t src_offset, std::int64_t length,
                                    std::int64_t dst_step, std::int64_t src_step) {
                                  for (std::int64_t i = 0; i < length; ++i) {
                                    const std::int64_t so = src_offset + i * src_step, dof = dst_offset + i * dst_step;
                                    store(to, address(d, to, dof), load(from, address(s, from, so), index(from, so)),
                                          index(to, dof));
                                  }
                                });
  }
  const auto bytes = *count * std::int64_t(std::max(from.itemsize(), to.itemsize()));
  detail::cast_plan(detail::make_strided_plan(shape, dst_strides, src_strides), {converter(from, to), from, to}, d, s,
                    detail::copy_parts(bytes));
}

// A new C-contiguous host tensor holding src's values converted to `to`.
// Throws std::invalid_argument when src is not host-accessible.
[[nodiscard]] inline tensor astype(const tensor& src, dtype to) {
  if (!src.device().is_host_accessible())
    throw std::invalid_argument("copying on the CPU needs host-accessible memory");
  tensor out = tensor::empty(src.shape(), to);
  if (to == src.type())
    copy_strided(src.shape(), to, src.data(), src.strides(), out.data(), out.strides());
  else
    cast_strided(src.shape(), src.type(), src.data(), src.strides(), to, out.data(), out.strides());
  return out;
}

// A new C-contiguous, writable host copy of src.
[[nodiscard]] inline tensor copy(const tensor& src) { return astype(src, src.type()); }

}  // namespace dlb
