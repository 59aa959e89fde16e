// The kernels both binding modules expose: plain loops over dlb::views.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include <dlbridge/python/bindings.hpp>
#include <dlbridge/tensor.hpp>
#include <dlbridge/view.hpp>

namespace kernels {

template <class T>
using matrix = dlb::view<const T, dlb::ndim<2>, dlb::c_contig, dlb::cpu>;
using writable_matrix = dlb::view<float, dlb::ndim<2>, dlb::cpu>;
using rgb_image = dlb::view<std::uint8_t, dlb::shape<dlb::any_extent, dlb::any_extent, 3>, dlb::cpu>;
using fortran_pair = dlb::view<const double, dlb::shape<2, dlb::any_extent>, dlb::f_contig, dlb::cpu>;
using contiguous_ints = dlb::view<const std::int64_t, dlb::ndim<1>, dlb::any_contig, dlb::cpu>;

// The dtype that matched, and the sum of the elements.
template <class T>
std::pair<std::string, double> total(matrix<T> x) {
  double sum = 0;
  for (std::int64_t i = 0; i < x.shape(0); ++i)
    for (std::int64_t j = 0; j < x.shape(1); ++j) sum += x(i, j);
  return {std::string(dlb::name(x.dtype)), sum};
}

inline void scale(const writable_matrix& x, double factor) {
  for (std::int64_t i = 0; i < x.shape(0); ++i)
    for (std::int64_t j = 0; j < x.shape(1); ++j) x(i, j) = float(x(i, j) * factor);
}

inline void fill_rgb(const rgb_image& image, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  for (std::int64_t i = 0; i < image.shape(0); ++i)
    for (std::int64_t j = 0; j < image.shape(1); ++j) {
      image(i, j, 0) = r;
      image(i, j, 1) = g;
      image(i, j, 2) = b;
    }
}

inline double lower_left(const fortran_pair& x) { return x.shape(1) ? x(1, 0) : 0.0; }

inline std::int64_t last(contiguous_ints x) { return x.shape(0) ? x(x.shape(0) - 1) : -1; }

// A new array: twice x.
inline dlb::tensor doubled(dlb::view<const float, dlb::ndim<1>, dlb::cpu> x) {
  const std::int64_t n = x.shape(0);
  dlb::tensor out = dlb::tensor::empty({&n, 1}, dlb::dtype_of<float>);
  const auto y = dlb::view<float, dlb::ndim<1>, dlb::cpu>::from(out.dltensor());
  for (std::int64_t i = 0; i < n; ++i) y(i) = 2 * x(i);
  return out;
}

// One function for float32 and float64: the view of the input's dtype.
using real_matrix = dlb::python::array_argument<matrix<float>, matrix<double>>;

inline std::pair<std::string, double> sum(const real_matrix& x) {
  return x.visit([](const auto& v) { return total(v); });
}

// A new array of x's dtype, twice x, returned as the caller's kind of array.
inline dlb::python::like twice(const real_matrix& x) {
  return x.visit_new([](const auto& in, const auto& out) {
    for (std::int64_t i = 0; i < in.shape(0); ++i)
      for (std::int64_t j = 0; j < in.shape(1); ++j) out(i, j) = 2 * in(i, j);
  });
}

// The same, the argument checked in the body: a mismatch is dlbridge's own
// TypeError, "checked_twice(): argument 'x': expected float32 or float64, got int32".
inline dlb::python::like checked_twice(dlb::python::array_parameter<matrix<float>, matrix<double>> x) {
  return twice(x.argument("checked_twice", "x"));
}

// twice's result and the address of the data it wrote (for the tests: no copy).
inline std::pair<dlb::python::like, std::uintptr_t> twice_at(const real_matrix& x) {
  dlb::python::like out = twice(x);
  const auto data = reinterpret_cast<std::uintptr_t>(out.array.dltensor().data);
  return {std::move(out), data};
}

// A like result holding nothing, which Python cannot be given.
inline dlb::python::like nothing_like(const real_matrix& x) { return {dlb::tensor{}, x.object()}; }

// A tensor that holds nothing, which Python cannot be given.
inline dlb::tensor nothing() { return {}; }

// Exceptions thrown in a function's body, for the translator: dlbridge's own
// raised as dlbridge raises them, any other as the tool does.
inline void throw_in_body(int which) {
  switch (which) {
    case 0: throw dlb::python::argument_mismatch("f(): argument 'x': expected float32, got int8");
    case 1: throw dlb::import_failure({"dtype", -1, "a DLPack dtype", "code 99"});
    case 2:
      PyErr_SetString(PyExc_KeyError, "set in the body");
      throw dlb::python::python_error_already_set{};
    case 3: throw std::invalid_argument("another library's invalid_argument");
    default: throw std::runtime_error("another library's runtime_error");
  }
}

}  // namespace kernels
