// Reading and writing one element of any supported dtype through a canonical
// scalar: load() and store(), which choose the element's C++ type by dtype at
// run time (dispatch.hpp), and the typed halves of every conversion
// (to_scalar / from_scalar) that convert.hpp's loops join at compile time.
// The small float formats' codec is small_float.hpp's.
//
// All of it but fill() also runs in CUDA device code, with the same results
// bit for bit (the CUDA cast kernels use it).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "dlbridge/config.hpp"
#include "dlbridge/dispatch.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/small_float.hpp"

namespace dlb {

namespace detail {
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

// A small float's code as a scalar (scalar::origin, scalar::signalling).
[[nodiscard]] DLB_HOST_DEVICE inline scalar read_small_float(const float_format& f, std::uint32_t code) {
  using p = float_format::payloads;
  const auto from = f.nan_payloads == p::read ? scalar::origin::bfloat16 : scalar::origin::other;
  return scalar::from_real(decode(f, code), from, f.nan_payloads != p::dropped && f.signalling(code));
}

// Whether to_scalar and from_scalar below take T: the element types of
// visit_dtype but the complex ones, float8_code and packed_code, whose
// conversions need the dtype too (load() and store() handle them).
template <class T>
inline constexpr bool converts_by_type = std::is_arithmetic_v<T> || std::is_same_v<T, bool_byte> ||
                                         std::is_same_v<T, float16_code> || std::is_same_v<T, bfloat16_code>;

// The two halves of every conversion, for one element type T
// (converts_by_type): what load() makes of a T, and the T that store() makes
// of a scalar. load() and store() choose them by dtype at run time
// (visit_dtype); convert() joins them for types known at compile time.
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
// `p` itself (index 0) for every other dtype. A dtype that is_supported()
// refuses reads nothing and gives NaN (callers check dtypes first; this keeps
// a slip from reading past the element).
[[nodiscard]] DLB_HOST_DEVICE inline scalar load(dtype t, const void* p, std::int64_t index = 0) {
  return detail::visit_dtype(t, [&](auto tag) -> scalar {
    using T = typename decltype(tag)::type;
    using detail::load_as;
    const auto* bytes = static_cast<const unsigned char*>(p);  // complex parts
    if constexpr (std::is_void_v<T>) {
      return scalar::from_real(detail::from_bits(detail::quiet_nan_bits));
    } else if constexpr (std::is_same_v<T, detail::packed_code> || std::is_same_v<T, detail::float8_code>) {
      float_format f{};
      detail::format_of(t, f);
      const std::uint32_t code =
          std::is_same_v<T, detail::packed_code> ? detail::load_bits(p, index, t.bits) : load_as<std::uint8_t>(p);
      return detail::read_small_float(f, code);
    } else if constexpr (std::is_same_v<T, detail::complex_parts<detail::bfloat16_code>>) {
      // The real part's bfloat16 code, then the imaginary part's.
      scalar s = detail::load_scalar<detail::bfloat16_code>(bytes);
      const scalar im = detail::load_scalar<detail::bfloat16_code>(bytes + 2);
      s.k = scalar::kind::complex;
      s.im = im.re;
      s.im_signalling = im.signalling;
      return s;
    } else if constexpr (std::is_same_v<T, detail::complex_parts<float>>) {
      return scalar::from_complex(detail::widen(load_as<float>(bytes)), detail::widen(load_as<float>(bytes + 4)));
    } else if constexpr (std::is_same_v<T, detail::complex_parts<double>>) {
      return scalar::from_complex(load_as<double>(bytes), load_as<double>(bytes + 8));
    } else {
      return detail::load_scalar<T>(p);
    }
  });
}

// Writes `s` converted to `t`: integers wrap, floats round to nearest even,
// float to integer saturates (NaN gives 0), complex to real keeps the real
// part (callers refuse that cast where the array API leaves it undefined). A
// dtype that is_supported() refuses writes nothing.
DLB_HOST_DEVICE inline void store(dtype t, void* p, const scalar& s, std::int64_t index = 0) {
  detail::visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using detail::store_as;
    auto* bytes = static_cast<unsigned char*>(p);  // complex parts
    if constexpr (std::is_same_v<T, detail::packed_code> || std::is_same_v<T, detail::float8_code>) {
      float_format f{};
      detail::format_of(t, f);
      const std::uint32_t code = detail::small_float_code(f, s);
      if constexpr (std::is_same_v<T, detail::packed_code>) detail::store_bits(p, index, t.bits, code);
      else store_as(p, std::uint8_t(code));
    } else if constexpr (std::is_same_v<T, detail::complex_parts<detail::bfloat16_code>>) {
      detail::store_scalar<detail::bfloat16_code>(bytes, s);
      detail::store_scalar<detail::bfloat16_code>(bytes + 2, scalar::from_real(s.im));
    } else if constexpr (std::is_same_v<T, detail::complex_parts<float>>) {
      store_as(bytes, detail::to_float<float>(s));
      store_as(bytes + 4, detail::narrow(s.im, s.im_signalling));
    } else if constexpr (std::is_same_v<T, detail::complex_parts<double>>) {
      store_as(bytes, detail::to_float<double>(s));
      store_as(bytes + 8, s.im);
    } else if constexpr (!std::is_void_v<T>) {
      detail::store_scalar<T>(p, s);
    }
  });
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
