// dlbridge/shape.hpp: the one rule for the shape of every array.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dlbridge/dtype.hpp"
#include "dlbridge/shape.hpp"

TEST_CASE("check_shape: the one rule for every array's shape, naming the defect") {
  using dlb::shape_defect;
  const auto f64 = dlb::dtype_of<double>;
  const auto i8 = dlb::dtype_of<std::int8_t>;
  const auto defect = [](std::vector<std::int64_t> shape, dlb::dtype type) {
    const auto error = dlb::check_shape(shape, type);
    return error ? std::optional(std::pair(error->defect, error->axis)) : std::nullopt;
  };
  CHECK(!defect({}, f64));
  CHECK(!defect({2, 0, 3}, f64));
  CHECK(!defect(std::vector<std::int64_t>(64, 1), f64));
  CHECK(!defect({std::int64_t{1} << 60}, i8));
  CHECK(defect(std::vector<std::int64_t>(65, 1), f64) == std::pair(shape_defect::too_many_axes, -1));
  CHECK(defect({2, -1, -3}, f64) == std::pair(shape_defect::negative_extent, 1));
  CHECK(defect({0, -1}, f64) == std::pair(shape_defect::negative_extent, 1));  // beside an empty axis too
  CHECK(defect({std::int64_t{1} << 60, 16}, f64) == std::pair(shape_defect::size_overflow, -1));
  CHECK(defect({std::int64_t{1} << 61}, f64) == std::pair(shape_defect::size_overflow, -1));  // bytes, not count
  CHECK(!defect({std::int64_t{1} << 61}, i8));
  CHECK(defect({0, 3, (std::int64_t{1} << 62) + 1}, i8) == std::pair(shape_defect::strides_overflow, -1));
  CHECK(defect({0, INT64_MAX}, f64) == std::pair(shape_defect::strides_overflow, -1));
  // The byte size overflows before an empty axis: empty wins; the strides still overflow.
  CHECK(defect({std::int64_t{1} << 62, 4, 0}, f64) == std::pair(shape_defect::strides_overflow, -1));
  CHECK(!defect({std::int64_t{1} << 59, 0, 2}, i8));
  CHECK(defect({INT64_MAX, 2, -1}, f64) == std::pair(shape_defect::negative_extent, 2));  // after an overflow too
}

TEST_CASE("require_shape: check_shape as allocators throw it") {
  const auto f64 = dlb::dtype_of<double>;
  const std::vector<std::int64_t> too_many(65, 1), negative{2, -1}, huge{std::int64_t{1} << 62, 4},
      wide{0, 3, std::int64_t{1} << 62};
  CHECK_NOTHROW(dlb::require_shape(std::vector<std::int64_t>{2, 3}, f64));
  CHECK_THROWS_WITH_AS(dlb::require_shape(too_many, f64), "too many axes", std::length_error);
  CHECK_THROWS_WITH_AS(dlb::require_shape(negative, f64), "negative extent", std::invalid_argument);
  CHECK_THROWS_WITH_AS(dlb::require_shape(huge, f64), "array size overflows int64", std::length_error);
  CHECK_THROWS_WITH_AS(dlb::require_shape(wide, f64), "C-order strides overflow int64", std::length_error);
}
