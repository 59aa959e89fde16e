// The iteration space of the GPU copy, cast and fill kernels, shared by the
// kernels and by the host-side tests that replay them without a GPU.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "dlbridge/config.hpp"
#include "dlbridge/layout.hpp"

namespace dlb::cuda_runtime::detail {

// The plan (dlb::detail::strided_plan): axes in the destination's memory
// order, so consecutive threads write neighbouring elements.
using dlb::detail::make_strided_plan;
using dlb::detail::split_into_bytes;
using dlb::detail::strided_plan;

// Whether every element is one run of consecutive elements on both sides, in
// the same order: a memcpy.
inline bool is_memcpy(const strided_plan& p) {
  return p.ndim == 0 || (p.ndim == 1 && p.dst[0] == 1 && p.src[0] == 1);
}

// Offsets (in elements) of element `i` of the coalesced iteration space,
// innermost axis fastest.
DLB_HOST_DEVICE inline void offsets(const strided_plan& p, std::int64_t i, std::int64_t& dst, std::int64_t& src) {
  dst = 0;
  src = 0;
  for (std::int32_t axis = p.ndim - 1; axis >= 0; --axis) {
    const std::int64_t extent = p.extent[axis];
    const std::int64_t q = i / extent, r = i - q * extent;
    dst += r * p.dst[axis];
    src += r * p.src[axis];
    i = q;
  }
}

// -- The tiled transpose ------------------------------------------------------------
// For plans whose last axis is contiguous in the destination and whose
// second-to-last axis is contiguous in the source: each block stages a
// tile_dim x tile_dim tile in shared memory, reading along the source's
// contiguous axis and writing along the destination's. Axes before those two
// form a batch.

inline constexpr int tile_dim = 32;   // tile edge
inline constexpr int tile_rows = 8;   // threads per block: tile_dim x tile_rows
inline constexpr std::int64_t tile_min_extent = 16;

inline bool use_tiles(const strided_plan& p) {
  if (p.ndim < 2) return false;
  const std::int32_t r = p.ndim - 2, c = p.ndim - 1;
  const auto magnitude = [](std::int64_t v) { return v < 0 ? 0 - std::uint64_t(v) : std::uint64_t(v); };  // v may be INT64_MIN
  return magnitude(p.dst[c]) == 1 && magnitude(p.src[r]) == 1 && magnitude(p.src[c]) != 1 &&
         p.extent[r] >= tile_min_extent && p.extent[c] >= tile_min_extent;
}

struct tile_grid {
  std::int64_t batches = 1;  // product of the extents before the last two axes
  std::int64_t row_tiles = 0;
  std::int64_t col_tiles = 0;
};

inline tile_grid make_tile_grid(const strided_plan& p) {
  tile_grid g;
  for (std::int32_t axis = 0; axis < p.ndim - 2; ++axis) g.batches *= p.extent[axis];
  g.row_tiles = (p.extent[p.ndim - 2] + tile_dim - 1) / tile_dim;
  g.col_tiles = (p.extent[p.ndim - 1] + tile_dim - 1) / tile_dim;
  return g;
}

// Offsets of the first element of batch `b`.
DLB_HOST_DEVICE inline void batch_offsets(const strided_plan& p, std::int64_t b, std::int64_t& dst, std::int64_t& src) {
  dst = 0;
  src = 0;
  for (std::int32_t axis = p.ndim - 3; axis >= 0; --axis) {
    const std::int64_t extent = p.extent[axis];
    const std::int64_t q = b / extent, r = b - q * extent;
    dst += r * p.dst[axis];
    src += r * p.src[axis];
    b = q;
  }
}

// Phase 1 of a tile for thread (tx, ty): reads along the source's contiguous
// row axis into tile[column][row].
template <class T>
DLB_HOST_DEVICE inline void tile_load(const strided_plan& p, const T* src, std::int64_t src_base, std::int64_t row0,
                                      std::int64_t col0, int tx, int ty, T (*tile)[tile_dim + 1]) {
  const std::int32_t r = p.ndim - 2, c = p.ndim - 1;
  const std::int64_t row = row0 + tx;
  for (int j = ty; j < tile_dim; j += tile_rows) {
    const std::int64_t col = col0 + j;
    if (row < p.extent[r] && col < p.extent[c]) tile[j][tx] = src[src_base + row * p.src[r] + col * p.src[c]];
  }
}

// Phase 2 (after a barrier): writes along the destination's contiguous column axis.
template <class T>
DLB_HOST_DEVICE inline void tile_store(const strided_plan& p, T* dst, std::int64_t dst_base, std::int64_t row0,
                                       std::int64_t col0, int tx, int ty, const T (*tile)[tile_dim + 1]) {
  const std::int32_t r = p.ndim - 2, c = p.ndim - 1;
  const std::int64_t col = col0 + tx;
  for (int j = ty; j < tile_dim; j += tile_rows) {
    const std::int64_t row = row0 + j;
    if (row < p.extent[r] && col < p.extent[c]) dst[dst_base + row * p.dst[r] + col * p.dst[c]] = tile[tx][j];
  }
}

// -- Packed sub-byte destinations ---------------------------------------------------

// The packed byte `byte` of a C-contiguous sub-byte array of `count` elements
// of `bits` bits, where element e has code code_of(e): returns the new byte,
// keeping the bits of `old` that no element covers. One writer per byte, so
// threads never race on a shared byte (dlb::store's read-modify-write would).
template <class CodeOf>
DLB_HOST_DEVICE inline std::uint8_t pack_byte(std::int64_t byte, std::int64_t count, int bits, std::uint8_t old,
                                              CodeOf&& code_of) {
  const std::int64_t first_bit = byte * 8;
  const std::int64_t first = first_bit / bits;
  std::int64_t last = (first_bit + 7) / bits;
  if (last > count - 1) last = count - 1;
  const std::uint32_t ones = (1u << bits) - 1;
  std::uint32_t value = 0, mask = 0;
  for (std::int64_t e = first; e <= last; ++e) {
    const std::uint32_t code = code_of(e) & ones;
    const std::int64_t shift = e * bits - first_bit;  // negative: e starts in the byte before
    if (shift >= 0) {
      value |= code << shift;
      mask |= ones << shift;
    } else {
      value |= code >> -shift;
      mask |= ones >> -shift;
    }
  }
  mask &= 0xffu;
  return std::uint8_t((old & ~mask) | (value & mask));
}

// -- Elements as opaque words -------------------------------------------------------

// The unit a same-dtype copy moves: an element of 1, 2, 4, 8 or 16 bytes, read
// and written whole when every address is aligned to word_alignment(bytes).
struct alignas(8) word16 {
  std::uint64_t lo, hi;
};
template <std::size_t Bytes> struct word_of;
template <> struct word_of<1> { using type = std::uint8_t; };
template <> struct word_of<2> { using type = std::uint16_t; };
template <> struct word_of<4> { using type = std::uint32_t; };
template <> struct word_of<8> { using type = std::uint64_t; };
template <> struct word_of<16> { using type = word16; };

inline constexpr std::size_t word_alignment(std::size_t bytes) { return bytes < 8 ? bytes : 8; }

// Whether every address a plan touches from `dst` and `src` (nullptr for a
// fill) is a multiple of word_alignment(bytes).
inline bool is_word_aligned(const strided_plan& p, const void* dst, const void* src, std::size_t bytes) {
  const auto alignment = std::int64_t(word_alignment(bytes));
  if (reinterpret_cast<std::uintptr_t>(dst) % std::uintptr_t(alignment) ||
      reinterpret_cast<std::uintptr_t>(src) % std::uintptr_t(alignment))
    return false;
  for (std::int32_t axis = 0; axis < p.ndim; ++axis)
    if ((p.dst[axis] * std::int64_t(bytes)) % alignment || (p.src[axis] * std::int64_t(bytes)) % alignment) return false;
  return true;
}

}  // namespace dlb::cuda_runtime::detail
