// The C++ side of dlbridge's Python layer: C++ exceptions become Python
// exceptions, and Python-owned memory is released safely from any thread.
// Needs Python.h, so it is not part of lib/.
#pragma once

#include <Python.h>

#include <cstdlib>
#include <new>
#include <stdexcept>

#include "dlbridge/dlpack.hpp"
#include "dlbridge/stream.hpp"
#include "dlbridge/tensor.hpp"

namespace dlb::python {

// Thrown where a Python exception is already set: raise_python_error keeps it.
struct python_error_already_set : std::exception {
  [[nodiscard]] const char* what() const noexcept override { return "a Python exception is set"; }
};

// A valid array that does not fit what a function's argument demands: TypeError,
// as for any argument of the wrong type ("f(): argument 'x': expected ndim 2, got 3").
class argument_mismatch : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// raise_python_error sets the Python exception of the C++ exception in
// flight, for Cython's `except +raise_python_error`. A foreign tensor that
// fails validation (data DLPack cannot describe to us) and work refused
// across a CUDA graph capture (data we cannot move as asked) are
// BufferError, as the array API asks. Sizes that overflow are ValueError, as
// in NumPy. raise_own_error does it for dlbridge's own exceptions only, and
// answers false for any other, which a binding tool's translator leaves to
// the tool (bindings.hpp).
inline bool raise_own_error() {
  try {
    throw;
  } catch (const python_error_already_set&) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "a C++ error said a Python exception was set, but none is");
  } catch (const argument_mismatch& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const import_failure& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  } catch (const capture_refused& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  } catch (...) {
    return false;
  }
  return true;
}

inline int raise_python_error() {
  if (raise_own_error()) return -1;
  try {
    throw;
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::length_error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::invalid_argument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
  return -1;
}

// Runs `f` with a pending Python exception of this thread set aside, so that
// code run by a deleter (Python code included) neither sees nor clobbers it.
// Without the GIL there is no pending exception of ours to protect.
// keeping_held_exception: the same, for callers that hold the GIL.
template <class F>
void keeping_held_exception(F&& f) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  const bool pending = PyErr_Occurred() != nullptr;  // rarely: fetching costs every release
  if (pending) PyErr_Fetch(&type, &value, &traceback);
  f();
  if (PyErr_Occurred()) PyErr_WriteUnraisable(nullptr);
  if (pending) PyErr_Restore(type, value, traceback);
}

template <class F>
void keeping_exception(F&& f) {
  if (!Py_IsInitialized() || !PyGILState_Check()) return f();
  keeping_held_exception(f);
}

// Release functions for dlb::tensor. They run on whichever thread drops the
// last reference, and after interpreter shutdown they leak rather than touch
// a dead interpreter. A NULL context releases nothing.
template <class Managed>
void release_managed(void* m) {
  if (!m || !Py_IsInitialized()) return;  // the producer's deleter may need Python
  keeping_exception([m] { tensor::call_deleter<Managed>(m); });
}

inline void release_object(void* object) {
  if (!Py_IsInitialized()) return;
  const PyGILState_STATE gil = PyGILState_Ensure();
  keeping_held_exception([object] { Py_XDECREF(static_cast<PyObject*>(object)); });
  PyGILState_Release(gil);
}

inline void release_buffer(void* view) {
  if (!view || !Py_IsInitialized()) return;
  const PyGILState_STATE gil = PyGILState_Ensure();
  keeping_held_exception([view] { PyBuffer_Release(static_cast<Py_buffer*>(view)); });
  PyGILState_Release(gil);
  std::free(view);
}

// Runs `f` with the GIL released where this thread holds it: for releases
// that wait for the GPU (cudaFreeHost, cudaFree), which would stall every
// Python thread, and deadlock on a stream whose host callback needs the GIL.
// A release runs with or without the GIL, so it asks (without failing where
// the GIL is not held); while the interpreter finalizes it keeps the GIL, as
// a thread other than the main one could not take it back.
template <class F>
void without_gil(F&& f) {
#if PY_VERSION_HEX >= 0x030D0000
  const bool held = Py_IsInitialized() && !Py_IsFinalizing() && PyThreadState_GetUnchecked() != nullptr;
#else
  const bool held = Py_IsInitialized() && !_Py_IsFinalizing() && _PyThreadState_UncheckedGet() != nullptr;
#endif
  if (!held) return f();
  PyThreadState* const saved = PyEval_SaveThread();
  f();
  PyEval_RestoreThread(saved);
}

inline constexpr auto release_versioned = release_managed<DLManagedTensorVersioned>;
inline constexpr auto release_legacy = release_managed<DLManagedTensor>;

// The Python object holding t's memory (the owner of release_object, the
// exporter of release_buffer) where the garbage collector can follow it;
// nullptr otherwise: memory held any other way (a foreign deleter may hold
// Python objects too, but cannot say which), or an owner whose type takes no
// part in collection (an ndarray): no cycle through it can ever be found.
inline PyObject* collectable_owner(const tensor& t) noexcept {
  const keeper* k = t.memory_keeper();
  if (!k) return nullptr;
  PyObject* owner = nullptr;
  if (k->release_function() == release_object) owner = static_cast<PyObject*>(k->context());
  if (k->release_function() == release_buffer && k->context()) owner = static_cast<Py_buffer*>(k->context())->obj;
  return owner && PyType_IS_GC(Py_TYPE(owner)) ? owner : nullptr;
}

// collectable_owner(t) where t's keeper is shared with nothing (no view,
// export or copy of t): then the reference is t's alone, which an Array
// reports to the garbage collector. Shared, it is held from outside as far as
// the collector can tell, so it is not reported (and not collected).
inline PyObject* sole_collectable_owner(const tensor& t) noexcept {
  return t.use_count() == 1 ? collectable_owner(t) : nullptr;
}

}  // namespace dlb::python
