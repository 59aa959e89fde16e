// copy_strided's work over a coalesced plan: elements moved as opaque bytes
// of their size, by the walk (walk.hpp), in tiles (tiles.hpp), on threads
// (threads.hpp). See host_copy.hpp for how a copy runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dlbridge/copy/threads.hpp"
#include "dlbridge/copy/tiles.hpp"
#include "dlbridge/copy/vectors.hpp"
#include "dlbridge/copy/walk.hpp"
#include "dlbridge/dispatch.hpp"
#include "dlbridge/plan.hpp"

namespace dlb::detail {

// copy_strided for elements of Size bytes over a coalesced plan.
template <std::size_t Size>
void copy_by_plan(const strided_plan& p, std::byte* dst, const std::byte* src, const copy_settings& how) {
  constexpr auto size = std::int64_t(Size);
  if (p.ndim == 0) return copy_element<Size>(dst, src);
  walk_plan(
      p, size, size, dst, src,
      [](std::byte* d, const std::byte* s, std::int64_t length) { std::memcpy(d, s, std::size_t(length * size)); },
      [&](const strided_block& b) { tiles_for<Size>(how, b.cols)(b, how.streaming); },
      copy_row<Size>);
}

// The settings copy_strided uses for a copy writing `bytes`.
[[nodiscard]] inline copy_settings settings_for(std::int64_t bytes) {
  return {copy_parts(bytes), uses_streaming_stores(bytes), has_avx2()};
}

// copy_strided's work over its plan (`itemsize`-byte elements).
inline void copy_plan(strided_plan plan, std::size_t itemsize, std::byte* dst, const std::byte* src,
                      const copy_settings& how) {
  auto unit = std::int64_t(itemsize);
  if (!is_word_width(itemsize)) {
    split_into_bytes(plan, unit);
    unit = 1;
  }
  for_each_part(plan, how.parts, [&](const strided_plan& part, std::int64_t dst_offset, std::int64_t src_offset) {
    std::byte* d = dst + dst_offset * unit;
    const std::byte* s = src + src_offset * unit;
    visit_width(std::size_t(unit), [&](auto width) {
      if constexpr (decltype(width)::value != 0) copy_by_plan<decltype(width)::value>(part, d, s, how);
    });
    if (how.streaming) finish_streaming();
  });
}

}  // namespace dlb::detail
