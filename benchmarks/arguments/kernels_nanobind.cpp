// The two kernels of the glue comparison (benchmarks/arguments.py) written
// with nanobind's nb::ndarray, as an extension author would without
// dlbridge. Code between `begin kernel` and `end kernel` is the same loop in
// every version; the rest is glue.
#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

namespace nb = nanobind;

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<2>> corner_moravec(nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu> image,
                                                      std::int64_t window_size) {
  if (window_size < 0)
    throw nb::value_error(("corner_moravec(): window_size must be >= 0, got " + std::to_string(window_size)).c_str());
  const std::int64_t rows = std::int64_t(image.shape(0)), cols = std::int64_t(image.shape(1)), w = window_size;
  T* out_data = new T[std::size_t(rows * cols)]();
  nb::capsule owner(out_data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  auto in = image.view();
  auto out = [&](std::int64_t r, std::int64_t c) -> T& { return out_data[r * cols + c]; };
  {
    nb::gil_scoped_release release;
    // begin kernel
    for (std::int64_t r = w + 1; r < rows - w - 1; ++r) {
      for (std::int64_t c = w + 1; c < cols - w - 1; ++c) {
        double least = DBL_MAX;
        for (std::int64_t br = r - 1; br < r + 2; ++br) {
          for (std::int64_t bc = c - 1; bc < c + 2; ++bc) {
            if (br == r && bc == c) continue;
            double total = 0;
            for (std::int64_t mr = -w; mr < w + 1; ++mr) {
              for (std::int64_t mc = -w; mc < w + 1; ++mc) {
                const double d = in(r + mr, c + mc) - in(br + mr, bc + mc);
                total += d * d;
              }
            }
            least = std::min(least, total);
          }
        }
        out(r, c) = T(least);
      }
    }
    // end kernel
  }
  return nb::ndarray<nb::numpy, T, nb::ndim<2>>(out_data, {std::size_t(rows), std::size_t(cols)}, owner);
}

NB_MODULE(kernels_nanobind, m) {
  m.def("corner_moravec", &corner_moravec<float>, nb::arg("image").noconvert(), nb::arg("window_size") = 1);
  m.def("corner_moravec", &corner_moravec<double>, nb::arg("image").noconvert(), nb::arg("window_size") = 1);
  m.def("brighten_", [](nb::ndarray<std::uint8_t, nb::shape<-1, -1, 3>, nb::device::cpu> image) {
    auto v = image.view();
    nb::gil_scoped_release release;
    // begin kernel
    for (std::size_t y = 0; y < v.shape(0); ++y) {
      for (std::size_t x = 0; x < v.shape(1); ++x) {
        for (std::size_t ch = 0; ch < 3; ++ch) {
          v(y, x, ch) = std::uint8_t(std::min(255, 2 * v(y, x, ch)));
        }
      }
    }
    // end kernel
  }, nb::arg("image").noconvert());
}
