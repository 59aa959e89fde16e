// Arrays made in C++ returned to Python, from an extension written in plain
// C++ (Cython has wrap and wrap_like):
//
//   return dlb::python::to_python(std::move(t));           // a dlbridge.Array
//   return dlb::python::to_python_like(std::move(t), x);   // an ndarray for an ndarray x, ...
//
//   dlb::tensor out = dlb::python::zeros_like(in.view());  // shape, dtype and device of a view
//
// to_python and to_python_like take the tensor (moved in, released on failure) and return a new
// reference, or throw python_error_already_set with the Python exception set
// (catch it with raise_python_error, as for array_argument). Call them, and
// zeros_like and zeros_on for a device other than the CPU, with the GIL held.
#pragma once

#include <Python.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "dlbridge/python/argument_api.hpp"
#include "dlbridge/python/core.hpp"
#include "dlbridge/tensor.hpp"
#include "dlbridge/view.hpp"

namespace dlb::python {

// t as a new dlbridge.Array on its memory. An empty tensor is ValueError.
[[nodiscard]] inline PyObject* to_python(tensor t) {
  PyObject* out = get_argument_api().wrap(&t);
  if (!out) throw python_error_already_set{};
  return out;
}

// t in the currency of `like`, zero copy: a base-class numpy.ndarray for an
// ndarray (or a subclass), a torch.Tensor for a torch tensor (through its
// DLPack C exchange table), an array of like's library through its
// from_dlpack (JAX, CuPy), else a dlbridge.Array. Where that library cannot
// hold t truthfully, BufferError: device memory for NumPy, read-only data for
// PyTorch, a dtype NumPy lacks. A NULL `like` is an error, as for
// array_argument: the Python exception set, or ValueError.
[[nodiscard]] inline PyObject* to_python_like(tensor t, PyObject* like) {
  // A NULL like from a call that failed: its exception is set, and no Python
  // code may run (get_argument_api imports) before it is raised.
  if (!like && PyErr_Occurred()) throw python_error_already_set{};
  PyObject* out = get_argument_api().wrap_like(&t, like);
  if (!out) throw python_error_already_set{};
  return out;
}

// A result in the currency of one of a function's inputs: what
// array_argument::visit_new returns, and what dlbridge's nanobind and
// pybind11 casters return through to_python_like (a NumPy array for an
// ndarray, a torch.Tensor for a tensor...):
//
//   return dlb::python::like{std::move(out), image.object()};
//
// (Rather than to_python_like in a bound function: its Python exception
// would reach the caller as the tool's RuntimeError for a C++ exception.)
struct like {
  tensor array;
  PyObject* object;  // borrowed: an input, alive for the call (array_argument::object())
};

// r.array in the currency of r.object, as to_python_like: for a plain
// extension's `return dlb::python::to_python(argument.visit_new(...));`.
[[nodiscard]] inline PyObject* to_python(like r) { return to_python_like(std::move(r.array), r.object); }

// A new C-contiguous tensor of zero bits on `device`: host memory directly,
// other devices through dlbridge's backend (CUDA where dlbridge was built
// with it); BufferError for a device it cannot allocate on.
[[nodiscard]] inline tensor zeros_on(device on, extents_t shape, dtype type) {
  if (on.type == kDLCPU) return tensor::zeros(shape, type);
  tensor out;
  if (get_argument_api().zeros(on, shape.data(), std::int32_t(shape.size()), type, &out) != 0)
    throw python_error_already_set{};
  return out;
}

namespace detail {
template <class>
inline constexpr bool is_view = false;
template <class T, class... Constraints>
inline constexpr bool is_view<view<T, Constraints...>> = true;

template <class View>
[[nodiscard]] constexpr std::array<std::int64_t, std::size_t(View::rank)> shape_of(const View& v) noexcept {
  std::array<std::int64_t, std::size_t(View::rank)> shape{};
  for (std::int32_t i = 0; i < v.rank; ++i) shape[std::size_t(i)] = v.shape(i);
  return shape;
}
}  // namespace detail

// A new C-contiguous tensor of zero bits with v's shape, dtype and device.
// (Its one template argument is the view type, which Cython spells out.)
template <class View>
  requires detail::is_view<View>
[[nodiscard]] tensor zeros_like(const View& v) {
  return zeros_on(v.device(), detail::shape_of(v), v.dtype);
}

namespace detail {
template <DLDeviceType>
struct device_constraint;
template <>
struct device_constraint<kDLCPU> : std::type_identity<cpu> {};
template <>
struct device_constraint<kDLCUDA> : std::type_identity<cuda> {};
template <>
struct device_constraint<kDLCUDAHost> : std::type_identity<cuda_host> {};
template <>
struct device_constraint<kDLCUDAManaged> : std::type_identity<cuda_managed> {};

template <class In, std::size_t... Axis>
auto output_view_of(std::index_sequence<Axis...>) {
  using fixed = dlb::shape<In::static_extents[Axis]...>;
  if constexpr (In::has_device)
    return view<typename In::value_type, fixed, c_contig, typename device_constraint<In::device_type>::type>{};
  else
    return view<typename In::value_type, fixed, c_contig>{};
}
}  // namespace detail

// The view of a new array like an input view In: writable, In's element
// type, rank, fixed extents and device demand, C-contiguous.
template <class In>
  requires detail::is_view<In>
using output_view = decltype(detail::output_view_of<In>(std::make_index_sequence<std::size_t(In::rank)>{}));

// A new array for a kernel's output beside the input view `in`, seen
// through Out: in's shape and device, Out's dtype, zero bits, C-contiguous.
// What Out may demand of it is checked here, at compile time.
template <class Out, class In>
  requires(detail::is_view<Out> && detail::is_view<In>)
[[nodiscard]] std::pair<tensor, Out> new_output(const In& in) {
  static_assert(!Out::readonly, "an output view must be writable (no dlb::ro, no const element type)");
  static_assert(Out::rank == In::rank, "an output view must have as many axes as its input view");
  static_assert(Out::order != memory_order::f || Out::rank < 2,
                "a new output array is C-contiguous: its view cannot demand dlb::f_contig");
  static_assert(
      [] {
        for (std::size_t i = 0; i < std::size_t(In::rank); ++i)
          if (Out::static_extents[i] != any_extent && Out::static_extents[i] != In::static_extents[i]) return false;
        return true;
      }(),
      "an output view may fix only the extents its input view fixes, to the same values");
  static_assert(!Out::has_device || (In::has_device && In::device_type == Out::device_type),
                "an output view may demand a device only where its input view demands the same one");
  tensor t = zeros_on(in.device(), detail::shape_of(in), Out::dtype);
  const Out out = Out::from_validated(t.dltensor());
  return {std::move(t), out};
}

}  // namespace dlb::python
