// dlbridge/view.hpp: dlb::view<T, Constraints...>: its type properties and
// storage, indexing (signed strides included), the checked boundary from a
// DLTensor and from a dlb::tensor (one refusal per constraint, in full), the
// device named in the type in both directions, and produce -> export -> import
// round trips through views. Compile-time refusals: compile_fail/; bounds
// checks: view_bounds.cpp; std::mdspan: test_view_mdspan.cpp.
#include <doctest/doctest.h>

#include <array>
#include <complex>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dlbridge/tensor.hpp"
#include "dlbridge/view.hpp"

namespace {
using vec = std::vector<std::int64_t>;
using dlb::any_extent;
const dlb::dtype f32{dlb::kDLFloat, 32}, i32{dlb::kDLInt, 32};

// A DLTensor (and the same thing as a dlb::tensor) to break one field at a time.
struct source {
  void* data = nullptr;
  dlb::dtype type = f32;
  dlb::device dev{};
  vec shape;
  std::optional<vec> strides;  // nullopt: NULL strides (C order)
  bool readonly = false;
  std::int64_t byte_offset = 0;

  source(void* d, dlb::dtype t, dlb::device v, vec s, std::optional<vec> st = std::nullopt, bool ro = false,
         std::int64_t offset = 0)
      : data(d), type(t), dev(v), shape(std::move(s)), strides(std::move(st)), readonly(ro), byte_offset(offset) {}

  [[nodiscard]] dlb::DLTensor dltensor() {
    return {data, dev, std::int32_t(shape.size()), type, shape.empty() ? nullptr : shape.data(),
            strides ? strides->data() : nullptr, std::uint64_t(byte_offset)};
  }
  [[nodiscard]] dlb::tensor tensor() const {
    const vec none;
    return dlb::tensor::adopt(static_cast<std::byte*>(data) + byte_offset, type, dev, shape, strides ? *strides : none,
                              readonly, nullptr, nullptr);
  }
};

void check_error(const dlb::import_error& e, std::string_view field, std::int32_t axis, const std::string& expected,
                 const std::string& received) {
  CHECK(e.field == field);
  CHECK(e.axis == axis);
  CHECK(e.expected == expected);
  CHECK(e.received == received);
  std::string message(field);
  message += ": ";
  if (axis >= 0) message += "axis " + std::to_string(axis) + ": ";
  message += "expected " + expected + ", got " + received;
  CHECK(e.message() == message);
}

// `View` refuses `s` both as a DLTensor (View::from, View::check_tensor) and as
// a dlb::tensor (tensor::as<View>), with the same error in full.
template <class View>
void check_refused(source s, std::string_view field, std::int32_t axis, const std::string& expected,
                   const std::string& received) {
  const dlb::DLTensor t = s.dltensor();
  const auto quiet = View::check_tensor(t, s.readonly);
  REQUIRE(quiet.has_value());
  check_error(*quiet, field, axis, expected, received);
  const auto direct = dlb::check(t, s.readonly, View::demands());  // the one routine
  REQUIRE(direct.has_value());
  CHECK(direct->message() == quiet->message());
  try {
    (void)View::from(t, s.readonly);
    FAIL("View::from accepted the DLTensor");
  } catch (const dlb::import_failure& e) {
    check_error(e.error(), field, axis, expected, received);
    CHECK(std::string(e.what()) == "invalid tensor: " + quiet->message());
  }
  try {
    (void)s.tensor().template as<View>();
    FAIL("tensor::as accepted the tensor");
  } catch (const dlb::import_failure& e) {
    check_error(e.error(), field, axis, expected, received);
  }
}

// `View` accepts `s` both ways; returns the view from the DLTensor after
// checking the tensor's view describes the same memory.
template <class View>
View check_accepted(source s) {
  const dlb::DLTensor t = s.dltensor();
  CHECK_FALSE(View::check_tensor(t, s.readonly));
  const View a = View::from(t, s.readonly);
  const dlb::tensor owner = s.tensor();
  const View b = owner.as<View>();
  CHECK(a.data() == b.data());
  for (std::int32_t i = 0; i < View::rank; ++i) {
    CHECK(a.shape(i) == b.shape(i));
    CHECK(a.stride(i) == b.stride(i));
  }
  CHECK(a.device() == b.device());
  return a;
}

void count_release(void* ctx) noexcept { ++*static_cast<int*>(ctx); }
}  // namespace

// ---------------------------------------------------------------------------
// The type

namespace type_properties {
using dlb::c_contig, dlb::f_contig, dlb::any_contig, dlb::ro, dlb::cpu, dlb::cuda, dlb::cuda_host,
    dlb::cuda_managed, dlb::shape, dlb::ndim;

template <class V>
constexpr bool plain = std::is_trivially_copyable_v<V> && std::is_standard_layout_v<V>;
static_assert(plain<dlb::view<float, ndim<2>>>);
static_assert(plain<dlb::view<const double, shape<3, 4>, c_contig, cuda>>);
static_assert(plain<dlb::view<std::int8_t, shape<any_extent, 4, any_extent>, ro, cuda_managed>>);
static_assert(plain<dlb::view<bool, ndim<0>>>);
static_assert(plain<dlb::view<std::complex<float>, shape<>, f_contig>>);

// Static extents take no storage: a pointer, the strides, the device, and one
// int64 per extent the type leaves open.
constexpr std::size_t base2 = sizeof(float*) + 2 * sizeof(std::int64_t) + sizeof(dlb::device);
static_assert(sizeof(dlb::view<float, shape<3, 4>>) == base2);
static_assert(sizeof(dlb::view<float, shape<any_extent, 4>>) == base2 + sizeof(std::int64_t));
static_assert(sizeof(dlb::view<float, shape<any_extent, any_extent>>) == base2 + 2 * sizeof(std::int64_t));
static_assert(sizeof(dlb::view<float, ndim<2>>) == base2 + 2 * sizeof(std::int64_t));
static_assert(sizeof(dlb::view<float, ndim<0>>) == sizeof(float*) + sizeof(dlb::device));

// What the type says.
using a = dlb::view<float, shape<any_extent, 3>, c_contig, cuda>;
static_assert(a::rank == 2);
static_assert(a::static_extents == std::array<std::int64_t, 2>{any_extent, 3});
static_assert(a::order == dlb::memory_order::c);
static_assert(a::has_device && a::device_type == dlb::kDLCUDA);
static_assert(!a::readonly && std::is_same_v<a::element_type, float>);
static_assert(a::dtype == dlb::dtype{dlb::kDLFloat, 32});
static_assert(std::is_same_v<decltype(std::declval<a>()(0, 0)), float&>);

// Constraints in any order; ndim and shape together when they agree.
using b = dlb::view<const std::int32_t, cuda_host, f_contig, ndim<3>, shape<2, any_extent, 4>>;
static_assert(b::rank == 3 && b::order == dlb::memory_order::f && b::device_type == dlb::kDLCUDAHost);
static_assert(b::readonly && std::is_same_v<b::element_type, const std::int32_t>);
static_assert(std::is_same_v<b::value_type, std::int32_t>);
static_assert(std::is_same_v<decltype(std::declval<b>()(0, 0, 0)), const std::int32_t&>);

// ro is the same as const T.
using c = dlb::view<double, ndim<1>, ro, any_contig>;
static_assert(c::readonly && std::is_same_v<c::element_type, const double>);
static_assert(c::order == dlb::memory_order::any && !c::has_device && c::static_extents[0] == any_extent);
static_assert(dlb::view<float, ndim<1>, cuda_managed>::device_type == dlb::kDLCUDAManaged);
static_assert(dlb::view<float, ndim<1>, cpu>::device_type == dlb::kDLCPU);
static_assert(dlb::view<float, ndim<1>>::order == dlb::memory_order::none);

// Every element type with a DLPack dtype.
static_assert(dlb::view<bool, ndim<1>>::dtype == dlb::dtype{dlb::kDLBool, 8});
static_assert(dlb::view<std::uint16_t, ndim<1>>::dtype == dlb::dtype{dlb::kDLUInt, 16});
static_assert(dlb::view<std::complex<double>, ndim<1>>::dtype == dlb::dtype{dlb::kDLComplex, 128});
static_assert(dlb::element<const float> && !dlb::element<std::string> && !dlb::element<long double>);

// A view is a constant expression where its memory is.
constexpr int table[6] = {0, 1, 2, 3, 4, 5};
constexpr dlb::view<const int, shape<2, 3>> fixed(table, {2, 3});
static_assert(fixed(1, 2) == 5 && fixed.size() == 6 && fixed.stride(0) == 3 && fixed.is_c_contiguous());

// to_mdspan() exists exactly where the standard library has std::mdspan.
template <class V>
constexpr bool has_to_mdspan = requires(const V& v) { v.to_mdspan(); };
#if defined(__cpp_lib_mdspan)
static_assert(has_to_mdspan<a>);
#else
static_assert(!has_to_mdspan<a>);
#endif
}  // namespace type_properties

TEST_CASE("view: the constraint vocabulary") {
  CHECK(dlb::any_extent == -1);
  CHECK(dlb::shape<2, dlb::any_extent, 4>::extents == std::array<std::int64_t, 3>{2, -1, 4});
  CHECK(dlb::shape<>::extents.empty());
  CHECK(dlb::ndim<5>::value == 5);
  CHECK(dlb::cpu::type == dlb::kDLCPU);
  CHECK(dlb::cuda::type == dlb::kDLCUDA);
  CHECK(dlb::cuda_host::type == dlb::kDLCUDAHost);
  CHECK(dlb::cuda_managed::type == dlb::kDLCUDAManaged);
  const auto r = dlb::view<const float, dlb::shape<any_extent, 3>, dlb::f_contig, dlb::cuda>::demands();
  CHECK(r.type == f32);
  CHECK(r.ndim == 2);
  CHECK(vec(r.shape.begin(), r.shape.end()) == vec{any_extent, 3});
  CHECK(r.order == dlb::memory_order::f);
  CHECK(r.has_device);
  CHECK(r.device_type == dlb::kDLCUDA);
  CHECK_FALSE(r.writable);
  CHECK(dlb::view<float, dlb::ndim<1>>::demands().writable);
  CHECK_FALSE(dlb::view<float, dlb::ndim<1>>::demands().has_device);
}

TEST_CASE("view: describe renders each demand of a view type, in one line") {
  using dlb::describe;
  CHECK(describe<dlb::view<const float, dlb::ndim<2>, dlb::c_contig, dlb::cpu>>() ==
        "float32[*, *] C-contiguous cpu read-only");
  CHECK(describe<dlb::view<std::uint8_t, dlb::shape<any_extent, any_extent, 3>>>() == "uint8[*, *, 3] writable");
  CHECK(describe<dlb::view<double, dlb::ndim<1>, dlb::f_contig, dlb::cuda>>() == "float64[*] Fortran-contiguous cuda writable");
  CHECK(describe<dlb::view<bool, dlb::shape<2, 3>, dlb::any_contig, dlb::ro>>() == "bool[2, 3] contiguous read-only");
  CHECK(describe<dlb::view<const std::int64_t, dlb::ndim<0>, dlb::cuda_managed>>() == "int64[] cuda_managed read-only");
  // A hand-made requirements may leave the number of axes open, or fix fewer extents than it has axes.
  CHECK(describe(dlb::requirements{f32}) == "float32[...] read-only");
  const std::int64_t first[] = {4};
  CHECK(describe(dlb::requirements{i32, 2, first, dlb::memory_order::none, false, dlb::kDLCPU, true}) ==
        "int32[4, *] writable");
}

// A sink that write_description fills in a constant expression.
struct fixed_sink {
  char text[128]{};
  std::size_t size = 0;
  constexpr void put(std::string_view s) {
    for (char c : s) text[size++] = c;
  }
};

template <class... Views>
constexpr fixed_sink written() {
  fixed_sink out;
  const dlb::requirements all[] = {Views::demands()...};
  dlb::write_description(out, all);
  return out;
}

TEST_CASE("view: write_description writes describe's words at compile time (the casters' signatures)") {
  using image32 = dlb::view<const float, dlb::ndim<2>, dlb::c_contig, dlb::cpu>;
  using image64 = dlb::view<const double, dlb::ndim<2>, dlb::c_contig, dlb::cpu>;
  using rgb = dlb::view<std::uint8_t, dlb::shape<any_extent, any_extent, 3>>;
  constexpr auto one = written<rgb>();
  constexpr auto two = written<image32, image64>();
  constexpr auto mixed = written<image32, rgb>();
  CHECK(std::string_view(one.text, one.size) == dlb::describe<rgb>());
  CHECK(std::string_view(two.text, two.size) == dlb::describe<image32, image64>());
  CHECK(std::string_view(mixed.text, mixed.size) == dlb::describe<image32, rgb>());
}

TEST_CASE("view: describe of several view types groups the dtypes where only they differ") {
  using dlb::describe;
  using image32 = dlb::view<const float, dlb::ndim<2>, dlb::c_contig, dlb::cpu>;
  using image64 = dlb::view<const double, dlb::ndim<2>, dlb::c_contig, dlb::cpu>;
  using ints = dlb::view<const std::int8_t, dlb::ndim<2>, dlb::c_contig, dlb::cpu>;
  CHECK(describe<image32, image64>() == "(float32 | float64)[*, *] C-contiguous cpu read-only");
  CHECK(describe<ints, image32, image64>() == "(int8 | float32 | float64)[*, *] C-contiguous cpu read-only");
  CHECK(describe(image32::demands(), image64::demands()) == describe<image32, image64>());
  // Any other difference: each in full.
  using rgb = dlb::view<std::uint8_t, dlb::shape<any_extent, any_extent, 3>>;
  using rgba = dlb::view<std::uint8_t, dlb::shape<any_extent, any_extent, 4>>;
  CHECK(describe<rgb, rgba>() == "uint8[*, *, 3] writable | uint8[*, *, 4] writable");
  CHECK(describe<image32, dlb::view<double, dlb::ndim<2>, dlb::c_contig, dlb::cpu>>() ==
        "float32[*, *] C-contiguous cpu read-only | float64[*, *] C-contiguous cpu writable");
  CHECK(describe<image32, dlb::view<const double, dlb::ndim<2>, dlb::c_contig, dlb::cuda>>() ==
        "float32[*, *] C-contiguous cpu read-only | float64[*, *] C-contiguous cuda read-only");
  CHECK(describe<image32, dlb::view<const double, dlb::ndim<2>, dlb::c_contig>>() ==
        "float32[*, *] C-contiguous cpu read-only | float64[*, *] C-contiguous read-only");
  CHECK(describe<image32, dlb::view<const double, dlb::ndim<1>, dlb::c_contig, dlb::cpu>>() ==
        "float32[*, *] C-contiguous cpu read-only | float64[*] C-contiguous cpu read-only");
  CHECK(describe<image32, dlb::view<const double, dlb::ndim<2>, dlb::f_contig, dlb::cpu>>() ==
        "float32[*, *] C-contiguous cpu read-only | float64[*, *] Fortran-contiguous cpu read-only");
}

// ---------------------------------------------------------------------------
// Wrapping memory by hand; reading it

TEST_CASE("view: a default view points nowhere, on the type's device") {
  const dlb::view<float, dlb::ndim<2>> v;
  CHECK(v.data() == nullptr);
  CHECK(v.device() == dlb::device{dlb::kDLCPU, 0});
  CHECK(dlb::view<float, dlb::ndim<2>, dlb::cuda>{}.device() == dlb::device{dlb::kDLCUDA, 0});
}

TEST_CASE("view: C-order indexing, shape, stride, size, data") {
  std::vector<float> buf(12);
  std::iota(buf.begin(), buf.end(), 0.f);
  const dlb::view<float, dlb::ndim<2>> v(buf.data(), {3, 4});
  CHECK(v.data() == buf.data());
  CHECK(v.shape(0) == 3);
  CHECK(v.shape(1) == 4);
  CHECK(v.stride(0) == 4);
  CHECK(v.stride(1) == 1);
  CHECK(v.size() == 12);
  CHECK(v.is_c_contiguous());
  CHECK_FALSE(v.is_f_contiguous());
  CHECK(v.device() == dlb::device{dlb::kDLCPU, 0});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) CHECK(v(i, j) == float(4 * i + j));
  v(2, 1) = 100.f;  // a view of non-const float writes through, even when itself const
  CHECK(buf[9] == 100.f);
  // Any integral index type.
  CHECK(v(std::size_t(1), std::int8_t(2)) == 6.f);
  CHECK(v(1L, 3U) == 7.f);
}

TEST_CASE("view: static extents are served by the type") {
  std::array<double, 24> buf{};
  std::iota(buf.begin(), buf.end(), 0.0);
  const dlb::view<double, dlb::shape<2, any_extent, 4>> v(buf.data(), {2, 3, 4});
  CHECK(v.shape(0) == 2);
  CHECK(v.shape(1) == 3);
  CHECK(v.shape(2) == 4);
  CHECK(v.stride(0) == 12);
  CHECK(v(1, 2, 3) == 23.0);
  const dlb::view<double, dlb::shape<any_extent, any_extent, any_extent>> all_open(buf.data(), {4, 3, 2});
  CHECK(all_open.shape(0) == 4);
  CHECK(all_open.shape(2) == 2);
  CHECK(all_open(3, 2, 1) == 23.0);
  const dlb::view<double, dlb::shape<any_extent, 2, any_extent>> middle(buf.data(), {3, 2, 4});
  CHECK(middle.shape(0) == 3);
  CHECK(middle.shape(1) == 2);
  CHECK(middle.shape(2) == 4);
}

TEST_CASE("view: Fortran order") {
  std::vector<int> buf(6);
  std::iota(buf.begin(), buf.end(), 0);
  const dlb::view<int, dlb::shape<2, 3>, dlb::f_contig> v(buf.data(), {2, 3}, {1, 2});
  CHECK(v(1, 0) == 1);
  CHECK(v(0, 1) == 2);
  CHECK(v(1, 2) == 5);
  CHECK(v.is_f_contiguous());
  CHECK_FALSE(v.is_c_contiguous());
}

TEST_CASE("view: negative strides") {
  std::vector<int> buf(12);
  std::iota(buf.begin(), buf.end(), 0);
  // buf[::-1]: the first element is the last in memory.
  const dlb::view<const int, dlb::ndim<1>> reversed(buf.data() + 11, {12}, {-1});
  CHECK(reversed.stride(0) == -1);
  CHECK(reversed(0) == 11);
  CHECK(reversed(11) == 0);
  CHECK_FALSE(reversed.is_c_contiguous());
  // A (3, 4) array with its rows reversed: strides (-4, 1).
  const dlb::view<int, dlb::shape<3, 4>> flipped(buf.data() + 8, {3, 4}, {-4, 1});
  CHECK(flipped(0, 0) == 8);
  CHECK(flipped(2, 3) == 3);
  CHECK(flipped(1, 2) == 6);
  // Both axes reversed.
  const dlb::view<int, dlb::ndim<2>> both(buf.data() + 11, {3, 4}, {-4, -1});
  CHECK(both(0, 0) == 11);
  CHECK(both(2, 3) == 0);
  CHECK(both(1, 1) == 6);
}

TEST_CASE("view: for a 1-d view, a braced third argument is strides, a number the device id") {
  float x[4] = {};
  const dlb::view<float, dlb::ndim<1>> strided(x + 3, {4}, {-1});
  CHECK(strided.stride(0) == -1);
  CHECK(strided.device() == dlb::device{dlb::kDLCPU, 0});
  const std::int32_t id = 2;
  const dlb::view<float, dlb::ndim<1>, dlb::cuda> on(x, {4}, id);
  CHECK(on.stride(0) == 1);
  CHECK(on.device() == dlb::device{dlb::kDLCUDA, 2});
  const dlb::view<float, dlb::ndim<1>, dlb::cuda> both(x, {2}, {2}, 3);
  CHECK(both.stride(0) == 2);
  CHECK(both.device() == dlb::device{dlb::kDLCUDA, 3});
}

TEST_CASE("view: zero strides broadcast") {
  std::array<float, 3> row{1.f, 2.f, 3.f};
  const dlb::view<const float, dlb::ndim<2>> v(row.data(), {1000, 3}, {0, 1});
  CHECK(v.size() == 3000);
  CHECK(v.stride(0) == 0);
  CHECK(v(0, 1) == 2.f);
  CHECK(v(999, 1) == 2.f);
  CHECK(v(500, 2) == 3.f);
  CHECK_FALSE(v.is_c_contiguous());
  float x = 7.f;
  const dlb::view<float, dlb::ndim<3>> scalar(&x, {2, 2, 2}, {0, 0, 0});
  scalar(1, 1, 1) = 8.f;
  CHECK(scalar(0, 0, 0) == 8.f);
}

TEST_CASE("view: contiguity ignores extent-1 axes; empty views are contiguous") {
  float x[4] = {};
  CHECK(dlb::view<float, dlb::ndim<2>>(x, {1, 4}, {99, 1}).is_c_contiguous());
  CHECK(dlb::view<float, dlb::ndim<2>>(x, {4, 1}, {1, -5}).is_c_contiguous());
  CHECK(dlb::view<float, dlb::ndim<2>>(x, {1, 4}, {99, 1}).is_f_contiguous());
  CHECK(dlb::view<float, dlb::ndim<2>>(x, {0, 4}, {7, 3}).is_c_contiguous());
  CHECK(dlb::view<float, dlb::ndim<2>>(x, {4, 0}, {7, 3}).is_f_contiguous());
  CHECK(dlb::view<float, dlb::ndim<2>>(x, {0, 4}).size() == 0);
}

TEST_CASE("view: 0-d views") {
  double x = 2.5;
  const dlb::view<double, dlb::ndim<0>> v(&x, {});
  CHECK(v() == 2.5);
  CHECK(v.size() == 1);
  CHECK(v.is_c_contiguous());
  const dlb::view<const double, dlb::shape<>> w(&x, {});
  CHECK(w() == 2.5);
}

TEST_CASE("view: is copied by value") {
  std::array<int, 4> buf{1, 2, 3, 4};
  const dlb::view<int, dlb::shape<any_extent>> v(buf.data(), {4});
  auto copy = v;
  copy(0) = 9;
  CHECK(v(0) == 9);
  CHECK(copy.shape(0) == 4);
  CHECK(copy.data() == v.data());
}

// ---------------------------------------------------------------------------
// The checked boundary: DLTensor and dlb::tensor

TEST_CASE("view: from a DLTensor and from a tensor") {
  std::vector<float> buf(24);
  std::iota(buf.begin(), buf.end(), 0.f);
  SUBCASE("C order, explicit strides") {
    auto v = check_accepted<dlb::view<float, dlb::shape<any_extent, 3>, dlb::c_contig, dlb::cpu>>(
        {buf.data(), f32, {}, {4, 3}, vec{3, 1}});
    CHECK(v.data() == buf.data());
    CHECK(v.shape(0) == 4);
    CHECK(v(3, 2) == 11.f);
  }
  SUBCASE("NULL strides mean C order") {
    auto v = check_accepted<dlb::view<float, dlb::ndim<2>, dlb::c_contig>>({buf.data(), f32, {}, {4, 3}});
    CHECK(v.stride(0) == 3);
    CHECK(v.stride(1) == 1);
    CHECK(v(2, 1) == 7.f);
    // ... and satisfy any_contig, and f_contig when at most one axis is longer than 1.
    (void)check_accepted<dlb::view<float, dlb::ndim<2>, dlb::any_contig>>({buf.data(), f32, {}, {4, 3}});
    (void)check_accepted<dlb::view<float, dlb::ndim<2>, dlb::f_contig>>({buf.data(), f32, {}, {1, 3}});
    (void)check_accepted<dlb::view<float, dlb::ndim<1>, dlb::f_contig>>({buf.data(), f32, {}, {24}});
  }
  SUBCASE("Fortran order") {
    auto v = check_accepted<dlb::view<float, dlb::ndim<2>, dlb::f_contig>>({buf.data(), f32, {}, {4, 3}, vec{1, 4}});
    CHECK(v(1, 2) == 9.f);
    (void)check_accepted<dlb::view<float, dlb::ndim<2>, dlb::any_contig>>({buf.data(), f32, {}, {4, 3}, vec{1, 4}});
  }
  SUBCASE("negative and zero strides, without a memory order") {
    auto v = check_accepted<dlb::view<const float, dlb::shape<4, 3>>>(
        {buf.data(), f32, {}, {4, 3}, vec{-3, 1}, false, 9 * 4});  // rows reversed, from byte_offset
    CHECK(v.data() == buf.data() + 9);
    CHECK(v.stride(0) == -3);
    CHECK(v(0, 0) == 9.f);
    CHECK(v(3, 2) == 2.f);
    auto b = check_accepted<dlb::view<const float, dlb::ndim<2>>>({buf.data(), f32, {}, {5, 3}, vec{0, 1}});
    CHECK(b(4, 2) == 2.f);
  }
  SUBCASE("extent-1 axes and empty arrays may have any strides") {
    (void)check_accepted<dlb::view<float, dlb::ndim<2>, dlb::c_contig>>({buf.data(), f32, {}, {1, 3}, vec{-7, 1}});
    (void)check_accepted<dlb::view<float, dlb::ndim<2>, dlb::c_contig>>({buf.data(), f32, {}, {0, 3}, vec{5, 5}});
    auto e = check_accepted<dlb::view<float, dlb::ndim<2>, dlb::f_contig>>({nullptr, f32, {}, {0, 3}, vec{5, 5}});
    CHECK(e.size() == 0);
  }
  SUBCASE("read-only data into a read-only view") {
    auto v = check_accepted<dlb::view<const float, dlb::ndim<1>>>({buf.data(), f32, {}, {24}, std::nullopt, true});
    CHECK(v(5) == 5.f);
    (void)check_accepted<dlb::view<float, dlb::ndim<1>, dlb::ro>>({buf.data(), f32, {}, {24}, std::nullopt, true});
    // Writable data is fine for a read-only view.
    (void)check_accepted<dlb::view<float, dlb::ndim<1>, dlb::ro>>({buf.data(), f32, {}, {24}});
  }
  SUBCASE("a view without a device keeps the tensor's") {
    auto v = check_accepted<dlb::view<float, dlb::ndim<1>>>({buf.data(), f32, {dlb::kDLCUDA, 2}, {24}});
    CHECK(v.device() == dlb::device{dlb::kDLCUDA, 2});
  }
  SUBCASE("0-d") {
    auto v = check_accepted<dlb::view<float, dlb::ndim<0>>>({buf.data() + 3, f32, {}, {}});
    CHECK(v() == 3.f);
  }
}

TEST_CASE("view: each constraint's refusal, from a DLTensor and from a tensor") {
  std::vector<float> buf(24);
  std::vector<std::int32_t> ints(24);
  SUBCASE("dtype") {
    check_refused<dlb::view<float, dlb::ndim<2>>>({ints.data(), i32, {}, {4, 3}}, "dtype", -1, "float32", "int32");
    check_refused<dlb::view<double, dlb::ndim<2>>>({buf.data(), f32, {}, {4, 3}}, "dtype", -1, "float64", "float32");
    check_refused<dlb::view<std::uint32_t, dlb::ndim<2>>>({ints.data(), i32, {}, {4, 3}}, "dtype", -1, "uint32",
                                                          "int32");
  }
  SUBCASE("ndim") {
    check_refused<dlb::view<float, dlb::ndim<2>>>({buf.data(), f32, {}, {2, 3, 4}}, "ndim", -1, "ndim 2", "3");
    check_refused<dlb::view<float, dlb::ndim<0>>>({buf.data(), f32, {}, {4}}, "ndim", -1, "ndim 0", "1");
    // The rank of a shape<...> is demanded too.
    check_refused<dlb::view<float, dlb::shape<any_extent, any_extent>>>({buf.data(), f32, {}, {24}}, "ndim", -1, "ndim 2", "1");
  }
  SUBCASE("shape") {
    check_refused<dlb::view<float, dlb::shape<any_extent, 3>>>({buf.data(), f32, {}, {3, 4}}, "shape", 1, "extent 3", "4");
    check_refused<dlb::view<float, dlb::shape<2, any_extent, 4>>>({buf.data(), f32, {}, {3, 2, 4}}, "shape", 0, "extent 2",
                                                           "3");
    check_refused<dlb::view<float, dlb::shape<2, any_extent, 4>, dlb::ndim<3>>>({buf.data(), f32, {}, {2, 3, 3}}, "shape", 2,
                                                                         "extent 4", "3");
    check_refused<dlb::view<float, dlb::shape<0>>>({buf.data(), f32, {}, {24}}, "shape", 0, "extent 0", "24");
  }
  SUBCASE("c_contig") {
    check_refused<dlb::view<float, dlb::ndim<2>, dlb::c_contig>>({buf.data(), f32, {}, {4, 3}, vec{1, 4}}, "strides",
                                                                 -1, "C-contiguous strides", "strides (1, 4)");
    check_refused<dlb::view<float, dlb::ndim<1>, dlb::c_contig>>({buf.data(), f32, {}, {12}, vec{2}}, "strides", -1,
                                                                 "C-contiguous strides", "strides (2,)");
    check_refused<dlb::view<float, dlb::ndim<1>, dlb::c_contig>>({buf.data() + 11, f32, {}, {12}, vec{-1}}, "strides",
                                                                 -1, "C-contiguous strides", "strides (-1,)");
  }
  SUBCASE("f_contig") {
    check_refused<dlb::view<float, dlb::ndim<2>, dlb::f_contig>>({buf.data(), f32, {}, {4, 3}, vec{3, 1}}, "strides",
                                                                 -1, "Fortran-contiguous strides", "strides (3, 1)");
    // NULL strides are C order, which is not Fortran order here.
    check_refused<dlb::view<float, dlb::ndim<2>, dlb::f_contig>>({buf.data(), f32, {}, {4, 3}}, "strides", -1,
                                                                 "Fortran-contiguous strides", "strides (3, 1)");
  }
  SUBCASE("any_contig") {
    check_refused<dlb::view<float, dlb::ndim<2>, dlb::any_contig>>({buf.data(), f32, {}, {2, 3}, vec{6, 2}},
                                                                   "strides", -1, "contiguous strides",
                                                                   "strides (6, 2)");
    // Negative strides are never contiguous.
    check_refused<dlb::view<float, dlb::ndim<2>, dlb::any_contig>>({buf.data() + 9, f32, {}, {4, 3}, vec{-3, 1}},
                                                                   "strides", -1, "contiguous strides",
                                                                   "strides (-3, 1)");
    check_refused<dlb::view<float, dlb::ndim<1>, dlb::any_contig>>({buf.data() + 23, f32, {}, {24}, vec{-1}},
                                                                   "strides", -1, "contiguous strides", "strides (-1,)");
    // So are zero strides (on an axis longer than 1).
    check_refused<dlb::view<float, dlb::ndim<2>, dlb::any_contig>>({buf.data(), f32, {}, {5, 3}, vec{0, 1}},
                                                                   "strides", -1, "contiguous strides",
                                                                   "strides (0, 1)");
  }
  SUBCASE("device") {
    check_refused<dlb::view<float, dlb::ndim<1>, dlb::cuda>>({buf.data(), f32, {}, {24}}, "device", -1,
                                                             "device cuda", "cpu");
    check_refused<dlb::view<float, dlb::ndim<1>, dlb::cpu>>({buf.data(), f32, {dlb::kDLCUDA, 1}, {24}}, "device", -1,
                                                            "device cpu", "cuda");
    check_refused<dlb::view<float, dlb::ndim<1>, dlb::cpu>>({buf.data(), f32, {dlb::kDLCUDAHost, 0}, {24}}, "device",
                                                            -1, "device cpu", "cuda_host");
    check_refused<dlb::view<float, dlb::ndim<1>, dlb::cuda_host>>({buf.data(), f32, {dlb::kDLCUDAManaged, 0}, {24}},
                                                                  "device", -1, "device cuda_host", "cuda_managed");
    check_refused<dlb::view<float, dlb::ndim<1>, dlb::cuda_managed>>({buf.data(), f32, {dlb::kDLCUDA, 0}, {24}},
                                                                     "device", -1, "device cuda_managed", "cuda");
  }
  SUBCASE("read-only data into a writable view") {
    check_refused<dlb::view<float, dlb::ndim<1>>>({buf.data(), f32, {}, {24}, std::nullopt, true}, "flags", -1,
                                                  "writable data", "read-only data");
    check_refused<dlb::view<float, dlb::shape<4, 6>, dlb::c_contig, dlb::cpu>>(
        {buf.data(), f32, {}, {4, 6}, std::nullopt, true}, "flags", -1, "writable data", "read-only data");
  }
  SUBCASE("a malformed tensor is refused by validate() first") {
    // (Only the DLTensor route: tensor::adopt refuses it before any view.)
    source s{buf.data(), f32, {}, {3, -1}};
    const auto e = dlb::view<float, dlb::ndim<2>>::check_tensor(s.dltensor());
    REQUIRE(e);
    check_error(*e, "shape", 1, "extent >= 0", "extent -1");
    source null_data{nullptr, f32, {}, {3}};
    CHECK_THROWS_WITH_AS((void)(dlb::view<float, dlb::ndim<1>>::from(null_data.dltensor())),
                         "invalid tensor: data: expected a pointer for a non-empty tensor, got NULL",
                         dlb::import_failure);
  }
  SUBCASE("the first unmet constraint is reported: device, dtype, ndim, shape, strides, flags") {
    source s{ints.data(), i32, {}, {4, 3}, vec{1, 4}, true};
    check_refused<dlb::view<float, dlb::shape<4, 4>, dlb::c_contig, dlb::cuda>>(s, "device", -1, "device cuda", "cpu");
    check_refused<dlb::view<float, dlb::shape<4, 4>, dlb::c_contig>>(s, "dtype", -1, "float32", "int32");
    check_refused<dlb::view<std::int32_t, dlb::shape<4, 4, 1>, dlb::c_contig>>(s, "ndim", -1, "ndim 3", "2");
    check_refused<dlb::view<std::int32_t, dlb::shape<4, 4>, dlb::c_contig>>(s, "shape", 1, "extent 4", "3");
    check_refused<dlb::view<std::int32_t, dlb::shape<4, 3>, dlb::c_contig>>(s, "strides", -1, "C-contiguous strides",
                                                                            "strides (1, 4)");
    check_refused<dlb::view<std::int32_t, dlb::shape<4, 3>, dlb::f_contig>>(s, "flags", -1, "writable data",
                                                                            "read-only data");
    (void)check_accepted<dlb::view<const std::int32_t, dlb::shape<4, 3>, dlb::f_contig, dlb::cpu>>(s);
  }
}

TEST_CASE("view: the messages read as documented") {
  std::vector<float> buf(12);
  source s{buf.data(), f32, {}, {3, 4}};
  const auto shape = dlb::view<float, dlb::shape<any_extent, 3>>::check_tensor(s.dltensor());
  REQUIRE(shape);
  CHECK(shape->message() == "shape: axis 1: expected extent 3, got 4");
  const auto device = dlb::view<float, dlb::ndim<2>, dlb::cuda>::check_tensor(s.dltensor());
  REQUIRE(device);
  CHECK(device->message() == "device: expected device cuda, got cpu");
}

TEST_CASE("view: dltensor() describes the view, and reads back") {
  std::vector<int> buf(12);
  std::iota(buf.begin(), buf.end(), 0);
  dlb::view<int, dlb::shape<any_extent, 4>> v(buf.data() + 8, {3, 4}, {-4, 1});
  std::array<std::int64_t, 2> shape{};
  const dlb::DLTensor t = v.dltensor(shape);
  CHECK(t.data == buf.data() + 8);
  CHECK(t.ndim == 2);
  CHECK(dlb::dtype(t.dtype) == i32);
  CHECK(t.shape[0] == 3);
  CHECK(t.shape[1] == 4);
  CHECK(t.strides[0] == -4);
  CHECK(t.byte_offset == 0);
  CHECK_FALSE(dlb::validate(t));
  const auto back = dlb::view<const int, dlb::ndim<2>>::from(t);
  CHECK(back(2, 3) == 3);
}

// ---------------------------------------------------------------------------
// The type's device, in both directions

TEST_CASE("view: memory wrapped through a device-constrained view carries that device") {
  float fake[8] = {};  // only addresses are taken: nothing is read
  int released = 0;
  SUBCASE("cuda, with an id") {
    const dlb::view<float, dlb::shape<2, 4>, dlb::cuda> v(fake, {2, 4}, 1);
    CHECK(v.device() == dlb::device{dlb::kDLCUDA, 1});
    {
      const auto t = dlb::tensor::adopt(v, count_release, &released);
      CHECK(t.device() == dlb::device{dlb::kDLCUDA, 1});
      CHECK(t.data() == fake);
      CHECK(t.type() == f32);
      CHECK(t.shape(1) == 4);
      CHECK(t.stride(0) == 4);
      CHECK_FALSE(t.readonly());

      auto* m = t.export_versioned();
      CHECK(m->dl_tensor.device.device_type == dlb::kDLCUDA);
      CHECK(m->dl_tensor.device.device_id == 1);
      CHECK(m->flags == 0);
      auto* legacy = t.export_legacy();
      CHECK(legacy->dl_tensor.device.device_type == dlb::kDLCUDA);
      CHECK(legacy->dl_tensor.device.device_id == 1);

      // And back: a cuda view accepts it, a cpu view (or none-CUDA) refuses it.
      const auto back = dlb::view<float, dlb::shape<2, 4>, dlb::cuda>::from(m->dl_tensor);
      CHECK(back.data() == fake);
      CHECK(back.device() == dlb::device{dlb::kDLCUDA, 1});
      CHECK(t.as<dlb::view<float, dlb::ndim<2>, dlb::cuda>>().device().id == 1);
      CHECK_THROWS_WITH_AS((void)(t.as<dlb::view<float, dlb::ndim<2>, dlb::cpu>>()),
                           "invalid tensor: device: expected device cpu, got cuda", dlb::import_failure);
      m->deleter(m);
      legacy->deleter(legacy);
      CHECK(released == 0);
    }
    CHECK(released == 1);
  }
  SUBCASE("cuda_host and cuda_managed") {
    const dlb::view<const float, dlb::ndim<1>, dlb::cuda_host> h(fake, {8});
    const auto th = dlb::tensor::adopt(h, nullptr, nullptr);
    CHECK(th.device() == dlb::device{dlb::kDLCUDAHost, 0});
    CHECK(th.readonly());  // const elements
    auto* m = th.export_versioned();
    CHECK(m->dl_tensor.device.device_type == dlb::kDLCUDAHost);
    CHECK((m->flags & dlb::dlpack_flag_read_only) != 0);
    m->deleter(m);
    const dlb::view<float, dlb::ndim<1>, dlb::cuda_managed> g(fake, {8}, 3);
    CHECK(dlb::tensor::adopt(g, nullptr, nullptr).device() == dlb::device{dlb::kDLCUDAManaged, 3});
  }
  SUBCASE("no device constraint: the CPU") {
    const dlb::view<float, dlb::ndim<1>> v(fake, {8});
    CHECK(dlb::tensor::adopt(v, nullptr, nullptr).device() == dlb::device{dlb::kDLCPU, 0});
  }
  SUBCASE("a view with the cpu constraint: the CPU") {
    const dlb::view<float, dlb::ndim<1>, dlb::cpu> v(fake, {8});
    CHECK(dlb::tensor::adopt(v, nullptr, nullptr).device() == dlb::device{dlb::kDLCPU, 0});
  }
}

TEST_CASE("view: a cuda view refuses host data from every route") {
  auto host = dlb::tensor::empty(vec{4}, f32);
  CHECK_THROWS_WITH_AS((void)(host.as<dlb::view<float, dlb::ndim<1>, dlb::cuda>>()),
                       "invalid tensor: device: expected device cuda, got cpu", dlb::import_failure);
  auto* m = host.export_versioned();
  auto imported = dlb::tensor::import(m);
  CHECK_THROWS_WITH_AS((void)(imported.as<dlb::view<float, dlb::ndim<1>, dlb::cuda>>()),
                       "invalid tensor: device: expected device cuda, got cpu", dlb::import_failure);
  CHECK_THROWS_WITH_AS((void)(dlb::view<float, dlb::ndim<1>, dlb::cuda>::from(imported.dltensor())),
                       "invalid tensor: device: expected device cuda, got cpu", dlb::import_failure);
}

// ---------------------------------------------------------------------------
// Producing arrays in C++: produce -> export -> import, through views

TEST_CASE("view: tensor::empty -> view -> export_versioned -> import -> view") {
  auto produced = dlb::tensor::empty(vec{2, 3}, f32);
  auto out = produced.as<dlb::view<float, dlb::shape<2, 3>, dlb::c_contig, dlb::cpu>>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) out(i, j) = float(10 * i + j);

  auto* m = produced.export_versioned();
  CHECK(produced.use_count() == 2);
  CHECK(m->version.major == dlb::dlpack_major_version);
  CHECK(m->flags == 0);
  {
    const auto consumer = dlb::tensor::import(m);
    const auto in = consumer.as<dlb::view<const float, dlb::shape<any_extent, 3>, dlb::any_contig>>();
    CHECK(in.data() == out.data());
    CHECK(in.shape(0) == 2);
    CHECK(in(1, 2) == 12.f);
    CHECK(in(0, 1) == 1.f);
    // The consumer may write: the versioned export was not read-only.
    auto writable = consumer.as<dlb::view<float, dlb::ndim<2>>>();
    writable(0, 0) = -1.f;
    CHECK(out(0, 0) == -1.f);
    CHECK(produced.use_count() == 2);
  }
  CHECK(produced.use_count() == 1);
}

TEST_CASE("view: tensor::empty -> export_legacy -> import read-only -> view") {
  auto produced = dlb::tensor::empty(vec{4}, dlb::dtype{dlb::kDLInt, 64});
  auto out = produced.as<dlb::view<std::int64_t, dlb::ndim<1>>>();
  for (int i = 0; i < 4; ++i) out(i) = i * i;
  auto* legacy = produced.export_legacy();
  const auto consumer = dlb::tensor::import(legacy, /*readonly=*/true);
  CHECK(consumer.as<dlb::view<const std::int64_t, dlb::shape<4>>>()(3) == 9);
  CHECK(consumer.as<dlb::view<std::int64_t, dlb::shape<4>, dlb::ro>>()(2) == 4);
  CHECK_THROWS_WITH_AS((void)(consumer.as<dlb::view<std::int64_t, dlb::shape<4>>>()),
                       "invalid tensor: flags: expected writable data, got read-only data", dlb::import_failure);
}

TEST_CASE("view: adopted memory with a deleter, strided, read-only, round trip") {
  int released = 0;
  auto* heap = new std::vector<double>(12);
  std::iota(heap->begin(), heap->end(), 0.0);
  {
    // The columns of a (3, 4) C-order array reversed: first element at 3, strides (4, -1).
    const dlb::view<const double, dlb::shape<3, 4>> v(heap->data() + 3, {3, 4}, {4, -1});
    CHECK(v(0, 0) == 3.0);
    dlb::tensor produced = dlb::tensor::adopt(
        v,
        [](void* ctx) noexcept {
          auto* p = static_cast<std::pair<std::vector<double>*, int*>*>(ctx);
          delete p->first;
          ++*p->second;
          delete p;
        },
        new std::pair<std::vector<double>*, int*>(heap, &released));
    CHECK(produced.readonly());
    CHECK(produced.stride(1) == -1);

    auto* m = produced.export_versioned();
    CHECK((m->flags & dlb::dlpack_flag_read_only) != 0);
    CHECK(m->dl_tensor.strides[1] == -1);
    produced = dlb::tensor();  // the export alone keeps the memory
    CHECK(released == 0);

    const auto consumer = dlb::tensor::import(m);
    CHECK(consumer.readonly());
    const auto in = consumer.as<dlb::view<const double, dlb::ndim<2>>>();
    CHECK(in(0, 0) == 3.0);
    CHECK(in(2, 3) == 8.0);
    CHECK(in(1, 1) == 6.0);
    CHECK_THROWS_WITH_AS((void)(consumer.as<dlb::view<double, dlb::ndim<2>>>()),
                         "invalid tensor: flags: expected writable data, got read-only data", dlb::import_failure);
    CHECK_THROWS_WITH_AS((void)(consumer.as<dlb::view<const double, dlb::ndim<2>, dlb::any_contig>>()),
                         "invalid tensor: strides: expected contiguous strides, got strides (4, -1)",
                         dlb::import_failure);
    CHECK(released == 0);
  }
  CHECK(released == 1);
}

TEST_CASE("view: a tensor adopted through a view validates the layout") {
  int released = 0;
  float x = 0;
  // A negative extent cannot come from a checked view, but a hand-made one may
  // carry a span outside the address space: adopt refuses it and releases.
  const dlb::view<float, dlb::ndim<1>> v(reinterpret_cast<float*>(std::uintptr_t(16)), {8}, {-1});
  CHECK_THROWS_WITH_AS((void)dlb::tensor::adopt(v, count_release, &released),
                       "invalid tensor: strides: expected a strided span inside the address space, "
                       "got a span of [-28, 4) bytes around address 16",
                       dlb::import_failure);
  CHECK(released == 1);
  const dlb::view<float, dlb::ndim<1>> ok(&x, {1});
  CHECK_NOTHROW((void)dlb::tensor::adopt(ok, count_release, &released));
  CHECK(released == 2);
}
