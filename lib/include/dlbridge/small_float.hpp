// The codec of the small float formats (float16, bfloat16, the float8/6/4
// family): each format's layout and special values, and decode / encode
// between a format's code and a double, which follow ml_dtypes bit for bit
// (NumPy for float16's NaN payloads).
//
// All of it but small_float_format() also runs in CUDA device code, with the
// same results bit for bit (the CUDA cast kernels use it). Device code may
// copy a formats:: constant but not take its address, which that function
// returns.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "dlbridge/config.hpp"
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
  // What becomes of a NaN's payload (its mantissa bits, the quiet bit among
  // them) in conversions, as the format's reference library has it.
  enum class payloads : std::uint8_t {
    dropped,  // decoded and encoded as the quiet NaN of its sign (ml_dtypes' float8)
    read,     // decoded quiet with it, as ml_dtypes widens bfloat16 to float64
              // (through float32 and the CPU); encoded as the quiet NaN of its sign
    kept,     // decoded and encoded bit for bit, from its leading bits (NumPy's float16)
  };
  int exponent_bits;
  int mantissa_bits;
  int bias;
  specials kind;
  payloads nan_payloads = payloads::dropped;

  [[nodiscard]] DLB_HOST_DEVICE constexpr int width() const {
    return (kind == specials::exponent ? 0 : 1) + exponent_bits + mantissa_bits;
  }
  [[nodiscard]] DLB_HOST_DEVICE constexpr std::uint32_t sign_bit() const {
    return kind == specials::exponent ? 0 : 1u << (exponent_bits + mantissa_bits);
  }
  [[nodiscard]] DLB_HOST_DEVICE constexpr std::uint32_t magnitude_mask() const {
    return (1u << (exponent_bits + mantissa_bits)) - 1;
  }
  [[nodiscard]] DLB_HOST_DEVICE constexpr std::uint32_t nan_code() const {
    switch (kind) {
      case specials::ieee: return magnitude_mask() & ~((1u << (mantissa_bits - 1)) - 1);
      case specials::fn: return magnitude_mask();
      case specials::fnuz: return sign_bit();
      case specials::finite: return sign_bit();  // no NaN: see encode()
      case specials::exponent: return magnitude_mask();
    }
    return 0;
  }
  // Whether `code` is a signalling NaN: an ieee format's with the leading
  // mantissa bit clear.
  [[nodiscard]] DLB_HOST_DEVICE constexpr bool signalling(std::uint32_t code) const {
    const std::uint32_t infinity = max_finite_code() + 1;
    return kind == specials::ieee && (code & magnitude_mask()) - (infinity + 1) < (1u << (mantissa_bits - 1)) - 1;
  }
  [[nodiscard]] DLB_HOST_DEVICE constexpr std::uint32_t max_finite_code() const {
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
inline constexpr float_format float16{5, 10, 15, float_format::specials::ieee, float_format::payloads::kept};
inline constexpr float_format bfloat16{8, 7, 127, float_format::specials::ieee, float_format::payloads::read};
inline constexpr float_format float8_e3m4{3, 4, 3, float_format::specials::ieee};
inline constexpr float_format float8_e4m3{4, 3, 7, float_format::specials::ieee};
inline constexpr float_format float8_e4m3b11fnuz{4, 3, 11, float_format::specials::fnuz};
inline constexpr float_format float8_e4m3fn{4, 3, 7, float_format::specials::fn};
inline constexpr float_format float8_e4m3fnuz{4, 3, 8, float_format::specials::fnuz};
inline constexpr float_format float8_e5m2{5, 2, 15, float_format::specials::ieee};
inline constexpr float_format float8_e5m2fnuz{5, 2, 16, float_format::specials::fnuz};
inline constexpr float_format float8_e8m0fnu{8, 0, 127, float_format::specials::exponent};
inline constexpr float_format float6_e2m3fn{2, 3, 1, float_format::specials::finite};
inline constexpr float_format float6_e3m2fn{3, 2, 3, float_format::specials::finite};
inline constexpr float_format float4_e2m1fn{2, 1, 1, float_format::specials::finite};
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

namespace detail {
// small_float_format() as a copy into `f` (false for every other dtype), for
// load() and store(), which device code calls: it can read the formats::
// constants but not take their addresses. test_element checks the two agree.
DLB_HOST_DEVICE constexpr bool format_of(dtype t, float_format& f) {
  if (t.lanes != 1) return false;
  switch (t.code) {
    case kDLFloat: if (t.bits != 16) return false; f = formats::float16; return true;
    case kDLBfloat: if (t.bits != 16) return false; f = formats::bfloat16; return true;
    case kDLFloat8_e3m4: f = formats::float8_e3m4; return true;
    case kDLFloat8_e4m3: f = formats::float8_e4m3; return true;
    case kDLFloat8_e4m3b11fnuz: f = formats::float8_e4m3b11fnuz; return true;
    case kDLFloat8_e4m3fn: f = formats::float8_e4m3fn; return true;
    case kDLFloat8_e4m3fnuz: f = formats::float8_e4m3fnuz; return true;
    case kDLFloat8_e5m2: f = formats::float8_e5m2; return true;
    case kDLFloat8_e5m2fnuz: f = formats::float8_e5m2fnuz; return true;
    case kDLFloat8_e8m0fnu: f = formats::float8_e8m0fnu; return true;
    case kDLFloat6_e2m3fn: f = formats::float6_e2m3fn; return true;
    case kDLFloat6_e3m2fn: f = formats::float6_e3m2fn; return true;
    case kDLFloat4_e2m1fn: f = formats::float4_e2m1fn; return true;
    default: return false;
  }
}

// A double's bits, and back. memcpy, not std::bit_cast: the latter is a
// host-only constexpr function to nvcc.
DLB_HOST_DEVICE inline std::uint64_t bits_of(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
DLB_HOST_DEVICE inline double from_bits(std::uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

inline constexpr std::uint64_t sign_mask = std::uint64_t(1) << 63;
inline constexpr std::uint64_t quiet_nan_bits = 0x7ff8000000000000ULL;

// 2^e for -1022 <= e <= 1023, the normal range: std::ldexp is a library call.
[[nodiscard]] DLB_HOST_DEVICE inline double pow2(int e) {
  return from_bits(std::uint64_t(std::uint32_t(e + 1023)) << 52);
}

// a >= 0 (or NaN) in units of 2^(e - 1075), for a biased double exponent e
// in [53, 2046], rounded in the current rounding mode (to nearest, ties to
// even, by default) as std::nearbyint(a / 2^(e - 1075)) would, which is a
// library call on x86-64 below SSE4.1. Adding 2^(e - 1023) leaves exactly
// those units in the low bits of the sum while a is below 2^(e - 1023); past
// that, and for NaN, the result is 2^52 or more. Not where arithmetic may
// carry excess precision (x87) or be reassociated (-ffast-math), which would
// undo the addition.
[[nodiscard]] DLB_HOST_DEVICE inline std::uint64_t round_to_units(double a, std::uint64_t e) {
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0 && !defined(__FAST_MATH__)
  const double step = from_bits(e << 52);
  return bits_of(a + step) - bits_of(step);
#else
  constexpr double past = 4503599627370496.0;  // 2^52
  const double units = a * from_bits((2098 - e) << 52);
  return std::uint64_t(std::nearbyint(units < past ? units : past));
#endif
}
}  // namespace detail

// Written without branches, so that loops of it vectorize: GCC moves work
// under a branch it then may not undo.
[[nodiscard]] DLB_HOST_DEVICE inline double decode(const float_format& f, std::uint32_t code) {
  using k = float_format::specials;
  const std::uint32_t magnitude = code & f.magnitude_mask();
  const std::uint32_t exponent = magnitude >> f.mantissa_bits;
  const std::uint32_t mantissa = magnitude & ((1u << f.mantissa_bits) - 1);
  // One exact product: subnormals (exponent 0) have no implicit leading bit
  // and the exponent of 1; e8m0 has neither subnormals nor a mantissa.
  const std::uint32_t normal = exponent != 0 || f.kind == k::exponent;
  const double significand = double(std::int32_t(mantissa | normal << f.mantissa_bits));
  const double value = significand * detail::pow2(int(exponent | (1 - normal)) - f.bias - f.mantissa_bits);
  // The code's sign bit where a double has it; NaN keeps it too, as NumPy and
  // ml_dtypes do.
  const std::uint64_t sign = std::uint64_t(code & f.sign_bit()) << (63 - f.exponent_bits - f.mantissa_bits);
  if (f.kind == k::ieee) {
    // The all-ones exponent comes out above as 2^(2^exponent_bits - 1 - bias)
    // or more: infinity, or NaN if the mantissa is not 0, quiet (the shift
    // gives 1 then) or not and with the mantissa as its payload or not
    // (float_format::payloads). Testing the product itself keeps it from
    // being moved under the test; GCC does not vectorize a second test.
    using p = float_format::payloads;
    const double top = detail::pow2((1 << f.exponent_bits) - 1 - f.bias);
    const std::uint32_t mantissa_mask = (1u << f.mantissa_bits) - 1;
    const std::uint32_t quiet = (mantissa + mantissa_mask) >> f.mantissa_bits << (f.mantissa_bits - 1);
    const std::uint32_t nan = f.nan_payloads == p::dropped ? quiet
                              : f.nan_payloads == p::read  ? quiet | mantissa
                                                           : mantissa;
    const std::uint64_t special = detail::bits_of(HUGE_VAL) | std::uint64_t(nan) << (52 - f.mantissa_bits);
    return detail::from_bits((value < top ? detail::bits_of(value) : special) | sign);
  }
  const bool nan = f.kind == k::exponent ? magnitude == f.nan_code()
                   : f.kind == k::fnuz   ? code == f.sign_bit()
                                         : f.kind == k::fn && magnitude == f.magnitude_mask();
  return detail::from_bits((nan ? detail::quiet_nan_bits : detail::bits_of(value)) | sign);
}

// Rounds to nearest, ties to even, with the format's overflow rule: infinity
// where it has one, else NaN, except finite formats, which saturate.
// `signalling`: v is a NaN read as signalling and held quiet
// (scalar::signalling), which a format that keeps payloads writes signalling.
//
// Every case is computed and one picked by masks and arithmetic, without a
// branch where the format is known at compile time, so that loops of it
// vectorize: GCC moves work under a branch it then may not undo.
[[nodiscard]] DLB_HOST_DEVICE inline std::uint32_t encode(const float_format& f, double v, bool signalling = false) {
  using k = float_format::specials;
  // The sign and a NaN's payload come from the high half: a shuffle, where
  // 64-bit shifts of their own would cost more.
  const std::uint32_t high = std::uint32_t(detail::bits_of(v) >> 32);
  const std::uint32_t negative = high >> 31;
  const std::uint32_t sign = negative << (f.exponent_bits + f.mantissa_bits) & f.sign_bit();
  // The biased exponent of |v|'s leading bit, raised to the format's lowest
  // (formats with subnormals bottom out at 1 - bias, e8m0 at -bias) and
  // lowered to 2^exponent_bits - bias, from where every value overflows:
  // infinity and NaN (exponent all ones) come out past the largest code
  // below as well. In 32 bits, which SSE2 compares and 64 bits not.
  const double a = std::fabs(v);
  const std::int32_t lowest = (f.kind == k::exponent ? -f.bias : 1 - f.bias) + 1023;
  const std::int32_t highest = (1 << f.exponent_bits) - f.bias + 1023;
  std::int32_t exponent = std::int32_t(high >> 20 & 0x7ff);
  exponent = exponent > lowest ? exponent : lowest;  // std::max is host-only to nvcc
  exponent = exponent < highest ? exponent : highest;
  // a in units of the format's last mantissa bit at that exponent, rounded:
  // with the implicit leading bit, so subnormals (no leading bit), zeros and
  // carries into the exponent all fall out below.
  const std::uint64_t rounded = detail::round_to_units(a, std::uint64_t(exponent + 52 - f.mantissa_bits));
  const std::uint64_t field = std::uint64_t(exponent + f.bias - 1024);
  const std::uint64_t code = f.kind != k::exponent ? (field << f.mantissa_bits) + rounded
                             : rounded == 0        ? 0  // below 2^-127: the smallest value
                                                   : field + rounded;
  const std::uint32_t overflows = std::uint32_t(0 - ((f.max_finite_code() - code) >> 63));
  const std::uint32_t overflow = f.kind == k::ieee     ? sign | (f.max_finite_code() + 1)
                                 : f.kind == k::finite ? sign | f.max_finite_code()
                                 : f.kind == k::fn     ? sign | f.nan_code()
                                                       : f.nan_code();
  // Formats with a signed NaN keep its sign (NumPy, ml_dtypes), float16 the
  // payload's leading bits as well, signalling again where it was read so
  // (NumPy; made nonzero, so that it stays NaN); fnuz and e8m0 have a single
  // NaN code; float6/float4 have none, and ml_dtypes writes the zero of
  // opposite sign, which we match bit for bit.
  const std::uint32_t mantissa_mask = (1u << f.mantissa_bits) - 1;
  const std::uint32_t quiet = (0u - std::uint32_t(signalling)) & (mantissa_mask + 1) >> 1;
  const std::uint32_t payload = high >> (20 - f.mantissa_bits) & mantissa_mask & ~quiet;
  const std::uint32_t nan = f.kind == k::finite                              ? sign ^ f.sign_bit()
                            : f.nan_payloads == float_format::payloads::kept ? overflow | payload | (payload == 0)
                            : f.kind == k::ieee || f.kind == k::fn           ? sign | f.nan_code()
                                                                             : f.nan_code();
  const std::uint32_t special = std::isnan(v) ? nan : overflow;
  // fnuz has no -0; e8m0 no sign and no zero, NaN for both.
  const std::uint32_t value = f.kind == k::fnuz && code == 0 ? 0 : sign | std::uint32_t(code);
  if (f.kind == k::exponent && (negative || v == 0)) return f.nan_code();
  return (value & ~overflows) | (special & overflows);
}

}  // namespace dlb
