// dlbridge/plan.hpp: axis coalescing and the copy plan.
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
#include "dlbridge/plan.hpp"

namespace {
using vec = std::vector<std::int64_t>;
constexpr std::int64_t i64min = std::numeric_limits<std::int64_t>::min();
const dlb::dtype i8{dlb::kDLInt, 8};

std::optional<dlb::byte_extent> span(const vec& shape, const vec& strides, dlb::dtype t) {
  return dlb::byte_span(shape, strides, t);
}

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

TEST_CASE("plan: coalesce merges what chains for every operand") {
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

TEST_CASE("plan: coalesce visits exactly the same offset pairs (random layouts)") {
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
TEST_CASE("plan: coalesce of strides whose span is wider than int64") {
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

TEST_CASE("plan: a strided plan, and its split into bytes") {
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

