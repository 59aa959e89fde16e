// dlbridge/layout.hpp: element counts, contiguity, density, strides, byte
// spans, axis coalescing and the copy plan.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dlbridge/layout.hpp"

namespace {
using vec = std::vector<std::int64_t>;
constexpr std::int64_t i64max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t i64min = std::numeric_limits<std::int64_t>::min();
const dlb::dtype f32{dlb::kDLFloat, 32}, i8{dlb::kDLInt, 8}, c128{dlb::kDLComplex, 128},
    f4{dlb::kDLFloat4_e2m1fn, 4}, f6{dlb::kDLFloat6_e3m2fn, 6};

std::optional<dlb::byte_extent> span(const vec& shape, const vec& strides, dlb::dtype t) {
  return dlb::byte_span(shape, strides, t);
}
}  // namespace

TEST_CASE("layout: checked arithmetic") {
  CHECK(dlb::checked_mul(3, 4) == 12);
  CHECK(dlb::checked_mul(-3, 4) == -12);
  CHECK(dlb::checked_mul(i64max, 1) == i64max);
  CHECK_FALSE(dlb::checked_mul(i64max, 2));
  CHECK_FALSE(dlb::checked_mul(i64min, -1));
  CHECK(dlb::checked_mul(std::int64_t(1) << 62, -2) == i64min);
  CHECK(dlb::checked_add(i64max - 1, 1) == i64max);
  CHECK_FALSE(dlb::checked_add(i64max, 1));
  CHECK_FALSE(dlb::checked_add(i64min, -1));
}

TEST_CASE("layout: element_count") {
  CHECK(dlb::element_count(vec{}) == 1);
  CHECK(dlb::element_count(vec{7}) == 7);
  CHECK(dlb::element_count(vec{2, 3, 4}) == 24);
  CHECK(dlb::element_count(vec{2, 0, 4}) == 0);
  // An empty axis wins even when the other extents would overflow.
  CHECK(dlb::element_count(vec{i64max, i64max, 0}) == 0);
  CHECK(dlb::element_count(vec{0, i64max, i64max}) == 0);
  CHECK(dlb::element_count(vec{i64max}) == i64max);
  CHECK(dlb::element_count(vec{std::int64_t(1) << 31, std::int64_t(1) << 31}) == std::int64_t(1) << 62);
  CHECK_FALSE(dlb::element_count(vec{std::int64_t(1) << 32, std::int64_t(1) << 31}));  // 2^63
  CHECK_FALSE(dlb::element_count(vec{i64max, 2}));
  CHECK_FALSE(dlb::element_count(vec{3037000500, 3037000500}));  // just past sqrt(2^63)
  CHECK(dlb::element_count(vec{3037000499, 3037000499}) == std::int64_t(3037000499) * 3037000499);
  // Overflow of an intermediate product is overflow, even if a later axis is 1.
  CHECK_FALSE(dlb::element_count(vec{std::int64_t(1) << 40, std::int64_t(1) << 40, 1}));
  CHECK(dlb::is_empty(vec{3, 0}));
  CHECK_FALSE(dlb::is_empty(vec{}));
  CHECK_FALSE(dlb::is_empty(vec{1, 2}));
}

TEST_CASE("layout: C and F contiguity") {
  CHECK(dlb::is_c_contiguous(vec{2, 3}, vec{3, 1}));
  CHECK_FALSE(dlb::is_f_contiguous(vec{2, 3}, vec{3, 1}));
  CHECK(dlb::is_f_contiguous(vec{2, 3}, vec{1, 2}));
  CHECK_FALSE(dlb::is_c_contiguous(vec{2, 3}, vec{1, 2}));
  CHECK(dlb::is_c_contiguous(vec{2, 3, 4}, vec{12, 4, 1}));
  CHECK(dlb::is_f_contiguous(vec{2, 3, 4}, vec{1, 2, 6}));
  CHECK_FALSE(dlb::is_c_contiguous(vec{2, 3, 4}, vec{12, 1, 3}));
  // Gaps, reversals and broadcasts are not contiguous.
  CHECK_FALSE(dlb::is_c_contiguous(vec{4}, vec{2}));
  CHECK_FALSE(dlb::is_c_contiguous(vec{4}, vec{-1}));
  CHECK_FALSE(dlb::is_c_contiguous(vec{4}, vec{0}));
  CHECK_FALSE(dlb::is_c_contiguous(vec{2, 3}, vec{4, 1}));
  CHECK_FALSE(dlb::is_f_contiguous(vec{2, 3}, vec{1, 3}));
  // 0-d and 1-element arrays are both.
  CHECK(dlb::is_c_contiguous(vec{}, vec{}));
  CHECK(dlb::is_f_contiguous(vec{}, vec{}));
  CHECK(dlb::is_c_contiguous(vec{1}, vec{42}));
  CHECK(dlb::is_f_contiguous(vec{1, 1}, vec{-5, 0}));
}

TEST_CASE("layout: contiguity ignores the strides of extent-1 axes") {
  // PyTorch writes (1, 77) as strides (1, 1) or (77, 1); both are C order.
  CHECK(dlb::is_c_contiguous(vec{1, 77}, vec{1, 1}));
  CHECK(dlb::is_c_contiguous(vec{1, 77}, vec{77, 1}));
  CHECK(dlb::is_c_contiguous(vec{1, 77}, vec{-3, 1}));
  CHECK(dlb::is_c_contiguous(vec{2, 1, 3}, vec{3, 999, 1}));
  CHECK(dlb::is_f_contiguous(vec{2, 1, 3}, vec{1, 0, 2}));
  CHECK(dlb::is_c_contiguous(vec{3, 1}, vec{1, 7}));
  CHECK(dlb::is_f_contiguous(vec{3, 1}, vec{1, 7}));
  CHECK_FALSE(dlb::is_c_contiguous(vec{2, 1, 3}, vec{1, 3, 2}));
}

TEST_CASE("layout: empty arrays are contiguous whatever their strides") {
  CHECK(dlb::is_c_contiguous(vec{0}, vec{5}));
  CHECK(dlb::is_c_contiguous(vec{3, 0, 2}, vec{-7, 0, 99}));
  CHECK(dlb::is_f_contiguous(vec{3, 0, 2}, vec{-7, 0, 99}));
  CHECK(dlb::is_f_contiguous(vec{0, 4}, vec{1, 1}));
}

TEST_CASE("layout: dense layouts fill one block exactly, in any order and direction") {
  CHECK(dlb::is_dense(vec{2, 3}, vec{3, 1}));
  CHECK(dlb::is_dense(vec{2, 3}, vec{1, 2}));        // Fortran order
  CHECK(dlb::is_dense(vec{2, 3, 4}, vec{1, -8, 2}));  // permuted, one axis reversed
  CHECK(dlb::is_dense(vec{1, 5}, vec{0, -1}));       // extent-1 strides are free
  CHECK(dlb::is_dense(vec{}, vec{}));
  CHECK(dlb::is_dense(vec{0, 3}, vec{7, 7}));        // empty
  CHECK_FALSE(dlb::is_dense(vec{4}, vec{2}));        // a gap
  CHECK_FALSE(dlb::is_dense(vec{4}, vec{0}));        // a broadcast
  CHECK_FALSE(dlb::is_dense(vec{2, 3}, vec{4, 1}));  // a gap between rows
  CHECK_FALSE(dlb::is_dense(vec{2, 2}, vec{1, 1}));  // two axes on one stride
  // |INT64_MIN| is 2^63: no int64 negation, and such an axis is dense only
  // outermost, over 2^63 elements, which no extent reaches here.
  CHECK_FALSE(dlb::is_dense(vec{2, 2}, vec{i64min, 1}));
}

TEST_CASE("layout: non-overlapping is std::layout_stride's test") {
  CHECK(dlb::is_non_overlapping(vec{3, 4}, vec{4, 1}));
  CHECK(dlb::is_non_overlapping(vec{3, 4}, vec{1, 3}));
  CHECK(dlb::is_non_overlapping(vec{3, 4}, vec{10, -2}));  // gaps, a reversed axis
  CHECK(dlb::is_non_overlapping(vec{5, 1}, vec{1, 0}));
  CHECK(dlb::is_non_overlapping(vec{0, 4}, vec{0, 0}));
  CHECK(dlb::is_non_overlapping(vec{2, 2}, vec{i64min, 1}));
  CHECK_FALSE(dlb::is_non_overlapping(vec{3, 4}, vec{2, 1}));
  CHECK_FALSE(dlb::is_non_overlapping(vec{3}, vec{0}));
  CHECK_FALSE(dlb::is_non_overlapping(vec{2, 2, 2}, vec{i64min, i64min, 1}));  // the reach passes 2^64
  // Sufficient, not necessary: (2, 3) strides over (2, 2) interleave without
  // sharing an element, and are refused.
  CHECK_FALSE(dlb::is_non_overlapping(vec{2, 2}, vec{2, 3}));
}

TEST_CASE("layout: c_strides") {
  vec out(3, -1);
  dlb::c_strides(vec{2, 3, 4}, out);
  CHECK(out == vec{12, 4, 1});
  dlb::c_strides(vec{2, 1, 4}, out);
  CHECK(out == vec{4, 4, 1});
  // Empty axes count as 1, as NumPy does, so strides stay meaningful.
  dlb::c_strides(vec{2, 0, 3}, out);
  CHECK(out == vec{3, 3, 1});
  vec one(1, -1);
  dlb::c_strides(vec{5}, one);
  CHECK(one == vec{1});
  vec none;
  dlb::c_strides(vec{}, none);  // writes nothing
  CHECK(none.empty());
  vec two(2, -1);
  dlb::c_strides(vec{1, 1}, two);
  CHECK(two == vec{1, 1});
  // What c_strides writes is C-contiguous.
  const vec shape{3, 5, 2, 7};
  vec strides(4);
  dlb::c_strides(shape, strides);
  CHECK(dlb::is_c_contiguous(shape, strides));
}

TEST_CASE("layout: byte_span of ordinary layouts") {
  CHECK(span({}, {}, f32) == dlb::byte_extent{0, 4});
  CHECK(span({3}, {1}, f32) == dlb::byte_extent{0, 12});
  CHECK(span({2, 3}, {3, 1}, f32) == dlb::byte_extent{0, 24});
  CHECK(span({2, 3}, {1, 2}, f32) == dlb::byte_extent{0, 24});
  CHECK(span({2, 3}, {6, 2}, c128) == dlb::byte_extent{0, 16 * (6 + 4) + 16});
  // Gaps are inside the span.
  CHECK(span({3}, {5}, i8) == dlb::byte_extent{0, 11});
}

TEST_CASE("layout: byte_span with negative and zero strides") {
  CHECK(span({3}, {-1}, f32) == dlb::byte_extent{-8, 4});
  CHECK(span({2, 3}, {-3, 1}, f32) == dlb::byte_extent{-12, 12});
  CHECK(span({2, 3}, {-3, -1}, f32) == dlb::byte_extent{-20, 4});
  CHECK(span({4, 2}, {2, -1}, i8) == dlb::byte_extent{-1, 7});
  // Broadcast: every element is the first one.
  CHECK(span({3}, {0}, f32) == dlb::byte_extent{0, 4});
  CHECK(span({5, 7}, {0, 0}, c128) == dlb::byte_extent{0, 16});
  CHECK(span({5, 7}, {0, -1}, f32) == dlb::byte_extent{-24, 4});
  // Extent-1 axes never move, whatever their stride.
  CHECK(span({1}, {i64max}, f32) == dlb::byte_extent{0, 4});
  CHECK(span({1, 3}, {i64min, 1}, f32) == dlb::byte_extent{0, 12});
}

TEST_CASE("layout: byte_span of empty arrays") {
  CHECK(span({0}, {1}, f32) == dlb::byte_extent{0, 0});
  CHECK(span({3, 0}, {i64max, i64min}, f32) == dlb::byte_extent{0, 0});
  CHECK(span({0}, {1}, f4) == dlb::byte_extent{0, 0});
}

TEST_CASE("layout: byte_span of packed sub-byte arrays is the packed storage") {
  CHECK(span({5}, {1}, f4) == dlb::byte_extent{0, 3});
  CHECK(span({2, 4}, {4, 1}, f4) == dlb::byte_extent{0, 4});
  CHECK(span({4}, {1}, f6) == dlb::byte_extent{0, 3});
  CHECK(span({5}, {1}, f6) == dlb::byte_extent{0, 4});
  CHECK(span({}, {}, f4) == dlb::byte_extent{0, 1});
  // The packed bit count passes int64, the byte count does not (fuzz regression).
  CHECK(span({i64max / 2}, {1}, f4) == dlb::byte_extent{0, std::int64_t(1) << 61});
  CHECK(span({i64max / 8}, {1}, f4));
}

TEST_CASE("layout: byte_span overflow") {
  // stride * itemsize
  CHECK_FALSE(span({2}, {i64max}, f32));
  CHECK_FALSE(span({2}, {i64min}, f32));
  CHECK_FALSE(span({2}, {std::int64_t(1) << 62}, f32));
  // (extent - 1) * step
  CHECK(span({3}, {std::int64_t(1) << 61}, i8) == dlb::byte_extent{0, (std::int64_t(1) << 62) + 1});
  CHECK_FALSE(span({5}, {std::int64_t(1) << 61}, i8));
  // The sum of the reaches.
  CHECK_FALSE(span({2, 2}, {std::int64_t(1) << 62, std::int64_t(1) << 62}, i8));
  CHECK(span({2, 2}, {-(std::int64_t(1) << 62), -(std::int64_t(1) << 62)}, i8) == dlb::byte_extent{i64min, 1});
  CHECK_FALSE(span({2, 3}, {-(std::int64_t(1) << 62), -(std::int64_t(1) << 62)}, i8));
  // The element count itself.
  CHECK_FALSE(span({i64max, 2}, {2, 1}, i8));
}

namespace {
// Every (offset of operand 0, offset of operand 1) pair a layout visits.
std::vector<std::pair<std::int64_t, std::int64_t>> visits(const vec& shape, const vec& s0, const vec& s1) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  vec index(shape.size(), 0);
  const auto n = *dlb::element_count(shape);
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t a = 0, b = 0;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      a += index[i] * s0[i];
      b += index[i] * s1[i];
    }
    out.emplace_back(a, b);
    for (std::size_t i = shape.size(); i-- > 0;) {
      if (++index[i] < shape[i]) break;
      index[i] = 0;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct coalesced {
  std::int32_t ndim;
  vec shape, s0, s1;
};

coalesced run_coalesce(vec shape, vec s0, vec s1) {
  const auto n = dlb::coalesce<2>(std::int32_t(shape.size()), shape.data(), {s0.data(), s1.data()});
  shape.resize(std::size_t(n));
  s0.resize(std::size_t(n));
  s1.resize(std::size_t(n));
  return {n, shape, s0, s1};
}
}  // namespace

TEST_CASE("layout: coalesce merges what chains for every operand") {
  SUBCASE("C-contiguous operands become one axis") {
    const auto c = run_coalesce({2, 3, 4}, {12, 4, 1}, {12, 4, 1});
    CHECK(c.ndim == 1);
    CHECK(c.shape == vec{24});
    CHECK(c.s0 == vec{1});
    CHECK(c.s1 == vec{1});
  }
  SUBCASE("an F-ordered first operand is walked in its memory order") {
    const auto c = run_coalesce({2, 3}, {1, 2}, {1, 2});
    CHECK(c.shape == vec{6});
    CHECK(c.s0 == vec{1});
  }
  SUBCASE("C destination, transposed source: nothing fuses") {
    const auto c = run_coalesce({2, 3}, {3, 1}, {1, 2});
    CHECK(c.ndim == 2);
    CHECK(c.shape == vec{2, 3});
    CHECK(c.s0 == vec{3, 1});
    CHECK(c.s1 == vec{1, 2});
  }
  SUBCASE("axes are ordered by the first operand's stride magnitude") {
    const auto c = run_coalesce({3, 2}, {1, 3}, {2, 1});
    CHECK(c.shape == vec{2, 3});
    CHECK(c.s0 == vec{3, 1});
    CHECK(c.s1 == vec{1, 2});
  }
  SUBCASE("extent-1 axes are dropped whatever their strides") {
    const auto c = run_coalesce({2, 1, 3}, {3, 77, 1}, {3, -5, 1});
    CHECK(c.shape == vec{6});
    CHECK(c.s0 == vec{1});
    CHECK(c.s1 == vec{1});
  }
  SUBCASE("negative strides that chain fuse") {
    const auto c = run_coalesce({3, 2}, {-2, -1}, {2, 1});
    CHECK(c.shape == vec{6});
    CHECK(c.s0 == vec{-1});
    CHECK(c.s1 == vec{1});
  }
  SUBCASE("broadcast source axes fuse with each other but not with moving ones") {
    const auto both = run_coalesce({2, 3}, {3, 1}, {0, 0});
    CHECK(both.shape == vec{6});
    CHECK(both.s1 == vec{0});
    const auto one = run_coalesce({2, 3}, {3, 1}, {0, 1});
    CHECK(one.shape == vec{2, 3});
    CHECK(one.s1 == vec{0, 1});
  }
  SUBCASE("only extent-1 axes, or none: zero axes") {
    CHECK(run_coalesce({1, 1, 1}, {5, 6, 7}, {1, 2, 3}).ndim == 0);
    CHECK(run_coalesce({}, {}, {}).ndim == 0);
  }
}

TEST_CASE("layout: coalesce visits exactly the same offset pairs (random layouts)") {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 400; ++trial) {
    const int ndim = int(rng() % 5);
    vec shape(std::size_t(ndim), 0);
    for (auto& e : shape) e = 1 + std::int64_t(rng() % 4);
    // Operand strides: C strides of a random permutation, random signs and
    // occasional broadcasts.
    auto make = [&] {
      vec order(static_cast<std::size_t>(ndim));
      for (int i = 0; i < ndim; ++i) order[std::size_t(i)] = i;
      std::shuffle(order.begin(), order.end(), rng);
      vec strides(std::size_t(ndim), 0);
      std::int64_t s = 1 + std::int64_t(rng() % 2);
      for (auto axis : order) {
        strides[std::size_t(axis)] = s;
        s *= shape[std::size_t(axis)] + std::int64_t(rng() % 2);
      }
      for (auto& v : strides) {
        if (rng() % 4 == 0) v = -v;
        if (rng() % 8 == 0) v = 0;
      }
      return strides;
    };
    const vec s0 = make(), s1 = make();
    CAPTURE(trial);
    const auto c = run_coalesce(shape, s0, s1);
    CHECK(c.ndim <= ndim);
    CHECK(*dlb::element_count(c.shape) == *dlb::element_count(shape));
    for (auto e : c.shape) CHECK(e > 1);
    CHECK(visits(c.shape, c.s0, c.s1) == visits(shape, s0, s1));
  }
}

// Spans wider than int64 pass validate() (up to 2^64 - 1 bytes, 1-byte
// elements): coalesce must order and chain their strides without overflow
// (UBSan, stage asan-cpp, reported both before the fix).
TEST_CASE("layout: coalesce of strides whose span is wider than int64") {
  const std::int64_t quarter = std::int64_t(1) << 62;  // 2^62
  SUBCASE("an INT64_MIN stride is the largest magnitude, not the smallest") {
    REQUIRE(span({2, 2}, {i64min, quarter}, i8) == dlb::byte_extent{i64min, quarter + 1});
    const auto c = run_coalesce({2, 2}, {i64min, quarter}, {2, 1});
    CHECK(c.ndim == 2);
    CHECK(c.s0 == vec{i64min, quarter});
    CHECK(c.s1 == vec{2, 1});
  }
  SUBCASE("stride * extent past int64 does not chain") {
    // One axis reaches -2^62 bytes, the other +2^62 (fuzz regression
    // strided-tensor-whose-byte-span-is-wider-than-int64); 2^62 * 2 overflows.
    REQUIRE(span({2, 2}, {-quarter, quarter}, i8) == dlb::byte_extent{-quarter, quarter + 1});
    const auto c = run_coalesce({2, 2}, {2, 1}, {-quarter, quarter});
    CHECK(c.ndim == 2);
    CHECK(c.s0 == vec{2, 1});
    CHECK(c.s1 == vec{-quarter, quarter});
    const auto first = run_coalesce({2, 2}, {-quarter, quarter}, {2, 1});
    CHECK(first.ndim == 2);
    CHECK(first.s0 == vec{-quarter, quarter});
  }
}

TEST_CASE("layout: a strided plan, and its split into bytes") {
  // 3-byte elements, a transposing copy of a (3, 5) array: C-order
  // destination, Fortran-order source; then a fill (no source strides).
  auto p = dlb::detail::make_strided_plan(vec{3, 5}, vec{5, 1}, vec{1, 3});
  CHECK(p.ndim == 2);
  CHECK(p.count == 15);
  dlb::detail::split_into_bytes(p, 3);
  CHECK(p.ndim == 3);
  CHECK(p.count == 45);
  CHECK(vec(p.extent, p.extent + 3) == vec{3, 5, 3});
  CHECK(vec(p.dst, p.dst + 3) == vec{15, 3, 1});
  CHECK(vec(p.src, p.src + 3) == vec{3, 9, 1});
  auto fill = dlb::detail::make_strided_plan(vec{4, 2}, vec{2, 1}, {});
  CHECK(fill.ndim == 1);
  CHECK(fill.src[0] == 0);
  dlb::detail::split_into_bytes(fill, 4);  // the element's bytes chain in the destination only
  CHECK(fill.ndim == 2);
  CHECK(vec(fill.dst, fill.dst + 2) == vec{4, 1});
  CHECK(vec(fill.src, fill.src + 2) == vec{0, 1});
}

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
