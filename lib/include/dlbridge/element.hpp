// Reading and writing one element of any supported dtype through a canonical
// scalar, and the codec for the small float formats (float16, bfloat16, the
// float8/6/4 family), which follows ml_dtypes bit for bit.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>

#include "dlbridge/dtype.hpp"

namespace dlb {

// A small IEEE-like float format: sign, exponent, mantissa and how it spells
// the special values.
struct float_format {
  enum class specials : std::uint8_t {
    ieee,      // exponent all ones: infinity or NaN
    fn,        // no infinity; only the all-ones pattern is NaN (e4m3fn)
    fnuz,      // no infinity, no -0; the sign bit alone is NaN
    finite,    // no infinity, no NaN: overflow saturates (float6, float4)
    exponent,  // unsigned, exponent only, all ones NaN (e8m0fnu)
  };
  int exponent_bits;
  int mantissa_bits;
  int bias;
  specials kind;

  [[nodiscard]] constexpr int width() const { return (kind == specials::exponent ? 0 : 1) + exponent_bits + mantissa_bits; }
  [[nodiscard]] constexpr std::uint32_t sign_bit() const { return kind == specials::exponent ? 0 : 1u << (exponent_bits + mantissa_bits); }
  [[nodiscard]] constexpr std::uint32_t magnitude_mask() const { return (1u << (exponent_bits + mantissa_bits)) - 1; }
  [[nodiscard]] constexpr std::uint32_t nan_code() const {
    switch (kind) {
      case specials::ieee: return magnitude_mask() & ~((1u << (mantissa_bits - 1)) - 1);
      case specials::fn: return magnitude_mask();
      case specials::fnuz: return sign_bit();
      case specials::finite: return sign_bit();  // no NaN: see encode()
      case specials::exponent: return magnitude_mask();
    }
    return 0;
  }
  [[nodiscard]] constexpr std::uint32_t max_finite_code() const {
    switch (kind) {
      case specials::ieee: return (((1u << exponent_bits) - 1) << mantissa_bits) - 1;
      case specials::fn:
      case specials::exponent: return magnitude_mask() - 1;
      case specials::fnuz:
      case specials::finite: return magnitude_mask();
    }
    return 0;
  }
};

namespace formats {
using k = float_format::specials;
inline constexpr float_format float16{5, 10, 15, k::ieee}, bfloat16{8, 7, 127, k::ieee},
    float8_e3m4{3, 4, 3, k::ieee}, float8_e4m3{4, 3, 7, k::ieee},
    float8_e4m3b11fnuz{4, 3, 11, k::fnuz}, float8_e4m3fn{4, 3, 7, k::fn},
    float8_e4m3fnuz{4, 3, 8, k::fnuz}, float8_e5m2{5, 2, 15, k::ieee},
    float8_e5m2fnuz{5, 2, 16, k::fnuz}, float8_e8m0fnu{8, 0, 127, k::exponent},
    float6_e2m3fn{2, 3, 1, k::finite}, float6_e3m2fn{3, 2, 3, k::finite},
    float4_e2m1fn{2, 1, 1, k::finite};
}  // namespace formats

// The format of a dtype stored as a small float; nullptr for every other dtype.
[[nodiscard]] constexpr const float_format* small_float_format(dtype t) {
  if (t.lanes != 1) return nullptr;
  switch (t.code) {
    case kDLFloat: return t.bits == 16 ? &formats::float16 : nullptr;
    case kDLBfloat: return t.bits == 16 ? &formats::bfloat16 : nullptr;
    case kDLFloat8_e3m4: return &formats::float8_e3m4;
    case kDLFloat8_e4m3: return &formats::float8_e4m3;
    case kDLFloat8_e4m3b11fnuz: return &formats::float8_e4m3b11fnuz;
    case kDLFloat8_e4m3fn: return &formats::float8_e4m3fn;
    case kDLFloat8_e4m3fnuz: return &formats::float8_e4m3fnuz;
    case kDLFloat8_e5m2: return &formats::float8_e5m2;
    case kDLFloat8_e5m2fnuz: return &formats::float8_e5m2fnuz;
    case kDLFloat8_e8m0fnu: return &formats::float8_e8m0fnu;
    case kDLFloat6_e2m3fn: return &formats::float6_e2m3fn;
    case kDLFloat6_e3m2fn: return &formats::float6_e3m2fn;
    case kDLFloat4_e2m1fn: return &formats::float4_e2m1fn;
    default: return nullptr;
  }
}

[[nodiscard]] inline double decode(const float_format& f, std::uint32_t code) {
  using k = float_format::specials;
  const bool negative = code & f.sign_bit();
  const std::uint32_t magnitude = code & f.magnitude_mask();
  // NaN keeps the sign bit of its code, as NumPy and ml_dtypes do.
  const double nan = std::copysign(std::numeric_limits<double>::quiet_NaN(), negative ? -1.0 : 1.0);
  const std::uint32_t exponent = magnitude >> f.mantissa_bits;
  const std::uint32_t mantissa = magnitude & ((1u << f.mantissa_bits) - 1);
  if (f.kind == k::exponent) return magnitude == f.nan_code() ? nan : std::ldexp(1.0, int(exponent) - f.bias);
  if (f.kind == k::fnuz && code == f.sign_bit()) return nan;
  if (f.kind == k::fn && magnitude == f.magnitude_mask()) return nan;
  if (f.kind == k::ieee && exponent == (1u << f.exponent_bits) - 1)
    return mantissa ? nan : (negative ? -HUGE_VAL : HUGE_VAL);
  const double value = exponent == 0
                           ? std::ldexp(double(mantissa), 1 - f.bias - f.mantissa_bits)
                           : std::ldexp(double(mantissa | (1u << f.mantissa_bits)),
                                        int(exponent) - f.bias - f.mantissa_bits);
  return negative ? -value : value;
}

// Rounds to nearest, ties to even, with the format's overflow rule: infinity
// where it has one, else NaN, except finite formats, which saturate.
[[nodiscard]] inline std::uint32_t encode(const float_format& f, double v) {
  using k = float_format::specials;
  const bool negative = std::signbit(v);
  // Formats with a signed NaN keep its sign (NumPy, ml_dtypes); fnuz and e8m0
  // have a single NaN code; float6/float4 have none, and ml_dtypes writes the
  // zero of opposite sign, which we match bit for bit.
  if (std::isnan(v)) {
    if (f.kind == k::finite) return negative ? 0 : f.sign_bit();
    return (negative && (f.kind == k::ieee || f.kind == k::fn) ? f.sign_bit() : 0) | f.nan_code();
  }
  if (f.kind == k::exponent && (negative || v == 0)) return f.nan_code();
  const std::uint32_t sign = negative ? f.sign_bit() : 0;
  const double a = std::fabs(v);
  const std::uint32_t overflow = f.kind == k::ieee     ? sign | (f.max_finite_code() + 1)
                                 : f.kind == k::finite ? sign | f.max_finite_code()
                                 : f.kind == k::fn     ? sign | f.nan_code()
                                                       : f.nan_code();
  if (std::isinf(a)) return overflow;
  if (a == 0) return f.kind == k::fnuz ? 0 : sign;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1): leading bit at 2^(e-1)
  // Formats with subnormals bottom out at exponent 1 - bias; e8m0 at -bias.
  const int lowest = f.kind == k::exponent ? -f.bias : 1 - f.bias;
  const int exponent = std::max(e - 1, lowest);
  const double scaled = std::ldexp(a, f.mantissa_bits - exponent);
  const double rounded = std::nearbyint(scaled);  // default mode: ties to even
  std::uint64_t code;
  if (f.kind == k::exponent) {
    if (rounded < 1) return 0;  // below 2^-127: the smallest value
    code = std::uint64_t(exponent + f.bias) + std::uint64_t(rounded) - 1;
  } else {
    // `rounded` carries the implicit leading bit, so subnormals (exponent ==
    // lowest, no leading bit) and carries into the exponent both fall out.
    code = (std::uint64_t(exponent + f.bias - 1) << f.mantissa_bits) + std::uint64_t(rounded);
  }
  if (code > f.max_finite_code()) return overflow;
  if (code == 0 && f.kind == k::fnuz) return 0;
  return sign | std::uint32_t(code);
}

// One element as a value wide enough to hold any dtype exactly.
struct scalar {
  enum class kind : std::uint8_t { boolean, signed_int, unsigned_int, real, complex };
  kind k = kind::boolean;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double re = 0, im = 0;

  [[nodiscard]] static constexpr scalar from_bool(bool b) { return {kind::boolean, b, b, double(b), 0}; }
  [[nodiscard]] static constexpr scalar from_int(std::int64_t v) { return {kind::signed_int, v, std::uint64_t(v), double(v), 0}; }
  [[nodiscard]] static constexpr scalar from_uint(std::uint64_t v) { return {kind::unsigned_int, std::int64_t(v), v, double(v), 0}; }
  [[nodiscard]] static constexpr scalar from_real(double v) { return {kind::real, 0, 0, v, 0}; }
  [[nodiscard]] static constexpr scalar from_complex(double r, double i) { return {kind::complex, 0, 0, r, i}; }
};

namespace detail {
// Float to integer without undefined behaviour: NaN gives 0, values past the
// range saturate.
template <class I>
[[nodiscard]] constexpr I saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= double(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= double(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

template <class I>
[[nodiscard]] constexpr I to_integer(const scalar& s) {
  switch (s.k) {
    case scalar::kind::real:
    case scalar::kind::complex: return saturate<I>(s.re);
    case scalar::kind::unsigned_int: return static_cast<I>(s.u);
    default: return static_cast<I>(s.i);  // wraps modulo 2^bits, as C++ and NumPy do
  }
}

template <class F>
[[nodiscard]] constexpr F to_float(const scalar& s) {
  switch (s.k) {
    case scalar::kind::signed_int: return static_cast<F>(s.i);  // one rounding, not via double
    case scalar::kind::unsigned_int: return static_cast<F>(s.u);
    default: return static_cast<F>(s.re);
  }
}

template <class T>
[[nodiscard]] inline T load_as(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
inline void store_as(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Packed sub-byte element `index` counted from `base`, little bit order.
[[nodiscard]] inline std::uint32_t load_bits(const void* base, std::int64_t index, int bits) {
  const auto bit = std::uint64_t(index) * unsigned(bits);
  const auto* bytes = static_cast<const std::uint8_t*>(base) + bit / 8;
  std::uint32_t window = bytes[0];
  if (bit % 8 + unsigned(bits) > 8) window |= std::uint32_t(bytes[1]) << 8;
  return (window >> (bit % 8)) & ((1u << bits) - 1);
}

inline void store_bits(void* base, std::int64_t index, int bits, std::uint32_t code) {
  const auto bit = std::uint64_t(index) * unsigned(bits);
  auto* bytes = static_cast<std::uint8_t*>(base) + bit / 8;
  const std::uint32_t mask = ((1u << bits) - 1) << (bit % 8);
  const std::uint32_t value = (code << (bit % 8)) & mask;
  bytes[0] = std::uint8_t((bytes[0] & ~mask) | value);
  if (mask >> 8) bytes[1] = std::uint8_t((bytes[1] & ~(mask >> 8)) | (value >> 8));
}
}  // namespace detail

// Reads element `index` of a packed sub-byte array at `p`, or the element at
// `p` itself (index 0) for every other dtype. The dtype must be supported.
[[nodiscard]] inline scalar load(dtype t, const void* p, std::int64_t index = 0) {
  using detail::load_as;
  if (const auto* f = small_float_format(t)) {
    const std::uint32_t code = t.is_subbyte() ? detail::load_bits(p, index, t.bits)
                               : t.bits == 8  ? load_as<std::uint8_t>(p)
                                              : load_as<std::uint16_t>(p);
    return scalar::from_real(decode(*f, code));
  }
  switch (t.code) {
    case kDLBool: return scalar::from_bool(load_as<std::uint8_t>(p) != 0);
    case kDLInt:
      switch (t.bits) {
        case 8: return scalar::from_int(load_as<std::int8_t>(p));
        case 16: return scalar::from_int(load_as<std::int16_t>(p));
        case 32: return scalar::from_int(load_as<std::int32_t>(p));
        default: return scalar::from_int(load_as<std::int64_t>(p));
      }
    case kDLUInt:
      switch (t.bits) {
        case 8: return scalar::from_uint(load_as<std::uint8_t>(p));
        case 16: return scalar::from_uint(load_as<std::uint16_t>(p));
        case 32: return scalar::from_uint(load_as<std::uint32_t>(p));
        default: return scalar::from_uint(load_as<std::uint64_t>(p));
      }
    case kDLFloat: return scalar::from_real(t.bits == 32 ? load_as<float>(p) : load_as<double>(p));
    default: {  // complex
      if (t.bits == 64) {
        const auto c = load_as<std::complex<float>>(p);
        return scalar::from_complex(c.real(), c.imag());
      }
      const auto c = load_as<std::complex<double>>(p);
      return scalar::from_complex(c.real(), c.imag());
    }
  }
}

// Writes `s` converted to `t`: integers wrap, floats round to nearest even,
// float to integer saturates (NaN gives 0), complex to real keeps the real
// part (callers refuse that cast where the array API leaves it undefined).
inline void store(dtype t, void* p, const scalar& s, std::int64_t index = 0) {
  using detail::store_as;
  if (const auto* f = small_float_format(t)) {
    const std::uint32_t code = encode(*f, detail::to_float<double>(s));
    if (t.is_subbyte()) detail::store_bits(p, index, t.bits, code);
    else if (t.bits == 8) store_as(p, std::uint8_t(code));
    else store_as(p, std::uint16_t(code));
    return;
  }
  switch (t.code) {
    case kDLBool: {
      const bool b = s.k == scalar::kind::complex ? (s.re != 0 || s.im != 0)
                     : s.k == scalar::kind::real  ? s.re != 0
                                                  : s.u != 0;
      store_as(p, std::uint8_t(b));
      return;
    }
    case kDLInt:
      switch (t.bits) {
        case 8: return store_as(p, detail::to_integer<std::int8_t>(s));
        case 16: return store_as(p, detail::to_integer<std::int16_t>(s));
        case 32: return store_as(p, detail::to_integer<std::int32_t>(s));
        default: return store_as(p, detail::to_integer<std::int64_t>(s));
      }
    case kDLUInt:
      switch (t.bits) {
        case 8: return store_as(p, detail::to_integer<std::uint8_t>(s));
        case 16: return store_as(p, detail::to_integer<std::uint16_t>(s));
        case 32: return store_as(p, detail::to_integer<std::uint32_t>(s));
        default: return store_as(p, detail::to_integer<std::uint64_t>(s));
      }
    case kDLFloat:
      if (t.bits == 32) return store_as(p, detail::to_float<float>(s));
      return store_as(p, detail::to_float<double>(s));
    default:  // complex
      if (t.bits == 64)
        return store_as(p, std::complex<float>(detail::to_float<float>(s), float(s.im)));
      return store_as(p, std::complex<double>(detail::to_float<double>(s), s.im));
  }
}

// Whether `s` is represented in `t` without wrapping: what NumPy 2 demands of
// Python integers (it raises OverflowError otherwise). Always true for floats.
[[nodiscard]] constexpr bool fits(dtype t, const scalar& s) {
  if (s.k != scalar::kind::signed_int && s.k != scalar::kind::unsigned_int) return true;
  if (t.code != kDLInt && t.code != kDLUInt) return true;
  const bool negative = s.k == scalar::kind::signed_int && s.i < 0;
  if (t.code == kDLUInt) return !negative && (t.bits == 64 || s.u < (std::uint64_t(1) << t.bits));
  if (negative) return t.bits == 64 || s.i >= -(std::int64_t(1) << (t.bits - 1));
  return s.u <= std::uint64_t(std::numeric_limits<std::int64_t>::max() >> (64 - t.bits));
}

}  // namespace dlb
