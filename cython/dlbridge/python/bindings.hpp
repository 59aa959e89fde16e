// What dlbridge's nanobind and pybind11 casters share (nanobind.hpp,
// pybind11.hpp): the signature text of a parameter's view types, built at
// compile time for the tools' compile-time descriptors, the borrow that
// either takes an argument or lets the tool try its next overload, and the
// result returned in the currency of an input (dlb::python::like).
#pragma once

#include <Python.h>

#include <cstddef>
#include <optional>
#include <string_view>

#include "dlbridge/python/argument.hpp"
#include "dlbridge/python/core.hpp"
#include "dlbridge/python/returns.hpp"
#include "dlbridge/tensor.hpp"
#include "dlbridge/view.hpp"

namespace dlb::python {

// A bound function's result in the currency of one of its inputs, through
// to_python_like: a NumPy array for an ndarray, a torch.Tensor for a tensor...
//
//   return dlb::python::like{std::move(out), image.object()};
//
// (Rather than to_python_like in the function: its Python exception would
// reach the caller as the tool's RuntimeError for a C++ exception.)
struct like {
  tensor array;
  PyObject* object;  // borrowed: an input, alive for the call (array_argument::object())
};

}  // namespace dlb::python

namespace dlb::python::bindings {

namespace detail {

// Text sinks for write_description: one counts, then one of that size keeps.
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

// The demands of Views in dlb::describe's words (write_description, their
// one home), as a type annotation:
// typing.Annotated[typing.Any, "(float32 | float64)[*, *] C-contiguous cpu read-only"].
// typing.Any, as nanobind's stub generator writes nanobind's own ArrayLike:
// any producer dlbridge reads, which no Python type names.
template <class... Views, class Out>
constexpr void write_annotation(Out& out) {
  const requirements all[] = {Views::demands()...};
  out.put("typing.Annotated[typing.Any, \"");
  write_description(out, all);
  out.put("\"]");
}

template <class... Views>
[[nodiscard]] consteval auto fixed_annotation() {
  constexpr std::size_t size = [] {
    text_length length;
    write_annotation<Views...>(length);
    return length.size;
  }();
  fixed_text<size> out;
  write_annotation<Views...>(out);
  return out;
}

}  // namespace detail

// The signature text of a parameter taking Views (one view, or the views of
// an array_argument): const_name(signature<Views...>.text).
template <class... Views>
inline constexpr auto signature = detail::fixed_annotation<Views...>();

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

// A result made by make() (a new reference), or NULL with the Python
// exception of its failure set, for the casters' conversions to Python.
template <class Make>
[[nodiscard]] PyObject* result(Make&& make) noexcept {
  try {
    return make();
  } catch (...) {
    raise_python_error();
    return nullptr;
  }
}

}  // namespace dlb::python::bindings
