// Any framework's array as a checked dlb::view, for the length of a call:
//
//   dlb::python::array_argument<rows_view> rows(object, "row_sums", "x");
//   rows.view()  // a rows_view of the object's memory, no copy
//
// The conversion creates no Python object for dlbridge arrays, NumPy
// ndarrays and PyTorch tensors (through its DLPack C exchange table), and
// validates each tensor once. A valid array that does not fit the view is
// TypeError naming the function and the argument; a tensor DLPack cannot
// describe is BufferError, as in from_dlpack. Create and destroy arguments
// with the GIL held; the view may be used without it while the argument lives.
//
// NULL, wherever a pointer is taken here: a NULL function or argument name is
// left out of the messages ("argument 'x': ...", "row_sums(): argument: ...",
// as CPython words an argument it cannot name); a NULL object is an error,
// the Python exception already set (as when the object came from a call that
// failed) or else ValueError; a NULL `out` of argument_api::borrow is ValueError.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <utility>

#include "dlbridge/argument_api.hpp"
#include "dlbridge/python.hpp"
#include "dlbridge/tensor.hpp"
#include "dlbridge/validate.hpp"

namespace dlb::python {

// How an argument's errors begin: "row_sums(): argument 'x'". A NULL
// function is left out and a NULL name leaves "argument", as CPython words
// the arguments of a function it cannot name.
[[nodiscard]] inline std::string argument_label(const char* function, const char* name) {
  std::string label = function ? std::string(function) + "(): argument" : std::string("argument");
  if (name) label += std::string(" '") + name + "'";
  return label;
}

// The TypeError of an argument whose tensor does not fit the view. Out of
// line, so that the converter's success path stays small enough to inline.
[[noreturn, gnu::noinline]] inline void throw_mismatch(const import_error& error, const char* function,
                                                       const char* name) {
  std::string m = argument_label(function, name) + ": ";
  if (error.axis >= 0) m += "axis " + std::to_string(error.axis) + ": ";
  throw argument_mismatch(m + "expected " + error.expected + ", got " + error.received);
}

// An array argument seen through the view type View (a dlb::view).
template <class View>
class array_argument {
 public:
  array_argument() = default;

  // `function` and `name` word the TypeError ("row_sums(): argument 'x': ...").
  array_argument(PyObject* object, const char* function, const char* name) {
    // A NULL object from a call that failed: its exception is set, and no
    // Python code may run (get_argument_api imports) before it is raised.
    if (!object && PyErr_Occurred()) throw python_error_already_set{};
    const argument_api& api = get_argument_api();
    if (object && Py_TYPE(object) == api.array_type) {  // (borrow answers a NULL object)
      // The commonest input takes no call: the Array's own tensor, validated
      // when it was made. (An Array holding none goes the long way, to its error.)
      const auto& t = *reinterpret_cast<const tensor*>(reinterpret_cast<const char*>(object) + api.tensor_offset);
      if (t.has_value()) {
        take(t.dltensor(), t.readonly(), nullptr, function, name);
        return;
      }
    }
    borrowed_array b;
    if (api.borrow(object, &b, function, name) != 0) throw python_error_already_set{};
    take(b.tensor, b.readonly, b.owner, function, name);
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
  // Takes the view of a validated tensor and the reference `owner` (or
  // nullptr): kept on success, released when the view's demands are unmet.
  void take(const DLTensor& tensor, bool readonly, PyObject* owner, const char* function, const char* name) {
    try {
      view_ = View::from_validated(tensor, readonly);
    } catch (const import_failure& e) {
      Py_XDECREF(owner);
      throw_mismatch(e.error(), function, name);
    }
    owner_ = owner;
  }

  PyObject* owner_ = nullptr;
  View view_{};
};

}  // namespace dlb::python
