// What dlbridge's nanobind and pybind11 casters share (nanobind.hpp,
// pybind11.hpp): the signature text of a view type, built at compile time
// for the tools' compile-time descriptors, and the borrow that either takes
// an argument or lets the tool try its next overload.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "dlbridge/argument.hpp"
#include "dlbridge/view.hpp"

namespace dlb::python::bindings {

namespace detail {

// Text sinks for write_annotation: one counts, then one of that size keeps.
// (No constexpr std::string: GCC 12 refuses its short-string buffer in
// constant expressions.)
struct text_length {
  std::size_t size = 0;
  constexpr void put(std::string_view s) noexcept { size += s.size(); }
};

template <std::size_t N>
struct fixed_text {
  char text[N + 1]{};  // NUL-terminated, as the tools' const_name takes it
  std::size_t size = 0;
  constexpr void put(std::string_view s) noexcept {
    for (char c : s) text[size++] = c;
  }
};

template <class Out>
constexpr void put_decimal(Out& out, std::int64_t n) {
  char digits[20]{};
  std::size_t first = sizeof digits;
  do {
    digits[--first] = char('0' + n % 10);
    n /= 10;
  } while (n > 0);
  out.put({digits + first, sizeof digits - first});
}

// The demands of View in the words of its errors, as a type annotation:
// typing.Annotated[typing.Any, "float32[*, *] C-contiguous cpu read-only"].
// typing.Any, as nanobind's stub generator writes nanobind's own ArrayLike:
// any producer dlbridge reads, which no Python type names.
template <class View, class Out>
constexpr void write_annotation(Out& out) {
  out.put("typing.Annotated[typing.Any, \"");
  // The table's name, without name(dtype)'s null-pointer test, which GCC
  // does not evaluate at compile time under -fsanitize=undefined.
  for (const auto& info : dtype_table)
    if (info.type == View::dtype) out.put(info.name);
  out.put("[");
  for (std::size_t i = 0; i < View::static_extents.size(); ++i) {
    if (i) out.put(", ");
    if (View::static_extents[i] == any_extent)
      out.put("*");
    else
      put_decimal(out, View::static_extents[i]);
  }
  out.put("]");
  if constexpr (View::order == memory_order::c) out.put(" C-contiguous");
  if constexpr (View::order == memory_order::f) out.put(" Fortran-contiguous");
  if constexpr (View::order == memory_order::any) out.put(" contiguous");
  if constexpr (View::has_device) {
    out.put(" ");
    out.put(name(View::device_type));
  }
  out.put(View::readonly ? " read-only\"]" : " writable\"]");
}

template <class View>
[[nodiscard]] consteval auto fixed_annotation() {
  constexpr std::size_t size = [] {
    text_length length;
    write_annotation<View>(length);
    return length.size;
  }();
  fixed_text<size> out;
  write_annotation<View>(out);
  return out;
}

}  // namespace detail

// The signature text of a view parameter: const_name(signature<View>.text).
template <class View>
inline constexpr auto signature = detail::fixed_annotation<View>();

// Makes `out` the argument `object` (of a bound function: the tools do not
// name functions and arguments to their casters), or answers false with no
// Python exception set, so that the tool tries the function's next overload
// and raises its own TypeError when none fits.
template <class Argument>
[[nodiscard]] bool borrow(std::optional<Argument>& out, PyObject* object) noexcept {
  try {
    out.emplace(object, nullptr, nullptr);
    return true;
  } catch (...) {
    PyErr_Clear();  // (for python_error_already_set; a mismatch sets none)
    return false;
  }
}

}  // namespace dlb::python::bindings
