// dlb::view <-> std::mdspan, where the standard library has it
// (__cpp_lib_mdspan: libc++ >= 18 in C++23 mode; not GCC 12's libstdc++).
// Part of dlbridge_cpp_tests (where it is empty unless the compiler has
// mdspan), and compiled on its own with -DDLB_REQUIRE_MDSPAN by
// view_mdspan.py (with test_view.cpp), which fails here if mdspan is missing.
#include <doctest/doctest.h>

#include "dlbridge/tensor.hpp"
#include "dlbridge/view.hpp"

#if defined(DLB_REQUIRE_MDSPAN) && !defined(__cpp_lib_mdspan)
#error "DLB_REQUIRE_MDSPAN: this standard library has no std::mdspan"
#endif

#if defined(__cpp_lib_mdspan)
#include <array>
#include <cstdint>
#include <mdspan>
#include <numeric>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace {
using dlb::any_extent;
}

TEST_CASE("view/mdspan: to_mdspan() maps every index to the same element") {
  std::vector<int> buf(24);
  std::iota(buf.begin(), buf.end(), 0);
  SUBCASE("C order, static and dynamic extents") {
    const dlb::view<int, dlb::shape<2, any_extent, 4>> v(buf.data(), {2, 3, 4});
    const auto m = v.to_mdspan();
    static_assert(std::is_same_v<decltype(m)::element_type, int>);
    static_assert(decltype(m)::rank() == 3);
    CHECK(m.data_handle() == buf.data());
    CHECK(m.extent(0) == 2);
    CHECK(m.extent(1) == 3);
    CHECK(m.extent(2) == 4);
    CHECK(m.stride(0) == 12);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) CHECK(&m[i, j, k] == &v(i, j, k));
    m[1, 2, 3] = -5;
    CHECK(buf[23] == -5);
  }
  SUBCASE("const elements, Fortran order, extent-1 axes with odd strides") {
    const dlb::view<const int, dlb::ndim<3>> v(buf.data(), {3, 1, 4}, {1, -9, 3});
    const auto m = v.to_mdspan();
    static_assert(std::is_same_v<decltype(m)::element_type, const int>);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 4; ++k) CHECK(&m[i, 0, k] == &v(i, 0, k));
  }
  SUBCASE("empty and 0-d") {
    const dlb::view<int, dlb::ndim<2>> empty(buf.data(), {0, 5}, {-1, 0});
    CHECK(empty.to_mdspan().size() == 0);
    const dlb::view<int, dlb::ndim<0>> scalar(buf.data() + 7, {});
    CHECK(scalar.to_mdspan()[] == 7);
  }
  SUBCASE("negative, zero or overlapping strides are not a layout_stride") {
    const dlb::view<int, dlb::ndim<1>> reversed(buf.data() + 23, {24}, {-1});
    CHECK_THROWS_WITH_AS((void)reversed.to_mdspan(), "dlb::view::to_mdspan: std::layout_stride needs positive strides",
                         std::invalid_argument);
    const dlb::view<int, dlb::ndim<2>> broadcast(buf.data(), {5, 3}, {0, 1});
    CHECK_THROWS_WITH_AS((void)broadcast.to_mdspan(), "dlb::view::to_mdspan: std::layout_stride needs positive strides",
                         std::invalid_argument);
    const dlb::view<int, dlb::ndim<2>> overlapping(buf.data(), {3, 4}, {2, 1});
    CHECK_THROWS_WITH_AS((void)overlapping.to_mdspan(),
                         "dlb::view::to_mdspan: std::layout_stride needs non-overlapping strides",
                         std::invalid_argument);
    const dlb::view<int, dlb::ndim<2>> disjoint(buf.data(), {3, 4}, {1, 3});
    CHECK_NOTHROW((void)disjoint.to_mdspan());
  }
}

TEST_CASE("view/mdspan: a view of a std::mdspan is checked like a DLTensor") {
  std::vector<float> buf(12);
  std::iota(buf.begin(), buf.end(), 0.f);
  SUBCASE("layout_right") {
    std::mdspan<float, std::extents<std::size_t, 3, 4>> m(buf.data());
    const dlb::view<float, dlb::shape<any_extent, 4>, dlb::c_contig> v(m);
    CHECK(v.data() == buf.data());
    CHECK(v.shape(0) == 3);
    CHECK(v.stride(0) == 4);
    CHECK(v(2, 1) == 9.f);
    CHECK(v.device() == dlb::device{dlb::kDLCPU, 0});
  }
  SUBCASE("layout_left, dynamic extents, into a read-only view") {
    std::mdspan<const float, std::dextents<int, 2>, std::layout_left> m(buf.data(), 3, 4);
    const dlb::view<const float, dlb::ndim<2>, dlb::f_contig> v(m);
    CHECK(v.stride(1) == 3);
    CHECK(v(1, 2) == 7.f);
    static_assert(!std::is_constructible_v<dlb::view<float, dlb::ndim<2>>, decltype(m)>);  // const data
    static_assert(!std::is_constructible_v<dlb::view<float, dlb::ndim<3>>,
                                           std::mdspan<float, std::dextents<int, 2>>>);  // rank
    static_assert(!std::is_constructible_v<dlb::view<double, dlb::ndim<2>>,
                                           std::mdspan<float, std::dextents<int, 2>>>);  // element type
  }
  SUBCASE("layout_stride, and the device named in the type") {
    using ext = std::dextents<std::int64_t, 2>;
    std::mdspan<float, ext, std::layout_stride> m(buf.data(),
                                                  std::layout_stride::mapping<ext>(ext(2, 3), std::array{6, 2}));
    const dlb::view<float, dlb::ndim<2>, dlb::cuda> v(m, 1);
    CHECK(v.device() == dlb::device{dlb::kDLCUDA, 1});
    CHECK(v.stride(1) == 2);
    CHECK(v(1, 2) == 10.f);
    CHECK(dlb::tensor::adopt(v, nullptr, nullptr).device() == dlb::device{dlb::kDLCUDA, 1});
    try {
      (void)dlb::view<float, dlb::ndim<2>, dlb::c_contig>(m);
      FAIL("a strided mdspan was accepted as C-contiguous");
    } catch (const dlb::import_failure& e) {
      CHECK(e.error().message() == "strides: expected C-contiguous strides, got strides (6, 2)");
    }
  }
  SUBCASE("a static extent that differs") {
    std::mdspan<float, std::extents<std::size_t, 3, 4>> m(buf.data());
    try {
      (void)dlb::view<float, dlb::shape<any_extent, 3>>(m);
      FAIL("a (3, 4) mdspan was accepted as (any, 3)");
    } catch (const dlb::import_failure& e) {
      CHECK(e.error().message() == "shape: axis 1: expected extent 3, got 4");
    }
  }
  SUBCASE("there and back") {
    const dlb::view<float, dlb::ndim<2>> v(buf.data(), {4, 3});
    const dlb::view<const float, dlb::shape<4, 3>, dlb::c_contig> w(v.to_mdspan());
    CHECK(w.data() == v.data());
    CHECK(w(3, 2) == 11.f);
  }
}
#endif
