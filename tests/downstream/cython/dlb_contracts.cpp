// dlbridge's Python-facing C++ API (<dlbridge/argument.hpp>, <dlbridge/python.hpp>)
// called with the NULL pointers its contract allows, as a careless extension
// might. Not an example to follow: tests/python/test_cython_consumers.py
// builds it beside the example, against the installed dlbridge, and checks
// that each call is an exception or nothing, never a crash.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlbridge/argument.hpp>

namespace {

using vector_view = dlb::view<const double, dlb::ndim<1>, dlb::cpu>;

// A str argument as a C string; None as NULL.
bool c_string(PyObject* object, const char*& out) {
  out = object == Py_None ? nullptr : PyUnicode_AsUTF8(object);
  return out || object == Py_None;
}

// total(x, function, name): the sum of a 1-D float64 array, taken as an
// argument whose function and argument names are those given (None: NULL).
PyObject* total(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  const char *function = nullptr, *name = nullptr;
  if (nargs != 3) {
    PyErr_Format(PyExc_TypeError, "total() takes 3 arguments (%zd given)", nargs);
    return nullptr;
  }
  if (!c_string(args[1], function) || !c_string(args[2], name)) return nullptr;
  try {
    const dlb::python::array_argument<vector_view> x(args[0], function, name);
    double sum = 0;
    for (std::int64_t i = 0; i < x.view().shape(0); ++i) sum += x.view()(i);
    return PyFloat_FromDouble(sum);
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

// argument_of_null(failed): an argument made from a NULL object; when
// `failed` is true, after a call that failed (its exception still set).
PyObject* argument_of_null(PyObject*, PyObject* failed) {
  if (PyObject_IsTrue(failed)) PyErr_SetString(PyExc_LookupError, "the call that made the object failed");
  try {
    const dlb::python::array_argument<vector_view> x(nullptr, "f", "x");
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
  Py_RETURN_NONE;
}

// borrow_into_null(x): the converter's C entry with nowhere to put the tensor.
PyObject* borrow_into_null(PyObject*, PyObject* x) {
  try {
    if (dlb::python::get_argument_api().borrow(x, nullptr, "f", "x") != 0) return nullptr;
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
  Py_RETURN_NONE;
}

// release_nothing(): each release function with a NULL context, and a tensor
// adopted with release_buffer and no buffer: nothing happens; returns
// whether collectable_owner finds no owner for that tensor.
PyObject* release_nothing(PyObject*, PyObject*) {
  dlb::python::release_versioned(nullptr);
  dlb::python::release_legacy(nullptr);
  dlb::python::release_object(nullptr);
  dlb::python::release_buffer(nullptr);
  try {
    static double data[2] = {1.0, 2.0};
    const std::int64_t shape[] = {2};
    const dlb::tensor t = dlb::tensor::adopt(data, dlb::dtype_of<double>, dlb::kDLCPU, shape, {}, true,
                                             dlb::python::release_buffer, nullptr);
    return PyBool_FromLong(dlb::python::collectable_owner(t) == nullptr);
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

// import_null(versioned): tensor::import of a NULL managed tensor.
PyObject* import_null(PyObject*, PyObject* versioned) {
  try {
    const dlb::tensor t = PyObject_IsTrue(versioned)
                              ? dlb::tensor::import(static_cast<dlb::DLManagedTensorVersioned*>(nullptr),
                                                    dlb::python::release_versioned)
                              : dlb::tensor::import(static_cast<dlb::DLManagedTensor*>(nullptr), true,
                                                    dlb::python::release_legacy);
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"total", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(total)), METH_FASTCALL,
     "The sum of a 1-D float64 array taken under the given names (None: NULL)."},
    {"argument_of_null", argument_of_null, METH_O, "An argument made from a NULL object."},
    {"borrow_into_null", borrow_into_null, METH_O, "argument_api::borrow with out=NULL."},
    {"release_nothing", release_nothing, METH_NOARGS, "The release functions with NULL contexts."},
    {"import_null", import_null, METH_O, "tensor::import of NULL."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "dlb_contracts", "dlbridge's C++ API called with NULL pointers.", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_dlb_contracts() { return PyModule_Create(&module); }
