// The two kernels of the glue comparison (benchmarks/arguments.py) written
// in C++ with nanobind and dlbridge's casters (<dlbridge/python/nanobind.hpp>): the
// multi-dtype argument checked in the body with dlbridge's messages, a new
// array returned like the input, a fixed-extent view. Code between `begin
// kernel` and `end kernel` is the same loop in every version; the rest is glue.
#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <string>

#include <dlbridge/python/nanobind.hpp>

namespace nb = nanobind;

template <class T>
using image = dlb::view<const T, dlb::ndim<2>, dlb::c_contig, dlb::cpu>;
using rgb = dlb::view<std::uint8_t, dlb::shape<dlb::any_extent, dlb::any_extent, 3>, dlb::cpu>;

NB_MODULE(kernels_dlbridge_nanobind, m) {
  dlb::python::register_nanobind_translator();
  m.def("corner_moravec", [](dlb::python::array_parameter<image<float>, image<double>> x, std::int64_t window_size) {
    if (window_size < 0)
      throw nb::value_error(("corner_moravec(): window_size must be >= 0, got " + std::to_string(window_size)).c_str());
    return x.argument("corner_moravec", "image").visit_new([&](const auto& in, const auto& out) {
      const std::int64_t rows = in.shape(0), cols = in.shape(1), w = window_size;
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
          out(r, c) = least;
        }
      }
      // end kernel
    });
  }, nb::arg("image"), nb::arg("window_size") = 1);
  m.def("brighten_", [](dlb::python::array_parameter<rgb> x) {
    const auto image = x.argument("brighten_", "image");
    const rgb& v = image.view();
    nb::gil_scoped_release release;
    // begin kernel
    for (std::int64_t y = 0; y < v.shape(0); ++y) {
      for (std::int64_t x = 0; x < v.shape(1); ++x) {
        for (std::int64_t ch = 0; ch < 3; ++ch) {
          v(y, x, ch) = std::uint8_t(std::min(255, 2 * v(y, x, ch)));
        }
      }
    }
    // end kernel
  }, nb::arg("image"));
}
