// dlbridge/dispatch.hpp: the dtype visitor and the width dispatcher, and what
// load(), store() and converter() make of the dtypes and widths they refuse.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dlbridge/convert.hpp"
#include "dlbridge/dispatch.hpp"
#include "dlbridge/element.hpp"

namespace {
namespace d = dlb::detail;

// The element type visit_dtype gives t, as a tag type.
template <class T>
constexpr bool visits_as(dlb::dtype t) {
  return d::visit_dtype(t, [](auto tag) { return std::is_same_v<typename decltype(tag)::type, T>; });
}

constexpr bool visits_none(dlb::dtype t) { return visits_as<void>(t); }

// sizeof the element type, 0 for packed codes and for none.
constexpr std::size_t visited_size(dlb::dtype t) {
  return d::visit_dtype(t, [](auto tag) -> std::size_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_void_v<T> || std::is_same_v<T, d::packed_code>) return 0;
    else return sizeof(T);
  });
}

template <std::size_t MaxBytes = 16>
constexpr std::size_t width_of(std::size_t bytes) {
  return d::visit_width<MaxBytes>(bytes, [](auto width) { return decltype(width)::value; });
}
}  // namespace

TEST_CASE("dispatch: visit_dtype gives a type exactly to the supported dtypes") {
  // Every code below 256, every width and lane counts 1 and 2: the visitor's
  // list and dtype_table name the same dtypes.
  for (int code = 0; code < 256; ++code) {
    for (int bits = 0; bits < 256; ++bits) {
      for (int lanes : {1, 2}) {
        const dlb::dtype t{std::uint8_t(code), std::uint8_t(bits), std::uint16_t(lanes)};
        if (visits_none(t) == dlb::is_supported(t)) {
          CAPTURE(code);
          CAPTURE(bits);
          CAPTURE(lanes);
          FAIL("visit_dtype and is_supported disagree");
        }
      }
    }
  }
}

TEST_CASE("dispatch: each supported dtype's element type is its size, and dtype_of's type where it has one") {
  for (const auto& info : dlb::dtype_table) {
    CAPTURE(info.name);
    if (info.type.is_subbyte()) CHECK(visits_as<d::packed_code>(info.type));
    else CHECK(visited_size(info.type) == info.type.itemsize());
  }
  static_assert(visits_as<std::int8_t>(dlb::dtype_of<std::int8_t>));
  static_assert(visits_as<std::int64_t>(dlb::dtype_of<std::int64_t>));
  static_assert(visits_as<std::uint16_t>(dlb::dtype_of<std::uint16_t>));
  static_assert(visits_as<std::uint64_t>(dlb::dtype_of<std::uint64_t>));
  static_assert(visits_as<float>(dlb::dtype_of<float>));
  static_assert(visits_as<double>(dlb::dtype_of<double>));
  // Where the C++ type would not do: bool's byte, complex parts, codes.
  static_assert(visits_as<d::bool_byte>(dlb::dtype_of<bool>));
  static_assert(visits_as<d::complex_parts<float>>(dlb::dtype_of<std::complex<float>>));
  static_assert(visits_as<d::complex_parts<double>>(dlb::dtype_of<std::complex<double>>));
  static_assert(visits_as<d::complex_parts<d::bfloat16_code>>({dlb::kDLBcomplex, 32}));
  static_assert(visits_as<d::float16_code>({dlb::kDLFloat, 16}));
  static_assert(visits_as<d::bfloat16_code>({dlb::kDLBfloat, 16}));
  static_assert(visits_as<d::float8_code>({dlb::kDLFloat8_e4m3fn, 8}));
  static_assert(visits_as<d::packed_code>({dlb::kDLFloat4_e2m1fn, 4}));
}

TEST_CASE("dispatch: unsupported widths are none, never a type of another width") {
  // What load() and store() once read as a neighbouring width, and what
  // with_element_type refused: now the same answer for all three.
  for (const dlb::dtype t : {dlb::dtype{dlb::kDLInt, 24}, dlb::dtype{dlb::kDLUInt, 128}, dlb::dtype{dlb::kDLFloat, 8},
                             dlb::dtype{dlb::kDLBool, 16}, dlb::dtype{dlb::kDLBfloat, 32},
                             dlb::dtype{dlb::kDLFloat8_e4m3fn, 16}, dlb::dtype{dlb::kDLFloat4_e2m1fn, 8},
                             dlb::dtype{dlb::kDLComplex, 32}, dlb::dtype{dlb::kDLFloat, 32, 2},
                             dlb::dtype{dlb::kDLOpaqueHandle, 64}, dlb::dtype{200, 8}}) {
    CAPTURE(int(t.code));
    CAPTURE(int(t.bits));
    CHECK(visits_none(t));
    CHECK((dlb::converter(t, {dlb::kDLFloat, 32}) == nullptr));
    CHECK((dlb::converter({dlb::kDLFloat, 32}, t) == nullptr));
  }
}

TEST_CASE("dispatch: load() of an unsupported dtype reads nothing and gives NaN; store() writes nothing") {
  // One byte of memory: a load or store of any wider element would pass its
  // end (ASan reports it).
  for (const dlb::dtype t : {dlb::dtype{dlb::kDLInt, 24}, dlb::dtype{dlb::kDLFloat, 8}, dlb::dtype{dlb::kDLBool, 16},
                             dlb::dtype{dlb::kDLFloat8_e4m3fn, 16}, dlb::dtype{dlb::kDLComplex, 32},
                             dlb::dtype{dlb::kDLFloat, 64, 2}, dlb::dtype{200, 8}}) {
    CAPTURE(int(t.code));
    CAPTURE(int(t.bits));
    auto* byte = new std::uint8_t(0x5a);
    const dlb::scalar s = dlb::load(t, byte);
    CHECK(s.k == dlb::scalar::kind::real);
    CHECK(std::isnan(s.re));
    dlb::store(t, byte, dlb::scalar::from_int(1));
    CHECK(*byte == 0x5a);
    delete byte;
  }
}

TEST_CASE("dispatch: visit_width gives the word widths, and 0 for every other width") {
  for (std::size_t bytes : {1u, 2u, 4u, 8u, 16u}) {
    CAPTURE(bytes);
    CHECK(d::is_word_width(bytes));
    CHECK(width_of(bytes) == bytes);
  }
  for (std::size_t bytes : {0u, 3u, 5u, 6u, 7u, 12u, 24u, 32u}) {
    CAPTURE(bytes);
    CHECK_FALSE(d::is_word_width(bytes));
    CHECK(width_of(bytes) == 0);
  }
  // A bound: wider words are none too.
  static_assert(width_of<8>(8) == 8);
  static_assert(width_of<8>(16) == 0);
  static_assert(width_of<4>(8) == 0);
  static_assert(width_of<4>(2) == 2);
}
