// Reading and writing one element of any supported dtype through a canonical
// scalar, and the codec for the small float formats (float16, bfloat16, the
// float8/6/4 family), which follows ml_dtypes bit for bit (NumPy for float16's
// NaN payloads).
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
#include <limits>
#include <type_traits>

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

// float <-> double as x86 SSE (cvtss2sd / cvtsd2ss) and ARM convert, spelled
// out for NaN: its sign and leading payload bits are kept and it comes out
// quiet. GPU conversions may return the canonical NaN instead, losing the sign
// that NumPy and ml_dtypes keep.
//
// The conversion runs for NaN too and is tested itself: GCC would move a
// conversion that the test does not need under a branch, and may not turn
// such a branch back into a select (a conversion may raise a floating-point
// exception), and loops vectorize only without one.
DLB_HOST_DEVICE inline double widen_spelled_out(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  const std::uint64_t nan = std::uint64_t(b >> 31) << 63 | quiet_nan_bits | std::uint64_t(b & 0x7fffffu) << 29;
  const double converted = double(v);
  return from_bits(std::isnan(converted) ? nan : bits_of(converted));
}
DLB_HOST_DEVICE inline float narrow_spelled_out(double v) {
  const std::uint64_t b = bits_of(v);
  const std::uint32_t nan = std::uint32_t(b >> 63) << 31 | 0x7fc00000u | std::uint32_t(b >> 29 & 0x7fffffu);
  const float converted = float(v);
  std::uint32_t out;
  std::memcpy(&out, &converted, sizeof out);
  out = std::isnan(converted) ? nan : out;
  float f;
  std::memcpy(&f, &out, sizeof f);
  return f;
}

// The conversions load() and store() use. x86-64 and AArch64 CPUs convert
// exactly as spelled out above (AArch64 with FPCR.DN clear, as operating
// systems leave it; GCC and clang fold constants the same way), in a third of
// the instructions in a vectorized loop. But compilers fold float(double(x))
// into x, where a signalling NaN x would stay signalling: narrow() sets the
// quiet bit itself. test_element checks all four against the CPU.
#if !defined(__CUDA_ARCH__) && (defined(__x86_64__) || defined(_M_X64) || defined(__aarch64__) || defined(_M_ARM64))
#define DLB_DETAIL_CPU_CONVERTS_NAN 1
#endif
DLB_HOST_DEVICE inline double widen(float v) {
#ifdef DLB_DETAIL_CPU_CONVERTS_NAN
  return double(v);
#else
  return widen_spelled_out(v);
#endif
}
// narrow() of a NaN read as signalling (scalar::signalling) clears the
// quiet bit again.
DLB_HOST_DEVICE inline float narrow(double v, bool signalling = false) {
#ifdef DLB_DETAIL_CPU_CONVERTS_NAN
  const float converted = float(v);
#else
  const float converted = narrow_spelled_out(v);
#endif
  std::uint32_t b;
  std::memcpy(&b, &converted, sizeof b);
  b |= std::isnan(converted) ? 0x00400000u : 0;
  b &= ~(std::uint32_t(signalling) << 22);
  float out;
  std::memcpy(&out, &b, sizeof out);
  return out;
}
#undef DLB_DETAIL_CPU_CONVERTS_NAN

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

namespace detail {
// An integer as a double that rounds to float32 and to every small float
// format as the integer itself does, once (one rounded to the nearest double
// would round twice above 2^53): below 2^53 the integer; from there on, the
// integer rounded to odd at a multiple of 2^11 (floored, then the last bit
// set where anything was dropped, in two's complement too), which is exact in
// a double and keeps at least 43 bits, enough for any format of 41 bits or
// fewer to round it as it would the integer (Boldo and Melquiond).
template <class I>
[[nodiscard]] DLB_HOST_DEVICE constexpr double rounding_double(I v) {
  constexpr std::uint64_t exact = std::uint64_t(1) << 53;
  const bool small = std::is_unsigned_v<I> ? std::uint64_t(v) < exact : std::uint64_t(v) + exact < 2 * exact;
  const I odd = (v & ~I(0x7ff)) | (((v & I(0x7ff)) + I(0x7ff)) & I(0x800));
  return double(small ? v : odd);
}
}  // namespace detail

// One element as a value wide enough to hold any dtype exactly.
struct scalar {
  enum class kind : std::uint8_t { boolean, signed_int, unsigned_int, real, complex };
  // Where a real was read from, where it matters: ml_dtypes writes a
  // bfloat16 NaN to float16 as the quiet NaN of its sign, NumPy a float32 or
  // float64 NaN with its payload's leading bits.
  enum class origin : std::uint8_t { other, bfloat16 };
  kind k = kind::boolean;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double re = 0, im = 0;
  origin from = origin::other;
  // re holds a NaN as the format's reference library widens it to float64:
  // NumPy float16's bit for bit, ml_dtypes bfloat16's and the CPU float32's
  // made quiet. `signalling` says that it was read as signalling: the
  // conversions that move payloads bit for bit (to and from float16,
  // bfloat16 to float32, float32 to float32) keep it so. `im_signalling`
  // says the same of im, for bcomplex32's parts (to complex64, as ml_dtypes).
  bool signalling = false;
  bool im_signalling = false;

  [[nodiscard]] DLB_HOST_DEVICE static constexpr scalar from_bool(bool b) { return {kind::boolean, b, b, double(b), 0}; }
  // An integer's re is detail::rounding_double(): the integer itself below
  // 2^53, what rounds to every narrower float as it does above.
  [[nodiscard]] DLB_HOST_DEVICE static constexpr scalar from_int(std::int64_t v) {
    return {kind::signed_int, v, std::uint64_t(v), detail::rounding_double(v), 0};
  }
  [[nodiscard]] DLB_HOST_DEVICE static constexpr scalar from_uint(std::uint64_t v) {
    return {kind::unsigned_int, std::int64_t(v), v, detail::rounding_double(v), 0};
  }
  [[nodiscard]] DLB_HOST_DEVICE static constexpr scalar from_real(double v, origin o = origin::other,
                                                                   bool signalling = false) {
    return {kind::real, 0, 0, v, 0, o, signalling};
  }
  [[nodiscard]] DLB_HOST_DEVICE static constexpr scalar from_complex(double r, double i) {
    return {kind::complex, 0, 0, r, i};
  }
};

namespace detail {
// numeric_limits' bounds as constants: device code may read a constexpr
// variable, not call numeric_limits' functions (host-only to nvcc).
template <class I>
inline constexpr I lowest = std::numeric_limits<I>::min();
template <class I>
inline constexpr I highest = std::numeric_limits<I>::max();

// Float to integer without undefined behaviour: NaN gives 0, values past the
// range saturate. Converted only strictly between lowest<I> and 2^bits (or
// 2^(bits-1)), where it is defined, then corrected, all without a branch, so
// that loops of it vectorize: both bounds are powers of two, exact in float
// too, so GCC compares float32 sources as floats.
template <class I>
[[nodiscard]] DLB_HOST_DEVICE constexpr I saturate(double v) {
  constexpr double lo = double(lowest<I>);
  constexpr double past = double(highest<I> / 2 + 1) * 2;
  const I inside = static_cast<I>(((v > lo) & (v < past)) ? v : 0.0);  // NaN: 0
  const I below = v <= lo ? lowest<I> : inside;
  return v >= past ? highest<I> : below;
}

template <class I>
[[nodiscard]] DLB_HOST_DEVICE constexpr I to_integer(const scalar& s) {
  switch (s.k) {
    case scalar::kind::real:
    case scalar::kind::complex: return saturate<I>(s.re);
    case scalar::kind::unsigned_int: return static_cast<I>(s.u);
    default: return static_cast<I>(s.i);  // wraps modulo 2^bits, as C++ and NumPy do
  }
}

template <class F>
[[nodiscard]] DLB_HOST_DEVICE inline F to_float(const scalar& s) {
  switch (s.k) {
    case scalar::kind::signed_int: return static_cast<F>(s.i);  // one rounding, not via double
    case scalar::kind::unsigned_int: return static_cast<F>(s.u);
    default:
      // NaN: see scalar::signalling.
      if constexpr (sizeof(F) == sizeof(float)) return narrow(s.re, s.signalling);
      else return s.re;
  }
}

// Any nonzero value is true (NaN too); a complex one if either part is. As a
// byte, 0 or 1, by arithmetic for a real: GCC does not vectorize comparisons
// of doubles into bytes (SSE2); (m | -m) >> 63 is 1 unless m is 0.
[[nodiscard]] DLB_HOST_DEVICE inline std::uint8_t to_bool(const scalar& s) {
  switch (s.k) {
    case scalar::kind::complex: return s.re != 0 || s.im != 0;
    case scalar::kind::real: {
      const std::uint64_t magnitude = bits_of(s.re) << 1;
      return std::uint8_t((magnitude | (0 - magnitude)) >> 63);
    }
    default: return s.u != 0;
  }
}

template <class T>
[[nodiscard]] DLB_HOST_DEVICE inline T load_as(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
DLB_HOST_DEVICE inline void store_as(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Packed sub-byte element `index` counted from `base`, little bit order.
[[nodiscard]] DLB_HOST_DEVICE inline std::uint32_t load_bits(const void* base, std::int64_t index, int bits) {
  const auto bit = std::uint64_t(index) * unsigned(bits);
  const auto* bytes = static_cast<const std::uint8_t*>(base) + bit / 8;
  std::uint32_t window = bytes[0];
  if (bit % 8 + unsigned(bits) > 8) window |= std::uint32_t(bytes[1]) << 8;
  return (window >> (bit % 8)) & ((1u << bits) - 1);
}

DLB_HOST_DEVICE inline void store_bits(void* base, std::int64_t index, int bits, std::uint32_t code) {
  const auto bit = std::uint64_t(index) * unsigned(bits);
  auto* bytes = static_cast<std::uint8_t*>(base) + bit / 8;
  const std::uint32_t mask = ((1u << bits) - 1) << (bit % 8);
  const std::uint32_t value = (code << (bit % 8)) & mask;
  bytes[0] = std::uint8_t((bytes[0] & ~mask) | value);
  if (mask >> 8) bytes[1] = std::uint8_t((bytes[1] & ~(mask >> 8)) | (value >> 8));
}

// The code `s` gets in format `f`: what store() writes, and what the CUDA
// cast kernels pack into sub-byte arrays themselves. One rounding from an
// integer too; a NaN with its payload as it was read (scalar::origin), but
// bfloat16's as the quiet NaN of its sign, as ml_dtypes writes it to float16.
[[nodiscard]] DLB_HOST_DEVICE inline std::uint32_t small_float_code(const float_format& f, const scalar& s) {
  const double v = s.re;
  const bool canonical = s.from == scalar::origin::bfloat16 && f.nan_payloads == float_format::payloads::kept;
  return encode(f, canonical && std::isnan(v) ? from_bits((bits_of(v) & sign_mask) | quiet_nan_bits) : v,
                s.signalling && !canonical);
}

// The types one element is read and written as where its C++ type would not
// do: a DLPack bool is a byte whose every nonzero value is true (a C++ bool
// may hold only 0 or 1), and float16 and bfloat16 are their 16-bit codes.
struct bool_byte {
  std::uint8_t value;
};
struct float16_code {
  std::uint16_t value;
  // A function, not a constant: device code may copy a formats:: constant but
  // not take its address.
  [[nodiscard]] DLB_HOST_DEVICE static constexpr float_format format() { return formats::float16; }
};
struct bfloat16_code {
  std::uint16_t value;
  [[nodiscard]] DLB_HOST_DEVICE static constexpr float_format format() { return formats::bfloat16; }
};

// A small float's code as a scalar (scalar::origin, scalar::signalling).
[[nodiscard]] DLB_HOST_DEVICE inline scalar read_small_float(const float_format& f, std::uint32_t code) {
  using p = float_format::payloads;
  const auto from = f.nan_payloads == p::read ? scalar::origin::bfloat16 : scalar::origin::other;
  return scalar::from_real(decode(f, code), from, f.nan_payloads != p::dropped && f.signalling(code));
}

// The two halves of every conversion, for one element type T (an integer,
// float, double or one of the types above): what load() makes of a T, and
// the T that store() makes of a scalar. load() and store() choose them by
// dtype at run time; convert() joins them for types known at compile time.
template <class T>
[[nodiscard]] DLB_HOST_DEVICE inline scalar to_scalar(T v) {
  if constexpr (std::is_same_v<T, bool_byte>) {
    // from_bool(v.value != 0), but with 0 or 1 as an int: GCC does not
    // vectorize a bool's conversion to floating point (SSE2).
    const std::int32_t b = v.value < 1 ? v.value : 1;
    return {scalar::kind::boolean, b, std::uint64_t(b), double(b), 0};
  } else if constexpr (std::is_same_v<T, float>) {
    std::uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    // Signalling: a NaN (above infinity) with the quiet bit clear, tested on
    // the bits (isnan() would not vectorize with the rest).
    return scalar::from_real(widen(v), scalar::origin::other, (b & 0x7fffffffu) - 0x7f800001u < 0x003fffffu);
  } else if constexpr (std::is_same_v<T, double>) {
    return scalar::from_real(v);
  } else if constexpr (std::is_integral_v<T> && sizeof(T) < 8) {
    // from_int() or from_uint(), with re converted from T: the compiler would
    // not always see that rounding_double() of one is exact, and loops with
    // the 64-bit conversions it then leaves do not vectorize.
    constexpr auto kind = std::is_signed_v<T> ? scalar::kind::signed_int : scalar::kind::unsigned_int;
    return {kind, v, std::uint64_t(v), double(v), 0};
  } else if constexpr (std::is_signed_v<T>) {
    return scalar::from_int(v);
  } else if constexpr (std::is_unsigned_v<T>) {
    return scalar::from_uint(v);
  } else {
    return read_small_float(T::format(), v.value);
  }
}

template <class T>
[[nodiscard]] DLB_HOST_DEVICE inline T from_scalar(const scalar& s) {
  if constexpr (std::is_same_v<T, bool_byte>) return {to_bool(s)};
  else if constexpr (std::is_floating_point_v<T>) return to_float<T>(s);
  else if constexpr (std::is_integral_v<T>) return to_integer<T>(s);
  else return {std::uint16_t(small_float_code(T::format(), s))};
}

// One element converted exactly as store(load()) converts it. With both types
// known the compiler folds the scalar away, leaving only the conversion.
template <class To, class From>
[[nodiscard]] DLB_HOST_DEVICE inline To convert(From v) {
  return from_scalar<To>(to_scalar(v));
}

template <class T>
[[nodiscard]] DLB_HOST_DEVICE inline scalar load_scalar(const void* p) {
  return to_scalar(load_as<T>(p));
}

template <class T>
DLB_HOST_DEVICE inline void store_scalar(void* p, const scalar& s) {
  store_as(p, from_scalar<T>(s));
}
}  // namespace detail

// Reads element `index` of a packed sub-byte array at `p`, or the element at
// `p` itself (index 0) for every other dtype. The dtype must be supported.
[[nodiscard]] DLB_HOST_DEVICE inline scalar load(dtype t, const void* p, std::int64_t index = 0) {
  using detail::load_as;
  using detail::load_scalar;
  if (float_format f{}; detail::format_of(t, f)) {
    const std::uint32_t code = t.is_subbyte() ? detail::load_bits(p, index, t.bits)
                               : t.bits == 8  ? load_as<std::uint8_t>(p)
                                              : load_as<std::uint16_t>(p);
    return detail::read_small_float(f, code);
  }
  switch (t.code) {
    case kDLBool: return load_scalar<detail::bool_byte>(p);
    case kDLInt:
      switch (t.bits) {
        case 8: return load_scalar<std::int8_t>(p);
        case 16: return load_scalar<std::int16_t>(p);
        case 32: return load_scalar<std::int32_t>(p);
        default: return load_scalar<std::int64_t>(p);
      }
    case kDLUInt:
      switch (t.bits) {
        case 8: return load_scalar<std::uint8_t>(p);
        case 16: return load_scalar<std::uint16_t>(p);
        case 32: return load_scalar<std::uint32_t>(p);
        default: return load_scalar<std::uint64_t>(p);
      }
    case kDLFloat: return t.bits == 32 ? load_scalar<float>(p) : load_scalar<double>(p);
    case kDLBcomplex: {  // the real part's bfloat16 code, then the imaginary part's
      const auto* parts = static_cast<const unsigned char*>(p);
      scalar s = load_scalar<detail::bfloat16_code>(parts);
      const scalar im = load_scalar<detail::bfloat16_code>(parts + 2);
      s.k = scalar::kind::complex;
      s.im = im.re;
      s.im_signalling = im.signalling;
      return s;
    }
    default: {  // complex: the real part, then the imaginary (std::complex is host-only)
      const auto* parts = static_cast<const unsigned char*>(p);
      if (t.bits == 64)
        return scalar::from_complex(detail::widen(load_as<float>(parts)), detail::widen(load_as<float>(parts + 4)));
      return scalar::from_complex(load_as<double>(parts), load_as<double>(parts + 8));
    }
  }
}

// Writes `s` converted to `t`: integers wrap, floats round to nearest even,
// float to integer saturates (NaN gives 0), complex to real keeps the real
// part (callers refuse that cast where the array API leaves it undefined).
DLB_HOST_DEVICE inline void store(dtype t, void* p, const scalar& s, std::int64_t index = 0) {
  using detail::store_as;
  using detail::store_scalar;
  if (float_format f{}; detail::format_of(t, f)) {
    const std::uint32_t code = detail::small_float_code(f, s);
    if (t.is_subbyte()) detail::store_bits(p, index, t.bits, code);
    else if (t.bits == 8) store_as(p, std::uint8_t(code));
    else store_as(p, std::uint16_t(code));
    return;
  }
  switch (t.code) {
    case kDLBool: return store_scalar<detail::bool_byte>(p, s);
    case kDLInt:
      switch (t.bits) {
        case 8: return store_scalar<std::int8_t>(p, s);
        case 16: return store_scalar<std::int16_t>(p, s);
        case 32: return store_scalar<std::int32_t>(p, s);
        default: return store_scalar<std::int64_t>(p, s);
      }
    case kDLUInt:
      switch (t.bits) {
        case 8: return store_scalar<std::uint8_t>(p, s);
        case 16: return store_scalar<std::uint16_t>(p, s);
        case 32: return store_scalar<std::uint32_t>(p, s);
        default: return store_scalar<std::uint64_t>(p, s);
      }
    case kDLFloat: return t.bits == 32 ? store_scalar<float>(p, s) : store_scalar<double>(p, s);
    case kDLBcomplex: {  // as load()
      auto* parts = static_cast<unsigned char*>(p);
      store_scalar<detail::bfloat16_code>(parts, s);
      return store_scalar<detail::bfloat16_code>(parts + 2, scalar::from_real(s.im));
    }
    default: {  // complex: as load()
      auto* parts = static_cast<unsigned char*>(p);
      if (t.bits == 64) {
        store_as(parts, detail::to_float<float>(s));
        return store_as(parts + 4, detail::narrow(s.im, s.im_signalling));
      }
      store_as(parts, detail::to_float<double>(s));
      return store_as(parts + 8, s.im);
    }
  }
}

// Writes `s` into the `count` elements of C-contiguous host memory of type
// `t` (packed for sub-byte types, their spare bits zero).
inline void fill(dtype t, void* data, std::int64_t count, const scalar& s) {
  if (count <= 0) return;
  if (t.is_subbyte()) {
    std::memset(data, 0, std::size_t(t.storage_bytes(std::uint64_t(count))));
    for (std::int64_t i = 0; i < count; ++i) store(t, data, s, i);
    return;
  }
  auto* base = static_cast<unsigned char*>(data);
  const std::size_t size = t.itemsize();
  store(t, base, s);  // once: the conversion may cost more than the copies
  for (std::int64_t i = 1; i < count; ++i) std::memcpy(base + std::size_t(i) * size, base, size);
}

// Whether `s` is represented in `t` without wrapping: what NumPy 2 demands of
// Python integers (it raises OverflowError otherwise). Always true for floats.
[[nodiscard]] DLB_HOST_DEVICE constexpr bool fits(dtype t, const scalar& s) {
  if (s.k != scalar::kind::signed_int && s.k != scalar::kind::unsigned_int) return true;
  if (t.code != kDLInt && t.code != kDLUInt) return true;
  const bool negative = s.k == scalar::kind::signed_int && s.i < 0;
  if (t.code == kDLUInt) return !negative && (t.bits == 64 || s.u < (std::uint64_t(1) << t.bits));
  if (negative) return t.bits == 64 || s.i >= -(std::int64_t(1) << (t.bits - 1));
  return s.u <= std::uint64_t(detail::highest<std::int64_t> >> (64 - t.bits));
}

}  // namespace dlb
