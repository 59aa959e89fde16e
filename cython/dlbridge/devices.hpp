// Memory on any device dlbridge can allocate on, whether or not the CUDA
// backend was built: the one place the Python layer reaches the backend.
#pragma once

#include <stdexcept>
#include <string>

#include "dlbridge/element.hpp"
#include "dlbridge/tensor.hpp"
#if DLBRIDGE_HAVE_CUDA
#include "dlbridge/cuda/copy.hpp"
#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/memory.hpp"
#include "dlbridge/cuda/stream.hpp"
#endif

namespace dlb::python {

// New C-contiguous, uninitialised memory on `where`. Throws
// dlb::cuda_unavailable ("no CUDA device is available (...)") where CUDA is
// asked for and no device is usable, and std::invalid_argument for devices
// dlbridge cannot allocate on.
inline tensor empty_on(device where, extents_t shape, dtype type) {
  switch (where.type) {
    case kDLCPU: return tensor::empty(shape, type);
#if DLBRIDGE_HAVE_CUDA
    case kDLCUDA: {
      cuda_runtime::require_device();
      const cuda_runtime::device_guard on(where.id);
      return cuda_runtime::empty_device(shape, type);
    }
    case kDLCUDAHost: return cuda_runtime::empty_pinned(shape, type);
    case kDLCUDAManaged: return cuda_runtime::empty_managed(shape, type);
#else
    case kDLCUDA:
    case kDLCUDAHost:
    case kDLCUDAManaged:
      throw std::runtime_error("no CUDA device is available (dlbridge was built without the CUDA backend)");
#endif
    default:
      throw std::invalid_argument("dlbridge cannot allocate memory on " + std::string(name(where.type)));
  }
}

// Sets every element of `t`, which lives off the CPU, to `value`; the work is
// queued on the legacy default stream.
inline void fill_on_device([[maybe_unused]] const tensor& t, [[maybe_unused]] const scalar& value) {
#if DLBRIDGE_HAVE_CUDA
  cuda_runtime::fill(t, value, cuda_runtime::legacy_stream());
#else
  throw std::runtime_error("no CUDA device is available (dlbridge was built without the CUDA backend)");
#endif
}

}  // namespace dlb::python
