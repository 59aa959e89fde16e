// The nanobind route of benchmarks/arguments.py.
#include <cstdint>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <dlbridge/python/nanobind.hpp>

namespace nb = nanobind;

NB_MODULE(args_nanobind, m) {
  m.def("bare", [](nb::handle) {});
  m.def("view", [](nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu> x) {
    return static_cast<int>(reinterpret_cast<std::uintptr_t>(x.data()) & 1);
  });
  // The same work through dlbridge's caster (dlbridge/python/nanobind.hpp).
  m.def("caster", [](dlb::view<const double, dlb::ndim<2>, dlb::c_contig, dlb::cpu> x) {
    return static_cast<int>(reinterpret_cast<std::uintptr_t>(x.data()) & 1);
  });
  // A new 1-element array returned to the NumPy caller (x is ignored), as
  // nanobind's documentation returns one: its memory owned by a capsule.
  m.def("new_array", [](nb::handle) {
    auto* data = new double[1]{1.0};
    nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<double*>(p); });
    return nb::ndarray<nb::numpy, double, nb::ndim<1>>(data, {1}, owner);
  });
}
