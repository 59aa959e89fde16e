// cast_strided's work: runs of elements converted with convert.hpp's typed
// loops, over the same walk as copies (walk.hpp), transposes in tiles of
// their own (cast_tiles), on threads (threads.hpp). See host_copy.hpp for how
// a copy runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dlbridge/convert.hpp"
#include "dlbridge/copy/threads.hpp"
#include "dlbridge/copy/tiles.hpp"
#include "dlbridge/copy/vectors.hpp"
#include "dlbridge/copy/walk.hpp"
#include "dlbridge/element.hpp"
#include "dlbridge/dispatch.hpp"
#include "dlbridge/plan.hpp"

namespace dlb::detail {

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
  visit_width<8>(std::size_t(size), [&](auto width) {
    if constexpr (decltype(width)::value != 0) {
      copy_row<decltype(width)::value>(dst, src, length, dst_step, src_step);
    } else {
      for (std::int64_t i = 0; i < length; ++i) std::memcpy(dst + i * dst_step, src + i * src_step, std::size_t(size));
    }
  });
}

// Casts go through buffers of this many elements: a tile of 32 x 32, or a
// piece of a strided row, gathered in the source's dtype, converted by one
// call of the run converter, then written out.
inline constexpr std::int64_t cast_tile_edge = 32, cast_buffer = cast_tile_edge * cast_tile_edge;

// A block as copy_tiles takes it, cast: the source elements (SrcSize bytes)
// of a tile are transposed into a buffer as in copy_tiles, converted as one
// run, and each destination row written from the result (to_size bytes).
template <std::size_t SrcSize>
void cast_tiles(const strided_block& b, std::int64_t to_size, const run_converter& convert) {
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
      [&](const strided_block& b) { cast_tiles<SrcSize>(b, to_size, convert); },
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
    visit_width<8>(std::size_t(from_size), [&](auto width) {
      if constexpr (decltype(width)::value != 0) cast_by_plan<decltype(width)::value>(part, d, s, convert);
    });
  });
}

// cast_strided's work once it has elements: runs of 1, 2, 4 or 8 bytes on
// both sides go through cast_plan; packed sub-byte operands (contiguous,
// addressed by element index), complex128 and odd sizes (vectors of 3
// lanes), rare enough, go one element at a time.
inline void cast_elements(extents_t shape, std::int64_t count, dtype from, const std::byte* src,
                          extents_t src_strides, dtype to, std::byte* dst, extents_t dst_strides) {
  const auto word = [](dtype t) { return !t.is_subbyte() && is_word_width(t.itemsize()) && t.itemsize() <= 8; };
  if (word(from) && word(to)) {
    const auto bytes = count * std::int64_t(std::max(from.itemsize(), to.itemsize()));
    return cast_plan(make_strided_plan(shape, dst_strides, src_strides), {converter(from, to), from, to}, dst, src,
                     copy_parts(bytes));
  }
  const auto address = [](auto* base, dtype t, std::int64_t offset) {
    return t.is_subbyte() ? base : base + offset * std::int64_t(t.itemsize());
  };
  const auto index = [](dtype t, std::int64_t offset) { return t.is_subbyte() ? offset : 0; };
  for_each_row(shape, dst_strides, src_strides,
               [&](std::int64_t dst_offset, std::int64_t src_offset, std::int64_t length, std::int64_t dst_step,
                   std::int64_t src_step) {
                 for (std::int64_t i = 0; i < length; ++i) {
                   const std::int64_t so = src_offset + i * src_step, dof = dst_offset + i * dst_step;
                   store(to, address(dst, to, dof), load(from, address(src, from, so), index(from, so)),
                         index(to, dof));
                 }
               });
}

}  // namespace dlb::detail
