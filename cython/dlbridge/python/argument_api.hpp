// The converter's C interface: the table dlbridge._array publishes as the
// capsule dlbridge._array._argument_api, and how an extension module finds
// it. argument.hpp builds array arguments on it, returns.hpp returns arrays
// through it.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>

#include "dlbridge/copy/threads.hpp"
#include "dlbridge/dlpack.hpp"
#include "dlbridge/python/core.hpp"
#include "dlbridge/tensor.hpp"
#include "dlbridge/demands.hpp"
#include "dlbridge/validate.hpp"

namespace dlb::python {

// What the converter fills: a validated DLTensor on the object's memory and
// what keeps that memory, both for the length of the call.
struct borrowed_array {
  DLTensor tensor{};
  bool readonly = false;
  PyObject* owner = nullptr;           // a new reference, or nullptr: the object itself holds the memory
  std::int64_t strides[max_ndim];      // element strides, where the producer has none to point at (not
                                       // zeroed: 512 bytes per call, and only the first ndim are read)
};

// The converter's C interface, published by dlbridge._array as the capsule
// dlbridge._array._argument_api ("dlbridge.argument_api"). Compiled into
// every consumer: the two header fields say which consumers may use it.
struct argument_api {
  // A change consumers built before it cannot survive (a slot changed or
  // removed, the head reordered) raises abi_version; first, where every
  // version of the table has kept it.
  std::uint32_t abi_version;  // argument_api_version
  // sizeof(argument_api) in the dlbridge that published it. Within an ABI
  // version slots are only appended: a consumer uses a table at least as
  // large as the one it was built with.
  std::uint32_t size;
  // dlbridge.Array and where its dlb::tensor lies in the object: an exact
  // Array lends its tensor inline, with no call (see array_argument).
  PyTypeObject* array_type;
  std::ptrdiff_t tensor_offset;
  // Fills `out` from `object`: 0, or -1 with a Python exception set
  // (TypeError naming `function` and `name` where object is no array; either
  // name may be NULL, see argument_label).
  int (*borrow)(PyObject* object, borrowed_array* out, const char* function, const char* name);
  // Move *t into a new dlbridge.Array (wrap), or into the currency of `like`
  // (wrap_like, see to_python_like): a new reference, or NULL with a Python
  // exception set (*t is then released).
  PyObject* (*wrap)(tensor* t);
  PyObject* (*wrap_like)(tensor* t, PyObject* like);
  // Fills *out with new C-contiguous memory of zero bits on `where`, through
  // dlbridge's backend (CUDA where it was built): 0, or -1 with a Python
  // exception set (BufferError where dlbridge cannot allocate there).
  int (*zeros)(device where, const std::int64_t* shape, std::int32_t ndim, dtype type, tensor* out);
  // borrow for array_argument's copy_if_needed: where the object fits none
  // of the `count` demands (of read-only views) by its dtype or memory
  // order, or is no array, `out` is a fresh array that fits, kept by
  // out->owner (see array_argument for the rule).
  int (*convert)(PyObject* object, borrowed_array* out, const requirements* demands, std::size_t count,
                 const char* function, const char* name);
  // dlbridge's copy state (dlbridge._backend's; copy/threads.hpp),
  // which dlbridge.set_copy_threads() sets: a module that finds this table
  // uses it for its own copies (get_argument_api).
  dlb::copy_state* copy_state;
};
inline constexpr std::uint32_t argument_api_version = 3;
inline constexpr const char* argument_api_capsule = "dlbridge.argument_api";

// `found` where this module can use it; else ImportError naming both sides.
inline const argument_api& checked_argument_api(const argument_api& found) {
  if (found.abi_version != argument_api_version) {
    PyErr_Format(PyExc_ImportError,
                 "the installed dlbridge's argument API is ABI version %u; this module was built for ABI "
                 "version %u: rebuild it against the installed dlbridge",
                 unsigned(found.abi_version), unsigned(argument_api_version));
    throw python_error_already_set{};
  }
  if (found.size < sizeof(argument_api)) {
    PyErr_Format(PyExc_ImportError,
                 "the installed dlbridge's argument API (ABI version %u) has %u bytes; this module was built "
                 "with a newer one of %u bytes: install a dlbridge at least as new as the one it was built with",
                 unsigned(found.abi_version), unsigned(found.size), unsigned(sizeof(argument_api)));
    throw python_error_already_set{};
  }
  return found;
}

// The converter, found once per extension module (imports dlbridge._array);
// from then on the module's copies use dlbridge's copy state.
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
  use_copy_state(*checked_argument_api(*found).copy_state);
  api = found;
  return *api;
}

}  // namespace dlb::python
