// dlbridge/element.hpp and convert.hpp: integers convert to every float
// format with one rounding, from their exact value; NaN payloads move between
// float formats as NumPy (float16) and ml_dtypes (bfloat16, float8) move
// them. The expected values come from integer arithmetic and from the
// libraries' rules written out here, not from the code under test.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dlbridge/convert.hpp"
#include "dlbridge/element.hpp"
#include "small_formats.hpp"

namespace {
namespace fmt = dlb::formats;
using dlb_test::small_formats;
using dlb::float_format;
using k = float_format::specials;

const dlb::dtype i64{dlb::kDLInt, 64}, u64{dlb::kDLUInt, 64}, f16{dlb::kDLFloat, 16}, bf16{dlb::kDLBfloat, 16},
    f32{dlb::kDLFloat, 32}, f64{dlb::kDLFloat, 64};

// m rounded to `bits` significant bits, to nearest, ties to even, in integer
// arithmetic. The result has at most 53 bits and is at most 2^64: exact as a
// double.
double round_integer(std::uint64_t m, int bits) {
  const int length = std::bit_width(m);
  if (length <= bits) return double(m);
  const int shift = length - bits;
  std::uint64_t q = m >> shift;
  const std::uint64_t rest = m & ((std::uint64_t(1) << shift) - 1), half = std::uint64_t(1) << (shift - 1);
  if (rest > half || (rest == half && (q & 1))) ++q;
  return std::ldexp(double(q), shift);
}

// The code a nonzero integer of magnitude m gets in format f: the rounded
// value where the format has it, else the format's overflow. e8m0 (no sign,
// no zero) rounds 1.5 * 2^k and up to 2^(k+1), as ml_dtypes does.
std::uint32_t integer_code(const float_format& f, bool negative, std::uint64_t m) {
  if (f.kind == k::exponent) {
    if (negative || m == 0) return f.nan_code();
    const int e = std::bit_width(m) - 1;
    const bool up = e > 0 && m - (std::uint64_t(1) << e) >= std::uint64_t(1) << (e - 1);  // m >= 1.5 * 2^e
    const std::uint32_t code = std::uint32_t(e + int(up) + f.bias);
    return code > f.max_finite_code() ? f.nan_code() : code;
  }
  const std::uint32_t sign = negative ? f.sign_bit() : 0;
  if (m == 0) return 0;
  const double r = round_integer(m, f.mantissa_bits + 1);
  if (r > dlb::decode(f, f.max_finite_code())) {
    switch (f.kind) {
      case k::ieee: return sign | (f.max_finite_code() + 1);
      case k::fn: return sign | f.nan_code();
      case k::fnuz: return f.nan_code();
      default: return sign | f.max_finite_code();
    }
  }
  return dlb::encode(f, negative ? -r : r);  // exact: r is a value of the format
}

// Integers at the edges of one rounding: for every precision of 1 to 24 bits
// and 53, from 2^50 to 2^63 (and on to 2^64 unsigned), values on the grid,
// halfway between (even and odd neighbours: ties both ways), and one above
// and below those (the sticky bits a double rounded to nearest drops); the
// extremes, and random values of every length. Magnitudes, signed by the
// caller.
std::vector<std::uint64_t> edge_integers() {
  constexpr std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> v = {0, 1, 2, 3, 7, 255, 256, 65504, 65519, 65520, 65535, 65536,
                                  (std::uint64_t(1) << 60) + (std::uint64_t(1) << 52) + 1,  // issue 23's example
                                  std::uint64_t(1) << 63, (std::uint64_t(1) << 63) - 1, (std::uint64_t(1) << 63) + 1,
                                  top, top - 1};
  std::vector<int> precisions = {53};
  for (int p = 1; p <= 24; ++p) precisions.push_back(p);
  for (int e = 50; e <= 63; ++e) {
    const std::uint64_t base = std::uint64_t(1) << e;
    v.insert(v.end(), {base - 1, base, base + 1});
    for (const int p : precisions) {
      const int shift = e - p + 1;  // of the last bit kept
      if (shift < 1) continue;
      const std::uint64_t ulp = std::uint64_t(1) << shift;
      const std::uint64_t last = (std::uint64_t(1) << (p - 1)) - 1;  // the largest mantissa
      for (const std::uint64_t m : std::vector<std::uint64_t>{0, 1, 2, 3, last - 1, last}) {
        if (m > last) continue;
        const std::uint64_t grid = base + m * ulp, tie = grid + ulp / 2;
        v.insert(v.end(), {grid, grid + 1, grid - 1, tie, tie - 1, tie + 1});
      }
    }
  }
  std::mt19937_64 rng(23);
  for (int i = 0; i < 4000; ++i) v.push_back(rng() >> (rng() % 64));
  return v;
}

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

// A 16-byte buffer holding one element: room for any dtype, as far as the
// compiler sees load() and store() (it warns about the other branches).
struct element {
  alignas(16) unsigned char bytes[16] = {};
  template <class T>
  explicit element(T v) {
    std::memcpy(bytes, &v, sizeof v);
  }
};

std::uint32_t code_of(dlb::dtype t, const unsigned char* p) {
  if (t.bits == 16) return dlb::detail::load_as<std::uint16_t>(p);
  return dlb::detail::load_bits(p, 0, t.bits);
}

// What store() writes: a small float's code, a float32's bits (the low 32
// bits of a float64's).
std::uint32_t stored_code(dlb::dtype t, const dlb::scalar& s) {
  alignas(16) unsigned char out[16] = {};
  dlb::store(t, out, s);
  return t.bits == 32 ? dlb::detail::load_as<std::uint32_t>(out) : code_of(t, out);
}
}  // namespace

// ---------------------------------------------------------------------------
// Integers: one rounding

TEST_CASE("element: rounding_double rounds as the integer does, to every precision up to 41 bits") {
  std::vector<std::uint64_t> values = edge_integers();
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) values.push_back(rng() | (std::uint64_t(1) << 53 << (rng() % 11)));
  std::size_t mismatches = 0;
  for (const std::uint64_t m : values) {
    const double d = dlb::detail::rounding_double(m);
    REQUIRE(d == std::floor(d));
    REQUIRE(d <= 18446744073709549568.0);  // below 2^64: back to an integer exactly
    const auto back = std::uint64_t(d);
    for (int p = 1; p <= 41; ++p) mismatches += round_integer(back, p) != round_integer(m, p);
    // Signed: the same as the magnitude, with the sign.
    if (m <= std::uint64_t(1) << 63) {
      const std::int64_t negative = std::int64_t(0 - m);
      CHECK(dlb::detail::rounding_double(negative) == -d);
      if (m < std::uint64_t(1) << 63) CHECK(dlb::detail::rounding_double(std::int64_t(m)) == d);
    }
  }
  CHECK(mismatches == 0);
  // Below 2^53 it is the integer itself.
  CHECK(dlb::detail::rounding_double(std::uint64_t(1) << 53) == std::ldexp(1.0, 53));
  CHECK(dlb::detail::rounding_double((std::int64_t(1) << 53) - 1) == std::ldexp(1.0, 53) - 1);
  CHECK(dlb::detail::rounding_double(-(std::int64_t(1) << 53) + 1) == -std::ldexp(1.0, 53) + 1);
  CHECK(dlb::detail::rounding_double(std::numeric_limits<std::int64_t>::min()) == -std::ldexp(1.0, 63));
}

TEST_CASE("element: int64 and uint64 convert to every float format with one rounding") {
  const std::vector<std::uint64_t> magnitudes = edge_integers();
  struct target {
    const char* name;
    dlb::dtype type;
    const float_format* f;  // nullptr: float32 or float64
  };
  std::vector<target> targets = {{"float32", f32, nullptr}, {"float64", f64, nullptr}};
  for (const auto& [name, f, type] : small_formats()) targets.push_back({name, type, f});
  for (const auto& t : targets) {
    const std::string label = t.name;
    CAPTURE(label);
    std::size_t mismatches = 0;
    // Each value through load/store and, where there is one, the typed loop.
    for (const bool is_signed : {true, false}) {
      const dlb::dtype from = is_signed ? i64 : u64;
      std::vector<std::uint64_t> src;
      std::vector<std::uint64_t> want;  // the expected bits
      for (const std::uint64_t m : magnitudes) {
        for (const bool negative : {false, true}) {
          if (negative && (!is_signed || m == 0 || m > std::uint64_t(1) << 63)) continue;
          if (!negative && is_signed && m >= std::uint64_t(1) << 63) continue;
          src.push_back(negative ? 0 - m : m);
          if (t.f) {
            want.push_back(integer_code(*t.f, negative, m));
          } else {
            const double r = round_integer(m, t.type.bits == 32 ? 24 : 53);
            if (t.type.bits == 32) want.push_back(std::bit_cast<std::uint32_t>(float(negative ? -r : r)));
            else want.push_back(std::bit_cast<std::uint64_t>(negative ? -r : r));
          }
        }
      }
      const auto loop = dlb::converter(from, t.type);
      std::vector<unsigned char> looped(src.size() * 8);
      if (loop) loop(looped.data(), src.data(), std::int64_t(src.size()));
      for (std::size_t i = 0; i < src.size(); ++i) {
        const dlb::scalar s = is_signed ? dlb::scalar::from_int(std::int64_t(src[i])) : dlb::scalar::from_uint(src[i]);
        alignas(16) unsigned char out[16] = {};
        dlb::store(t.type, out, s);
        std::uint64_t got = 0, typed = 0;
        std::memcpy(&got, out, t.type.itemsize());
        if (t.f && t.f->width() < 8) got = code_of(t.type, out);
        if (loop) std::memcpy(&typed, looped.data() + i * t.type.itemsize(), t.type.itemsize());
        if ((got != want[i] || (loop && typed != want[i])) && ++mismatches <= 5)
          FAIL_CHECK((is_signed ? "int64 " + std::to_string(std::int64_t(src[i])) : "uint64 " + std::to_string(src[i]))
                     << ": want " << hex(want[i]) << ", store " << hex(got)
                     << ", typed loop " << (loop ? hex(typed) : "-"));
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("element: the issue's example and friends, spelled out") {
  const std::int64_t x = (std::int64_t(1) << 60) + (std::int64_t(1) << 52) + 1;  // just above a bfloat16 tie
  CHECK(stored_code(bf16, dlb::scalar::from_int(x)) == 0x5d81);   // 2^60 + 2^53, not 2^60
  CHECK(stored_code(bf16, dlb::scalar::from_int(-x)) == 0xdd81);
  CHECK(stored_code(bf16, dlb::scalar::from_int(x - 1)) == 0x5d80);  // the tie itself: to even, 2^60
  // 1.5 * 2^60 - 1 is below e8m0's rounding point: 2^60, where a double (1.5 * 2^60) rounds up.
  CHECK(stored_code({dlb::kDLFloat8_e8m0fnu, 8}, dlb::scalar::from_int(3 * (std::int64_t(1) << 59) - 1)) == 127 + 60);
  CHECK(stored_code({dlb::kDLFloat8_e8m0fnu, 8}, dlb::scalar::from_int(3 * (std::int64_t(1) << 59))) == 127 + 61);
  // int64 -> float32: 2^53 + 2^29 + 1 is above a float32 tie that a double rounds onto.
  float out = 0;
  dlb::store(f32, &out, dlb::scalar::from_int((std::int64_t(1) << 53) + (std::int64_t(1) << 29) + 1));
  CHECK(out == std::ldexp(1.0f, 53) + std::ldexp(1.0f, 30));
  // The extremes: INT64_MIN and UINT64_MAX are exact or round up to a power of two; the
  // formats whose range ends below overflow by their rule.
  const auto int64_min = dlb::scalar::from_int(std::numeric_limits<std::int64_t>::min());
  const auto uint64_max = dlb::scalar::from_uint(std::numeric_limits<std::uint64_t>::max());
  CHECK(stored_code(bf16, int64_min) == 0xdf00);
  CHECK(stored_code(bf16, uint64_max) == 0x5f80);
  CHECK(stored_code(f16, int64_min) == 0xfc00);
  CHECK(stored_code({dlb::kDLFloat8_e4m3fn, 8}, dlb::scalar::from_int(-(std::int64_t(1) << 62))) == 0xff);
  CHECK(stored_code({dlb::kDLFloat8_e4m3fnuz, 8}, uint64_max) == 0x80);
  CHECK(stored_code({dlb::kDLFloat4_e2m1fn, 4}, int64_min) == 0xf);
  CHECK(stored_code({dlb::kDLFloat8_e8m0fnu, 8}, uint64_max) == 127 + 64);
}

TEST_CASE("element: every int16 and uint16 converts to every small float as its exact value") {
  for (const auto& [name, f, type] : small_formats()) {
    const std::string label = name;
    CAPTURE(label);
    std::size_t mismatches = 0;
    for (std::int32_t v = -32768; v < 65536; ++v) {
      const bool negative = v < 0;
      const std::uint32_t want = integer_code(*f, negative, std::uint64_t(negative ? -std::int64_t(v) : v));
      const dlb::dtype from = negative || v < 32768 ? dlb::dtype{dlb::kDLInt, 16} : dlb::dtype{dlb::kDLUInt, 16};
      const element bits{std::uint16_t(v)};
      mismatches += stored_code(type, dlb::load(from, bits.bytes)) != want;
    }
    CHECK(mismatches == 0);
  }
}

// ---------------------------------------------------------------------------
// NaN payloads

TEST_CASE("element: signalling() is an ieee format's NaN with the leading mantissa bit clear") {
  for (const auto& [name, f, type] : small_formats()) {
    const std::string label = name;
    CAPTURE(label);
    int count = 0;
    for (std::uint32_t code = 0; code < (1u << f->width()); ++code) {
      const bool nan = std::isnan(dlb::decode(*f, code));
      const bool quiet = code >> (f->mantissa_bits - (f->mantissa_bits > 0)) & 1;
      CHECK(f->signalling(code) == (f->kind == k::ieee && nan && !quiet));
      count += f->signalling(code);
    }
    CHECK(count == (f->kind == k::ieee ? 2 * ((1 << (f->mantissa_bits - 1)) - 1) : 0));
  }
}

namespace {
// Converts n elements with the typed loop and with load/store, and checks
// both give `want(i)`.
template <class From, class To, class Want>
std::size_t count_mismatches(dlb::dtype from, dlb::dtype to, const std::vector<From>& src, Want want) {
  std::vector<To> looped(src.size());
  if (const auto loop = dlb::converter(from, to)) loop(looped.data(), src.data(), std::int64_t(src.size()));
  else for (std::size_t i = 0; i < src.size(); ++i) dlb::store(to, &looped[i], dlb::load(from, element(src[i]).bytes));
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    // load/store on a sample (every element for the small sources).
    To single = looped[i];
    if (src.size() < (1u << 17) || i % 61 == 0) {
      element out(To{});
      dlb::store(to, out.bytes, dlb::load(from, element(src[i]).bytes));
      std::memcpy(&single, out.bytes, sizeof single);
    }
    const To expected = To(want(src[i]));
    if ((looped[i] != expected || single != expected) && ++mismatches <= 5)
      FAIL_CHECK(hex(src[i]) << ": want " << hex(expected) << ", typed loop " << hex(looped[i]) << ", load/store "
                             << hex(single));
  }
  return mismatches;
}

std::vector<std::uint16_t> nan_codes16(const float_format& f) {
  std::vector<std::uint16_t> v;
  for (std::uint32_t c = 0; c < 0x10000; ++c)
    if (std::isnan(dlb::decode(f, c))) v.push_back(std::uint16_t(c));
  return v;
}

// Every float32 NaN: both signs, every nonzero payload, quiet or signalling.
std::vector<std::uint32_t> every_float32_nan() {
  std::vector<std::uint32_t> v;
  v.reserve(std::size_t(1) << 24);
  for (std::uint32_t sign : {0u, 0x80000000u})
    for (std::uint32_t p = 1; p < (1u << 23); ++p) v.push_back(sign | 0x7f800000u | p);
  return v;
}

// float64 NaNs: every payload bit alone and all but one, both quiet bits,
// both signs, and random payloads.
std::vector<std::uint64_t> float64_nans() {
  std::vector<std::uint64_t> v;
  const std::uint64_t mask = (std::uint64_t(1) << 52) - 1;
  std::mt19937_64 rng(11);
  for (const std::uint64_t sign : {std::uint64_t(0), std::uint64_t(1) << 63}) {
    for (int b = 0; b < 52; ++b)
      for (const std::uint64_t bit = std::uint64_t(1) << b; const std::uint64_t p : {bit, mask & ~bit, bit - 1})
        if (p) v.push_back(sign | 0x7ff0000000000000ULL | p);
    for (int i = 0; i < 20000; ++i) {
      const std::uint64_t p = (rng() & mask) >> (rng() % 52);
      if (p) v.push_back(sign | 0x7ff0000000000000ULL | p);
    }
  }
  return v;
}
}  // namespace

TEST_CASE("element: float16 NaNs move bit for bit, as NumPy moves them") {
  const auto codes = nan_codes16(fmt::float16);
  REQUIRE(codes.size() == 2 * 1023);
  // To float32 and float64: the payload shifted up, signalling or not.
  CHECK(count_mismatches<std::uint16_t, std::uint32_t>(f16, f32, codes, [](std::uint16_t c) {
          return std::uint32_t(c & 0x8000) << 16 | 0x7f800000u | std::uint32_t(c & 0x3ff) << 13;
        }) == 0);
  CHECK(count_mismatches<std::uint16_t, std::uint64_t>(f16, f64, codes, [](std::uint16_t c) {
          return std::uint64_t(c & 0x8000) << 48 | 0x7ff0000000000000ULL | std::uint64_t(c & 0x3ff) << 42;
        }) == 0);
  // From float32 and float64: the payload's leading 10 bits, made nonzero.
  const auto to_half = [](std::uint64_t sign, std::uint64_t payload) {
    return std::uint16_t(sign << 15 | 0x7c00 | payload | (payload == 0));
  };
  CHECK(count_mismatches<std::uint32_t, std::uint16_t>(f32, f16, every_float32_nan(), [&](std::uint32_t b) {
          return to_half(b >> 31, b >> 13 & 0x3ff);
        }) == 0);
  CHECK(count_mismatches<std::uint64_t, std::uint16_t>(f64, f16, float64_nans(), [&](std::uint64_t b) {
          return to_half(b >> 63, b >> 42 & 0x3ff);
        }) == 0);
}

TEST_CASE("element: bfloat16 NaNs move as ml_dtypes moves them") {
  const auto codes = nan_codes16(fmt::bfloat16);
  REQUIRE(codes.size() == 2 * 127);
  // To float32 bit for bit; to float64 through float32 and the CPU: quiet.
  CHECK(count_mismatches<std::uint16_t, std::uint32_t>(bf16, f32, codes, [](std::uint16_t c) {
          return std::uint32_t(c) << 16;
        }) == 0);
  CHECK(count_mismatches<std::uint16_t, std::uint64_t>(bf16, f64, codes, [](std::uint16_t c) {
          return std::uint64_t(c & 0x8000) << 48 | 0x7ff8000000000000ULL | std::uint64_t(c & 0x7f) << 45;
        }) == 0);
  // To float16, and from anything: the quiet NaN of its sign.
  CHECK(count_mismatches<std::uint16_t, std::uint16_t>(bf16, f16, codes, [](std::uint16_t c) {
          return std::uint16_t((c & 0x8000) | 0x7e00);
        }) == 0);
  CHECK(count_mismatches<std::uint16_t, std::uint16_t>(f16, bf16, nan_codes16(fmt::float16), [](std::uint16_t c) {
          return std::uint16_t((c & 0x8000) | 0x7fc0);
        }) == 0);
  CHECK(count_mismatches<std::uint32_t, std::uint16_t>(f32, bf16, every_float32_nan(), [](std::uint32_t b) {
          return std::uint16_t((b >> 16 & 0x8000) | 0x7fc0);
        }) == 0);
  CHECK(count_mismatches<std::uint64_t, std::uint16_t>(f64, bf16, float64_nans(), [](std::uint64_t b) {
          return std::uint16_t((b >> 48 & 0x8000) | 0x7fc0);
        }) == 0);
}

TEST_CASE("element: float8 NaNs are the quiet NaN of their sign both ways, as in ml_dtypes") {
  for (const auto& [name, f, type] : small_formats()) {
    if (f->width() != 8) continue;
    const std::string label = name;
    CAPTURE(label);
    std::vector<std::uint8_t> codes;
    for (std::uint32_t c = 0; c < 256; ++c)
      if (std::isnan(dlb::decode(*f, c))) codes.push_back(std::uint8_t(c));
    // The sign of the NaN where the format has a signed NaN (fnuz's 0x80
    // decodes as -NaN, as in ml_dtypes).
    const auto negative = [&](std::uint64_t c) { return (c & 0x80) && f->kind != k::exponent; };
    for (std::uint8_t c : codes) {
      const dlb::scalar s = dlb::load(type, element(c).bytes);
      CHECK(stored_code(f32, s) == (negative(c) ? 0xffc00000u : 0x7fc00000u));
      CHECK(std::bit_cast<std::uint64_t>(s.re) == (negative(c) ? 0xfff8000000000000ULL : 0x7ff8000000000000ULL));
      CHECK(stored_code(f16, s) == (negative(c) ? 0xfe00 : 0x7e00));
      CHECK(stored_code(bf16, s) == (negative(c) ? 0xffc0 : 0x7fc0));
    }
    const bool signed_nan = f->kind == k::ieee || f->kind == k::fn;
    for (const std::uint64_t b : float64_nans()) {
      const std::uint32_t want = f->nan_code() | (signed_nan && b >> 63 ? f->sign_bit() : 0);
      CHECK(stored_code(type, dlb::scalar::from_real(std::bit_cast<double>(b))) == want);
      const element h(std::uint16_t((b >> 48 & 0x8000) | 0x7c00 | (b >> 42 & 0x3ff) | 1));  // a float16 NaN
      CHECK(stored_code(type, dlb::load(f16, h.bytes)) == want);
      if (b % 97 != 0) continue;  // the float32 route on a sample
      const element w(std::uint32_t(b >> 32 & 0x80000000u) | 0x7f800001u | std::uint32_t(b >> 29 & 0x7fffff));
      CHECK(stored_code(type, dlb::load(f32, w.bytes)) == want);
    }
  }
}

TEST_CASE("element: float32 and float64 NaNs between themselves: the CPU's rules, and float32 kept as it is") {
  // float32 -> float64 and back make a NaN quiet (NumPy casts through the
  // CPU); float32 -> float32 through load/store keeps it, signalling or not.
  std::mt19937 rng(9);
  std::size_t mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t b = (rng() | 0x7f800000u) & (i % 2 ? 0xffffffffu : 0xffbfffffu);
    if ((b & 0x7fffff) == 0) continue;
    const dlb::scalar s = dlb::load(f32, element(b).bytes);
    mismatches += stored_code(f32, s) != b;
    const std::uint64_t wide = std::bit_cast<std::uint64_t>(s.re);  // what store() writes as float64
    mismatches += wide != (std::uint64_t(b >> 31) << 63 | 0x7ff8000000000000ULL | std::uint64_t(b & 0x7fffff) << 29);
    mismatches += stored_code(f32, dlb::load(f64, element(wide).bytes)) != (b | 0x00400000u);
  }
  for (const std::uint64_t b : float64_nans())
    mismatches += stored_code(f32, dlb::load(f64, element(b).bytes)) !=
                  (std::uint32_t(b >> 32 & 0x80000000u) | 0x7fc00000u | std::uint32_t(b >> 29 & 0x7fffff));
  CHECK(mismatches == 0);
  // float16 and bfloat16 NaNs go to complex64's real part as to float32, to
  // complex128's as to float64 (NumPy, ml_dtypes).
  const element h{std::uint16_t(0xfd01)}, b{std::uint16_t(0x7f81)};
  alignas(16) std::uint64_t c[2] = {1, 1};
  dlb::store({dlb::kDLComplex, 64}, c, dlb::load(f16, h.bytes));
  CHECK(c[0] == 0xffa02000u);  // and an imaginary part of 0
  dlb::store({dlb::kDLComplex, 128}, c, dlb::load(f16, h.bytes));
  CHECK(c[0] == 0xfff4040000000000ULL);
  CHECK(c[1] == 0);
  dlb::store({dlb::kDLComplex, 64}, c, dlb::load(bf16, b.bytes));
  CHECK(c[0] == 0x7f810000u);
  dlb::store({dlb::kDLComplex, 128}, c, dlb::load(bf16, b.bytes));
  CHECK(c[0] == 0x7ff8200000000000ULL);
}

TEST_CASE("element: encode() with `signalling` writes a kept payload signalling, and nothing else") {
  const double quiet_payload = std::bit_cast<double>(0xfff8040000000000ULL);  // a quiet NaN, payload 1 << 42
  CHECK(dlb::encode(fmt::float16, quiet_payload) == 0xfe01);
  CHECK(dlb::encode(fmt::float16, quiet_payload, true) == 0xfc01);
  // Only the quiet bit: signalling, it would be infinity; made nonzero instead.
  CHECK(dlb::encode(fmt::float16, std::bit_cast<double>(0x7ff8000000000000ULL), true) == 0x7c01);
  for (const auto& [name, f, type] : small_formats()) {
    if (f->nan_payloads == float_format::payloads::kept) continue;
    CAPTURE(std::string(name));
    CHECK(dlb::encode(*f, quiet_payload, true) == dlb::encode(*f, quiet_payload));
    CHECK(dlb::encode(*f, 1.5, true) == dlb::encode(*f, 1.5));
  }
}
