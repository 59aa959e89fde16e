// NumPy's ndarray read straight from its fields, for the argument converter,
// from_dlpack and asarray, and made on a tensor's memory for arrays returned
// like an ndarray: no __dlpack__ call, no capsule. Built against
// NumPy 2's headers; active only once an ndarray has arrived (dlbridge never
// imports NumPy) and only with NumPy >= 2 running. Included by _array.pyx
// alone.
#pragma once

#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>

#include <array>
#include <bit>
#include <cstring>

#include "dlbridge/python/argument_api.hpp"

namespace dlb::python::numpy {

static_assert(sizeof(npy_intp) == sizeof(std::int64_t), "NumPy's extents are DLPack's int64 only where npy_intp is 64-bit");

// The exact ndarray type, once NumPy's C API is imported; nullptr before.
inline PyTypeObject* ndarray_type = nullptr;

// Imports NumPy 2's C API, only where NumPy's core module is already loaded:
// a type merely named numpy.ndarray (which may come first) then imports
// nothing, and an import that fails costs lookups, never a search of
// sys.path. A failure is not final: the next ndarray tries again (NumPy may
// have been half loaded). Sets no Python exception.
[[nodiscard, gnu::noinline]] inline bool import_ndarray_type() {
  static PyObject* const core_name = PyUnicode_InternFromString("numpy._core._multiarray_umath");
  PyObject* core = core_name ? PyImport_GetModule(core_name) : nullptr;
  const bool loaded = core && PyModule_Check(core);
  Py_XDECREF(core);
  if (!loaded || _import_array() < 0 || PyArray_RUNTIME_VERSION < NPY_2_0_API_VERSION) {  // 1.x descriptors differ
    PyErr_Clear();
    return false;
  }
  ndarray_type = &PyArray_Type;
  return true;
}

// Whether `type` (never NULL) is numpy.ndarray, importing NumPy's C API when
// a type of that name arrives, until that succeeds. Sets no Python exception.
[[nodiscard]] inline bool is_ndarray_type(PyTypeObject* type) {
  if (ndarray_type) return type == ndarray_type;
  return std::strcmp(type->tp_name, "numpy.ndarray") == 0 && import_ndarray_type() && type == ndarray_type;
}

// Whether `type` (never NULL) is numpy.ndarray or a subclass, importing
// NumPy's C API as is_ndarray_type does. Sets no Python exception.
[[nodiscard]] inline bool is_ndarray_subtype(PyTypeObject* type) {
  if (ndarray_type) return PyType_IsSubtype(type, ndarray_type);
  PyObject* mro = type->tp_mro;
  if (!mro || !PyTuple_Check(mro)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    auto* base = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
    if (is_ndarray_type(base)) return true;
  }
  return false;
}

// The DLPack dtype of a NumPy type number, or code 0xff where DLPack has none
// that dlbridge reads directly (then __dlpack__ answers).
[[nodiscard]] constexpr DLDataType dtype_of_type_num(int type_num) {
  auto integer = [](bool is_signed, std::size_t bytes) {
    return DLDataType{std::uint8_t(is_signed ? kDLInt : kDLUInt), std::uint8_t(8 * bytes), 1};
  };
  switch (type_num) {
    case NPY_BOOL: return {kDLBool, 8, 1};
    case NPY_BYTE: return integer(true, sizeof(npy_byte));
    case NPY_UBYTE: return integer(false, sizeof(npy_ubyte));
    case NPY_SHORT: return integer(true, sizeof(npy_short));
    case NPY_USHORT: return integer(false, sizeof(npy_ushort));
    case NPY_INT: return integer(true, sizeof(npy_int));
    case NPY_UINT: return integer(false, sizeof(npy_uint));
    case NPY_LONG: return integer(true, sizeof(npy_long));
    case NPY_ULONG: return integer(false, sizeof(npy_ulong));
    case NPY_LONGLONG: return integer(true, sizeof(npy_longlong));
    case NPY_ULONGLONG: return integer(false, sizeof(npy_ulonglong));
    case NPY_HALF: return {kDLFloat, 16, 1};
    case NPY_FLOAT: return {kDLFloat, 32, 1};
    case NPY_DOUBLE: return {kDLFloat, 64, 1};
    case NPY_CFLOAT: return {kDLComplex, 64, 1};
    case NPY_CDOUBLE: return {kDLComplex, 128, 1};
    default: return {0xff, 0, 0};
  }
}

// Fills `out` from an exact ndarray; false where DLPack cannot carry the
// array as it is (another dtype, byte-swapped, unaligned, strides that are
// not whole elements), which __dlpack__ then accepts or refuses in its words.
// The tensor still needs validate().
inline bool read_fields(PyObject* object, borrowed_array& out) {
  auto* array = reinterpret_cast<PyArrayObject*>(object);
  const DLDataType type = dtype_of_type_num(PyArray_TYPE(array));
  const int flags = PyArray_FLAGS(array);
  if (type.code == 0xff || !PyArray_ISNOTSWAPPED(array) || !(flags & NPY_ARRAY_ALIGNED)) return false;
  const int ndim = PyArray_NDIM(array);
  if (ndim > max_ndim) return false;
  // Every itemsize here is a power of two: shifts, not divisions (an idiv
  // per axis showed in from_dlpack's profile).
  const int shift = std::countr_zero(unsigned(type.bits / 8));
  const npy_intp* byte_strides = PyArray_STRIDES(array);
  for (int i = 0; i < ndim; ++i) {
    if (byte_strides[i] & ((npy_intp(1) << shift) - 1)) return false;
    out.strides[i] = byte_strides[i] >> shift;
  }
  out.tensor = DLTensor{PyArray_DATA(array), {kDLCPU, 0}, ndim, type,
                        reinterpret_cast<std::int64_t*>(PyArray_DIMS(array)), ndim ? out.strides : nullptr, 0};
  out.readonly = !(flags & NPY_ARRAY_WRITEABLE);
  out.owner = nullptr;
  return true;
}

namespace detail {
// type_num_of's answers, indexed by DLPack type code and log2 of the element's
// bytes (1 to 16), worked out at compile time from dtype_of_type_num: a lookup on
// every array returned like an ndarray, where searching its cases
// cost about 200 instructions a call. Where two type numbers share a
// dtype (long and long long on LP64), the first listed wins: the C type
// NumPy itself names the dtype by (int64 is NPY_LONG on Linux, NPY_LONGLONG
// on Windows).
inline constexpr auto type_nums = [] {
  std::array<std::array<signed char, 5>, kDLBool + 1> table;
  for (auto& row : table) row.fill(-1);
  for (int n : {NPY_BOOL, NPY_BYTE, NPY_UBYTE, NPY_SHORT, NPY_USHORT, NPY_INT, NPY_UINT, NPY_LONG, NPY_ULONG,
                NPY_LONGLONG, NPY_ULONGLONG, NPY_HALF, NPY_FLOAT, NPY_DOUBLE, NPY_CFLOAT, NPY_CDOUBLE}) {
    const DLDataType d = dtype_of_type_num(n);
    signed char& slot = table[d.code][std::countr_zero(unsigned(d.bits / 8))];
    if (slot < 0) slot = static_cast<signed char>(n);
  }
  return table;
}();
}  // namespace detail

// The NumPy type number of a DLPack dtype, or -1 where NumPy has none.
[[nodiscard]] inline int type_num_of(DLDataType type) {
  const unsigned bytes = type.bits / 8u;
  if (type.lanes != 1 || type.code >= detail::type_nums.size() || type.bits % 8 || !std::has_single_bit(bytes) ||
      bytes > 16)
    return -1;
  return detail::type_nums[type.code][std::countr_zero(bytes)];
}

// A base-class ndarray on t's host memory, as NumPy's type `type_num`, read-
// only where t is, whose base is `owner` (a reference this steals, on failure
// too): a new reference, or NULL with a Python exception set. NumPy's C API
// must be imported (is_ndarray_subtype found an ndarray).
[[nodiscard]] inline PyObject* new_ndarray(const tensor& t, int type_num, PyObject* owner) {
  // NumPy allocates where data is NULL, as it is for some empty tensors: an
  // address that is never read stands in.
  alignas(64) static char no_elements[64];
  npy_intp dims[max_ndim], strides[max_ndim];
  const auto itemsize = npy_intp(t.type().itemsize());
  for (std::int32_t i = 0; i < t.ndim(); ++i) {
    dims[i] = t.shape(i);
    strides[i] = t.stride(i) * itemsize;
  }
  PyObject* array = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(type_num), t.ndim(), dims, strides,
                                         t.data() ? t.data() : no_elements,
                                         t.readonly() ? 0 : NPY_ARRAY_WRITEABLE, nullptr);
  if (!array) {
    Py_DECREF(owner);
    return nullptr;
  }
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), owner) < 0) {  // steals owner either way
    Py_DECREF(array);
    return nullptr;
  }
  return array;
}

}  // namespace dlb::python::numpy
