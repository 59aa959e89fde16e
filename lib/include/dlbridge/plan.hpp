// Iteration plans: the axes of one or two arrays merged and ordered for a
// walk (coalesce), and the plan of a copy, cast or fill that the CPU engine
// and the CUDA kernels walk (detail::strided_plan).
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "dlbridge/layout.hpp"

namespace dlb {

// Merges axes that can be walked as one for every operand: drops extent-1 axes,
// orders axes by the first operand's |stride| (outermost first) and fuses
// neighbours whose strides chain. `shape` and each operand's strides are
// rewritten in place; returns the new number of axes. Not for empty arrays.
template <std::size_t N>
constexpr std::int32_t coalesce(std::int32_t ndim, std::int64_t* shape,
                                std::array<std::int64_t*, N> strides) {
  std::int32_t n = 0;
  for (std::int32_t i = 0; i < ndim; ++i) {
    if (shape[i] == 1) continue;
    shape[n] = shape[i];
    for (auto* s : strides) s[n] = s[i];
    ++n;
  }
  // Insertion sort: ndim is small, and stability keeps C order among ties.
  using detail::magnitude;
  for (std::int32_t i = 1; i < n; ++i) {
    for (std::int32_t j = i; j > 0 && magnitude(strides[0][j - 1]) < magnitude(strides[0][j]); --j) {
      std::swap(shape[j - 1], shape[j]);
      for (auto* s : strides) std::swap(s[j - 1], s[j]);
    }
  }
  std::int32_t out = 0;
  for (std::int32_t i = 0; i < n; ++i) {
    if (out > 0) {
      // stride * extent is one stride past the axis's last element, which may
      // pass int64 when the span does not: such an axis cannot chain.
      bool chains = true;
      for (auto* s : strides) {
        const auto next = checked_mul(s[i], shape[i]);
        chains = chains && next && s[out - 1] == *next;
      }
      if (chains) {
        shape[out - 1] *= shape[i];
        for (auto* s : strides) s[out - 1] = s[i];
        continue;
      }
    }
    shape[out] = shape[i];
    for (auto* s : strides) s[out] = s[i];
    ++out;
  }
  return out;
}

namespace detail {
// The iteration space of a copy, cast or fill, shared by the CPU engine
// (host_copy.hpp) and the CUDA kernels: coalesced, so axes are in the destination's
// memory order, outermost first; strides in elements. One spare axis for
// split_into_bytes. Plain arrays: the kernels take it as a parameter (1.6 KiB).
struct strided_plan {
  std::int32_t ndim = 0;
  std::int64_t count = 0;  // elements
  std::int64_t extent[max_ndim + 1] = {};
  std::int64_t dst[max_ndim + 1] = {};
  std::int64_t src[max_ndim + 1] = {};
};

// The plan for `shape` (not empty) with the given strides; empty `src_strides`
// (a fill) means zero strides.
[[nodiscard]] constexpr strided_plan make_strided_plan(extents_t shape, extents_t dst_strides, extents_t src_strides) {
  strided_plan p;
  const auto ndim = std::int32_t(shape.size());
  p.count = 1;
  for (std::int32_t i = 0; i < ndim; ++i) {
    p.extent[i] = shape[std::size_t(i)];
    p.dst[i] = dst_strides[std::size_t(i)];
    p.src[i] = src_strides.empty() ? 0 : src_strides[std::size_t(i)];
    p.count *= p.extent[i];
  }
  p.ndim = coalesce<2>(ndim, p.extent, {p.dst, p.src});
  return p;
}

// Rewrites a plan over elements of `bytes` bytes as a plan over single bytes
// (one more, innermost axis): for element sizes no word moves whole, and for
// addresses that are not word-aligned.
constexpr void split_into_bytes(strided_plan& p, std::int64_t bytes) {
  for (std::int32_t axis = 0; axis < p.ndim; ++axis) {
    p.dst[axis] *= bytes;
    p.src[axis] *= bytes;
  }
  p.extent[p.ndim] = bytes;
  p.dst[p.ndim] = p.src[p.ndim] = 1;
  p.count *= bytes;
  p.ndim = coalesce<2>(p.ndim + 1, p.extent, {p.dst, p.src});
}
}  // namespace detail

}  // namespace dlb
