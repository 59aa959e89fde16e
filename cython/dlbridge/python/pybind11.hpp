// dlbridge's types as pybind11 parameters and results (optional: include it
// after pybind11.h in a pybind11 module; docs/cpp-guide.md, "nanobind and pybind11").
//
//   m.def("row_sums", [](dlb::view<const float, dlb::ndim<2>, dlb::cpu> x) { ... }, py::arg("x"));
//
// A dlb::view parameter (by value or const&), or a const& to a
// dlb::python::array_argument<Views...> (one of several dtypes), is checked
// by dlbridge's converter (exchange tables, read-only safety) and seen
// without a copy for the length of the call. An input that does not fit lets
// pybind11 try the next overload, and then raise its "incompatible function
// arguments"; any other failure (the producer's own exception, a tensor that
// requires grad, KeyboardInterrupt, MemoryError) is raised as it is.
// The signature shows the demands, in dlb::describe's words:
// typing.Annotated[typing.Any, "float32[*, *] cpu read-only"].
// A dlb::python::array_parameter<Views...> takes any object, to be checked
// in the body with the function's and argument's names (dlbridge's own
// TypeError), once the module calls dlb::python::register_pybind11_translator().
// A dlb::tensor result is returned as a dlbridge.Array on its memory, a
// dlb::python::like result in the currency of its input.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <optional>

#include "dlbridge/python/bindings.hpp"

namespace dlb::python::bindings {

// A caster's load: true where the argument was taken, false for a mismatch
// (pybind11 tries the next overload), and any other failure raised as the
// Python exception it is (pybind11 raises what load throws).
template <class Argument>
[[nodiscard]] bool load(std::optional<Argument>& argument, pybind11::handle src) {
  switch (borrow(argument, src.ptr())) {
    case borrowed::taken: return true;
    case borrowed::mismatch: return false;
    case borrowed::failed: break;
  }
  throw pybind11::error_already_set();
}

}  // namespace dlb::python::bindings

namespace pybind11::detail {

template <class T, class... Constraints>
struct type_caster<dlb::view<T, Constraints...>> {
  using view_type = dlb::view<T, Constraints...>;
  PYBIND11_TYPE_CASTER(view_type, const_name(dlb::python::bindings::signature<view_type>.text));

  bool load(handle src, bool) {
    if (!dlb::python::bindings::load(argument, src)) return false;
    value = argument->view();
    return true;
  }

  // A view owns nothing that could outlive the call: return a dlb::tensor.
  static handle cast(const view_type&, return_value_policy, handle) = delete;

 private:
  // Keeps the input's memory (and its producer's export) for the call.
  std::optional<dlb::python::array_argument<view_type>> argument;
};

template <class... Views>
struct type_caster<dlb::python::array_argument<Views...>> {
  using Value = dlb::python::array_argument<Views...>;
  static constexpr auto name = const_name(dlb::python::bindings::signature<Views...>.text);
  // Taken by const reference: an argument is not copied.
  template <class> using cast_op_type = const Value&;

  bool load(handle src, bool) { return dlb::python::bindings::load(argument, src); }
  operator const Value&() const { return *argument; }

 private:
  std::optional<Value> argument;
};

template <class... Views>
struct type_caster<dlb::python::array_parameter<Views...>> {
  using parameter_type = dlb::python::array_parameter<Views...>;
  PYBIND11_TYPE_CASTER(parameter_type, const_name(dlb::python::bindings::signature<Views...>.text));

  bool load(handle src, bool) {
    value = parameter_type(src.ptr());
    return true;
  }
  static handle cast(const parameter_type&, return_value_policy, handle) = delete;
};

template <>
struct type_caster<dlb::tensor> {
  PYBIND11_TYPE_CASTER(dlb::tensor, const_name("dlbridge.Array"));

  // (A tensor parameter would own what the call only borrows: take a view.)
  bool load(handle, bool) = delete;

  // A new reference; the Python exception of a failure is raised as it is.
  static handle cast(dlb::tensor t, return_value_policy, handle) {
    if (PyObject* out = dlb::python::bindings::result([&] { return dlb::python::to_python(std::move(t)); })) return out;
    throw error_already_set();
  }
};

template <>
struct type_caster<dlb::python::like> {
  PYBIND11_TYPE_CASTER(dlb::python::like, const_name("typing.Any"));

  bool load(handle, bool) = delete;

  static handle cast(dlb::python::like r, return_value_policy, handle) {
    if (PyObject* out = dlb::python::bindings::result(
            [&] { return dlb::python::to_python_like(std::move(r.array), r.object); }))
      return out;
    throw error_already_set();
  }
};

}  // namespace pybind11::detail

namespace dlb::python {

// dlbridge's exceptions raised in this module's functions as dlbridge raises
// them (TypeError naming the function and argument, BufferError, a
// producer's own exception) instead of pybind11's RuntimeError; others are
// pybind11's. One call, in PYBIND11_MODULE.
inline void register_pybind11_translator() {
  pybind11::register_local_exception_translator([](std::exception_ptr error) { bindings::translate(error); });
}

}  // namespace dlb::python
