// The CPU strided copy and cast engine: any source strides (negative and zero
// included) to any destination layout, on host-accessible memory.
//
// How copy_strided runs. dlb::coalesce merges the axes and orders them by the
// destination's strides, and axes the destination walks backwards are turned
// around (the order of the writes is free since the operands do not overlap).
// Then, by the innermost axis:
// - contiguous on both sides: one memcpy per row, and a single memcpy when
//   the whole array is one run;
// - strided in the source while another axis is walked more closely there
//   (a transpose or any permutation): tiles over those two axes (copy_tiles),
//   so that both sides use whole cache lines; element by element, the source
//   or the destination would touch one cache line, and on large arrays one
//   page, per element. 4- and 8-byte elements move through 16-byte vectors,
//   and the next tile is prefetched, which pays on arrays beyond the caches;
// - otherwise (gaps, broadcasts, narrow blocks): an element loop along the
//   innermost axis.
// Elements are moved as opaque bytes of their size, one thread per copy.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>


#include "dlbridge/element.hpp"
#include "dlbridge/layout.hpp"
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

// Walks `axis` the other way round: the same elements, other base pointers.
inline void reverse_axis(strided_plan& p, std::int32_t axis, std::int64_t itemsize, std::byte*& dst,
                         const std::byte*& src) {
  dst += (p.extent[axis] - 1) * p.dst[axis] * itemsize;
  src += (p.extent[axis] - 1) * p.src[axis] * itemsize;
  p.dst[axis] = -p.dst[axis];
  p.src[axis] = -p.src[axis];
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

// Copies Bytes bytes in 16-byte pieces. (A constant-size memcpy of a
// hundred bytes or so becomes `rep movs`, slow to start.)
template <std::int64_t Bytes>
inline void copy_run(std::byte* dst, const std::byte* src) {
  static_assert(Bytes % 16 == 0);
#if defined(__GNUC__)
  for (std::int64_t i = 0; i < Bytes; i += 16) store_vector(dst + i, load_vector<u64x2>(src + i));
#else
  std::memcpy(dst, src, Bytes);
#endif
}

// Block edge in elements for transpose_block; 1 where there is none.
template <std::size_t Size>
inline constexpr std::int64_t block_edge = has_vectors && (Size == 4 || Size == 8) ? std::int64_t(16 / Size) : 1;

inline constexpr std::int64_t cache_line = 64;

// Tile edge in elements: 32, or less so that a tile row is at most 128 bytes
// (two cache lines). Measured on 2 MiB and 128 MiB transposes: smaller tiles
// waste the lines they fetch, larger ones fall out of the L1 cache, whose
// sets power-of-two strides crowd.
template <std::size_t Size>
inline constexpr std::int64_t tile_edge = std::min<std::int64_t>(32, 128 / std::int64_t(Size));

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

// Copies a rows x cols block in tiles; element (r, c) is at
// dst + r * dst_row + c * dst_col and src + r * src_row + c * src_col (steps
// in bytes). The columns are the destination's innermost axis, the rows the
// axis the source walks most closely. next_dst and next_src (or null) are the
// block the caller copies next, whose first tile is prefetched at the end.
template <std::size_t Size>
void copy_tiles(std::byte* dst, const std::byte* src, std::int64_t rows, std::int64_t cols,
                std::int64_t dst_row, std::int64_t dst_col, std::int64_t src_row, std::int64_t src_col,
                const std::byte* next_dst, const std::byte* next_src) {
  constexpr std::int64_t edge = tile_edge<Size>;
  constexpr auto size = std::int64_t(Size);
  // With power-of-two strides the rows of a tile all fall in the same few
  // sets of the L1 cache, too few to hold them: lines would be evicted between
  // the accesses to their parts. So a tile is transposed into this contiguous
  // buffer, then each destination row is written in one go.
  alignas(64) std::byte staging[edge * edge * Size];
  const bool staged = dst_col == size;
  // Prefetching asks for the cache lines of the next tile before they are
  // needed, as the hardware prefetchers do for long runs but not for a tile's
  // short rows. Only contiguous runs are worth it: the source's along r, the
  // destination's along c. (The prefetches stay in this function: GCC drops
  // calls to a helper made only of prefetches as having no effect.)
  const bool src_runs = src_row == size, dst_runs = dst_col == size;
  // Tiles go down a band of columns, then to the next band: the source is
  // read in long runs (its rows, along r) and the destination written in
  // short ones, measured faster than the other way round. Blocks much taller
  // than wide go across bands of rows instead when that reads no more than
  // 128 source rows side by side, few enough for the hardware prefetchers
  // (measured on 2 MiB to 128 MiB blocks).
  const std::int64_t row_tiles = (rows + edge - 1) / edge, col_tiles = (cols + edge - 1) / edge;
  const bool down_columns = rows <= 4 * cols || cols > 128;
  auto origin = [&](std::int64_t tile) {  // first row and column of a tile
    return down_columns ? std::pair{tile % row_tiles * edge, tile / row_tiles * edge}
                        : std::pair{tile / col_tiles * edge, tile % col_tiles * edge};
  };
  const std::int64_t tiles = row_tiles * col_tiles;
  for (std::int64_t tile = 0; tile < tiles; ++tile) {
    // Prefetch the next tile, or the first of the next block.
    const auto [nr0, nc0] = tile + 1 < tiles ? origin(tile + 1) : std::pair<std::int64_t, std::int64_t>{0, 0};
    const std::byte* next_d = tile + 1 < tiles ? dst : next_dst;
    const std::byte* next_s = tile + 1 < tiles ? src : next_src;
    if (next_s) {
      const std::int64_t n_rows = std::min(rows - nr0, edge), n_cols = std::min(cols - nc0, edge);
      for (std::int64_t c = nc0; src_runs && c < nc0 + n_cols; ++c)
        for (std::int64_t i = 0; i < n_rows * size; i += cache_line)
          __builtin_prefetch(next_s + nr0 * size + c * src_col + i, 0);
      for (std::int64_t r = nr0; dst_runs && r < nr0 + n_rows; ++r)
        for (std::int64_t i = 0; i < n_cols * size; i += cache_line)
          __builtin_prefetch(next_d + r * dst_row + nc0 * size + i, 1);
    }
    const auto [r0, c0] = origin(tile);
    const std::int64_t n_rows = std::min(rows - r0, edge), n_cols = std::min(cols - c0, edge);
    std::byte* d = dst + r0 * dst_row + c0 * dst_col;
    const std::byte* s = src + r0 * src_row + c0 * src_col;
    if (!staged) {
      copy_block<Size>(d, dst_row, dst_col, s, src_row, src_col, n_rows, n_cols);
      continue;
    }
    copy_block<Size>(staging, edge * size, size, s, src_row, src_col, n_rows, n_cols);
    for (std::int64_t r = 0; r < n_rows; ++r) {
      if (n_cols == edge)
        copy_run<edge * size>(d + r * dst_row, staging + r * edge * size);
      else  // a few elements: a memcpy call would cost more
        copy_row<Size>(d + r * dst_row, staging + r * edge * size, n_cols, size, size);
    }
  }
}

// copy_strided for elements of Size bytes over a coalesced plan.
template <std::size_t Size>
void copy_by_plan(strided_plan p, std::byte* dst, const std::byte* src) {
  constexpr auto size = std::int64_t(Size);
  if (p.ndim == 0) return copy_element<Size>(dst, src);
  for (std::int32_t axis = 0; axis < p.ndim; ++axis)
    if (p.dst[axis] < 0) reverse_axis(p, axis, size, dst, src);
  const std::int32_t inner = p.ndim - 1;
  const std::int64_t length = p.extent[inner];
  if (p.dst[inner] == 1 && p.src[inner] == 1) {
    for_each_outer(p, inner, [&](std::int64_t d, std::int64_t s) {
      std::memcpy(dst + d * size, src + s * size, std::size_t(length * size));
    });
    return;
  }
  // Blocks narrower than a few elements copy faster as rows: a few passes
  // over the source, each reading it in order (measured).
  constexpr std::int64_t min_tile_extent = 8;
  const std::int32_t axis = tile_axis(p);
  if (axis >= 0 && p.extent[axis] >= min_tile_extent && length >= min_tile_extent) {
    // Move the tiled axis next to the innermost; the rest keep their order.
    for (std::int32_t i = axis; i < inner - 1; ++i) {
      std::swap(p.extent[i], p.extent[i + 1]);
      std::swap(p.dst[i], p.dst[i + 1]);
      std::swap(p.src[i], p.src[i + 1]);
    }
    const std::int32_t rows = inner - 1;
    if (p.src[rows] < 0) reverse_axis(p, rows, size, dst, src);
    // Each block is copied once the next one is known, to prefetch it.
    std::byte* block_dst = nullptr;
    const std::byte* block_src = nullptr;
    auto tiles = [&](const std::byte* next_dst, const std::byte* next_src) {
      copy_tiles<Size>(block_dst, block_src, p.extent[rows], length, p.dst[rows] * size, p.dst[inner] * size,
                       p.src[rows] * size, p.src[inner] * size, next_dst, next_src);
    };
    for_each_outer(p, rows, [&](std::int64_t d, std::int64_t s) {
      if (block_src) tiles(dst + d * size, src + s * size);
      block_dst = dst + d * size;
      block_src = src + s * size;
    });
    tiles(nullptr, nullptr);
    return;
  }
  for_each_outer(p, inner, [&](std::int64_t d, std::int64_t s) {
    copy_row<Size>(dst + d * size, src + s * size, length, p.dst[inner] * size, p.src[inner] * size);
  });
}

}  // namespace detail

// Copies the elements of `shape` from src to dst, which must not overlap.
// Packed sub-byte dtypes must be C-contiguous on both sides. Every element of
// both must be in memory. (validate() accepts spans up to 2^64 - 1 bytes wide;
// the walk forms offsets up to one stride past an axis's end, at most twice
// the span, which stay inside int64 for spans below 2^62 bytes: any span of
// memory that exists.)
inline void copy_strided(extents_t shape, dtype type, const void* src, extents_t src_strides, void* dst,
                         extents_t dst_strides) {
  const auto count = element_count(shape);
  if (!count || *count == 0) return;
  if (type.is_subbyte()) {
    std::memcpy(dst, src, type.storage_bytes(std::uint64_t(*count)));
    return;
  }
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  auto plan = detail::make_strided_plan(shape, dst_strides, src_strides);
  switch (type.itemsize()) {
    case 1: return detail::copy_by_plan<1>(plan, d, s);
    case 2: return detail::copy_by_plan<2>(plan, d, s);
    case 4: return detail::copy_by_plan<4>(plan, d, s);
    case 8: return detail::copy_by_plan<8>(plan, d, s);
    case 16: return detail::copy_by_plan<16>(plan, d, s);
    default:
      detail::split_into_bytes(plan, std::int64_t(type.itemsize()));
      return detail::copy_by_plan<1>(plan, d, s);
  }
}

// Converts the elements of `shape` from one dtype to another (see store() for
// the rounding and overflow rules).
inline void cast_strided(extents_t shape, dtype from, const void* src, extents_t src_strides, dtype to,
                         void* dst, extents_t dst_strides) {
  const auto count = element_count(shape);
  if (!count || *count == 0) return;
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  // Packed sub-byte operands are contiguous: address them by element index.
  auto address = [](auto* base, dtype t, std::int64_t offset) {
    return t.is_subbyte() ? base : base + offset * std::int64_t(t.itemsize());
  };
  auto index = [](dtype t, std::int64_t offset) { return t.is_subbyte() ? offset : 0; };
  detail::for_each_row(shape, dst_strides, src_strides,
                       [&](std::int64_t dst_offset, std::int64_t src_offset, std::int64_t length,
                           std::int64_t dst_step, std::int64_t src_step) {
                         for (std::int64_t i = 0; i < length; ++i) {
                           const std::int64_t so = src_offset + i * src_step, dof = dst_offset + i * dst_step;
                           store(to, address(d, to, dof), load(from, address(s, from, so), index(from, so)),
                                 index(to, dof));
                         }
                       });
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
