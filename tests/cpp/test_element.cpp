// dlbridge/element.hpp: element load/store with their conversion rules.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dlbridge/element.hpp"

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double qnan = std::numeric_limits<double>::quiet_NaN();
}  // namespace

// ---------------------------------------------------------------------------
// load / store

namespace {
template <class T>
T stored(dlb::dtype t, const dlb::scalar& s) {
  T out{};
  dlb::store(t, &out, s);
  return out;
}
}  // namespace

TEST_CASE("element: load and store every supported dtype") {
  for (const auto& info : dlb::dtype_table) {
    CAPTURE(info.name);
    alignas(16) unsigned char buf[16] = {};
    dlb::store(info.type, buf, dlb::scalar::from_int(1));
    const auto one = dlb::load(info.type, buf);
    CHECK(one.re == 1.0);
    CHECK(one.im == 0.0);
    if (info.type.code == dlb::kDLInt || info.type.code == dlb::kDLFloat || info.type.code == dlb::kDLBfloat ||
        dlb::is_complex(info.type) || (dlb::small_float_format(info.type) &&
                                              dlb::small_float_format(info.type)->sign_bit())) {
      dlb::store(info.type, buf, dlb::scalar::from_real(-2.0));
      CHECK(dlb::load(info.type, buf).re == -2.0);
    }
  }
}

TEST_CASE("element: loaded scalars have the right kind") {
  std::int16_t i = -5;
  CHECK(dlb::load({dlb::kDLInt, 16}, &i).k == dlb::scalar::kind::signed_int);
  CHECK(dlb::load({dlb::kDLInt, 16}, &i).i == -5);
  std::uint64_t u = std::numeric_limits<std::uint64_t>::max();
  const auto lu = dlb::load({dlb::kDLUInt, 64}, &u);
  CHECK(lu.k == dlb::scalar::kind::unsigned_int);
  CHECK(lu.u == u);
  std::uint8_t b = 7;  // any non-zero byte is true
  const auto lb = dlb::load({dlb::kDLBool, 8}, &b);
  CHECK(lb.k == dlb::scalar::kind::boolean);
  CHECK(lb.u == 1);
  std::complex<float> c(1.5f, -2.5f);
  const auto lc = dlb::load({dlb::kDLComplex, 64}, &c);
  CHECK(lc.k == dlb::scalar::kind::complex);
  CHECK(lc.re == 1.5);
  CHECK(lc.im == -2.5);
  std::uint16_t h = 0x3E00;  // float16 1.5
  const auto lh = dlb::load({dlb::kDLFloat, 16}, &h);
  CHECK(lh.k == dlb::scalar::kind::real);
  CHECK(lh.re == 1.5);
}

TEST_CASE("element: bcomplex32 is two bfloat16 codes, the real part first") {
  const dlb::dtype bc32{dlb::kDLBcomplex, 32}, c64{dlb::kDLComplex, 64};
  CHECK(dlb::small_float_format(bc32) == nullptr);  // a pair of formats, not one
  // (16-byte buffers, so that the compiler sees room for any dtype's load/store.)
  alignas(16) std::uint16_t parts[8] = {0x3FC0, 0xC020};  // 1.5, -2.5
  const auto s = dlb::load(bc32, parts);
  CHECK(s.k == dlb::scalar::kind::complex);
  CHECK(s.re == 1.5);
  CHECK(s.im == -2.5);
  dlb::store(bc32, parts, dlb::scalar::from_complex(-0.0, 1.0 + std::ldexp(3.0, -8)));  // rounds to even
  CHECK(parts[0] == 0x8000);
  CHECK(parts[1] == 0x3F82);
  dlb::store(bc32, parts, dlb::scalar::from_real(3.0));
  CHECK(parts[0] == 0x4040);
  CHECK(parts[1] == 0x0000);
  dlb::store(bc32, parts, dlb::scalar::from_int(-1));
  CHECK(parts[0] == 0xBF80);
  CHECK(parts[1] == 0x0000);
  dlb::store(bc32, parts, dlb::scalar::from_complex(1e39, -1e39));  // each part overflows alone
  CHECK(parts[0] == 0x7F80);
  CHECK(parts[1] == 0xFF80);
  // To complex64 each part goes as bfloat16 goes to float32, signalling NaNs
  // and payloads unchanged (ml_dtypes); from any NaN each part is written as
  // bfloat16's quiet NaN of its sign.
  const auto written = [](std::uint16_t code) {
    const bool nan = (code & 0x7F80) == 0x7F80 && (code & 0x7F) != 0;
    return nan ? std::uint16_t((code & 0x8000) | 0x7FC0) : code;
  };
  const std::uint16_t nans[][2] = {{0x7F81, 0x3F80}, {0x3F80, 0xFF81}, {0xFFA0, 0x7FC1}, {0x7F81, 0xFF82}};
  for (const auto& pair : nans) {
    CAPTURE(pair[0]);
    CAPTURE(pair[1]);
    parts[0] = pair[0];
    parts[1] = pair[1];
    alignas(16) std::uint32_t wide[4];
    dlb::store(c64, wide, dlb::load(bc32, parts));
    CHECK(wide[0] == std::uint32_t(pair[0]) << 16);
    CHECK(wide[1] == std::uint32_t(pair[1]) << 16);
    dlb::store(bc32, parts, dlb::load(c64, wide));
    CHECK(parts[0] == written(pair[0]));
    CHECK(parts[1] == written(pair[1]));
  }
}

TEST_CASE("element: integers wrap modulo 2^bits") {
  CHECK(stored<std::int8_t>({dlb::kDLInt, 8}, dlb::scalar::from_int(300)) == 44);
  CHECK(stored<std::int8_t>({dlb::kDLInt, 8}, dlb::scalar::from_int(-129)) == 127);
  CHECK(stored<std::uint8_t>({dlb::kDLUInt, 8}, dlb::scalar::from_int(-1)) == 255);
  CHECK(stored<std::uint16_t>({dlb::kDLUInt, 16}, dlb::scalar::from_int(70000)) == 4464);
  CHECK(stored<std::int32_t>({dlb::kDLInt, 32}, dlb::scalar::from_uint(0xFFFFFFFFFFFFFFFFull)) == -1);
  CHECK(stored<std::int64_t>({dlb::kDLInt, 64}, dlb::scalar::from_uint(0x8000000000000000ull)) ==
        std::numeric_limits<std::int64_t>::min());
  CHECK(stored<std::uint64_t>({dlb::kDLUInt, 64}, dlb::scalar::from_int(-2)) == 0xFFFFFFFFFFFFFFFEull);
  CHECK(stored<std::int16_t>({dlb::kDLInt, 16}, dlb::scalar::from_bool(true)) == 1);
}

TEST_CASE("element: float to integer truncates and saturates; NaN gives 0") {
  CHECK(stored<std::int32_t>({dlb::kDLInt, 32}, dlb::scalar::from_real(3.7)) == 3);
  CHECK(stored<std::int32_t>({dlb::kDLInt, 32}, dlb::scalar::from_real(-3.7)) == -3);
  CHECK(stored<std::int32_t>({dlb::kDLInt, 32}, dlb::scalar::from_real(1e10)) == 2147483647);
  CHECK(stored<std::int32_t>({dlb::kDLInt, 32}, dlb::scalar::from_real(-1e10)) == -2147483647 - 1);
  CHECK(stored<std::int32_t>({dlb::kDLInt, 32}, dlb::scalar::from_real(qnan)) == 0);
  CHECK(stored<std::int32_t>({dlb::kDLInt, 32}, dlb::scalar::from_real(inf)) == 2147483647);
  CHECK(stored<std::int32_t>({dlb::kDLInt, 32}, dlb::scalar::from_real(-inf)) == -2147483647 - 1);
  CHECK(stored<std::int8_t>({dlb::kDLInt, 8}, dlb::scalar::from_real(200.0)) == 127);
  CHECK(stored<std::int8_t>({dlb::kDLInt, 8}, dlb::scalar::from_real(-200.0)) == -128);
  CHECK(stored<std::uint8_t>({dlb::kDLUInt, 8}, dlb::scalar::from_real(-5.0)) == 0);
  CHECK(stored<std::uint8_t>({dlb::kDLUInt, 8}, dlb::scalar::from_real(-0.5)) == 0);
  CHECK(stored<std::uint8_t>({dlb::kDLUInt, 8}, dlb::scalar::from_real(255.9)) == 255);
  CHECK(stored<std::uint8_t>({dlb::kDLUInt, 8}, dlb::scalar::from_real(qnan)) == 0);
  CHECK(stored<std::int64_t>({dlb::kDLInt, 64}, dlb::scalar::from_real(9.3e18)) ==
        std::numeric_limits<std::int64_t>::max());
  CHECK(stored<std::int64_t>({dlb::kDLInt, 64}, dlb::scalar::from_real(-9.3e18)) ==
        std::numeric_limits<std::int64_t>::min());
  CHECK(stored<std::int64_t>({dlb::kDLInt, 64}, dlb::scalar::from_real(std::ldexp(1.0, 62))) ==
        std::int64_t(1) << 62);
  CHECK(stored<std::uint64_t>({dlb::kDLUInt, 64}, dlb::scalar::from_real(1e30)) ==
        std::numeric_limits<std::uint64_t>::max());
  CHECK(stored<std::uint64_t>({dlb::kDLUInt, 64}, dlb::scalar::from_real(std::ldexp(1.0, 63))) ==
        std::uint64_t(1) << 63);
  // Complex to integer takes the real part.
  CHECK(stored<std::int16_t>({dlb::kDLInt, 16}, dlb::scalar::from_complex(2.5, 9.0)) == 2);
}

TEST_CASE("element: conversions to bool, float and complex") {
  CHECK(stored<std::uint8_t>({dlb::kDLBool, 8}, dlb::scalar::from_real(0.0)) == 0);
  CHECK(stored<std::uint8_t>({dlb::kDLBool, 8}, dlb::scalar::from_real(-0.0)) == 0);
  CHECK(stored<std::uint8_t>({dlb::kDLBool, 8}, dlb::scalar::from_real(qnan)) == 1);
  CHECK(stored<std::uint8_t>({dlb::kDLBool, 8}, dlb::scalar::from_real(0.25)) == 1);
  CHECK(stored<std::uint8_t>({dlb::kDLBool, 8}, dlb::scalar::from_int(-2)) == 1);
  CHECK(stored<std::uint8_t>({dlb::kDLBool, 8}, dlb::scalar::from_int(256)) == 1);  // not truncated to 0
  CHECK(stored<std::uint8_t>({dlb::kDLBool, 8}, dlb::scalar::from_complex(0, 1)) == 1);
  CHECK(stored<std::uint8_t>({dlb::kDLBool, 8}, dlb::scalar::from_complex(0, 0)) == 0);
  // int64 to float32 rounds once, not via double: 2^53 + 2^29 + 1 is just
  // above the midpoint between two floats, but double rounding would land on it.
  const std::int64_t tricky = (std::int64_t(1) << 53) + (std::int64_t(1) << 29) + 1;
  CHECK(stored<float>({dlb::kDLFloat, 32}, dlb::scalar::from_int(tricky)) ==
        float((std::int64_t(1) << 53) + (std::int64_t(1) << 30)));
  CHECK(stored<double>({dlb::kDLFloat, 64}, dlb::scalar::from_uint(0xFFFFFFFFFFFFFFFFull)) == std::ldexp(1.0, 64));
  CHECK(stored<float>({dlb::kDLFloat, 32}, dlb::scalar::from_real(0.1)) == 0.1f);
  CHECK(stored<float>({dlb::kDLFloat, 32}, dlb::scalar::from_real(1e300)) == std::numeric_limits<float>::infinity());
  CHECK(stored<double>({dlb::kDLFloat, 64}, dlb::scalar::from_bool(true)) == 1.0);
  CHECK(stored<double>({dlb::kDLFloat, 64}, dlb::scalar::from_complex(4.0, 5.0)) == 4.0);
  CHECK(stored<std::complex<float>>({dlb::kDLComplex, 64}, dlb::scalar::from_real(1.5)) ==
        std::complex<float>(1.5f, 0.0f));
  CHECK(stored<std::complex<double>>({dlb::kDLComplex, 128}, dlb::scalar::from_complex(1.0, -2.0)) ==
        std::complex<double>(1.0, -2.0));
  CHECK(stored<std::complex<double>>({dlb::kDLComplex, 128}, dlb::scalar::from_int(-7)) ==
        std::complex<double>(-7.0, 0.0));
  CHECK(stored<std::uint16_t>({dlb::kDLFloat, 16}, dlb::scalar::from_int(2049)) == 0x6800);
  CHECK(stored<std::uint16_t>({dlb::kDLBfloat, 16}, dlb::scalar::from_real(1.0)) == 0x3F80);
  CHECK(stored<std::uint8_t>({dlb::kDLFloat8_e4m3fn, 8}, dlb::scalar::from_real(448.0)) == 0x7E);
}

TEST_CASE("element: float <-> double keep NaN sign and payload as the host CPU does") {
  // load() and store() convert through detail::widen / narrow, which are the
  // CPU's conversions on x86-64 and AArch64 and spelled out elsewhere (GPU
  // conversions would not keep NaN). Both are checked here. volatile: the
  // CPU's conversions themselves, not the compiler folding them.
  const auto bits32 = [](float f) { std::uint32_t b; std::memcpy(&b, &f, 4); return b; };
  const auto bits64 = [](double d) { std::uint64_t b; std::memcpy(&b, &d, 8); return b; };
  std::mt19937 rng(3);
  std::size_t mismatches = 0;
  for (int i = 0; i < 100000; ++i) {
    std::uint32_t b = rng();
    if (i % 2) b |= 0x7f800000u;  // half of them NaN or infinity
    float f;
    std::memcpy(&f, &b, 4);
    volatile float vf = f;
    const double wide = double(vf);
    volatile double vd = wide;
    const float round_trip = float(vd);
    mismatches += bits64(dlb::detail::widen(f)) != bits64(wide);
    mismatches += bits64(dlb::detail::widen_spelled_out(f)) != bits64(wide);
    mismatches += bits32(dlb::detail::narrow(wide)) != bits32(round_trip);
    mismatches += bits32(dlb::detail::narrow_spelled_out(wide)) != bits32(round_trip);
    // The compiler sees both conversions here and may fold them away; a
    // signalling NaN must still come out quiet.
    mismatches += bits32(dlb::detail::narrow(dlb::detail::widen(f))) != bits32(round_trip);
  }
  std::mt19937_64 rng64(5);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t b = rng64() | 0x7ff0000000000000ULL;  // NaN or infinity
    double d;
    std::memcpy(&d, &b, 8);
    volatile double vd = d;
    mismatches += bits32(dlb::detail::narrow(d)) != bits32(float(vd));
    mismatches += bits32(dlb::detail::narrow_spelled_out(d)) != bits32(float(vd));
  }
  CHECK(mismatches == 0);
}

TEST_CASE("element: packed sub-byte elements, little bit order") {
  const dlb::dtype f4{dlb::kDLFloat4_e2m1fn, 4}, f6{dlb::kDLFloat6_e3m2fn, 6};
  SUBCASE("float4: two to a byte, element 0 in the low nibble") {
    // (16 bytes, so that the compiler sees room for any dtype's load/store.)
    std::uint8_t bytes[16] = {0, 0, 0xEE};
    dlb::store(f4, bytes, dlb::scalar::from_real(1.0), 0);   // 0x2
    dlb::store(f4, bytes, dlb::scalar::from_real(-3.0), 1);  // 0xD
    dlb::store(f4, bytes, dlb::scalar::from_real(6.0), 2);   // 0x7
    CHECK(bytes[0] == 0xD2);
    CHECK(bytes[1] == 0x07);
    CHECK(bytes[2] == 0xEE);  // untouched
    CHECK(dlb::load(f4, bytes, 0).re == 1.0);
    CHECK(dlb::load(f4, bytes, 1).re == -3.0);
    CHECK(dlb::load(f4, bytes, 2).re == 6.0);
    CHECK(dlb::load(f4, bytes, 3).re == 0.0);
    dlb::store(f4, bytes, dlb::scalar::from_real(0.5), 1);  // rewriting keeps the neighbour
    CHECK(bytes[0] == 0x12);
  }
  SUBCASE("float6: four in three bytes, straddling byte boundaries") {
    std::uint8_t bytes[16] = {0, 0, 0, 0x5A};
    const double values[4] = {1.0, -28.0, 0.0625, 3.0};  // codes 0x0C, 0x3F, 0x01, 0x12
    for (int i = 0; i < 4; ++i) dlb::store(f6, bytes, dlb::scalar::from_real(values[i]), i);
    // bits: 0x0C | 0x3F << 6 | 0x01 << 12 | 0x12 << 18
    const std::uint32_t packed = 0x0C | 0x3F << 6 | 0x01 << 12 | 0x12 << 18;
    CHECK(bytes[0] == (packed & 0xFF));
    CHECK(bytes[1] == ((packed >> 8) & 0xFF));
    CHECK(bytes[2] == ((packed >> 16) & 0xFF));
    CHECK(bytes[3] == 0x5A);
    for (int i = 0; i < 4; ++i) CHECK(dlb::load(f6, bytes, i).re == values[i]);
    // Overwrite the element that straddles bytes 0 and 1.
    dlb::store(f6, bytes, dlb::scalar::from_real(0.0), 1);
    CHECK(dlb::load(f6, bytes, 0).re == 1.0);
    CHECK(dlb::load(f6, bytes, 1).re == 0.0);
    CHECK(dlb::load(f6, bytes, 2).re == 0.0625);
    CHECK(dlb::load(f6, bytes, 3).re == 3.0);
  }
}

TEST_CASE("element: fits() says whether an integer survives without wrapping") {
  using dlb::scalar;
  const dlb::dtype i8{dlb::kDLInt, 8}, u8{dlb::kDLUInt, 8}, i32{dlb::kDLInt, 32}, i64{dlb::kDLInt, 64},
      u64{dlb::kDLUInt, 64};
  CHECK(dlb::fits(i8, scalar::from_int(127)));
  CHECK_FALSE(dlb::fits(i8, scalar::from_int(128)));
  CHECK(dlb::fits(i8, scalar::from_int(-128)));
  CHECK_FALSE(dlb::fits(i8, scalar::from_int(-129)));
  CHECK(dlb::fits(i8, scalar::from_uint(127)));
  CHECK_FALSE(dlb::fits(i8, scalar::from_uint(128)));
  CHECK(dlb::fits(u8, scalar::from_int(255)));
  CHECK_FALSE(dlb::fits(u8, scalar::from_int(256)));
  CHECK_FALSE(dlb::fits(u8, scalar::from_int(-1)));
  CHECK(dlb::fits(u8, scalar::from_int(0)));
  CHECK_FALSE(dlb::fits(i32, scalar::from_uint(std::uint64_t(1) << 31)));
  CHECK(dlb::fits(i32, scalar::from_int(-(std::int64_t(1) << 31))));
  CHECK_FALSE(dlb::fits(i32, scalar::from_int(-(std::int64_t(1) << 31) - 1)));
  CHECK(dlb::fits(i64, scalar::from_int(std::numeric_limits<std::int64_t>::min())));
  CHECK(dlb::fits(i64, scalar::from_uint(0x7FFFFFFFFFFFFFFFull)));
  CHECK_FALSE(dlb::fits(i64, scalar::from_uint(0x8000000000000000ull)));
  CHECK(dlb::fits(u64, scalar::from_uint(0xFFFFFFFFFFFFFFFFull)));
  CHECK_FALSE(dlb::fits(u64, scalar::from_int(-1)));
  // Floats, booleans and non-integer targets always fit.
  CHECK(dlb::fits(i8, scalar::from_real(1e10)));
  CHECK(dlb::fits(i8, scalar::from_bool(true)));
  CHECK(dlb::fits({dlb::kDLFloat, 16}, scalar::from_int(1 << 30)));
  CHECK(dlb::fits({dlb::kDLBool, 8}, scalar::from_int(5)));
}
