// The kernels both binding modules expose: plain loops over dlb::views.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

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

// A tensor that holds nothing, which Python cannot be given.
inline dlb::tensor nothing() { return {}; }

}  // namespace kernels
