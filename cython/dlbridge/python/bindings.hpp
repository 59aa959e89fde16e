// What dlbridge's nanobind and pybind11 casters share (nanobind.hpp,
// pybind11.hpp): the signature text of a parameter's view types, built at
// compile time for the tools' compile-time descriptors, the borrow that
// either takes an argument or lets the tool try its next overload, the
// parameter checked in the function's body (array_parameter), and the
// translation of dlbridge's exceptions.
#pragma once

#include <Python.h>

#include <cstddef>
#include <exception>
#include <optional>
#include <string_view>

#include "dlbridge/python/argument.hpp"
#include "dlbridge/python/core.hpp"
#include "dlbridge/python/returns.hpp"
#include "dlbridge/tensor.hpp"
#include "dlbridge/view.hpp"

namespace dlb::python {

// A parameter that takes any object, checked in the function's body with the
// function's and the argument's names, so that a mismatch raises dlbridge's
// own TypeError ("corner_moravec(): argument 'image': expected float32 or
// float64, got int32") where a view parameter lets the tool raise its
// "incompatible function arguments". Its signature shows the demands, as a
// view parameter's does; as it takes every object, the tool never tries an
// overload after it.
//
//   m.def("f", [](dlb::python::array_parameter<image32, image64> x) {
//     const auto image = x.argument("f", "x");  // an array_argument<image32, image64>
//
// The tool raises dlbridge's exceptions as dlbridge does once the module
// registers its translator (register_nanobind_translator,
// register_pybind11_translator); without it they are the tool's RuntimeError.
template <class... Views>
class array_parameter {
 public:
  array_parameter() = default;
  explicit array_parameter(PyObject* object) noexcept : object_(object) {}

  // The argument, checked: array_argument's exceptions (argument_mismatch:
  // TypeError; import_failure: BufferError; the producer's own).
  [[nodiscard]] array_argument<Views...> argument(const char* function, const char* name) const {
    return array_argument<Views...>(object_, function, name);
  }
  [[nodiscard]] array_argument<Views...> argument(const char* function, const char* name, copy_if_needed_t) const {
    return array_argument<Views...>(object_, function, name, copy_if_needed);
  }

  // The object, borrowed: alive for the call.
  [[nodiscard]] PyObject* object() const noexcept { return object_; }

 private:
  PyObject* object_ = nullptr;
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

// What borrow made of an object: the argument (taken); no array, or one
// the views do not take (a mismatch: TypeError), with no Python exception
// left set, so that the tool tries the function's next overload and raises
// its own TypeError when none fits; or another failure (a producer's own
// exception, KeyboardInterrupt, MemoryError, a malformed tensor's
// BufferError), left set as the Python exception the caster must raise: no
// other overload would fare better, and the caller must see it.
enum class borrowed { taken, mismatch, failed };

// Makes `out` the argument `object` (of a bound function: the tools do not
// name functions and arguments to their casters), and says how it went.
template <class Argument>
[[nodiscard]] borrowed borrow(std::optional<Argument>& out, PyObject* object) noexcept {
  try {
    out.emplace(object, nullptr, nullptr);
    return borrowed::taken;
  } catch (const argument_mismatch&) {
    return borrowed::mismatch;
  } catch (...) {
    raise_python_error();  // the exception in flight as Python's (kept as it is where already set)
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return borrowed::failed;
    PyErr_Clear();
    return borrowed::mismatch;
  }
}

// An exception translator's body, for both tools: dlbridge's own exceptions
// raised as raise_python_error raises them, any other rethrown for the
// tool's own translation (or its next translator).
inline void translate(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (...) {
    if (!raise_own_error()) throw;
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
