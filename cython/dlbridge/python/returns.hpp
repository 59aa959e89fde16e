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
// (catch it with raise_python_error, as for array_argument). Call them with
// the GIL held.
#pragma once

#include <Python.h>

#include <array>
#include <cstdint>
#include <utility>

#include "dlbridge/python/argument.hpp"
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

namespace detail {
template <class>
inline constexpr bool is_view = false;
template <class T, class... Constraints>
inline constexpr bool is_view<view<T, Constraints...>> = true;
template <class>
inline constexpr bool is_array_argument = false;
template <class... Views>
inline constexpr bool is_array_argument<array_argument<Views...>> = true;
}  // namespace detail

// A new C-contiguous tensor of zero bits with v's shape, dtype and device:
// host memory directly, other devices through dlbridge's backend (CUDA where
// dlbridge was built with it); BufferError for a device it cannot allocate on.
// (Its one template argument is the view type, which Cython spells out.)
template <class View>
  requires detail::is_view<View>
[[nodiscard]] tensor zeros_like(const View& v) {
  std::array<std::int64_t, std::size_t(View::rank)> shape{};
  for (std::int32_t i = 0; i < v.rank; ++i) shape[std::size_t(i)] = v.shape(i);
  if (v.device().type == kDLCPU) return tensor::zeros(shape, v.dtype);
  tensor out;
  if (get_argument_api().zeros(v.device(), shape.data(), v.rank, v.dtype, &out) != 0) throw python_error_already_set{};
  return out;
}

// The same for the view an array argument holds (whichever of its views).
// (One template argument, the argument type, as for views.)
template <class Argument>
  requires detail::is_array_argument<Argument>
[[nodiscard]] tensor zeros_like(const Argument& a) {
  return a.visit([](const auto& v) { return zeros_like(v); });
}

}  // namespace dlb::python
