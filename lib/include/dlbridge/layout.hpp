// Signed-stride layout arithmetic and the questions asked of a layout
// (contiguity, density, overlap, the bytes it spans). Strides are in elements
// (the DLPack convention); every size computation is checked for int64
// overflow. The shape rule is shape.hpp's, iteration plans plan.hpp's.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "dlbridge/config.hpp"
#include "dlbridge/dtype.hpp"

namespace dlb {

// The most axes dlbridge accepts (NumPy allows 64).
inline constexpr std::int32_t max_ndim = 64;

using extents_t = std::span<const std::int64_t>;

[[nodiscard]] constexpr std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

[[nodiscard]] constexpr std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of the extents; nullopt if it overflows int64. Extents must be >= 0.
[[nodiscard]] constexpr std::optional<std::int64_t> element_count(extents_t shape) {
  std::int64_t n = 1;
  bool overflow = false;
  for (auto e : shape) {
    if (e == 0) return 0;  // an empty axis makes any other product irrelevant
    const auto next = checked_mul(n, e);
    overflow = overflow || !next;
    if (next) n = *next;
  }
  if (overflow) return std::nullopt;
  return n;
}

// -- Layout queries ---------------------------------------------------------------
// Each is written once, over the number of axes and callables giving an axis's
// extent and stride, so that spans (below) and dlb::view (host and device
// code, extents partly static) ask the same question the same way.
namespace detail {
// |v| as unsigned: a stride may be INT64_MIN, whose magnitude int64 lacks.
[[nodiscard]] DLB_HOST_DEVICE constexpr std::uint64_t magnitude(std::int64_t v) {
  return v < 0 ? 0 - std::uint64_t(v) : std::uint64_t(v);
}

// A span's values by axis, callable from host and device code alike (a host
// lambda is not).
struct by_axis {
  const std::int64_t* values;
  DLB_HOST_DEVICE constexpr std::int64_t operator()(std::int32_t axis) const { return values[axis]; }
};

template <class Extent>
DLB_HOST_DEVICE constexpr bool has_empty_axis(std::int32_t ndim, Extent extent) {
  for (std::int32_t i = 0; i < ndim; ++i)
    if (extent(i) == 0) return true;
  return false;
}

// Contiguity in C order (row_major) or Fortran order. Axes of extent 1 are
// ignored whatever their stride (producers disagree on what to write there),
// and empty arrays are contiguous.
template <class Extent, class Stride>
DLB_HOST_DEVICE constexpr bool is_contiguous(std::int32_t ndim, Extent extent, Stride stride, bool row_major) {
  if (has_empty_axis(ndim, extent)) return true;
  std::int64_t expected = 1;
  for (std::int32_t k = 0; k < ndim; ++k) {
    const std::int32_t i = row_major ? ndim - 1 - k : k;
    if (extent(i) == 1) continue;
    if (stride(i) != expected) return false;
    expected *= extent(i);
  }
  return true;
}

// Axes sorted by |stride|, innermost first: each must start where the axes
// inside it end (exactly, for dense layouts) or beyond (non-overlapping).
// Extent-1 axes are ignored; empty arrays pass.
constexpr bool axes_nest(extents_t shape, extents_t strides, bool exactly) {
  if (has_empty_axis(std::int32_t(shape.size()), by_axis{shape.data()})) return true;
  std::array<std::array<std::uint64_t, 2>, max_ndim> axes{};  // |stride|, extent
  std::size_t n = 0;
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] > 1)
      axes[n++] = {magnitude(strides[i]), std::uint64_t(shape[i])};
  std::sort(axes.begin(), axes.begin() + std::ptrdiff_t(n));
  std::uint64_t inner_end = 1;  // one past the inner axes' reach, in elements
  for (std::size_t i = 0; i < n; ++i) {
    const auto [step, extent] = axes[i];
    if (exactly ? step != inner_end : step < inner_end) return false;
    if (__builtin_mul_overflow(step, extent, &inner_end)) return i + 1 == n;
  }
  return true;
}
}  // namespace detail

[[nodiscard]] constexpr bool is_empty(extents_t shape) {
  return detail::has_empty_axis(std::int32_t(shape.size()), detail::by_axis{shape.data()});
}

// Row-major contiguity (detail::is_contiguous says which strides count).
[[nodiscard]] constexpr bool is_c_contiguous(extents_t shape, extents_t strides) {
  return detail::is_contiguous(std::int32_t(shape.size()), detail::by_axis{shape.data()},
                               detail::by_axis{strides.data()}, true);
}

// Column-major contiguity, by the same rules.
[[nodiscard]] constexpr bool is_f_contiguous(extents_t shape, extents_t strides) {
  return detail::is_contiguous(std::int32_t(shape.size()), detail::by_axis{shape.data()},
                               detail::by_axis{strides.data()}, false);
}

// Whether the elements fill one block exactly, in any axis order and
// direction (a permutation of C order, strides of any sign): then the byte
// span holds exactly the elements.
[[nodiscard]] constexpr bool is_dense(extents_t shape, extents_t strides) {
  return detail::axes_nest(shape, strides, true);
}

// Whether no two indices reach the same element, by the test
// std::layout_stride uses (sufficient, not necessary: interleaved axes such
// as strides (2, 3) over extents (2, 2) are refused).
[[nodiscard]] constexpr bool is_non_overlapping(extents_t shape, extents_t strides) {
  return detail::axes_nest(shape, strides, false);
}

// Product of the extents with empty axes counted as 1, which c_strides()
// reaches; nullopt if it overflows int64. Extents must be >= 0.
[[nodiscard]] constexpr std::optional<std::int64_t> stride_volume(extents_t shape) {
  std::int64_t n = 1;
  for (auto e : shape) {
    auto next = checked_mul(n, std::max<std::int64_t>(e, 1));
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

// Writes row-major strides for `shape`. stride_volume(shape) must not
// overflow: an empty axis leaves the count at 0, not the strides.
constexpr void c_strides(extents_t shape, std::span<std::int64_t> out) {
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    out[i] = s;
    s *= std::max<std::int64_t>(shape[i], 1);
  }
}

namespace detail {
// "(2, 3)", "(4,)": extents as Python writes a tuple, for messages.
inline std::string describe(extents_t extents) {
  std::string s = "(";
  for (std::size_t i = 0; i < extents.size(); ++i) s += (i ? ", " : "") + std::to_string(extents[i]);
  return s + (extents.size() == 1 ? ",)" : ")");
}
}  // namespace detail

// The bytes an array touches, relative to its first element: [lo, hi) with
// lo <= 0 < hi, or [0, 0) when it is empty.
struct byte_extent {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  friend constexpr bool operator==(byte_extent, byte_extent) = default;
};

// nullopt when an offset overflows int64. Packed sub-byte dtypes are only
// meaningful C-contiguous; their span is the packed storage size.
[[nodiscard]] constexpr std::optional<byte_extent> byte_span(extents_t shape, extents_t strides,
                                                             dtype t) {
  const auto count = element_count(shape);
  if (!count) return std::nullopt;
  if (*count == 0) return byte_extent{};
  // Fewer bytes than elements: no overflow.
  if (t.is_subbyte()) return byte_extent{0, std::int64_t(t.storage_bytes(std::uint64_t(*count)))};
  const auto itemsize = static_cast<std::int64_t>(t.itemsize());
  byte_extent span{0, itemsize};
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] <= 1) continue;
    const auto step = checked_mul(strides[i], itemsize);
    if (!step) return std::nullopt;
    const auto reach = checked_mul(shape[i] - 1, *step);
    if (!reach) return std::nullopt;
    auto& bound = *reach < 0 ? span.lo : span.hi;
    const auto moved = checked_add(bound, *reach);
    if (!moved) return std::nullopt;
    bound = *moved;
  }
  return span;
}

}  // namespace dlb
