// dlbridge/small_float.hpp: the small-float codec (float16, bfloat16, float8/6/4).
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dlbridge/element.hpp"  // load/store round trips
#include "dlbridge/small_float.hpp"
#include "small_formats.hpp"

namespace {
namespace fmt = dlb::formats;
using dlb_test::small_formats;
using dlb::float_format;
using k = float_format::specials;
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double qnan = std::numeric_limits<double>::quiet_NaN();

bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

std::uint32_t enc(const float_format& f, double v) { return dlb::encode(f, v); }
double dec(const float_format& f, std::uint32_t c) { return dlb::decode(f, c); }

// The value a code would have if the format had no special values: what the
// code just past the largest finite one stands for when rounding.
double plain_value(const float_format& f, std::uint32_t magnitude) {
  const std::uint32_t exponent = magnitude >> f.mantissa_bits;
  const std::uint32_t mantissa = magnitude & ((1u << f.mantissa_bits) - 1);
  if (exponent == 0) return std::ldexp(double(mantissa), 1 - f.bias - f.mantissa_bits);
  return std::ldexp(double(mantissa | (1u << f.mantissa_bits)), int(exponent) - f.bias - f.mantissa_bits);
}

// Reference rounding by exhaustive search: the nearest of all non-negative
// finite magnitudes (plus the overflow step just above the largest), ties to
// the even code. Independent of how encode() computes it. Not for e8m0.
std::uint32_t reference_encode(const float_format& f, double v) {
  if (std::isnan(v)) return f.nan_code();
  const bool negative = std::signbit(v);
  const double a = std::fabs(v);
  const std::uint32_t max = f.max_finite_code();
  std::uint32_t best = 0;
  double best_error = inf;
  for (std::uint32_t m = 0; m <= max + 1; ++m) {
    const double error = std::fabs(plain_value(f, m) - a);
    if (error < best_error || (error == best_error && (m & 1) == 0)) {
      best = m;
      best_error = error;
    }
  }
  const std::uint32_t sign = negative ? f.sign_bit() : 0;
  if (best > max) {  // overflow
    switch (f.kind) {
      case k::ieee: return sign | (max + 1);
      case k::fn: return sign | f.nan_code();
      case k::fnuz: return f.nan_code();
      case k::finite: return sign | max;
      case k::exponent: return f.nan_code();
    }
  }
  if (best == 0 && f.kind == k::fnuz) return 0;  // no negative zero
  return sign | best;
}
}  // namespace

// ---------------------------------------------------------------------------
// Format descriptions

TEST_CASE("small_float: format geometry") {
  CHECK(fmt::float16.width() == 16);
  CHECK(fmt::bfloat16.width() == 16);
  CHECK(fmt::float8_e4m3fn.width() == 8);
  CHECK(fmt::float8_e8m0fnu.width() == 8);
  CHECK(fmt::float6_e2m3fn.width() == 6);
  CHECK(fmt::float6_e3m2fn.width() == 6);
  CHECK(fmt::float4_e2m1fn.width() == 4);
  CHECK(fmt::float16.sign_bit() == 0x8000);
  CHECK(fmt::float6_e3m2fn.sign_bit() == 0x20);
  CHECK(fmt::float4_e2m1fn.sign_bit() == 0x8);
  CHECK(fmt::float8_e8m0fnu.sign_bit() == 0);  // unsigned
  CHECK(fmt::float16.magnitude_mask() == 0x7FFF);
  CHECK(fmt::float8_e8m0fnu.magnitude_mask() == 0xFF);
  for (const auto& [name, f, type] : small_formats()) {
    const std::string label = name;
    CAPTURE(label);
    CHECK(f->width() == type.bits);
    CHECK(dlb::small_float_format(type) == f);
    // The copy load() and store() use (device code cannot hold the address).
    dlb::float_format copy{};
    REQUIRE(dlb::detail::format_of(type, copy));
    CHECK(copy.exponent_bits == f->exponent_bits);
    CHECK(copy.mantissa_bits == f->mantissa_bits);
    CHECK(copy.bias == f->bias);
    CHECK(copy.kind == f->kind);
    CHECK(copy.nan_payloads == f->nan_payloads);
  }
}

TEST_CASE("small_float: small_float_format is only for small floats") {
  for (const auto& info : dlb::dtype_table) {
    dlb::float_format copy{};
    CHECK(dlb::detail::format_of(info.type, copy) == (dlb::small_float_format(info.type) != nullptr));
  }
  CHECK(dlb::small_float_format({dlb::kDLFloat, 32}) == nullptr);
  CHECK(dlb::small_float_format({dlb::kDLFloat, 64}) == nullptr);
  CHECK(dlb::small_float_format({dlb::kDLBfloat, 32}) == nullptr);
  CHECK(dlb::small_float_format({dlb::kDLInt, 8}) == nullptr);
  CHECK(dlb::small_float_format({dlb::kDLBool, 8}) == nullptr);
  CHECK(dlb::small_float_format({dlb::kDLComplex, 64}) == nullptr);
  CHECK(dlb::small_float_format({dlb::kDLFloat, 16, 2}) == nullptr);
  CHECK(dlb::small_float_format({dlb::kDLFloat4_e2m1fn, 4, 2}) == nullptr);
}

TEST_CASE("small_float: largest finite value of every format") {
  struct row {
    const float_format* f;
    std::uint32_t code;
    double value;
  };
  const row rows[] = {
      {&fmt::float16, 0x7BFF, 65504.0},
      {&fmt::bfloat16, 0x7F7F, 3.3895313892515355e38},
      {&fmt::float8_e3m4, 0x6F, 15.5},
      {&fmt::float8_e4m3, 0x77, 240.0},
      {&fmt::float8_e4m3b11fnuz, 0x7F, 30.0},
      {&fmt::float8_e4m3fn, 0x7E, 448.0},
      {&fmt::float8_e4m3fnuz, 0x7F, 240.0},
      {&fmt::float8_e5m2, 0x7B, 57344.0},
      {&fmt::float8_e5m2fnuz, 0x7F, 57344.0},
      {&fmt::float8_e8m0fnu, 0xFE, std::ldexp(1.0, 127)},
      {&fmt::float6_e2m3fn, 0x1F, 7.5},
      {&fmt::float6_e3m2fn, 0x1F, 28.0},
      {&fmt::float4_e2m1fn, 0x7, 6.0},
  };
  for (const auto& r : rows) {
    CAPTURE(r.value);
    CHECK(r.f->max_finite_code() == r.code);
    CHECK(dec(*r.f, r.code) == r.value);
    CHECK(enc(*r.f, r.value) == r.code);
    if (r.f->sign_bit()) {
      CHECK(dec(*r.f, r.code | r.f->sign_bit()) == -r.value);
      CHECK(enc(*r.f, -r.value) == (r.code | r.f->sign_bit()));
    }
  }
}

TEST_CASE("small_float: NaN code of every format") {
  struct row {
    const float_format* f;
    std::uint32_t nan;
  };
  const row rows[] = {
      {&fmt::float16, 0x7E00},       {&fmt::bfloat16, 0x7FC0},     {&fmt::float8_e3m4, 0x78},
      {&fmt::float8_e4m3, 0x7C},     {&fmt::float8_e4m3b11fnuz, 0x80}, {&fmt::float8_e4m3fn, 0x7F},
      {&fmt::float8_e4m3fnuz, 0x80}, {&fmt::float8_e5m2, 0x7E},    {&fmt::float8_e5m2fnuz, 0x80},
      {&fmt::float8_e8m0fnu, 0xFF},
      // No NaN at all: ml_dtypes writes NaN as the negative-zero pattern.
      {&fmt::float6_e2m3fn, 0x20},   {&fmt::float6_e3m2fn, 0x20},  {&fmt::float4_e2m1fn, 0x8},
  };
  for (const auto& r : rows) {
    CAPTURE(r.nan);
    CHECK(r.f->nan_code() == r.nan);
    CHECK(enc(*r.f, qnan) == r.nan);
    if (r.f->kind != k::finite) CHECK(std::isnan(dec(*r.f, r.nan)));
  }
  // The NaN patterns decode as NaN, with either sign where there is one.
  CHECK(std::isnan(dec(fmt::float16, 0x7C01)));
  CHECK(std::isnan(dec(fmt::float16, 0xFE00)));
  CHECK(std::isnan(dec(fmt::float8_e4m3fn, 0xFF)));
  CHECK(std::isnan(dec(fmt::float8_e5m2, 0xFD)));
  CHECK_FALSE(std::isnan(dec(fmt::float8_e4m3fn, 0xFE)));  // -448
  // A format without NaN decodes its "NaN" pattern as -0.
  CHECK(same_double(dec(fmt::float4_e2m1fn, 0x8), -0.0));
}

TEST_CASE("small_float: NaN keeps its sign where the format has one (as NumPy and ml_dtypes do)") {
  const double negative_nan = -qnan;
  REQUIRE(std::signbit(negative_nan));
  CHECK(enc(fmt::float16, negative_nan) == 0xFE00);
  CHECK(enc(fmt::bfloat16, negative_nan) == 0xFFC0);
  CHECK(enc(fmt::float8_e3m4, negative_nan) == 0xF8);
  CHECK(enc(fmt::float8_e4m3, negative_nan) == 0xFC);
  CHECK(enc(fmt::float8_e4m3fn, negative_nan) == 0xFF);
  CHECK(enc(fmt::float8_e5m2, negative_nan) == 0xFE);
  // Formats whose only NaN is unsigned.
  CHECK(enc(fmt::float8_e4m3fnuz, negative_nan) == 0x80);
  CHECK(enc(fmt::float8_e5m2fnuz, negative_nan) == 0x80);
  CHECK(enc(fmt::float8_e4m3b11fnuz, negative_nan) == 0x80);
  CHECK(enc(fmt::float8_e8m0fnu, negative_nan) == 0xFF);
  // Formats without NaN write the zero of the opposite sign, as ml_dtypes.
  CHECK(enc(fmt::float6_e2m3fn, negative_nan) == 0x00);
  CHECK(enc(fmt::float6_e3m2fn, negative_nan) == 0x00);
  CHECK(enc(fmt::float4_e2m1fn, negative_nan) == 0x0);
  CHECK(enc(fmt::float4_e2m1fn, qnan) == 0x8);
  // ...and decoding keeps the sign of the code.
  CHECK(std::signbit(dec(fmt::float16, 0xFE00)));
  CHECK_FALSE(std::signbit(dec(fmt::float16, 0x7E00)));
  CHECK(std::signbit(dec(fmt::float8_e4m3fn, 0xFF)));
  CHECK(std::signbit(dec(fmt::float8_e4m3fnuz, 0x80)));  // as ml_dtypes: the sign bit is set
  // So a float16 -> float16 trip through load/store keeps -NaN.
  std::uint16_t h = 0xFE00, out = 0;
  dlb::store({dlb::kDLFloat, 16}, &out, dlb::load({dlb::kDLFloat, 16}, &h));
  CHECK(out == 0xFE00);
}

TEST_CASE("small_float: overflow rules") {
  SUBCASE("ieee formats overflow to infinity") {
    CHECK(enc(fmt::float16, 65520.0) == 0x7C00);  // the tie above 65504 rounds up
    CHECK(enc(fmt::float16, 65519.99) == 0x7BFF);
    CHECK(enc(fmt::float16, -1e6) == 0xFC00);
    CHECK(enc(fmt::float16, inf) == 0x7C00);
    CHECK(enc(fmt::float16, -inf) == 0xFC00);
    CHECK(enc(fmt::bfloat16, 1e39) == 0x7F80);
    CHECK(enc(fmt::bfloat16, -inf) == 0xFF80);
    CHECK(enc(fmt::float8_e5m2, 61440.0) == 0x7C);  // tie above 57344
    CHECK(enc(fmt::float8_e5m2, 61439.0) == 0x7B);
    CHECK(enc(fmt::float8_e4m3, 1000.0) == 0x78);
    CHECK(enc(fmt::float8_e3m4, -16.0) == 0xF0);
    CHECK(dec(fmt::float8_e3m4, 0x70) == inf);
    CHECK(dec(fmt::float8_e4m3, 0xF8) == -inf);
  }
  SUBCASE("fn formats overflow to NaN, keeping the sign") {
    CHECK(enc(fmt::float8_e4m3fn, 464.0) == 0x7E);  // the tie rounds to even (448)
    CHECK(enc(fmt::float8_e4m3fn, 464.001) == 0x7F);
    CHECK(enc(fmt::float8_e4m3fn, 1e9) == 0x7F);
    CHECK(enc(fmt::float8_e4m3fn, -1e9) == 0xFF);
    CHECK(enc(fmt::float8_e4m3fn, inf) == 0x7F);
    CHECK(enc(fmt::float8_e4m3fn, -inf) == 0xFF);
  }
  SUBCASE("fnuz formats overflow to their NaN 0x80") {
    for (const auto* f : {&fmt::float8_e4m3fnuz, &fmt::float8_e5m2fnuz, &fmt::float8_e4m3b11fnuz}) {
      CHECK(enc(*f, 1e9) == 0x80);
      CHECK(enc(*f, -1e9) == 0x80);
      CHECK(enc(*f, inf) == 0x80);
      CHECK(enc(*f, -inf) == 0x80);
    }
    // 248 is halfway between 240 (0x7F, odd) and the overflow step: NaN.
    CHECK(enc(fmt::float8_e4m3fnuz, 248.0) == 0x80);
    CHECK(enc(fmt::float8_e4m3fnuz, 247.9) == 0x7F);
  }
  SUBCASE("finite formats saturate") {
    CHECK(enc(fmt::float6_e2m3fn, 100.0) == 0x1F);
    CHECK(enc(fmt::float6_e2m3fn, -100.0) == 0x3F);
    CHECK(enc(fmt::float6_e2m3fn, inf) == 0x1F);
    CHECK(enc(fmt::float6_e3m2fn, 1e30) == 0x1F);
    CHECK(enc(fmt::float6_e3m2fn, -inf) == 0x3F);
    CHECK(enc(fmt::float4_e2m1fn, 7.0) == 0x7);
    CHECK(enc(fmt::float4_e2m1fn, -1e300) == 0xF);
    CHECK(enc(fmt::float4_e2m1fn, inf) == 0x7);
  }
  SUBCASE("e8m0 overflows to NaN") {
    CHECK(enc(fmt::float8_e8m0fnu, std::ldexp(1.0, 128)) == 0xFF);
    CHECK(enc(fmt::float8_e8m0fnu, inf) == 0xFF);
  }
}

TEST_CASE("small_float: float16 bit patterns") {
  const auto& h = fmt::float16;
  CHECK(enc(h, 1.0) == 0x3C00);
  CHECK(enc(h, -2.0) == 0xC000);
  CHECK(enc(h, 0.5) == 0x3800);
  CHECK(enc(h, 0.1) == 0x2E66);
  CHECK(enc(h, 3.140625) == 0x4248);
  CHECK(enc(h, 65504.0) == 0x7BFF);
  CHECK(enc(h, 0.0) == 0x0000);
  CHECK(enc(h, -0.0) == 0x8000);
  CHECK(enc(h, std::ldexp(1.0, -14)) == 0x0400);  // smallest normal
  CHECK(enc(h, std::ldexp(1.0, -24)) == 0x0001);  // smallest subnormal
  CHECK(enc(h, std::ldexp(1023.0, -24)) == 0x03FF);
  CHECK(enc(h, -std::ldexp(1.0, -24)) == 0x8001);
  // Subnormal rounding, ties to even: 0.5 ulp -> 0, 1.5 -> 2, 2.5 -> 2.
  CHECK(enc(h, std::ldexp(0.5, -24)) == 0x0000);
  CHECK(enc(h, std::ldexp(0.500001, -24)) == 0x0001);
  CHECK(enc(h, std::ldexp(1.5, -24)) == 0x0002);
  CHECK(enc(h, std::ldexp(2.5, -24)) == 0x0002);
  CHECK(enc(h, -std::ldexp(0.25, -24)) == 0x8000);
  CHECK(enc(h, 1e-30) == 0x0000);
  // Normal ties to even: 1 + 2^-11 -> 1, 1 + 3 * 2^-11 -> 1 + 2^-9.
  CHECK(enc(h, 1.0 + std::ldexp(1.0, -11)) == 0x3C00);
  CHECK(enc(h, 1.0 + std::ldexp(3.0, -11)) == 0x3C02);
  CHECK(enc(h, 2049.0) == 0x6800);
  CHECK(enc(h, 2051.0) == 0x6802);
  // Carry from the mantissa into the exponent.
  CHECK(enc(h, 2.0 - std::ldexp(1.0, -12)) == 0x4000);
  CHECK(enc(h, std::ldexp(1.0, -14) - std::ldexp(1.0, -26)) == 0x0400);
  CHECK(dec(h, 0x3C00) == 1.0);
  CHECK(dec(h, 0xC000) == -2.0);
  CHECK(dec(h, 0x0001) == std::ldexp(1.0, -24));
  CHECK(dec(h, 0x7C00) == inf);
  CHECK(dec(h, 0xFC00) == -inf);
  CHECK(same_double(dec(h, 0x8000), -0.0));
}

TEST_CASE("small_float: bfloat16 bit patterns") {
  const auto& b = fmt::bfloat16;
  CHECK(enc(b, 1.0) == 0x3F80);
  CHECK(enc(b, -2.0) == 0xC000);
  CHECK(enc(b, 3.140625) == 0x4049);
  CHECK(enc(b, 3.3895313892515355e38) == 0x7F7F);
  CHECK(enc(b, std::ldexp(1.0, -126)) == 0x0080);
  CHECK(enc(b, std::ldexp(1.0, -133)) == 0x0001);  // smallest subnormal
  CHECK(enc(b, std::ldexp(1.0, -134)) == 0x0000);  // tie to even
  CHECK(enc(b, std::ldexp(3.0, -134)) == 0x0002);
  CHECK(enc(b, 1.0 + std::ldexp(1.0, -8)) == 0x3F80);
  CHECK(enc(b, 1.0 + std::ldexp(3.0, -8)) == 0x3F82);
  CHECK(enc(b, inf) == 0x7F80);
  CHECK(enc(b, qnan) == 0x7FC0);
  CHECK(enc(b, -0.0) == 0x8000);
  CHECK(dec(b, 0x3F80) == 1.0);
  CHECK(dec(b, 0x0001) == std::ldexp(1.0, -133));
  CHECK(std::isnan(dec(b, 0x7F81)));
}

TEST_CASE("small_float: float8, float6 and float4 bit patterns") {
  CHECK(enc(fmt::float8_e4m3fn, 1.0) == 0x38);
  CHECK(enc(fmt::float8_e4m3fn, -2.0) == 0xC0);
  CHECK(enc(fmt::float8_e4m3fn, std::ldexp(1.0, -9)) == 0x01);  // smallest subnormal
  CHECK(enc(fmt::float8_e5m2, 1.0) == 0x3C);
  CHECK(enc(fmt::float8_e5m2, std::ldexp(1.0, -16)) == 0x01);
  CHECK(enc(fmt::float8_e4m3fnuz, 1.0) == 0x40);
  CHECK(enc(fmt::float8_e5m2fnuz, 1.0) == 0x40);
  CHECK(enc(fmt::float8_e4m3b11fnuz, 1.0) == 0x58);
  CHECK(enc(fmt::float8_e3m4, 1.0) == 0x30);
  CHECK(enc(fmt::float8_e3m4, 3.0) == 0x48);
  CHECK(enc(fmt::float8_e4m3, 1.0) == 0x38);
  CHECK(enc(fmt::float6_e2m3fn, 1.0) == 0x08);
  CHECK(enc(fmt::float6_e2m3fn, 0.125) == 0x01);
  CHECK(enc(fmt::float6_e3m2fn, 1.0) == 0x0C);
  CHECK(enc(fmt::float6_e3m2fn, 0.0625) == 0x01);
  CHECK(enc(fmt::float4_e2m1fn, 0.5) == 0x1);
  CHECK(enc(fmt::float4_e2m1fn, 1.0) == 0x2);
  CHECK(enc(fmt::float4_e2m1fn, -3.0) == 0xD);
  // float4 ties to even: 0.25 -> 0, 0.75 -> 1.0, 2.5 -> 2, 5 -> 4.
  CHECK(enc(fmt::float4_e2m1fn, 0.25) == 0x0);
  CHECK(enc(fmt::float4_e2m1fn, 0.75) == 0x2);
  CHECK(enc(fmt::float4_e2m1fn, 2.5) == 0x4);
  CHECK(enc(fmt::float4_e2m1fn, 5.0) == 0x6);
  CHECK(enc(fmt::float4_e2m1fn, -0.0) == 0x8);
  const double float4_values[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (std::uint32_t c = 0; c < 8; ++c) {
    CHECK(dec(fmt::float4_e2m1fn, c) == float4_values[c]);
    CHECK(dec(fmt::float4_e2m1fn, c | 8) == -float4_values[c]);
  }
}

TEST_CASE("small_float: fnuz formats have no negative zero") {
  for (const auto* f : {&fmt::float8_e4m3fnuz, &fmt::float8_e5m2fnuz, &fmt::float8_e4m3b11fnuz}) {
    CHECK(enc(*f, -0.0) == 0x00);
    CHECK(enc(*f, -1e-30) == 0x00);
    CHECK(enc(*f, 0.0) == 0x00);
    CHECK(std::isnan(dec(*f, 0x80)));
    CHECK(same_double(dec(*f, 0x00), 0.0));
  }
}

TEST_CASE("small_float: float8_e8m0fnu") {
  const auto& e = fmt::float8_e8m0fnu;
  CHECK(enc(e, 1.0) == 127);
  CHECK(enc(e, 2.0) == 128);
  CHECK(enc(e, 0.25) == 125);
  CHECK(enc(e, std::ldexp(1.0, -127)) == 0);
  CHECK(dec(e, 0) == std::ldexp(1.0, -127));
  CHECK(dec(e, 127) == 1.0);
  CHECK(std::isnan(dec(e, 0xFF)));
  // No zero and no sign: zero and negatives are NaN.
  CHECK(enc(e, 0.0) == 0xFF);
  CHECK(enc(e, -0.0) == 0xFF);
  CHECK(enc(e, -1.0) == 0xFF);
  CHECK(enc(e, -inf) == 0xFF);
  // Rounds halfway (1.5 * 2^k) up, as ml_dtypes does; below stays down.
  CHECK(enc(e, 1.5) == 128);
  CHECK(enc(e, 3.0) == 129);
  CHECK(enc(e, 1.4999) == 127);
  CHECK(enc(e, 5.0) == 129);
  // Below 2^-127 everything lands on the smallest value.
  CHECK(enc(e, std::ldexp(1.0, -130)) == 0);
  CHECK(enc(e, 1e-300) == 0);
  CHECK(enc(e, std::ldexp(1.0, 127)) == 254);
  CHECK(enc(e, std::ldexp(1.4, 127)) == 254);
}

TEST_CASE("small_float: decode(encode(x)) == x for every code of every format") {
  for (const auto& [name, f, type] : small_formats()) {
    const std::string label = name;
    CAPTURE(label);
    int nan_codes = 0;
    for (std::uint32_t code = 0; code < (1u << f->width()); ++code) {
      CAPTURE(code);
      const double x = dec(*f, code);
      if (std::isnan(x)) {
        ++nan_codes;
        // NaN decodes with the sign of its code and encodes back to the
        // canonical NaN of that sign (fnuz and e8m0 have just one NaN), but
        // float16's to itself, payload and all (NumPy).
        CHECK(std::signbit(x) == bool(code & f->sign_bit()));
        const bool signed_nan = f->kind == k::ieee || f->kind == k::fn;
        if (f->nan_payloads == float_format::payloads::kept) CHECK(enc(*f, x) == code);
        else CHECK(enc(*f, x) == (f->nan_code() | (signed_nan ? code & f->sign_bit() : 0u)));
        continue;
      }
      CHECK(enc(*f, x) == code);
      CHECK(same_double(dec(*f, enc(*f, x)), x));
    }
    switch (f->kind) {
      case k::ieee: CHECK(nan_codes == 2 * ((1 << f->mantissa_bits) - 1)); break;
      case k::fn: CHECK(nan_codes == 2); break;
      case k::fnuz:
      case k::exponent: CHECK(nan_codes == 1); break;
      case k::finite: CHECK(nan_codes == 0); break;
    }
  }
}

TEST_CASE("small_float: encode agrees with an exhaustive nearest-value search") {
  std::mt19937_64 rng(42);
  for (const auto& [name, f, type] : small_formats()) {
    if (f->kind == k::exponent) continue;
    if (f->width() > 8) continue;  // the search is linear in the number of codes
    const std::string label = name;
    CAPTURE(label);
    std::vector<double> values;
    // Every representable magnitude, the midpoints between neighbours and
    // their immediate neighbours, and random values across the range.
    std::vector<double> grid;
    for (std::uint32_t m = 0; m <= f->max_finite_code() + 1; ++m) grid.push_back(plain_value(*f, m));
    for (std::size_t i = 0; i + 1 < grid.size(); ++i) {
      const double mid = (grid[i] + grid[i + 1]) / 2;
      values.insert(values.end(), {grid[i], mid, std::nextafter(mid, 0.0), std::nextafter(mid, inf)});
    }
    const double top = grid.back() * 2;
    std::uniform_real_distribution<double> uniform(0, top);
    std::uniform_real_distribution<double> exponent(-30, std::log2(top));
    for (int i = 0; i < 300; ++i) {
      values.push_back(uniform(rng));
      values.push_back(std::exp2(exponent(rng)));
    }
    for (double v : values) {
      for (double s : {v, -v}) {
        CAPTURE(s);
        CHECK(enc(*f, s) == reference_encode(*f, s));
      }
    }
  }
}

TEST_CASE("small_float: float16 and bfloat16 round-trip through float exactly") {
  // Every finite float16 is a float: float -> float16 -> float is exact, and
  // agrees with the hardware/compiler conversion where it exists.
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    const double x = dec(fmt::float16, code);
    if (std::isnan(x)) continue;
    REQUIRE(enc(fmt::float16, double(float(x))) == code);
  }
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    const double x = dec(fmt::bfloat16, code);
    if (std::isnan(x)) continue;
    // bfloat16 is the top half of a float.
    const std::uint32_t bits = code << 16;
    float as_float;
    std::memcpy(&as_float, &bits, 4);
    REQUIRE(same_double(double(as_float), x));
    REQUIRE(enc(fmt::bfloat16, x) == code);
  }
}

TEST_CASE("small_float: bfloat16 rounding matches float-bit truncation with ties to even") {
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    // Round the low 16 bits to nearest even, the classic way.
    const std::uint32_t rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16;
    CAPTURE(bits);
    REQUIRE(enc(fmt::bfloat16, double(f)) == rounded);
  }
}

// ---------------------------------------------------------------------------
// load / store
