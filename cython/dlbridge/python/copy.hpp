// host_copy.hpp's calls for extension modules: each first makes the module's
// copies use dlbridge's copy state (dlb::copy_state,
// copy/threads.hpp), so that dlbridge.set_copy_threads() reaches them.
// cpp.pxd maps its copy calls to dlb::python::copies; C++ extensions that
// copy may call these, or find the argument API (get_argument_api) first.
#pragma once

#include <Python.h>

#include <atomic>

#include "dlbridge/python/argument_api.hpp"
#include "dlbridge/host_copy.hpp"
#include "dlbridge/python/core.hpp"

namespace dlb::python {

// Makes this module use dlbridge's copy state, once (get_argument_api
// does it); afterwards one atomic load. From any thread, with the GIL or
// without. Where the argument API cannot be found (dlbridge._array not
// importable, another ABI), the exception is cleared and the module's copies
// go on with its own state: the same results to the bit, only the thread
// limit is the module's; the next call tries again.
inline void use_dlbridge_copy_state() noexcept {
  static std::atomic<bool> used{false};
  if (used.load(std::memory_order_acquire)) return;
  const PyGILState_STATE gil = PyGILState_Ensure();
  try {
    (void)get_argument_api();
    used.store(true, std::memory_order_release);
  } catch (const python_error_already_set&) {
    PyErr_Clear();
  }
  PyGILState_Release(gil);
}

// The calls, in a namespace of their own: code in dlb::python that calls
// astype(t, type) still means dlb::astype.
namespace copies {
[[nodiscard]] inline tensor astype(const tensor& src, dtype to) {
  use_dlbridge_copy_state();
  return dlb::astype(src, to);
}
[[nodiscard]] inline tensor copy(const tensor& src) {
  use_dlbridge_copy_state();
  return dlb::copy(src);
}
[[nodiscard]] inline unsigned copy_threads() noexcept {
  use_dlbridge_copy_state();
  return dlb::copy_threads();
}
inline void set_copy_threads(unsigned threads) noexcept {
  use_dlbridge_copy_state();
  dlb::set_copy_threads(threads);
}
}  // namespace copies

}  // namespace dlb::python
