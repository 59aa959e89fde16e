// The Python layer's glue to the arrays of dlbridge/cuda/arrays.hpp: memory
// the host reads directly (pinned, managed) is freed with the GIL released,
// since freeing it waits for the GPU, and the last reference may go on any
// thread (an Array, a consumer's deleter, a capsule). The rest of the
// Python layer calls arrays.hpp directly.
#pragma once

#include "dlbridge/cuda/arrays.hpp"
#include "dlbridge/python/core.hpp"

namespace dlb::python {

namespace detail {
inline void release_outside_gil(void* held) noexcept {
  without_gil([held] { delete static_cast<tensor*>(held); });
}

// t, freed with the GIL released where it is pinned or managed memory.
inline tensor released_outside_gil(tensor t) {
  if (!cuda_runtime::is_pinned_or_managed(t)) return t;
  return t.kept_by(release_outside_gil, new tensor(t));
}
}  // namespace detail

// cuda_runtime::empty_on, its pinned and managed memory freed without the GIL.
inline tensor empty_on(device where, extents_t shape, dtype type) {
  return detail::released_outside_gil(cuda_runtime::empty_on(where, shape, type));
}

// cuda_runtime::copy_to, its pinned and managed results freed without the GIL.
inline tensor copy_to(const tensor& src, device where, dtype type, cuda_stream stream) {
  return detail::released_outside_gil(cuda_runtime::copy_to(src, where, type, stream));
}

}  // namespace dlb::python
