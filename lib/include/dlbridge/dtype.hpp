// Element types: the DLPack (code, bits, lanes) triple and its spellings: its
// name, the NumPy typestr of the array interfaces, the buffer-protocol format.
#pragma once

#include <array>
#include <complex>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "dlbridge/config.hpp"
#include "dlbridge/dlpack.hpp"

namespace dlb {

struct dtype {
  std::uint8_t code = kDLFloat;
  std::uint8_t bits = 32;
  std::uint16_t lanes = 1;

  constexpr dtype() = default;
  constexpr dtype(std::uint8_t c, std::uint8_t b, std::uint16_t l = 1) : code(c), bits(b), lanes(l) {}
  constexpr dtype(DLDataType t) : code(t.code), bits(t.bits), lanes(t.lanes) {}  // NOLINT
  constexpr operator DLDataType() const { return {code, bits, lanes}; }         // NOLINT
  friend constexpr bool operator==(dtype, dtype) = default;

  // Packed sub-byte types (float6, float4) store element i at bit i * bits.
  [[nodiscard]] DLB_HOST_DEVICE constexpr bool is_subbyte() const { return bits * lanes < 8; }
  // Bytes one element occupies; 1 for packed sub-byte types.
  [[nodiscard]] constexpr std::size_t itemsize() const {
    return is_subbyte() ? 1 : std::size_t(bits) * lanes / 8;
  }
  // Bytes that `count` contiguous elements occupy (packed for sub-byte types).
  // Packed sizes never form count * bits, which passes 64 bits before the bytes do.
  [[nodiscard]] constexpr std::uint64_t storage_bytes(std::uint64_t count) const {
    const std::uint64_t width = std::uint64_t(bits) * lanes;
    return is_subbyte() ? count / 8 * width + (count % 8 * width + 7) / 8 : count * itemsize();
  }
};

// Every dtype dlbridge supports, with its name, its NumPy typestr and its
// buffer-protocol format (PEP 3118, standard sizes). Each is empty where that
// protocol has no spelling (NumPy's ml_dtypes types are void 'V' there).
struct dtype_info {
  dtype type;
  std::string_view name;
  std::string_view typestr;
  std::string_view buffer_format;
};

inline constexpr std::array<dtype_info, 27> dtype_table{{
    {{kDLBool, 8}, "bool", "|b1", "?"},
    {{kDLInt, 8}, "int8", "|i1", "b"},
    {{kDLInt, 16}, "int16", "<i2", "h"},
    {{kDLInt, 32}, "int32", "<i4", "i"},
    {{kDLInt, 64}, "int64", "<i8", "q"},
    {{kDLUInt, 8}, "uint8", "|u1", "B"},
    {{kDLUInt, 16}, "uint16", "<u2", "H"},
    {{kDLUInt, 32}, "uint32", "<u4", "I"},
    {{kDLUInt, 64}, "uint64", "<u8", "Q"},
    {{kDLFloat, 16}, "float16", "<f2", "e"},
    {{kDLFloat, 32}, "float32", "<f4", "f"},
    {{kDLFloat, 64}, "float64", "<f8", "d"},
    {{kDLBfloat, 16}, "bfloat16", "", ""},
    {{kDLComplex, 64}, "complex64", "<c8", "Zf"},
    {{kDLComplex, 128}, "complex128", "<c16", "Zd"},
    {{kDLFloat8_e3m4, 8}, "float8_e3m4", "", ""},
    {{kDLFloat8_e4m3, 8}, "float8_e4m3", "", ""},
    {{kDLFloat8_e4m3b11fnuz, 8}, "float8_e4m3b11fnuz", "", ""},
    {{kDLFloat8_e4m3fn, 8}, "float8_e4m3fn", "", ""},
    {{kDLFloat8_e4m3fnuz, 8}, "float8_e4m3fnuz", "", ""},
    {{kDLFloat8_e5m2, 8}, "float8_e5m2", "", ""},
    {{kDLFloat8_e5m2fnuz, 8}, "float8_e5m2fnuz", "", ""},
    {{kDLFloat8_e8m0fnu, 8}, "float8_e8m0fnu", "", ""},
    {{kDLFloat6_e2m3fn, 6}, "float6_e2m3fn", "", ""},
    {{kDLFloat6_e3m2fn, 6}, "float6_e3m2fn", "", ""},
    {{kDLFloat4_e2m1fn, 4}, "float4_e2m1fn", "", ""},
    // ml_dtypes' name; NumPy itself has no such type.
    {{kDLBcomplex, 32}, "bcomplex32", "", ""},
}};

[[nodiscard]] constexpr const dtype_info* find_dtype(dtype t) {
  for (const auto& info : dtype_table)
    if (info.type == t) return &info;
  return nullptr;
}

// Whether `code` is any DLPack type code (supported or not): DLPack 1.3's and
// kDLBcomplex.
[[nodiscard]] constexpr bool is_dlpack_code(std::uint8_t code) { return code <= kDLBcomplex; }

// Whether elements of `t` are complex numbers (kDLComplex, kDLBcomplex).
[[nodiscard]] DLB_HOST_DEVICE constexpr bool is_complex(dtype t) {
  return t.code == kDLComplex || t.code == kDLBcomplex;
}

namespace detail {
// The table as one 256-bit set of widths per type code: every import asks
// is_supported, and a scan of the table costs more than the rest of it.
inline constexpr auto supported_widths = [] {
  std::array<std::array<std::uint64_t, 4>, kDLBcomplex + 1> sets{};
  for (const auto& info : dtype_table)
    sets[info.type.code][info.type.bits / 64] |= std::uint64_t(1) << (info.type.bits % 64);
  return sets;
}();
}  // namespace detail

[[nodiscard]] constexpr bool is_supported(dtype t) {
  return t.lanes == 1 && is_dlpack_code(t.code) &&
         ((detail::supported_widths[t.code][t.bits / 64] >> (t.bits % 64)) & 1) != 0;
}

[[nodiscard]] constexpr std::string_view name(dtype t) {
  const auto* info = find_dtype(t);
  return info ? info->name : std::string_view{};
}

[[nodiscard]] constexpr std::optional<dtype> dtype_from_name(std::string_view s) {
  for (const auto& info : dtype_table)
    if (info.name == s) return info.type;
  return std::nullopt;
}

// Parses a NumPy typestr: an optional byte order ('<', '=', '|', or '>' for
// one-byte types), a kind and a size in bytes ("<f4", "|b1", "f4"), as
// np.dtype reads them. Big-endian data and kinds NumPy cannot describe
// natively give nullopt.
[[nodiscard]] constexpr std::optional<dtype> dtype_from_typestr(std::string_view s) {
  const char order = s.empty() ? '\0' : s[0];
  if (order == '<' || order == '=' || order == '|' || order == '>') s.remove_prefix(1);
  if (s.size() < 2) return std::nullopt;
  unsigned bytes = 0;
  for (char c : s.substr(1)) {
    if (c < '0' || c > '9' || bytes > 1000) return std::nullopt;
    bytes = bytes * 10 + unsigned(c - '0');
  }
  if (order == '>' && bytes > 1) return std::nullopt;  // big-endian data
  std::uint8_t code = 0;
  switch (s[0]) {
    case 'b': code = kDLBool; break;
    case 'i': code = kDLInt; break;
    case 'u': code = kDLUInt; break;
    case 'f': code = kDLFloat; break;
    case 'c': code = kDLComplex; break;
    default: return std::nullopt;
  }
  const dtype t{code, std::uint8_t(bytes * 8)};
  if (bytes == 0 || bytes > 16 || !is_supported(t)) return std::nullopt;
  return t;
}

// typestr for the array interfaces; empty when NumPy has no native spelling.
[[nodiscard]] constexpr std::string_view typestr(dtype t) {
  const auto* info = find_dtype(t);
  return info ? info->typestr : std::string_view{};
}

// The buffer-protocol format; empty when the protocol has no spelling.
[[nodiscard]] constexpr std::string_view buffer_format(dtype t) {
  const auto* info = find_dtype(t);
  return info ? info->buffer_format : std::string_view{};
}

namespace detail {
// A binary floating-point format's precision (significand bits, the
// implicit one included) and exponent range (its largest exponent): one
// format holds every value of another when it has at least as much of both.
struct float_precision {
  int digits = 0;
  int max_exponent = 0;
};

// The real part's format of a real or complex dtype; digits 0 where the
// dtype is not a standard float (the float8, float6 and float4 formats take
// no conversion but to themselves).
[[nodiscard]] constexpr float_precision precision_of(dtype t) {
  const int bits = is_complex(t) ? t.bits / 2 : t.bits;
  if ((t.code == kDLBfloat || t.code == kDLBcomplex) && bits == 16) return {8, 128};
  if (t.code != kDLFloat && t.code != kDLComplex) return {};
  switch (bits) {
    case 16: return {11, 16};
    case 32: return {24, 128};
    case 64: return {53, 1024};
    default: return {};
  }
}
}  // namespace detail

// Whether every value of dtype `from` is exactly a value of dtype `to`: the
// rule of opt-in conversions (dlb::python::copy_if_needed), which never
// narrow. NumPy's can_cast(from, to, "safe"), except that a float must hold
// an integer exactly: int64 and uint64 go to no float (NumPy lets them reach
// float64, which holds 53 bits). bool goes to every number; an integer to a
// wider integer (unsigned to a wider signed one, signed never to unsigned)
// and to a float whose significand holds it (int8 and uint8 to float16,
// int16 and uint16 to float32, int32 and uint32 to float64); a float to a
// wider float; a real to a complex whose parts hold it; nothing to bool.
[[nodiscard]] constexpr bool can_cast_safely(dtype from, dtype to) {
  if (from == to) return true;
  if (!is_supported(from) || !is_supported(to)) return false;
  const auto target = detail::precision_of(to);
  const bool to_integer = to.code == kDLInt || to.code == kDLUInt;
  if (from.code == kDLBool) return to_integer || target.digits > 0;
  if (from.code == kDLInt || from.code == kDLUInt) {
    const bool is_signed = from.code == kDLInt;
    if (to.code == kDLInt) return to.bits > from.bits || (is_signed && to.bits == from.bits);
    if (to.code == kDLUInt) return !is_signed && to.bits >= from.bits;
    return target.digits >= from.bits;  // (the sign bit never decides it for the supported widths)
  }
  const auto source = detail::precision_of(from);
  if (source.digits == 0 || target.digits == 0) return false;
  if (is_complex(from) && !is_complex(to)) return false;  // the imaginary part
  return target.digits >= source.digits && target.max_exponent >= source.max_exponent;
}

// The names of a set of dtypes, as an error offers them: "float32",
// "float32 or float64", "int8, int16 or int32".
[[nodiscard]] inline std::string dtype_choices(std::span<const dtype> types) {
  std::string out;
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (i > 0) out += i + 1 == types.size() ? " or " : ", ";
    const std::string_view n = name(types[i]);
    out += n.empty() ? "an unsupported dtype" : n;
  }
  return out;
}

namespace detail {
// The C++ element types with a DLPack dtype: the one list, read by dtype_of
// and by has_dtype (a view's element concept).
template <class T> struct element_dtype {};
template <std::uint8_t Code, std::uint8_t Bits> struct known_dtype {
  static constexpr dtype value{Code, Bits};
};
template <> struct element_dtype<bool> : known_dtype<kDLBool, 8> {};
template <> struct element_dtype<std::int8_t> : known_dtype<kDLInt, 8> {};
template <> struct element_dtype<std::int16_t> : known_dtype<kDLInt, 16> {};
template <> struct element_dtype<std::int32_t> : known_dtype<kDLInt, 32> {};
template <> struct element_dtype<std::int64_t> : known_dtype<kDLInt, 64> {};
template <> struct element_dtype<std::uint8_t> : known_dtype<kDLUInt, 8> {};
template <> struct element_dtype<std::uint16_t> : known_dtype<kDLUInt, 16> {};
template <> struct element_dtype<std::uint32_t> : known_dtype<kDLUInt, 32> {};
template <> struct element_dtype<std::uint64_t> : known_dtype<kDLUInt, 64> {};
template <> struct element_dtype<float> : known_dtype<kDLFloat, 32> {};
template <> struct element_dtype<double> : known_dtype<kDLFloat, 64> {};
template <> struct element_dtype<std::complex<float>> : known_dtype<kDLComplex, 64> {};
template <> struct element_dtype<std::complex<double>> : known_dtype<kDLComplex, 128> {};
}  // namespace detail

// Whether the C++ type T (const or not) has a DLPack dtype.
template <class T>
inline constexpr bool has_dtype = requires { detail::element_dtype<std::remove_const_t<T>>::value; };

// The dtype of a C++ element type.
template <class T> inline constexpr dtype dtype_of = [] {
  static_assert(has_dtype<T>, "no DLPack dtype for this C++ type");
  if constexpr (has_dtype<T>) {
    return detail::element_dtype<std::remove_const_t<T>>::value;
  } else {
    return dtype{};
  }
}();

}  // namespace dlb
