// Any framework's array as a checked dlb::view, for the length of a call:
//
//   dlb::python::array_argument<rows_view> rows(object, "row_sums", "x");
//   rows.view()  // a rows_view of the object's memory, no copy
//
// The conversion creates no Python object for dlbridge arrays, NumPy
// ndarrays and producers with a DLPack C exchange table (PyTorch), and
// validates each tensor once. A valid array that does not fit the view is
// TypeError naming the function and the argument; a tensor DLPack cannot
// describe is BufferError, as in from_dlpack. Create and destroy arguments
// with the GIL held; the view may be used without it while the argument lives.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <utility>

#include "dlbridge/dlpack.hpp"
#include "dlbridge/python.hpp"
#include "dlbridge/validate.hpp"

namespace dlb::python {

// What the converter fills: a validated DLTensor on the object's memory and
// what keeps that memory, both for the length of the call.
struct borrowed_array {
  DLTensor tensor{};
  bool readonly = false;
  PyObject* owner = nullptr;           // a new reference, or nullptr: the object itself holds the memory
  std::int64_t strides[max_ndim] = {};  // element strides, where the producer has none to point at
};

// The converter's C interface, published by dlbridge._array as the capsule
// dlbridge._array._argument_api ("dlbridge.argument_api").
struct argument_api {
  std::uint32_t version;  // argument_api_version
  // Fills `out` from `object`: 0, or -1 with a Python exception set
  // (TypeError naming `function` and `name` where object is no array).
  int (*borrow)(PyObject* object, borrowed_array* out, const char* function, const char* name);
};
inline constexpr std::uint32_t argument_api_version = 1;
inline constexpr const char* argument_api_capsule = "dlbridge.argument_api";

// The converter, found once per extension module (imports dlbridge._array).
inline const argument_api& get_argument_api() {
  static const argument_api* api = nullptr;
  if (api) return *api;
  PyObject* module = PyImport_ImportModule("dlbridge._array");
  if (!module) throw python_error_already_set{};
  PyObject* capsule = PyObject_GetAttrString(module, "_argument_api");
  Py_DECREF(module);
  if (!capsule) throw python_error_already_set{};
  auto* found = static_cast<const argument_api*>(PyCapsule_GetPointer(capsule, argument_api_capsule));
  Py_DECREF(capsule);  // the module keeps the capsule, and Python never unloads it
  if (!found) throw python_error_already_set{};
  if (found->version != argument_api_version) {
    PyErr_Format(PyExc_ImportError, "dlbridge's argument API is version %u; this module was built for version %u: "
                 "rebuild it against the installed dlbridge", unsigned(found->version), unsigned(argument_api_version));
    throw python_error_already_set{};
  }
  api = found;
  return *api;
}

// An array argument seen through the view type View (a dlb::view).
template <class View>
class array_argument {
 public:
  array_argument() = default;

  // `function` and `name` word the TypeError ("row_sums(): argument 'x': ...").
  array_argument(PyObject* object, const char* function, const char* name) {
    borrowed_array b;
    if (get_argument_api().borrow(object, &b, function, name) != 0) throw python_error_already_set{};
    try {
      view_ = View::from_validated(b.tensor, b.readonly);
    } catch (const import_failure& e) {
      Py_XDECREF(b.owner);
      std::string m = std::string(function) + "(): argument '" + name + "': ";
      if (e.error().axis >= 0) m += "axis " + std::to_string(e.error().axis) + ": ";
      throw argument_mismatch(m + "expected " + e.error().expected + ", got " + e.error().received);
    }
    owner_ = b.owner;
  }

  array_argument(const array_argument&) = delete;
  array_argument& operator=(const array_argument&) = delete;
  array_argument(array_argument&& other) noexcept
      : owner_(std::exchange(other.owner_, nullptr)), view_(other.view_) {}
  array_argument& operator=(array_argument&& other) noexcept {
    std::swap(owner_, other.owner_);
    view_ = other.view_;
    return *this;
  }
  ~array_argument() { Py_XDECREF(owner_); }

  [[nodiscard]] const View& view() const noexcept { return view_; }

 private:
  PyObject* owner_ = nullptr;
  View view_{};
};

}  // namespace dlb::python
