// Reading and writing one element of any supported dtype through a canonical
// scalar, and the codec for the small float formats (float16, bfloat16, the
// float8/6/4 family), which follows ml_dtypes bit for bit.
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
  int exponent_bits;
  int mantissa_bits;
  int bias;
  specials kind;

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
inline constexpr float_format float16{5, 10, 15, float_format::specials::ieee};
inline constexpr float_format bfloat16{8, 7, 127, float_format::specials::ieee};
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
DLB_HOST_DEVICE inline float narrow(double v) {
#ifdef DLB_DETAIL_CPU_CONVERTS_NAN
  const float converted = float(v);
  std::uint32_t b;
  std::memcpy(&b, &converted, sizeof b);
  b |= std::isnan(converted) ? 0x00400000u : 0;
  float out;
  std::memcpy(&out, &b, sizeof out);
  return out;
#else
  return narrow_spelled_out(v);
#endif
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
    // or more: infinity, or NaN if the mantissa is not 0 (the shift gives 1
    // then). Testing the product itself keeps it from being moved under the
    // test; GCC does not vectorize a second test.
    const double top = detail::pow2((1 << f.exponent_bits) - 1 - f.bias);
    const std::uint32_t mantissa_mask = (1u << f.mantissa_bits) - 1;
    const std::uint64_t special =
        detail::bits_of(HUGE_VAL) | std::uint64_t((mantissa + mantissa_mask) >> f.mantissa_bits) << 51;
    return detail::from_bits((value < top ? detail::bits_of(value) : special) | sign);
  }
  const bool nan = f.kind == k::exponent ? magnitude == f.nan_code()
                   : f.kind == k::fnuz   ? code == f.sign_bit()
                                         : f.kind == k::fn && magnitude == f.magnitude_mask();
  return detail::from_bits((nan ? detail::quiet_nan_bits : detail::bits_of(value)) | sign);
}

// Rounds to nearest, ties to even, with the format's overflow rule: infinity
// where it has one, else NaN, except finite formats, which saturate.
//
// Every case is computed and one picked by masks and arithmetic, without a
// branch where the format is known at compile time, so that loops of it
// vectorize: GCC moves work under a branch it then may not undo.
[[nodiscard]] DLB_HOST_DEVICE inline std::uint32_t encode(const float_format& f, double v) {
  using k = float_format::specials;
  const std::uint64_t negative = detail::bits_of(v) >> 63;
  const std::uint64_t sign = negative << (f.exponent_bits + f.mantissa_bits) & f.sign_bit();
  // The biased exponent of |v|'s leading bit, raised to the format's lowest
  // (formats with subnormals bottom out at 1 - bias, e8m0 at -bias) and
  // lowered to 2^exponent_bits - bias, from where every value overflows:
  // infinity and NaN (exponent all ones) come out past the largest code
  // below as well. In 32 bits, which SSE2 compares and 64 bits not.
  const double a = std::fabs(v);
  const std::int32_t lowest = (f.kind == k::exponent ? -f.bias : 1 - f.bias) + 1023;
  const std::int32_t highest = (1 << f.exponent_bits) - f.bias + 1023;
  std::int32_t exponent = std::int32_t(detail::bits_of(a) >> 52);
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
  const std::uint64_t overflows = 0 - ((f.max_finite_code() - code) >> 63);
  const std::uint64_t overflow = f.kind == k::ieee     ? sign | (f.max_finite_code() + 1)
                                 : f.kind == k::finite ? sign | f.max_finite_code()
                                 : f.kind == k::fn     ? sign | f.nan_code()
                                                       : f.nan_code();
  // Formats with a signed NaN keep its sign (NumPy, ml_dtypes); fnuz and e8m0
  // have a single NaN code; float6/float4 have none, and ml_dtypes writes the
  // zero of opposite sign, which we match bit for bit.
  const std::uint64_t nan = f.kind == k::finite                    ? sign ^ f.sign_bit()
                            : f.kind == k::ieee || f.kind == k::fn ? sign | f.nan_code()
                                                                   : f.nan_code();
  const std::uint64_t special = std::isnan(v) ? nan : overflow;
  // fnuz has no -0; e8m0 no sign and no zero, NaN for both.
  const std::uint64_t value = f.kind == k::fnuz && code == 0 ? 0 : sign | code;
  const std::uint64_t out = (value & ~overflows) | (special & overflows);
  if (f.kind == k::exponent && (negative || v == 0)) return f.nan_code();
  return std::uint32_t(out);
}

// One element as a value wide enough to hold any dtype exactly.
struct scalar {
  enum class kind : std::uint8_t { boolean, signed_int, unsigned_int, real, complex };
  kind k = kind::boolean;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double re = 0, im = 0;

  [[nodiscard]] DLB_HOST_DEVICE static constexpr scalar from_bool(bool b) { return {kind::boolean, b, b, double(b), 0}; }
  [[nodiscard]] DLB_HOST_DEVICE static constexpr scalar from_int(std::int64_t v) {
    return {kind::signed_int, v, std::uint64_t(v), double(v), 0};
  }
  [[nodiscard]] DLB_HOST_DEVICE static constexpr scalar from_uint(std::uint64_t v) {
    return {kind::unsigned_int, std::int64_t(v), v, double(v), 0};
  }
  [[nodiscard]] DLB_HOST_DEVICE static constexpr scalar from_real(double v) { return {kind::real, 0, 0, v, 0}; }
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
      if constexpr (sizeof(F) == sizeof(float)) return narrow(s.re);
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
// cast kernels pack into sub-byte arrays themselves.
[[nodiscard]] DLB_HOST_DEVICE inline std::uint32_t small_float_code(const float_format& f, const scalar& s) {
  return encode(f, to_float<double>(s));
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
    return scalar::from_real(widen(v));
  } else if constexpr (std::is_same_v<T, double>) {
    return scalar::from_real(v);
  } else if constexpr (std::is_signed_v<T>) {
    return scalar::from_int(v);
  } else if constexpr (std::is_unsigned_v<T>) {
    return scalar::from_uint(v);
  } else {
    return scalar::from_real(decode(T::format(), v.value));
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
    return scalar::from_real(decode(f, code));
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
    default: {  // complex: as load()
      auto* parts = static_cast<unsigned char*>(p);
      if (t.bits == 64) {
        store_as(parts, detail::to_float<float>(s));
        return store_as(parts + 4, detail::narrow(s.im));
      }
      store_as(parts, detail::to_float<double>(s));
      return store_as(parts + 8, s.im);
    }
  }
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
