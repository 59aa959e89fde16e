// The plain C++ return route of benchmarks/arguments.py: an extension
// function written without a binding tool, as docs/cpp-guide.md shows, that
// makes a new 1-element float64 array and returns it like its NumPy input x
// (dlb::python::to_python_like).
#include <Python.h>

#include <cstdint>
#include <utility>

#include <dlbridge/python/returns.hpp>

namespace {

PyObject* new_like(PyObject*, PyObject* x) {
  try {
    const std::int64_t shape[] = {1};
    dlb::tensor out = dlb::tensor::empty(shape, dlb::dtype_of<double>);
    static_cast<double*>(out.data())[0] = 1.0;
    return dlb::python::to_python_like(std::move(out), x);
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"new_like", new_like, METH_O, "A new 1-element float64 array, returned like x."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "args_plain", nullptr, -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit_args_plain() { return PyModule_Create(&module); }
