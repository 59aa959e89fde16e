// The copy engine's walk of a coalesced plan (plan.hpp's strided_plan):
// which axes become runs, tiles or rows, and in what order they are visited.
// Copies (copies.hpp) and casts (casts.hpp) share it and differ only in what
// they do with each run, block and row. See host_copy.hpp for how a copy runs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "dlbridge/plan.hpp"

namespace dlb::detail {

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
      if (++index[std::size_t(axis)] < p.extent[axis]) break;
      dst -= p.dst[axis] * p.extent[axis];
      src -= p.src[axis] * p.extent[axis];
      index[std::size_t(axis)] = 0;
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
// few passes over the source, each reading it in order (measured when it
// was chosen; no benchmark row isolates it, the nearest are the 4-d rows of
// `python benchmarks/run.py --only copies`, blocks of 16 and 32). The CUDA
// engine's rule (cuda/detail/strided.hpp, tiled_plan, tile_min_extent = 16)
// is another one on purpose: a GPU tile is a 32 x 32 block of threads that
// must read and write whole 32-element segments, so it only pays where both
// axes are unit-stride and long enough to fill half a tile; a CPU tile pays
// wherever the source walks another axis more closely than the innermost one
// (any stride), and from 8 elements on.
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
  const std::int32_t inner = p.ndim - 1;
  std::int32_t best = -1;
  for (std::int32_t axis = 0; axis < inner; ++axis) {
    const std::uint64_t m = magnitude(p.src[axis]);
    if (m != 0 && m < magnitude(p.src[inner]) && (best < 0 || m < magnitude(p.src[best]))) best = axis;
  }
  return best;
}

// A block of rows x cols elements, (r, c) at dst + r * dst_row + c * dst_col
// and src + r * src_row + c * src_col (steps in bytes), as copy_tiles and
// cast_tiles take it: the columns are the destination's innermost axis, the
// rows the axis the source walks most closely.
struct strided_block {
  std::byte* dst;
  const std::byte* src;
  std::int64_t rows, cols, dst_row, dst_col, src_row, src_col;
};

// The walk of a coalesced plan (not 0-d) that copies and casts share, with
// elements of dst_size and src_size bytes: axes the destination walks
// backwards are turned around, then by the innermost axis, for every index
// of the others:
// - runs(dst, src, length) where it is contiguous on both sides;
// - tiles(strided_block) over it and the axis the source walks most closely,
//   where that is another one (a transpose or permutation) and both are at
//   least min_tile_extent long;
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
      tiles(strided_block{dst + d * dst_size, src + s * src_size, p.extent[r], length, p.dst[r] * dst_size,
                          p.dst[inner] * dst_size, p.src[r] * src_size, p.src[inner] * src_size});
    });
    return;
  }
  for_each_outer(p, inner, [&](std::int64_t d, std::int64_t s) {
    rows(dst + d * dst_size, src + s * src_size, length, p.dst[inner] * dst_size, p.src[inner] * src_size);
  });
}

}  // namespace dlb::detail
