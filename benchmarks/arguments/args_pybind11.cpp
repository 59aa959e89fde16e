// The pybind11 route of benchmarks/arguments.py.
#include <cstdint>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <dlbridge/python/pybind11.hpp>

namespace py = pybind11;

PYBIND11_MODULE(args_pybind11, m) {
  m.def("bare", [](py::handle) {});
  m.def("view", [](py::array_t<double, py::array::c_style> x) {
    return static_cast<int>(reinterpret_cast<std::uintptr_t>(x.data()) & 1);
  });
  // The same work through dlbridge's caster (dlbridge/python/pybind11.hpp).
  m.def("caster", [](dlb::view<const double, dlb::ndim<2>, dlb::c_contig, dlb::cpu> x) {
    return static_cast<int>(reinterpret_cast<std::uintptr_t>(x.data()) & 1);
  });
  // A new 1-element array returned to the NumPy caller (x is ignored).
  m.def("new_array", [](py::handle) {
    py::array_t<double> out(1);
    out.mutable_data()[0] = 1.0;
    return out;
  });
}
