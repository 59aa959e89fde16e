// dlbridge's Python-facing C++ API (<dlbridge/python/argument.hpp>, <dlbridge/python/core.hpp>)
// called with the NULL pointers its contract allows, as a careless extension
// might. Not an example to follow: tests/python/consumers/test_cython_consumers.py
// builds it beside the example, against the installed dlbridge, and checks
// that each call is an exception or nothing, never a crash.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlbridge/python/argument.hpp>
#include <dlbridge/python/returns.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <numeric>
#include <string_view>

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

// returned_like(like, n, readonly, kind): a tensor made here, returned
// through to_python_like(t, like), or to_python(t) where like is None, and
// the address of its data, as a tuple. kind "float64": n float64 0, 1, ...
// in host memory; "bfloat16": n bfloat16 zeros there; "cuda": n float32 at a
// made-up CUDA address that nothing reads. Each release counts (releases()).
std::atomic<long> released{0};

PyObject* returned_like(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_Format(PyExc_TypeError, "returned_like() takes 4 arguments (%zd given)", nargs);
    return nullptr;
  }
  const long long n = PyLong_AsLongLong(args[1]);
  const char* kind = PyUnicode_AsUTF8(args[3]);
  if ((n == -1 && PyErr_Occurred()) || !kind) return nullptr;
  try {
    const std::int64_t shape[] = {n};
    dlb::tensor t;
    if (std::string_view(kind) == "cuda") {
      t = dlb::tensor::adopt(reinterpret_cast<void*>(std::uintptr_t(0x10000)), dlb::dtype_of<float>,
                             {dlb::kDLCUDA, 0}, shape, {}, false,
                             [](void*) noexcept { released.fetch_add(1); }, nullptr);
    } else {
      const bool bfloat16 = std::string_view(kind) == "bfloat16";
      // 64-byte aligned, as dlbridge allocates: JAX copies less aligned memory.
      auto* data = static_cast<double*>(std::aligned_alloc(64, (std::size_t(n) * sizeof(double) + 64) / 64 * 64));
      if (!data) throw std::bad_alloc();
      std::iota(data, data + n, 0.0);
      t = dlb::tensor::adopt(data, bfloat16 ? dlb::dtype{dlb::kDLBfloat, 16} : dlb::dtype_of<double>,
                             dlb::kDLCPU, shape, {}, false, [](void* p) noexcept {
                               std::free(p);
                               released.fetch_add(1);
                             }, data);
    }
    if (PyObject_IsTrue(args[2])) t.make_readonly();
    PyObject* address = PyLong_FromVoidPtr(t.data());
    if (!address) return nullptr;
    PyObject* out = nullptr;
    try {
      out = args[0] == Py_None ? dlb::python::to_python(std::move(t))
                               : dlb::python::to_python_like(std::move(t), args[0]);
    } catch (...) {
      Py_DECREF(address);
      throw;
    }
    return Py_BuildValue("(NN)", out, address);
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

PyObject* releases(PyObject*, PyObject*) { return PyLong_FromLong(released.load()); }

// empty_returned(like): an empty dlb::tensor (moved from) given to
// to_python_like(t, like), or to_python where like is None.
PyObject* empty_returned(PyObject*, PyObject* like) {
  try {
    dlb::tensor t = dlb::tensor::empty({}, dlb::dtype_of<double>);
    const dlb::tensor taken = std::move(t);
    return like == Py_None ? dlb::python::to_python(std::move(t)) : dlb::python::to_python_like(std::move(t), like);
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

// returned_like_null(failed): to_python_like with a NULL like; when
// `failed` is true, after a call that failed (its exception still set).
PyObject* returned_like_null(PyObject*, PyObject* failed) {
  if (PyObject_IsTrue(failed)) PyErr_SetString(PyExc_LookupError, "the call that made the object failed");
  try {
    return dlb::python::to_python_like(dlb::tensor::empty({}, dlb::dtype_of<double>), nullptr);
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

// table_of(abi_version, size): the installed table with its head faked,
// checked as get_argument_api checks it (as a module built against another
// dlbridge would see it).
PyObject* table_of(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "table_of() takes 2 arguments (%zd given)", nargs);
    return nullptr;
  }
  try {
    dlb::python::argument_api fake = dlb::python::get_argument_api();
    fake.abi_version = std::uint32_t(PyLong_AsUnsignedLong(args[0]));
    fake.size = std::uint32_t(PyLong_AsUnsignedLong(args[1]));
    if (PyErr_Occurred()) return nullptr;
    (void)dlb::python::checked_argument_api(fake);
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
    {"returned_like", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(returned_like)), METH_FASTCALL,
     "A tensor made in C++ returned like an object (None: to_python), and its data address."},
    {"releases", releases, METH_NOARGS, "How often returned_like's CUDA tensors were released."},
    {"empty_returned", empty_returned, METH_O, "An empty tensor given to to_python(_like)."},
    {"returned_like_null", returned_like_null, METH_O, "to_python_like with a NULL like."},
    {"table_of", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(table_of)), METH_FASTCALL,
     "The argument API table with a faked head, checked."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "dlb_contracts", "dlbridge's C++ API called with NULL pointers.", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_dlb_contracts() { return PyModule_Create(&module); }
