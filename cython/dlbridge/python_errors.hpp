// Maps dlbridge's C++ exceptions to Python exceptions for Cython's
// `except +raise_python_error`. Needs Python.h, so it is not part of lib/.
#pragma once

#include <Python.h>

#include <new>
#include <stdexcept>

#include "dlbridge/tensor.hpp"

namespace dlb::python {

// A foreign tensor that fails validation is data DLPack cannot describe to us:
// BufferError, as the array API asks. Sizes that overflow are ValueError, as
// in NumPy ("array is too big").
inline int raise_python_error() {
  try {
    throw;
  } catch (const import_failure& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
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

}  // namespace dlb::python
