// Signed-stride layout arithmetic. Strides are in elements (the DLPack
// convention); every size computation is checked for int64 overflow.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
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
  // |stride| unsigned: a stride may be INT64_MIN.
  std::array<std::array<std::uint64_t, 2>, max_ndim> axes{};  // |stride|, extent
  std::size_t n = 0;
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] > 1)
      axes[n++] = {strides[i] < 0 ? 0 - std::uint64_t(strides[i]) : std::uint64_t(strides[i]), std::uint64_t(shape[i])};
  std::sort(axes.begin(), axes.begin() + std::ptrdiff_t(n));
  std::uint64_t inner_end = 1;  // one past the inner axes' reach, in elements
  for (std::size_t i = 0; i < n; ++i) {
    const auto [magnitude, extent] = axes[i];
    if (exactly ? magnitude != inner_end : magnitude < inner_end) return false;
    if (__builtin_mul_overflow(magnitude, extent, &inner_end)) return i + 1 == n;
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

// -- The shapes an array can have ----------------------------------------------

// Why no array can have a shape (check_shape).
enum class shape_defect : std::uint8_t {
  too_many_axes,     // more than max_ndim
  negative_extent,   // an extent below 0
  size_overflow,     // element count times itemsize beyond int64
  strides_overflow,  // C-order strides beyond int64 (empty axes counted as 1)
};

struct shape_error {
  shape_defect defect;
  std::int32_t axis = -1;  // the negative extent's axis; -1 for the other defects
};

// The one rule for the shape of every array dlbridge makes or imports: at
// most max_ndim axes, extents >= 0, and a byte size and C-order strides that
// fit in int64 (empty arrays get C-order strides too, as in NumPy and
// PyTorch). Each caller words the error as its own exception.
[[nodiscard]] constexpr std::optional<shape_error> check_shape(extents_t shape, dtype type) {
  if (shape.size() > std::size_t(max_ndim)) return shape_error{shape_defect::too_many_axes};
  // One pass over the axes (every import runs this): the byte size, and the
  // C-order stride volume in bytes. With every factor >= 1, a product
  // overflows in this order exactly when it overflows in any other; an empty
  // axis makes the byte size 0 whatever came before.
  const auto itemsize = std::int64_t(type.itemsize());
  std::int64_t bytes = itemsize, volume = itemsize;
  bool empty = false, bytes_overflow = false, volume_overflow = false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::int64_t e = shape[i];
    if (e < 0) return shape_error{shape_defect::negative_extent, std::int32_t(i)};
    empty = empty || e == 0;
    bytes_overflow = bytes_overflow || __builtin_mul_overflow(bytes, e, &bytes);
    volume_overflow = volume_overflow || __builtin_mul_overflow(volume, std::max<std::int64_t>(e, 1), &volume);
  }
  if (bytes_overflow && !empty) return shape_error{shape_defect::size_overflow};
  if (volume_overflow) return shape_error{shape_defect::strides_overflow};
  return std::nullopt;
}

// check_shape as C++ allocators report it: std::invalid_argument for a
// negative extent, std::length_error for the rest.
inline void require_shape(extents_t shape, dtype type) {
  const auto error = check_shape(shape, type);
  if (!error) return;
  switch (error->defect) {
    case shape_defect::too_many_axes: throw std::length_error("too many axes");
    case shape_defect::negative_extent: throw std::invalid_argument("negative extent");
    case shape_defect::size_overflow: throw std::length_error("array size overflows int64");
    case shape_defect::strides_overflow: throw std::length_error("C-order strides overflow int64");
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
  // Magnitudes are unsigned: a stride may be INT64_MIN (extent 2, 1-byte elements).
  auto magnitude = [](std::int64_t v) { return v < 0 ? 0 - std::uint64_t(v) : std::uint64_t(v); };
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
