// dlbridge/convert.hpp: every typed conversion loop against element.hpp's
// load() and store() one element at a time, bit for bit, on inputs chosen for
// their edges, at every length up to a few vectors and from unaligned
// addresses.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "dlbridge/convert.hpp"
#include "dlbridge/element.hpp"

namespace {
using bytes = std::vector<unsigned char>;

struct named_dtype {
  const char* name;
  dlb::dtype type;
};

// Every dtype with typed loops.
const named_dtype typed[] = {
    {"bool", {dlb::kDLBool, 8}},     {"int8", {dlb::kDLInt, 8}},       {"int16", {dlb::kDLInt, 16}},
    {"int32", {dlb::kDLInt, 32}},    {"int64", {dlb::kDLInt, 64}},     {"uint8", {dlb::kDLUInt, 8}},
    {"uint16", {dlb::kDLUInt, 16}},  {"uint32", {dlb::kDLUInt, 32}},   {"uint64", {dlb::kDLUInt, 64}},
    {"float16", {dlb::kDLFloat, 16}}, {"bfloat16", {dlb::kDLBfloat, 16}}, {"float32", {dlb::kDLFloat, 32}},
    {"float64", {dlb::kDLFloat, 64}},
};

template <class T>
void append(bytes& out, T v) {
  const auto at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

double pow2(int e) { return std::ldexp(1.0, e); }

// Doubles at the edges of every conversion: signed zeros, infinities, NaNs of
// both signs with quiet and signalling payloads, subnormals, the extremes,
// each integer type's bounds and their neighbours (halves included),
// rounding ties of float32, float16 and bfloat16, and the halves that show
// truncation against rounding.
std::vector<double> edge_doubles() {
  std::vector<double> v = {0.0, -0.0, HUGE_VAL, -HUGE_VAL, -1.0, -0.5, 0.5, 1.5, 2.5, -1.5, -2.5, 3.5, 0.49999999999999994,
                           std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::min(), -std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(),
                           std::nextafter(std::numeric_limits<double>::min(), 0.0)};
  for (const std::uint64_t nan : {0x7ff8000000000000ULL, 0xfff8000000000000ULL, 0x7ff8000000000001ULL,
                                  0x7ff0000000000001ULL, 0xfff0000000000001ULL, 0x7ff4000000000000ULL,
                                  0xfff4000000000000ULL, 0x7fffffffffffffffULL, 0xffffffffffffffffULL,
                                  0x7ff7ffffffffffffULL, 0x7ff00000e0000000ULL, 0xfff123456789abcdULL,
                                  0x7ff0000020000000ULL, 0x7ff000001fffffffULL})
    v.push_back(std::bit_cast<double>(nan));
  // Integer bounds: +-2^(b-1), 2^b and everything within one unit, halves too.
  for (const int b : {7, 8, 15, 16, 31, 32, 63, 64}) {
    for (const double sign : {1.0, -1.0}) {
      const double x = sign * pow2(b);
      for (const double d : {-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5}) v.push_back(x + d);  // exact up to 2^32
      v.push_back(std::nextafter(x, 0.0));
      v.push_back(std::nextafter(x, 2 * x));
    }
  }
  // Ties of float32 (24 bits), bfloat16 (8) and float16 (11) at 1, their
  // neighbours, and near the extremes of each.
  for (const int bits : {24, 8, 11}) {
    const double ulp = pow2(1 - bits);
    for (const double m : {1.0 + ulp / 2, 1.0 + 3 * ulp / 2, 2.0 - ulp / 2})
      for (const double x : {m, std::nextafter(m, 0.0), std::nextafter(m, 4.0)}) {
        v.push_back(x);
        v.push_back(-x);
      }
  }
  for (const double x : {double(std::numeric_limits<float>::max()), pow2(128) - pow2(103), pow2(128) - pow2(104),
                         pow2(128), double(std::numeric_limits<float>::min()), pow2(-149), pow2(-150), 3 * pow2(-150),
                         pow2(-151), 65504.0, 65519.0, 65520.0, 65536.0, pow2(-24), pow2(-25), 3 * pow2(-25), pow2(-26),
                         pow2(-14), pow2(-14) - pow2(-25), pow2(-133), pow2(-134), 3 * pow2(-134), pow2(-126)}) {
    v.push_back(x);
    v.push_back(-x);
    v.push_back(std::nextafter(x, 0.0));
    v.push_back(std::nextafter(x, HUGE_VAL));
  }
  return v;
}

// The source elements of each dtype: its edges (the doubles above stored in
// it, for floats also the NaN codes a conversion would not produce), every
// bit pattern for the 8- and 16-bit types, and a fixed pseudo-random sample.
bytes inputs(dlb::dtype t) {
  bytes out;
  std::mt19937_64 rng(t.code * 256u + t.bits);
  const std::size_t size = t.itemsize();
  auto put = [&](double d) {
    out.resize(out.size() + size);
    dlb::store(t, out.data() + out.size() - size, dlb::scalar::from_real(d));
  };
  if (t.code == dlb::kDLBool) {
    for (int b = 0; b < 256; ++b) out.push_back(std::uint8_t(b));  // any nonzero byte is true
    for (int i = 0; i < 200; ++i) out.push_back(i % 3 ? 0 : std::uint8_t(rng()));
  } else if (t.bits == 8) {
    for (int c = 0; c < 256; ++c) out.push_back(std::uint8_t(c));
  } else if (t.bits == 16) {  // float16 and bfloat16 too: every code, so every decode
    for (std::uint32_t c = 0; c < 65536; ++c) append(out, std::uint16_t(c));
    if (t.code != dlb::kDLInt && t.code != dlb::kDLUInt)
      for (const double d : edge_doubles()) put(d);
  } else if (t.code == dlb::kDLInt || t.code == dlb::kDLUInt) {
    std::vector<std::uint64_t> patterns;
    for (int k = 0; k < 64; ++k) {  // every power of two, its neighbours and their negatives
      const std::uint64_t p = std::uint64_t(1) << k;
      for (const std::uint64_t x : {p, p - 1, p + 1, 0 - p, 0 - p - 1, 0 - p + 1}) patterns.push_back(x);
    }
    // float32 and float64 rounding: 2^24 + 1, 2^53 + 1, ties above 2^53 and 2^63.
    for (const std::uint64_t x : {0x1000001ULL, 0x20000000000001ULL, 0x20000020000001ULL, 0x20000020000000ULL,
                                  0x7fffff7fffffffffULL, 0x7fffff8000000000ULL, 0xffffff7fffffffffULL,
                                  0xffffff8000000000ULL, 0x7ffffffffffffdffULL, 0x7ffffffffffffc00ULL})
      patterns.push_back(x);
    for (int i = 0; i < 3000; ++i) patterns.push_back(rng() >> (rng() % 64));
    for (int i = 0; i < 1000; ++i) patterns.push_back(rng());
    for (const auto x : patterns) {  // the low 32 bits of each for 32-bit types
      if (t.bits == 32) append(out, std::uint32_t(x));
      else append(out, x);
    }
  } else if (t.bits == 32) {
    for (const double d : edge_doubles()) put(d);
    // NaNs with payloads no conversion makes, subnormals, float16 and
    // bfloat16 ties and their neighbours.
    for (const std::uint32_t code : {0x7fc00000u, 0xffc00000u, 0x7fc00001u, 0x7f800001u, 0xff800001u, 0x7fa00000u,
                                     0x7fbfffffu, 0xffffffffu, 0x7fffffffu, 0xff812345u, 0x00000001u, 0x807fffffu,
                                     0x00800000u, 0x7f7fffffu, 0x3f808000u, 0x3f818000u, 0x3f80c000u, 0x3f800fffu,
                                     0x3f801000u, 0x3f803000u, 0x477ff000u, 0x477fefffu, 0x33800000u, 0x33000000u})
      append(out, code);
    for (int i = 0; i < 4000; ++i) append(out, std::uint32_t(rng()));  // every exponent
    for (int i = 0; i < 2000; ++i) append(out, float(double(std::int64_t(rng() % 2000001) - 1000000) / 64));
  } else {
    for (const double d : edge_doubles()) put(d);
    for (int i = 0; i < 4000; ++i) append(out, rng());  // every exponent
    for (int i = 0; i < 2000; ++i) append(out, double(std::int64_t(rng() % 2000001) - 1000000) / 64);
    // Floats as doubles, and the points halfway to their neighbours, which
    // round to even.
    for (int i = 0; i < 2000; ++i) {
      const float f = std::bit_cast<float>(std::uint32_t(rng()));
      const double d = f, next = std::nextafter(f, HUGE_VALF);
      append(out, d);
      append(out, (d + next) / 2);  // exact: one bit more than a float
    }
  }
  return out;
}

// What load() and store() make of `count` elements, one at a time.
bytes reference(dlb::dtype from, dlb::dtype to, const bytes& src, std::int64_t count) {
  bytes out(std::size_t(count) * to.itemsize());
  for (std::int64_t i = 0; i < count; ++i)
    dlb::store(to, out.data() + i * std::int64_t(to.itemsize()), dlb::load(from, src.data() + i * std::int64_t(from.itemsize())));
  return out;
}

std::string hex(const unsigned char* p, std::size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = n; i-- > 0;) s += {digits[p[i] >> 4], digits[p[i] & 15]};
  return s;
}
}  // namespace

TEST_CASE("convert: a typed loop for every pair of distinct plain dtypes, float16 and bfloat16") {
  for (const auto& from : typed)
    for (const auto& to : typed) {
      const std::string pair = std::string(from.name) + " -> " + to.name;
      CAPTURE(pair);
      if (from.type == to.type) CHECK((dlb::converter(from.type, to.type) == nullptr));  // a copy
      else CHECK((dlb::converter(from.type, to.type) != nullptr));
    }
}

TEST_CASE("convert: none for complex, float8/6/4, vectors or unknown dtypes") {
  const dlb::dtype f32{dlb::kDLFloat, 32};
  const dlb::dtype others[] = {{dlb::kDLComplex, 64},       {dlb::kDLComplex, 128},    {dlb::kDLFloat8_e4m3fn, 8},
                               {dlb::kDLFloat8_e5m2, 8},    {dlb::kDLFloat8_e8m0fnu, 8}, {dlb::kDLFloat6_e2m3fn, 6},
                               {dlb::kDLFloat4_e2m1fn, 4},  {dlb::kDLFloat, 32, 4},     {dlb::kDLInt, 8, 2},
                               {dlb::kDLInt, 24},           {dlb::kDLUInt, 1},          {dlb::kDLFloat, 8},
                               {dlb::kDLBfloat, 32},        {dlb::kDLBool, 1},          {dlb::kDLOpaqueHandle, 64}};
  for (const auto t : others) {
    CAPTURE(int(t.code));
    CAPTURE(int(t.bits));
    CAPTURE(t.lanes);
    CHECK((dlb::converter(t, f32) == nullptr));
    CHECK((dlb::converter(f32, t) == nullptr));
    CHECK((dlb::converter(t, t) == nullptr));
  }
}

TEST_CASE("convert: every typed loop gives load/store's bits, at every length and alignment") {
  // Lengths 1 to 67 cover a whole vector body and every tail; 1000 has both.
  std::vector<std::int64_t> lengths = {0, 1000};
  for (std::int64_t n = 1; n <= 67; ++n) lengths.push_back(n);
  for (const auto& from : typed) {
    const bytes src = inputs(from.type);
    const std::size_t from_size = from.type.itemsize();
    const std::int64_t count = std::int64_t(src.size() / from_size);
    for (const auto& to : typed) {
      if (from.type == to.type) continue;
      const std::string pair = std::string(from.name) + " -> " + to.name;
      CAPTURE(pair);
      const std::size_t to_size = to.type.itemsize();
      const auto convert = dlb::converter(from.type, to.type);
      REQUIRE(bool(convert));
      const bytes expected = reference(from.type, to.type, src, count);
      std::vector<std::int64_t> all = lengths;
      all.push_back(count);
      std::size_t mismatches = 0;
      for (const std::int64_t src_offset : {0, 1})
        for (const std::int64_t dst_offset : {0, 1})
          for (const std::int64_t n : all) {
            // Start the short runs part way in too, so that other elements
            // pass through the vector body and the scalar tail.
            for (const std::int64_t first : {std::int64_t(0), n < 100 ? std::int64_t(37) : std::int64_t(0)}) {
              if (first + n > count) continue;
              bytes in(std::size_t(n) * from_size + 1 + 16, 0xA5);
              if (n) std::memcpy(in.data() + src_offset, src.data() + first * std::int64_t(from_size), std::size_t(n) * from_size);
              bytes out(std::size_t(n) * to_size + 1 + 16, 0x5A);
              convert(out.data() + dst_offset, in.data() + src_offset, n);
              for (std::int64_t i = 0; i < n; ++i) {
                const auto* got = out.data() + dst_offset + i * std::int64_t(to_size);
                const auto* want = expected.data() + (first + i) * std::int64_t(to_size);
                if (std::memcmp(got, want, to_size) != 0 && ++mismatches <= 5) {
                  const auto* x = src.data() + (first + i) * std::int64_t(from_size);
                  FAIL_CHECK("element " << first + i << " (n " << n << ", offsets " << src_offset << "/" << dst_offset
                                        << "): 0x" << hex(x, from_size) << " -> 0x" << hex(got, to_size) << ", load/store 0x"
                                        << hex(want, to_size));
                }
              }
              // Nothing written outside the run.
              for (std::size_t b = 0; b < out.size(); ++b)
                if ((b < std::size_t(dst_offset) || b >= std::size_t(dst_offset + n * std::int64_t(to_size))) &&
                    out[b] != 0x5A) {
                  ++mismatches;
                  FAIL_CHECK("byte " << b << " outside the run written (n " << n << ")");
                }
            }
          }
      CHECK(mismatches == 0);
    }
  }
}

// Encoding has too many inputs to try them all here (tested once by hand: all
// 2^32 float32 patterns): every 1024th float32 pattern, with varying low
// bits, and the neighbourhood of every float16 and bfloat16 value and of every
// midpoint between two, as float32 and as float64.
TEST_CASE("convert: float32 and float64 to float16 and bfloat16, densely") {
  const dlb::dtype f32{dlb::kDLFloat, 32}, f64{dlb::kDLFloat, 64};
  std::vector<std::uint32_t> floats;
  for (std::uint32_t p = 0; p < (1u << 22); ++p) floats.push_back(p << 10 | ((p * 0x9E3779B1u) >> 22));
  for (const named_dtype to : {named_dtype{"float16", {dlb::kDLFloat, 16}}, named_dtype{"bfloat16", {dlb::kDLBfloat, 16}}}) {
    CAPTURE(to.name);
    std::vector<std::uint32_t> near = floats;
    std::vector<double> doubles;
    for (std::uint32_t c = 0; c < 0xffff; ++c) {
      if ((c & 0x7fff) == 0x7fff) continue;  // no next code
      double value[2];
      for (std::uint32_t i = 0; i < 2; ++i) {
        alignas(16) unsigned char code[16] = {};  // room for any dtype, as far as the compiler knows
        const auto bits = std::uint16_t(c + i);
        std::memcpy(code, &bits, 2);
        value[i] = dlb::load(to.type, code).re;
      }
      if (!std::isfinite(value[0]) || !std::isfinite(value[1])) continue;
      const double mid = (value[0] + value[1]) / 2;  // exact, and exact as a float too
      for (const double x : {value[0], mid}) {
        const auto bits = std::bit_cast<std::uint32_t>(float(x));
        for (std::uint32_t d = 0; d < 5; ++d) near.push_back(bits + d - 2);
        doubles.insert(doubles.end(), {x, std::nextafter(x, -HUGE_VAL), std::nextafter(x, HUGE_VAL)});
      }
    }
    for (const auto& [from, count, data] :
         {std::tuple{f32, near.size(), static_cast<const void*>(near.data())},
          std::tuple{f64, doubles.size(), static_cast<const void*>(doubles.data())}}) {
      bytes src(count * from.itemsize());
      std::memcpy(src.data(), data, src.size());
      const bytes expected = reference(from, to.type, src, std::int64_t(count));
      bytes got(expected.size());
      dlb::converter(from, to.type)(got.data(), src.data(), std::int64_t(count));
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < count; ++i)
        if (std::memcmp(&got[2 * i], &expected[2 * i], 2) != 0 && ++mismatches <= 5)
          FAIL_CHECK("from " << from.bits << " bits: 0x" << hex(src.data() + i * from.itemsize(), from.itemsize()) << " -> 0x"
                             << hex(&got[2 * i], 2) << ", load/store 0x" << hex(&expected[2 * i], 2));
      CHECK(mismatches == 0);
    }
  }
}

// load() and store() are built from the same pieces as the typed loops, so the
// comparison above would not see a rule broken in both: these spell a few of
// the rules out.
TEST_CASE("convert: the rules, spelled out") {
  const dlb::dtype b8{dlb::kDLBool, 8}, i8{dlb::kDLInt, 8}, i32{dlb::kDLInt, 32}, i64{dlb::kDLInt, 64},
      u8{dlb::kDLUInt, 8}, u64{dlb::kDLUInt, 64}, f16{dlb::kDLFloat, 16}, bf16{dlb::kDLBfloat, 16},
      f32{dlb::kDLFloat, 32}, f64{dlb::kDLFloat, 64};
  auto run = [](dlb::dtype from, dlb::dtype to, auto in, auto out) {
    decltype(out) got{};
    dlb::converter(from, to)(&got, &in, 1);
    return got;
  };
  const double nan_neg_payload = std::bit_cast<double>(0xfff4000000000123ULL);
  SUBCASE("float to integer truncates, saturates, NaN gives 0") {
    CHECK(run(f64, i32, 2147483647.9, std::int32_t{}) == 2147483647);
    CHECK(run(f64, i32, 2147483648.0, std::int32_t{}) == 2147483647);
    CHECK(run(f64, i32, -2147483648.5, std::int32_t{}) == -2147483647 - 1);
    CHECK(run(f64, i32, -2.9, std::int32_t{}) == -2);
    CHECK(run(f64, i32, std::nan(""), std::int32_t{}) == 0);
    CHECK(run(f64, i64, pow2(63), std::int64_t{}) == std::numeric_limits<std::int64_t>::max());
    CHECK(run(f64, i64, -pow2(63), std::int64_t{}) == std::numeric_limits<std::int64_t>::min());
    CHECK(run(f64, i64, pow2(63) - 1024, std::int64_t{}) == std::numeric_limits<std::int64_t>::max() - 1023);
    CHECK(run(f64, u64, pow2(64), std::uint64_t{}) == std::numeric_limits<std::uint64_t>::max());
    CHECK(run(f64, u64, pow2(64) - 2048, std::uint64_t{}) == std::uint64_t(0) - 2048);
    CHECK(run(f64, u64, -0.5, std::uint64_t{}) == 0);
    CHECK(run(f32, u8, -7.0f, std::uint8_t{}) == 0);
    CHECK(run(f32, u8, 255.5f, std::uint8_t{}) == 255);
    CHECK(run(f32, i8, -HUGE_VALF, std::int8_t{}) == -128);
  }
  SUBCASE("integers wrap") {
    CHECK(run(i32, i8, std::int32_t{300}, std::int8_t{}) == 44);
    CHECK(run(i64, u8, std::int64_t{-1}, std::uint8_t{}) == 255);
    CHECK(run(u64, i32, std::uint64_t(0) - 1, std::int32_t{}) == -1);
  }
  SUBCASE("bool is nonzero; bool is 0 or 1") {
    CHECK(run(f64, b8, -0.0, std::uint8_t{}) == 0);
    CHECK(run(f64, b8, std::nan(""), std::uint8_t{}) == 1);
    CHECK(run(f32, b8, 1e-45f, std::uint8_t{}) == 1);
    CHECK(run(i64, b8, std::int64_t{256}, std::uint8_t{}) == 1);
    CHECK(run(b8, i32, std::uint8_t{7}, std::int32_t{}) == 1);
    CHECK(run(b8, f64, std::uint8_t{0x80}, double{}) == 1.0);
  }
  SUBCASE("float64 to float32 rounds to even and keeps NaN's sign and payload") {
    CHECK(run(f64, f32, 1.0 + pow2(-24), float{}) == 1.0f);
    CHECK(run(f64, f32, 1.0 + 3 * pow2(-24), float{}) == 1.0f + 2 * std::ldexp(1.0f, -23));
    CHECK(std::bit_cast<std::uint32_t>(run(f64, f32, nan_neg_payload, float{})) == 0xffe00000u);
    CHECK(std::bit_cast<std::uint32_t>(run(f64, f32, std::bit_cast<double>(0x7ff0000000000001ULL), float{})) ==
          0x7fc00000u);
    CHECK(std::bit_cast<std::uint32_t>(run(f64, f32, -0.0, float{})) == 0x80000000u);
    CHECK(run(f64, f32, pow2(128) - pow2(103), float{}) == HUGE_VALF);  // the tie above the largest float
  }
  SUBCASE("float32 to float64 keeps NaN's sign and payload, quiet") {
    CHECK(std::bit_cast<std::uint64_t>(run(f32, f64, std::bit_cast<float>(0xff800001u), double{})) ==
          0xfff8000020000000ULL);
  }
  SUBCASE("integer to float rounds once") {
    const std::int64_t tricky = (std::int64_t(1) << 53) + (std::int64_t(1) << 29) + 1;
    CHECK(run(i64, f32, tricky, float{}) == float((std::int64_t(1) << 53) + (std::int64_t(1) << 30)));
    CHECK(run(u64, f64, std::uint64_t(0) - 1, double{}) == pow2(64));
  }
  SUBCASE("float16 and bfloat16: ties to even, overflow to infinity, NaN keeps its sign") {
    CHECK(run(f32, f16, 65519.0f, std::uint16_t{}) == 0x7bff);
    CHECK(run(f32, f16, 65520.0f, std::uint16_t{}) == 0x7c00);
    CHECK(run(f64, f16, pow2(-25), std::uint16_t{}) == 0x0000);
    CHECK(run(f64, f16, 3 * pow2(-25), std::uint16_t{}) == 0x0002);
    CHECK(run(f32, f16, -std::nanf(""), std::uint16_t{}) == 0xfe00);
    CHECK(run(f32, bf16, std::bit_cast<float>(0x3f808000u), std::uint16_t{}) == 0x3f80);
    CHECK(run(f32, bf16, std::bit_cast<float>(0x3f818000u), std::uint16_t{}) == 0x3f82);
    CHECK(run(f64, bf16, nan_neg_payload, std::uint16_t{}) == 0xffc0);
    CHECK(std::bit_cast<std::uint32_t>(run(f16, f32, std::uint16_t{0xfd01}, float{})) == 0xffa02000u);
    CHECK(run(f16, f64, std::uint16_t{0x0001}, double{}) == pow2(-24));
    CHECK(run(bf16, i32, std::uint16_t{0x4f80}, std::int32_t{}) == 2147483647);  // 2^32 saturates
    CHECK(run(i32, f16, std::int32_t{2049}, std::uint16_t{}) == 0x6800);
  }
}
