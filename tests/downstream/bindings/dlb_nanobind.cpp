// dlbridge's nanobind casters (dlbridge/python/nanobind.hpp), for test_bindings.py.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <dlbridge/python/nanobind.hpp>

#include "kernels.hpp"

namespace nb = nanobind;

NB_MODULE(dlb_nanobind, m) {
  // dlbridge's exceptions raised as dlbridge raises them (array_parameter's TypeError).
  dlb::python::register_nanobind_translator();
  // Two overloads of one name: float32 and float64 inputs each reach their own.
  m.def("total", &kernels::total<float>, nb::arg("x"));
  m.def("total", &kernels::total<double>, nb::arg("x"));
  // In place (no trailing underscore: nanobind's stubgen takes such names for private ones).
  m.def("scale", &kernels::scale, nb::arg("x"), nb::arg("factor") = 2.0);
  m.def("fill_rgb", &kernels::fill_rgb, nb::arg("image"), nb::arg("r"), nb::arg("g"), nb::arg("b"));
  m.def("lower_left", &kernels::lower_left, nb::arg("x"));
  m.def("last", &kernels::last, nb::arg("x"));
  m.def("doubled", &kernels::doubled, nb::arg("x"));
  m.def("nothing", &kernels::nothing);
  // One overload for two dtypes, returning the caller's kind of array.
  m.def("sum", &kernels::sum, nb::arg("x"));
  m.def("twice", &kernels::twice, nb::arg("x"));
  m.def("twice_at", &kernels::twice_at, nb::arg("x"));
  m.def("nothing_like", &kernels::nothing_like, nb::arg("x"));
  // Checked in the body, with dlbridge's messages.
  m.def("checked_twice", &kernels::checked_twice, nb::arg("x"));
  m.def("throw_in_body", &kernels::throw_in_body, nb::arg("which"));
}
