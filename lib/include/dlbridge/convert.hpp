// Typed loops converting contiguous runs of elements from one dtype to
// another on the CPU: what the copy engine's casts use instead of load() and
// store() per element, which choose both dtypes at run time for every one.
//
// Each loop is element.hpp's detail::convert() for its two types, so it gives
// the same bits as store(load()) (NaN payloads and signs, saturation,
// wrapping, rounding, -0.0), with the dtype switches gone and the compiler
// free to vectorize.
#pragma once

#include <cstdint>

#include "dlbridge/dispatch.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/element.hpp"

namespace dlb {

// Converts n elements from contiguous src to contiguous dst, which must not
// overlap. Neither needs to be aligned.
using convert_fn = void (*)(void* dst, const void* src, std::int64_t n);

namespace detail {
// Calls f(type_tag<T>{}) with the type an element of dtype t is read and
// written as (visit_dtype) where to_scalar / from_scalar take it
// (converts_by_type); nullptr for the dtypes without typed loops: complex,
// float8/6/4, and every dtype is_supported() refuses.
template <class F>
[[nodiscard]] constexpr convert_fn with_element_type(dtype t, F f) noexcept {
  return visit_dtype(t, [&](auto tag) -> convert_fn {
    if constexpr (converts_by_type<typename decltype(tag)::type>) return f(tag);
    else return nullptr;
  });
}

// Byte pointers and memcpy (load_as / store_as) rather than typed pointers:
// NumPy arrays need not be aligned.
template <class To, class From>
inline void convert_elements(unsigned char* __restrict dst, const unsigned char* __restrict src, std::int64_t begin,
                             std::int64_t end) noexcept {
  for (std::int64_t i = begin; i < end; ++i)
    store_as(dst + i * std::int64_t(sizeof(To)),
             convert<To, From>(load_as<From>(src + i * std::int64_t(sizeof(From)))));
}

// GCC vectorizes at -O2 only loops that need no run-time overlap check
// (hence __restrict, which it honours on parameters, not on local pointers)
// and whose trip count is a multiple of the vector length: the body runs
// whole blocks of 64 elements (a multiple of any vector length up to 64
// bytes of int8), the tail the rest.
template <class To, class From>
void convert_run(void* dst, const void* src, std::int64_t n) noexcept {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const std::int64_t body = n / 64 * 64;
  convert_elements<To, From>(d, s, 0, body);
  convert_elements<To, From>(d, s, body, n);
}
}  // namespace detail

// The typed loop converting dtype `from` to dtype `to`, or nullptr where there
// is none (convert element by element with load() and store() then). There is
// one for every pair of distinct dtypes among bool, int8 to int64, uint8 to
// uint64, float16, bfloat16, float32 and float64. None for from == to: the
// copy engine copies those as they are (where load() and store() would write
// a bfloat16 NaN as the quiet NaN of its sign and 1 for every nonzero bool
// byte).
[[nodiscard]] constexpr convert_fn converter(dtype from, dtype to) noexcept {
  if (from == to) return nullptr;
  return detail::with_element_type(from, [to](auto source) noexcept {
    return detail::with_element_type(to, [](auto target) noexcept -> convert_fn {
      return &detail::convert_run<typename decltype(target)::type, typename decltype(source)::type>;
    });
  });
}

}  // namespace dlb
