// dlbridge's types as pybind11 parameters (optional: include it after
// pybind11.h in a pybind11 module; docs/cpp-guide.md, "nanobind and pybind11").
//
//   m.def("row_sums", [](dlb::view<const float, dlb::ndim<2>, dlb::cpu> x) { ... }, py::arg("x"));
//
// A dlb::view parameter (by value or const&) is checked by dlbridge's
// converter (exchange tables, read-only safety) and seen without a copy for
// the length of the call. An input that does not fit lets pybind11 try the
// next overload, and then raise its "incompatible function arguments". The
// signature shows the view's demands:
// typing.Annotated[typing.Any, "float32[*, *] cpu read-only"].
// A dlb::tensor result is returned as a dlbridge.Array on its memory.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>

#include "dlbridge/bindings.hpp"
#include "dlbridge/returns.hpp"

namespace pybind11::detail {

template <class T, class... Constraints>
struct type_caster<dlb::view<T, Constraints...>> {
  using view_type = dlb::view<T, Constraints...>;
  PYBIND11_TYPE_CASTER(view_type, const_name(dlb::python::bindings::signature<view_type>.text));

  bool load(handle src, bool) {
    if (!dlb::python::bindings::borrow(argument, src.ptr())) return false;
    value = argument->view();
    return true;
  }

  // A view owns nothing that could outlive the call: return a dlb::tensor.
  static handle cast(const view_type&, return_value_policy, handle) = delete;

 private:
  // Keeps the input's memory (and its producer's export) for the call.
  std::optional<dlb::python::array_argument<view_type>> argument;
};

template <>
struct type_caster<dlb::tensor> {
  PYBIND11_TYPE_CASTER(dlb::tensor, const_name("dlbridge.Array"));

  // (A tensor parameter would own what the call only borrows: take a view.)
  bool load(handle, bool) = delete;

  // A new reference; the Python exception of a failure is raised as it is.
  static handle cast(dlb::tensor t, return_value_policy, handle) {
    try {
      return dlb::python::to_python(std::move(t));
    } catch (...) {
      dlb::python::raise_python_error();
      throw error_already_set();
    }
  }
};

}  // namespace pybind11::detail
