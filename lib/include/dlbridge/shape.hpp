// The one rule for the shape of every array dlbridge makes or imports
// (check_shape), and that rule as C++ allocators report it (require_shape).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>

#include "dlbridge/dtype.hpp"
#include "dlbridge/layout.hpp"

namespace dlb {

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
}  // namespace dlb
