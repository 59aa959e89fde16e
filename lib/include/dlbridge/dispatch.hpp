// From run-time values to compile-time types, in one place each: the C++
// type an element of a dtype is read and written as (visit_dtype), and the
// word that moves an element of a width whole (visit_width). Every function
// that chooses code by dtype or by element width calls these: element.hpp's
// load() and store(), convert.hpp's typed loops, the CPU copy engine and the
// CUDA kernels. Host and device code alike.
//
// A dtype dlbridge does not support, and a width no word has, reach the
// callable as "none" (type_tag<void>, width 0) and never as a type or word of
// another width: what each caller then does is its own rule (load() reads
// nothing, converter() has no loop, copies move such elements byte by byte).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "dlbridge/config.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/small_float.hpp"

namespace dlb::detail {

template <class T>
struct type_tag {
  using type = T;
};

// The types one element is read and written as where its C++ type would not
// do: a DLPack bool is a byte whose every nonzero value is true (a C++ bool
// may hold only 0 or 1), float16 and bfloat16 are their 16-bit codes, the
// float8 formats their 8-bit codes (the format named by the dtype:
// format_of), float6 and float4 packed codes addressed by element index, and
// complex numbers two parts, real first (std::complex is host-only).
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
struct float8_code {
  std::uint8_t value;
};
struct packed_code {};
template <class Part>
struct complex_parts {
  using part = Part;
  Part re, im;
};

// nvcc: these templates call host-only callables from host code (converter()),
// and host-device ones from device code; each instantiation is compiled for
// the side that calls it.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
// Calls f(type_tag<T>{}) with the type T an element of dtype `t` is read and
// written as: bool_byte, std::int8_t to std::int64_t, std::uint8_t to
// std::uint64_t, float16_code, float, double, bfloat16_code,
// complex_parts<float>, complex_parts<double>, complex_parts<bfloat16_code>
// (bcomplex32), float8_code, packed_code (float6, float4); with
// type_tag<void> for every dtype that is_supported() refuses. The list of
// element types: test_dispatch checks it against dtype_table.
template <class F>
DLB_HOST_DEVICE constexpr decltype(auto) visit_dtype(dtype t, F&& f) {
  if (t.lanes == 1) {
    switch (t.code) {
      case kDLBool:
        if (t.bits == 8) return f(type_tag<bool_byte>{});
        break;
      case kDLInt:
        switch (t.bits) {
          case 8: return f(type_tag<std::int8_t>{});
          case 16: return f(type_tag<std::int16_t>{});
          case 32: return f(type_tag<std::int32_t>{});
          case 64: return f(type_tag<std::int64_t>{});
          default: break;
        }
        break;
      case kDLUInt:
        switch (t.bits) {
          case 8: return f(type_tag<std::uint8_t>{});
          case 16: return f(type_tag<std::uint16_t>{});
          case 32: return f(type_tag<std::uint32_t>{});
          case 64: return f(type_tag<std::uint64_t>{});
          default: break;
        }
        break;
      case kDLFloat:
        switch (t.bits) {
          case 16: return f(type_tag<float16_code>{});
          case 32: return f(type_tag<float>{});
          case 64: return f(type_tag<double>{});
          default: break;
        }
        break;
      case kDLBfloat:
        if (t.bits == 16) return f(type_tag<bfloat16_code>{});
        break;
      case kDLComplex:
        if (t.bits == 64) return f(type_tag<complex_parts<float>>{});
        if (t.bits == 128) return f(type_tag<complex_parts<double>>{});
        break;
      case kDLBcomplex:
        if (t.bits == 32) return f(type_tag<complex_parts<bfloat16_code>>{});
        break;
      case kDLFloat8_e3m4:
      case kDLFloat8_e4m3:
      case kDLFloat8_e4m3b11fnuz:
      case kDLFloat8_e4m3fn:
      case kDLFloat8_e4m3fnuz:
      case kDLFloat8_e5m2:
      case kDLFloat8_e5m2fnuz:
      case kDLFloat8_e8m0fnu:
        if (t.bits == 8) return f(type_tag<float8_code>{});
        break;
      case kDLFloat6_e2m3fn:
      case kDLFloat6_e3m2fn:
        if (t.bits == 6) return f(type_tag<packed_code>{});
        break;
      case kDLFloat4_e2m1fn:
        if (t.bits == 4) return f(type_tag<packed_code>{});
        break;
      default: break;
    }
  }
  return f(type_tag<void>{});
}

// Whether an element of `bytes` bytes moves as one word: 1, 2, 4, 8 or 16.
[[nodiscard]] DLB_HOST_DEVICE constexpr bool is_word_width(std::size_t bytes) {
  return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <std::size_t Bytes, std::size_t MaxBytes, class F>
DLB_HOST_DEVICE constexpr decltype(auto) call_with_width(F& f) {
  return f(std::integral_constant<std::size_t, (Bytes <= MaxBytes ? Bytes : 0)>{});
}

#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
// Calls f(std::integral_constant<std::size_t, N>{}) with N = bytes for the
// widths a word moves whole (is_word_width) up to MaxBytes, and with N = 0
// for every other width: the caller moves those elements as single bytes
// (or refuses them), never as a word of another width.
template <std::size_t MaxBytes = 16, class F>
DLB_HOST_DEVICE constexpr decltype(auto) visit_width(std::size_t bytes, F&& f) {
  switch (bytes) {
    case 1: return call_with_width<1, MaxBytes>(f);
    case 2: return call_with_width<2, MaxBytes>(f);
    case 4: return call_with_width<4, MaxBytes>(f);
    case 8: return call_with_width<8, MaxBytes>(f);
    case 16: return call_with_width<16, MaxBytes>(f);
    default: return call_with_width<0, MaxBytes>(f);
  }
}

}  // namespace dlb::detail
