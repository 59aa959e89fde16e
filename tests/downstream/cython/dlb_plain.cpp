// The argument converter in a CPython extension written in plain C++, with
// no Cython (docs/cython-guide.md, "Array arguments"). Built beside the
// Cython example against the installed dlbridge, and used by
// tests/python/consumers/test_cython_consumers.py.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <string>

#include <dlbridge/python/argument.hpp>
#include <dlbridge/python/returns.hpp>

namespace {

using rows_view = dlb::view<const double, dlb::ndim<2>, dlb::cpu>;
using column_view = dlb::view<double, dlb::ndim<1>, dlb::c_contig, dlb::cpu>;
using vector_view = dlb::view<const double, dlb::ndim<1>, dlb::cpu>;

// row_sums(x): a list of the sums of the rows of a 2-D float64 array, any
// strides, from any producer.
PyObject* row_sums(PyObject*, PyObject* x) {
  try {
    const dlb::python::array_argument<rows_view> rows(x, "row_sums", "x");
    const rows_view& v = rows.view();
    PyObject* out = PyList_New(Py_ssize_t(v.shape(0)));
    if (!out) return nullptr;
    for (std::int64_t i = 0; i < v.shape(0); ++i) {
      double total = 0;
      for (std::int64_t j = 0; j < v.shape(1); ++j) total += v(i, j);
      PyObject* item = PyFloat_FromDouble(total);
      if (!item) {
        Py_DECREF(out);
        return nullptr;
      }
      PyList_SET_ITEM(out, Py_ssize_t(i), item);
    }
    return out;
  } catch (...) {
    dlb::python::raise_python_error();  // TypeError, BufferError, or the error already set
    return nullptr;
  }
}

// fill_(y, value): writes value into a writable, contiguous 1-D float64 array.
PyObject* fill_(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "fill_() takes 2 arguments (%zd given)", nargs);
    return nullptr;
  }
  const double value = PyFloat_AsDouble(args[1]);
  if (value == -1.0 && PyErr_Occurred()) return nullptr;
  try {
    const dlb::python::array_argument<column_view> y(args[0], "fill_", "y");
    for (std::int64_t i = 0; i < y.view().shape(0); ++i) y.view()(i) = value;
    Py_RETURN_NONE;
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

// negated(x): -x as a new array, returned like x: an ndarray for an
// ndarray, a torch.Tensor for a tensor, a JAX array for a JAX array.
PyObject* negated(PyObject*, PyObject* x) {
  try {
    const dlb::python::array_argument<vector_view> in(x, "negated", "x");
    const vector_view& v = in.view();
    const std::int64_t shape[] = {v.shape(0)};
    dlb::tensor out = dlb::tensor::empty(shape, dlb::dtype_of<double>);
    const auto w = out.as<column_view>();
    for (std::int64_t i = 0; i < v.shape(0); ++i) w(i) = -v(i);
    return dlb::python::to_python_like(std::move(out), x);
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

using image32 = dlb::view<const float, dlb::ndim<2>, dlb::c_contig, dlb::cpu>;
using image64 = dlb::view<const double, dlb::ndim<2>, dlb::c_contig, dlb::cpu>;

// image_sum(x): the sum of a 2-D float32 or float64 C-contiguous array, from
// any producer; one kernel for both, through visit.
PyObject* image_sum(PyObject*, PyObject* x) {
  try {
    const dlb::python::array_argument<image32, image64> image(x, "image_sum", "x");
    return PyFloat_FromDouble(image.visit([](const auto& v) {
      double total = 0;
      for (std::int64_t i = 0; i < v.shape(0); ++i)
        for (std::int64_t j = 0; j < v.shape(1); ++j) total += v(i, j);
      return total;
    }));
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

// image_dtype(x): image_sum's argument with copy_if_needed, as (dtype, the
// address of the data the view sees).
PyObject* image_dtype(PyObject*, PyObject* x) {
  try {
    const dlb::python::array_argument<image32, image64> image(x, "image_dtype", "x", dlb::python::copy_if_needed);
    const void* data = image.visit([](const auto& v) -> const void* { return v.data(); });
    return Py_BuildValue("(sK)", std::string(dlb::name(image.dtype())).c_str(),
                         static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(data)));
  } catch (...) {
    dlb::python::raise_python_error();
    return nullptr;
  }
}

// copy_threads(): dlb::copy_threads() as this module's own copies read it,
// with no wrapper: the state is dlbridge's once an argument has been taken.
PyObject* copy_threads(PyObject*, PyObject*) { return PyLong_FromUnsignedLong(dlb::copy_threads()); }

PyMethodDef methods[] = {
    {"row_sums", row_sums, METH_O, "The sums of the rows of a 2-D float64 array."},
    {"fill_", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fill_)), METH_FASTCALL,
     "Fills a writable contiguous 1-D float64 array with a value."},
    {"negated", negated, METH_O, "-x for a 1-D float64 array x, as a new array of x's kind."},
    {"image_sum", image_sum, METH_O, "The sum of a 2-D float32 or float64 C-contiguous array."},
    {"image_dtype", image_dtype, METH_O, "The dtype and data address image_sum's converting argument sees."},
    {"copy_threads", copy_threads, METH_NOARGS, "dlb::copy_threads() in this module."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "dlb_plain", "dlbridge's argument converter from plain C++.", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_dlb_plain() { return PyModule_Create(&module); }
