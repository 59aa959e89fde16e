// dlbridge's types as nanobind parameters and results (optional: include it
// after nanobind.h in a nanobind module; docs/cpp-guide.md, "nanobind and pybind11").
//
//   m.def("row_sums", [](dlb::view<const float, dlb::ndim<2>, dlb::cpu> x) { ... }, nb::arg("x"));
//
// A dlb::view parameter (by value or const&), or a const& to a
// dlb::python::array_argument<Views...> (one of several dtypes), is checked
// by dlbridge's converter (exchange tables, read-only safety) and seen
// without a copy for the length of the call. An input that does not fit lets
// nanobind try the next overload, and then raise its "incompatible function
// arguments"; any other failure (the producer's own exception, a tensor that
// requires grad, KeyboardInterrupt, MemoryError) is raised as it is.
// The signature (and nanobind's stubgen) shows the demands, in
// dlb::describe's words:
// typing.Annotated[typing.Any, "float32[*, *] cpu read-only"].
// A dlb::python::array_parameter<Views...> takes any object, to be checked
// in the body with the function's and argument's names (dlbridge's own
// TypeError), once the module calls dlb::python::register_nanobind_translator().
// A dlb::tensor result is returned as a dlbridge.Array on its memory, a
// dlb::python::like result in the currency of its input.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>
#include <optional>

#include "dlbridge/python/bindings.hpp"

namespace dlb::python::bindings {

// A nanobind caster's argument: from_python (noexcept, as nanobind asks)
// answers false for a mismatch, so that nanobind tries the next overload;
// any other failure is kept, from_python answers true and can_cast false,
// and the cast to the parameter raises it: nanobind raises what a function's
// conversions throw, and a caster that asks can_cast first (std::optional's)
// declines the argument instead.
template <class Argument>
struct nanobind_argument {
  [[nodiscard]] bool take(nanobind::handle src) noexcept {
    switch (borrow(argument, src.ptr())) {
      case borrowed::taken: return true;
      case borrowed::mismatch: return false;
      case borrowed::failed: break;
    }
    failure.emplace();  // takes the Python exception borrow left set
    return true;
  }
  [[nodiscard]] bool taken() const noexcept { return !failure; }
  const Argument& get() {
    if (failure) {
      nanobind::python_error error = std::move(*failure);
      failure.reset();
      throw error;
    }
    return *argument;
  }

  // Keeps the input's memory (and its producer's export) for the call.
  std::optional<Argument> argument;
  std::optional<nanobind::python_error> failure;
};

}  // namespace dlb::python::bindings

namespace nanobind::detail {

template <class T, class... Constraints>
struct type_caster<dlb::view<T, Constraints...>> {
  using Value = dlb::view<T, Constraints...>;
  static constexpr auto Name = const_name(dlb::python::bindings::signature<Value>.text);
  template <class U> using Cast = movable_cast_t<U>;
  template <class> bool can_cast() const noexcept { return argument.taken(); }

  bool from_python(handle src, uint32_t, cleanup_list*) noexcept { return argument.take(src); }

  // A view owns nothing that could outlive the call: return a dlb::tensor.
  static handle from_cpp(const Value&, rv_policy, cleanup_list*) = delete;

  explicit operator Value*() { return &(value = argument.get().view()); }
  explicit operator Value&() { return value = argument.get().view(); }
  explicit operator Value&&() { return std::move(value = argument.get().view()); }

  dlb::python::bindings::nanobind_argument<dlb::python::array_argument<Value>> argument;
  Value value;
};

template <class... Views>
struct type_caster<dlb::python::array_argument<Views...>> {
  using Value = dlb::python::array_argument<Views...>;
  static constexpr auto Name = const_name(dlb::python::bindings::signature<Views...>.text);
  // Taken by const reference: an argument is not copied.
  template <class> using Cast = const Value&;
  template <class> bool can_cast() const noexcept { return argument.taken(); }

  bool from_python(handle src, uint32_t, cleanup_list*) noexcept { return argument.take(src); }
  explicit operator const Value&() { return argument.get(); }

  dlb::python::bindings::nanobind_argument<Value> argument;
};

template <class... Views>
struct type_caster<dlb::python::array_parameter<Views...>> {
  using parameter_type = dlb::python::array_parameter<Views...>;
  NB_TYPE_CASTER(parameter_type, const_name(dlb::python::bindings::signature<Views...>.text))

  bool from_python(handle src, uint32_t, cleanup_list*) noexcept {
    value = parameter_type(src.ptr());
    return true;
  }
  static handle from_cpp(const parameter_type&, rv_policy, cleanup_list*) = delete;
};

template <>
struct type_caster<dlb::tensor> {
  NB_TYPE_CASTER(dlb::tensor, const_name("dlbridge.Array"))

  // (A tensor parameter would own what the call only borrows: take a view.)
  bool from_python(handle, uint32_t, cleanup_list*) noexcept = delete;

  // A new reference, or an empty handle with the Python exception set,
  // which nanobind raises as it is.
  static handle from_cpp(dlb::tensor t, rv_policy, cleanup_list*) noexcept {
    return dlb::python::bindings::result([&] { return dlb::python::to_python(std::move(t)); });
  }
};

template <>
struct type_caster<dlb::python::like> {
  NB_TYPE_CASTER(dlb::python::like, const_name("typing.Any"))

  bool from_python(handle, uint32_t, cleanup_list*) noexcept = delete;

  static handle from_cpp(dlb::python::like r, rv_policy, cleanup_list*) noexcept {
    return dlb::python::bindings::result([&] { return dlb::python::to_python_like(std::move(r.array), r.object); });
  }
};

}  // namespace nanobind::detail

namespace dlb::python {

// dlbridge's exceptions raised in nanobind functions as dlbridge raises them
// (TypeError naming the function and argument, BufferError, a producer's own
// exception) instead of nanobind's RuntimeError; others are nanobind's. One
// call, in NB_MODULE.
inline void register_nanobind_translator() {
  nanobind::register_exception_translator([](const std::exception_ptr& error, void*) { bindings::translate(error); });
}

}  // namespace dlb::python
