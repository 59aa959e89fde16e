// dlbridge's pybind11 casters (dlbridge/python/pybind11.hpp), for test_bindings.py.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlbridge/python/pybind11.hpp>

#include "kernels.hpp"

namespace py = pybind11;

PYBIND11_MODULE(dlb_pybind11, m) {
  // dlbridge's exceptions raised as dlbridge raises them (array_parameter's TypeError).
  dlb::python::register_pybind11_translator();
  // Two overloads of one name: float32 and float64 inputs each reach their own.
  m.def("total", &kernels::total<float>, py::arg("x"));
  m.def("total", &kernels::total<double>, py::arg("x"));
  // In place (no trailing underscore: nanobind's stubgen takes such names for private ones).
  m.def("scale", &kernels::scale, py::arg("x"), py::arg("factor") = 2.0);
  m.def("fill_rgb", &kernels::fill_rgb, py::arg("image"), py::arg("r"), py::arg("g"), py::arg("b"));
  m.def("lower_left", &kernels::lower_left, py::arg("x"));
  m.def("last", &kernels::last, py::arg("x"));
  m.def("doubled", &kernels::doubled, py::arg("x"));
  m.def("nothing", &kernels::nothing);
  // One overload for two dtypes, returning the caller's kind of array.
  m.def("sum", &kernels::sum, py::arg("x"));
  m.def("twice", &kernels::twice, py::arg("x"));
  m.def("twice_at", &kernels::twice_at, py::arg("x"));
  m.def("nothing_like", &kernels::nothing_like, py::arg("x"));
  // Checked in the body, with dlbridge's messages.
  m.def("checked_twice", &kernels::checked_twice, py::arg("x"));
  m.def("throw_in_body", &kernels::throw_in_body, py::arg("which"));
}
