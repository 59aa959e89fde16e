// The CPU strided copy and cast engine: any source strides (negative and zero
// included) to any destination layout, on host-accessible memory. This
// header holds the public calls; the engine is one policy per header under
// dlbridge/copy/.
//
// How copy_strided runs. dlb::coalesce merges the axes and orders them by the
// destination's strides (plan.hpp's strided_plan), and the walk
// (copy/walk.hpp) turns around the axes the destination walks backwards (the
// order of the writes is free since the operands do not overlap). Copies of
// 8 MiB and more are split along one axis among threads (copy/threads.hpp,
// which also holds the copy state: the thread limit). Then, by the innermost
// axis:
// - contiguous on both sides: one memcpy per row, and a single memcpy when
//   the whole array is one run;
// - strided in the source while another axis is walked more closely there
//   (a transpose or any permutation): tiles over those two axes
//   (copy/tiles.hpp, the tile policy), so that both sides use whole cache
//   lines; element by element, the source or the destination would touch
//   one cache line, and on large arrays one page, per element. 4- and 8-byte
//   elements move through 16-byte vectors, or 32-byte ones where the CPU has
//   AVX2 (copy/vectors.hpp, the only header that includes <immintrin.h>);
//   outputs the caches cannot hold take other tiles and streaming stores;
// - otherwise (gaps, broadcasts, narrow blocks): an element loop along the
//   innermost axis.
// Elements are moved as opaque bytes of their size (copy/copies.hpp).
// cast_strided walks the same way, converting runs of elements with
// convert.hpp's typed loops (copy/casts.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "dlbridge/copy/casts.hpp"
#include "dlbridge/copy/copies.hpp"
#include "dlbridge/copy/threads.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/plan.hpp"
#include "dlbridge/tensor.hpp"

namespace dlb {

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

// Converts the elements of `shape` from one dtype to another (see store() for
// the rounding and overflow rules); copies them as they are when the dtypes
// are the same. Large casts are split among copy_threads() threads, as
// copies are.
inline void cast_strided(extents_t shape, dtype from, const void* src, extents_t src_strides, dtype to,
                         void* dst, extents_t dst_strides) {
  if (from == to) return copy_strided(shape, from, src, src_strides, dst, dst_strides);
  const auto count = element_count(shape);
  if (!count || *count == 0) return;
  detail::cast_elements(shape, *count, from, static_cast<const std::byte*>(src), src_strides, to,
                        static_cast<std::byte*>(dst), dst_strides);
}

// A new C-contiguous host tensor holding src's values converted to `to`.
// Throws std::invalid_argument when src is not host-accessible.
[[nodiscard]] inline tensor astype(const tensor& src, dtype to) {
  if (!src.device().is_host_accessible())
    throw std::invalid_argument("copying on the CPU needs host-accessible memory");
  tensor out = tensor::empty(src.shape(), to);
  cast_strided(src.shape(), src.type(), src.data(), src.strides(), to, out.data(), out.strides());
  return out;
}

// A new C-contiguous, writable host copy of src.
[[nodiscard]] inline tensor copy(const tensor& src) { return astype(src, src.type()); }

}  // namespace dlb
