// The iteration space of the GPU copy, cast and fill kernels, shared by the
// kernels and by the host-side tests that replay them without a GPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>

#include "dlbridge/config.hpp"
#include "dlbridge/dispatch.hpp"
#include "dlbridge/element.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/plan.hpp"

namespace dlb::cuda_runtime::detail {

// The plan (dlb::detail::strided_plan): axes in the destination's memory
// order, so consecutive threads write neighbouring elements.
using dlb::detail::make_strided_plan;
using dlb::detail::split_into_bytes;
using dlb::detail::strided_plan;

using dlb::detail::is_word_width;
using dlb::detail::magnitude;
using dlb::detail::visit_width;

// Whether every element is one run of consecutive elements on both sides, in
// the same order: a memcpy.
inline bool is_memcpy(const strided_plan& p) {
  return p.ndim == 0 || (p.ndim == 1 && p.dst[0] == 1 && p.src[0] == 1);
}

// n / d for every n < 2^32 as a multiply-high, an add and a shift (Granlund
// and Montgomery, "Division by invariant integers using multiplication",
// 1994, section 4): a GPU has no divide instruction, and even a 32-bit
// division is a sequence of some twenty.
struct fast_divisor {
  std::uint32_t magic = 0;  // floor(2^32 * (2^shift - d) / d) + 1
  std::uint32_t shift = 0;  // ceil(log2(d))

  // For d >= 1.
  [[nodiscard]] static constexpr fast_divisor of(std::uint32_t d) {
    fast_divisor f;
    while ((std::uint64_t(1) << f.shift) < d) ++f.shift;
    f.magic = std::uint32_t((((std::uint64_t(1) << f.shift) - d) << 32) / d + 1);
    return f;
  }
  // (magic + 2^32) * n / 2^(32 + shift), without a 33-bit multiplier.
  [[nodiscard]] DLB_HOST_DEVICE constexpr std::uint32_t divide(std::uint32_t n) const {
    const auto high = std::uint32_t(std::uint64_t(n) * magic >> 32);
    return std::uint32_t((std::uint64_t(high) + n) >> shift);
  }
};

// The divisors offsets() uses: every extent of a plan but the outermost, when
// every element index fits 32 bits (`fast`); otherwise offsets() divides in 64
// bits.
struct index_divisors {
  bool fast = false;
  fast_divisor axis[max_ndim + 1] = {};
};

[[nodiscard]] constexpr index_divisors make_index_divisors(const strided_plan& p) {
  index_divisors d;
  d.fast = p.count <= std::int64_t(UINT32_MAX);
  if (d.fast)
    for (std::int32_t axis = 1; axis < p.ndim; ++axis) d.axis[axis] = fast_divisor::of(std::uint32_t(p.extent[axis]));
  return d;
}

// Offsets (in elements) of element `i` of the coalesced iteration space,
// innermost axis fastest. The outermost axis needs no division: i < count.
DLB_HOST_DEVICE inline void offsets(const strided_plan& p, const index_divisors& divisors, std::int64_t i,
                                    std::int64_t& dst, std::int64_t& src) {
  dst = 0;
  src = 0;
  if (p.ndim == 0) return;
  std::int32_t axis = p.ndim - 1;
  if (divisors.fast) {
    auto n = std::uint32_t(i);
    for (; axis > 0; --axis) {
      const std::uint32_t q = divisors.axis[axis].divide(n);
      const std::int64_t r = n - q * std::uint32_t(p.extent[axis]);
      dst += r * p.dst[axis];
      src += r * p.src[axis];
      n = q;
    }
    i = n;
  } else {
    for (; axis > 0; --axis) {
      const std::int64_t q = i / p.extent[axis], r = i - q * p.extent[axis];
      dst += r * p.dst[axis];
      src += r * p.src[axis];
      i = q;
    }
  }
  dst += i * p.dst[0];
  src += i * p.src[0];
}

// -- The tiled transpose ------------------------------------------------------------
// For plans whose last axis is contiguous in the destination and another axis
// contiguous in the source: each block stages a tile_dim x tile_dim tile in
// shared memory, reading along the source's contiguous axis and writing along
// the destination's. The kernels take that axis second-to-last (tiled_plan);
// the axes before those two form a batch.

inline constexpr int tile_dim = 32;   // tile edge
inline constexpr int tile_rows = 8;   // threads per block: tile_dim x tile_rows
inline constexpr std::int64_t tile_min_extent = 16;

// The plan the tile kernels run when `p` is a transpose: the source's
// contiguous axis, wherever the destination's order put it, moved just
// before the last, the others keeping their order. Elements go to the same
// places; only the order of the iteration changes.
[[nodiscard]] inline std::optional<strided_plan> tiled_plan(const strided_plan& p) {
  const std::int32_t c = p.ndim - 1;
  if (p.ndim < 2 || magnitude(p.dst[c]) != 1 || magnitude(p.src[c]) == 1 || p.extent[c] < tile_min_extent)
    return std::nullopt;
  std::int32_t r = c - 1;
  while (r >= 0 && magnitude(p.src[r]) != 1) --r;
  if (r < 0 || p.extent[r] < tile_min_extent) return std::nullopt;
  strided_plan tiled = p;
  for (std::int64_t* axes : {tiled.extent, tiled.dst, tiled.src}) std::rotate(axes + r, axes + r + 1, axes + c);
  return tiled;
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

// The unit a same-dtype copy moves: an element of 1, 2, 4, 8 or 16 bytes
// (is_word_width), read and written whole when every address is aligned to
// word_alignment(bytes); elements of other widths move as single bytes.
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

// Whether every address that `strides` (in elements of `bytes` bytes) reach
// from `base` is a multiple of word_alignment(bytes).
inline bool is_word_aligned(const std::int64_t* strides, std::int32_t ndim, const void* base, std::size_t bytes) {
  const auto alignment = std::int64_t(word_alignment(bytes));
  if (reinterpret_cast<std::uintptr_t>(base) % std::uintptr_t(alignment)) return false;
  for (std::int32_t axis = 0; axis < ndim; ++axis)
    if ((strides[axis] * std::int64_t(bytes)) % alignment) return false;
  return true;
}

// The same for every address a plan touches from `dst` and `src` (nullptr for a fill).
inline bool is_word_aligned(const strided_plan& p, const void* dst, const void* src, std::size_t bytes) {
  return is_word_aligned(p.dst, p.ndim, dst, bytes) && is_word_aligned(p.src, p.ndim, src, bytes);
}

// -- Elements of a cast -------------------------------------------------------------
// The cast kernels convert with element.hpp's load and store. Where every
// address is word-aligned they move each element with one access of its
// width (word_of) to and from a local copy, since load and store reach memory
// through memcpy, which is byte by byte when the alignment is unknown; the
// others load and store in place.

// Whether both operands of a cast are word-aligned; packed sub-byte operands
// are addressed by byte and need nothing.
inline bool is_word_aligned(const strided_plan& p, dtype from, dtype to, const void* dst, const void* src) {
  return (from.is_subbyte() || is_word_aligned(p.src, p.ndim, src, from.itemsize())) &&
         (to.is_subbyte() || is_word_aligned(p.dst, p.ndim, dst, to.itemsize()));
}

template <class W>
DLB_HOST_DEVICE inline void move_as(void* to, const void* from) {
  *static_cast<W*>(to) = *static_cast<const W*>(from);
}

// One element of `bytes` bytes: one access of its width (word_of), byte by
// byte for widths no word has.
DLB_HOST_DEVICE inline void move_word(void* to, const void* from, std::int64_t bytes) {
  visit_width(std::size_t(bytes), [&](auto width) {
    constexpr std::size_t n = decltype(width)::value;  // not width(): a host function to nvcc
    if constexpr (n == 0) std::memcpy(to, from, std::size_t(bytes));
    else move_as<typename word_of<n>::type>(to, from);
  });
}

// Element `index` of a cast's source at `base` (counted in elements, packed ones included).
template <bool Aligned>
[[nodiscard]] DLB_HOST_DEVICE inline scalar load_element(dtype t, const unsigned char* base, std::int64_t index) {
  if (t.is_subbyte()) return dlb::load(t, base, index);
  const std::int64_t bytes = std::int64_t(t.bits) * t.lanes / 8;
  const unsigned char* p = base + index * bytes;
  if constexpr (Aligned) {
    alignas(word16) unsigned char element[sizeof(word16)];
    move_word(element, p, bytes);
    return dlb::load(t, element);
  } else {
    return dlb::load(t, p);
  }
}

// Stores `value` into element `index` of a cast's destination at `base` (not packed).
template <bool Aligned>
DLB_HOST_DEVICE inline void store_element(dtype t, unsigned char* base, std::int64_t index, const scalar& value) {
  const std::int64_t bytes = std::int64_t(t.bits) * t.lanes / 8;
  unsigned char* p = base + index * bytes;
  if constexpr (Aligned) {
    alignas(word16) unsigned char element[sizeof(word16)];
    dlb::store(t, element, value);
    move_word(p, element, bytes);
  } else {
    dlb::store(t, p, value);
  }
}

// -- Fills of packed sub-byte elements ----------------------------------------------

// A fill of `count` packed sub-byte elements (float4, float6) as whole
// bytes, built on the host: their bits repeat every lcm(bits, 8) bits, so
// the fill is `period` (period_bytes bytes: two float4, or four float6 in
// three bytes) written `periods` times, then `tail` (tail_bytes bytes: the
// rest of the elements, spare bits zero), as dlb::fill writes them.
struct packed_fill {
  unsigned char period[8] = {};
  unsigned char tail[8] = {};
  std::size_t period_bytes = 0, tail_bytes = 0;
  std::int64_t periods = 0;
};

inline packed_fill make_packed_fill(dtype type, std::int64_t count, const scalar& value) {
  const int bits = type.bits * type.lanes;
  const int period_bits = std::lcm(bits, 8);  // at most 56: bits < 8
  const std::int64_t per_period = period_bits / bits;
  packed_fill f;
  f.period_bytes = std::size_t(period_bits / 8);
  f.periods = count / per_period;
  const std::int64_t rest = count % per_period;
  f.tail_bytes = std::size_t(type.storage_bytes(std::uint64_t(rest)));
  dlb::fill(type, f.period, per_period, value);
  dlb::fill(type, f.tail, rest, value);
  return f;
}

}  // namespace dlb::cuda_runtime::detail
