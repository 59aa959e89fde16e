// dlbridge/layout.hpp: checked arithmetic, element counts, contiguity, density,
// strides and byte spans.
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

TEST_CASE("layout: magnitude is |v| as unsigned, INT64_MIN included") {
  static_assert(dlb::detail::magnitude(0) == 0);
  static_assert(dlb::detail::magnitude(-3) == 3);
  static_assert(dlb::detail::magnitude(i64max) == std::uint64_t(i64max));
  CHECK(dlb::detail::magnitude(i64min) == std::uint64_t(1) << 63);
  CHECK(dlb::detail::magnitude(i64min + 1) == std::uint64_t(i64max));
}
