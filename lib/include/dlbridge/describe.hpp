// The words of demands, for signatures and docstrings: describe() at run
// time, write_description() at compile time too (the casters' signatures).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "dlbridge/demands.hpp"
#include "dlbridge/device.hpp"
#include "dlbridge/dtype.hpp"

namespace dlb {

namespace detail {
// describe's words go to a sink, anything with put(std::string_view): a
// std::string at run time, a fixed buffer at compile time (the signatures of
// dlbridge/python/bindings.hpp), so that the words have one home.
struct string_sink {
  std::string text;
  void put(std::string_view s) { text += s; }
};

template <class Out>
constexpr void put_decimal(Out& out, std::int64_t n) {  // n >= 0
  char digits[20]{};
  std::size_t first = sizeof digits;
  do {
    digits[--first] = char('0' + n % 10);
    n /= 10;
  } while (n > 0);
  out.put({digits + first, sizeof digits - first});
}

template <class Out>
constexpr void put_dtype(Out& out, dtype t) {
  // The table directly: name(dtype)'s null-pointer test is not a constant
  // expression to GCC under -fsanitize=undefined.
  for (const auto& info : dtype_table)
    if (info.type == t) out.put(info.name);
}

// Every demand of `r` but its dtype.
template <class Out>
constexpr void put_demands_after_dtype(Out& out, const requirements& r) {
  if (r.ndim < 0) {
    out.put("[...]");
  } else {
    out.put("[");
    for (std::int32_t i = 0; i < r.ndim; ++i) {
      if (i) out.put(", ");
      if (std::size_t(i) < r.shape.size() && r.shape[std::size_t(i)] != any_extent)
        put_decimal(out, r.shape[std::size_t(i)]);
      else
        out.put("*");
    }
    out.put("]");
  }
  switch (r.order) {
    case memory_order::none: break;
    case memory_order::c: out.put(" C-contiguous"); break;
    case memory_order::f: out.put(" Fortran-contiguous"); break;
    case memory_order::any: out.put(" contiguous"); break;
  }
  if (r.has_device) {
    out.put(" ");
    out.put(name(r.device_type));
  }
  out.put(r.writable ? " writable" : " read-only");
}
}  // namespace detail

// describe(all...) written to `out` (anything with put(std::string_view)),
// at compile time too.
template <class Out>
constexpr void write_description(Out& out, std::span<const requirements> all) {
  const requirements& first = all.front();
  const auto same_but_dtype = [&first](const requirements& r) {
    return r.ndim == first.ndim && std::ranges::equal(r.shape, first.shape) && r.order == first.order &&
           r.has_device == first.has_device && (!first.has_device || r.device_type == first.device_type) &&
           r.writable == first.writable;
  };
  if (std::ranges::all_of(all, same_but_dtype)) {
    if (all.size() > 1) out.put("(");
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i) out.put(" | ");
      detail::put_dtype(out, all[i].type);
    }
    if (all.size() > 1) out.put(")");
    detail::put_demands_after_dtype(out, first);
    return;
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i) out.put(" | ");
    detail::put_dtype(out, all[i].type);
    detail::put_demands_after_dtype(out, all[i]);
  }
}

// A readable rendering of what `r` demands, for signatures and docstrings:
// "float32[*, 3] C-contiguous cpu read-only". Each part names one field of
// requirements; a field that demands nothing is left out (no device, any
// memory order), except access, which always says read-only or writable.
[[nodiscard]] inline std::string describe(const requirements& r) {
  detail::string_sink out;
  write_description(out, {&r, 1});
  return std::move(out.text);
}

// Several demands, as a multi-dtype argument tries them: where they differ in
// the dtype alone, the dtypes are grouped before the shared rest,
// "(float32 | float64)[*, *] C-contiguous cpu read-only"; otherwise each
// demand in full, joined by " | ".
template <std::same_as<requirements>... Rest>
[[nodiscard]] std::string describe(const requirements& first, const requirements& second, const Rest&... rest) {
  const requirements all[] = {first, second, rest...};
  detail::string_sink out;
  write_description(out, all);
  return std::move(out.text);
}

}  // namespace dlb
