// Memory on any device dlbridge can allocate on, whether or not the CUDA
// backend was built: the one place the Python layer reaches the backend.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "dlbridge/host_copy.hpp"
#include "dlbridge/element.hpp"
#include "dlbridge/stream.hpp"
#include "dlbridge/tensor.hpp"
#if DLBRIDGE_HAVE_CUDA
#include "dlbridge/cuda/copy.hpp"
#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/memory.hpp"
#include "dlbridge/cuda/runtime.hpp"
#include "dlbridge/cuda/stream.hpp"
#endif

namespace dlb::python {

#if !DLBRIDGE_HAVE_CUDA
[[noreturn]] inline void no_cuda() {
  throw std::runtime_error("no CUDA device is available (dlbridge was built without the CUDA backend)");
}
#endif

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
    case kDLCUDAManaged: no_cuda();
#endif
    default:
      throw std::invalid_argument("dlbridge cannot allocate memory on " + std::string(name(where.type)));
  }
}

// Streams are cuda_stream values (dlbridge/stream.hpp): 1 the legacy default
// stream, 2 the per-thread one, anything else a cudaStream_t; never 0. Every
// array dlbridge holds on a GPU is ready in the order of its device's legacy
// default stream: work dlbridge queues elsewhere is ordered back onto it, and
// data imported from a producer is ordered onto it.

// Makes `waiter` wait, without blocking the host, for the work queued so far
// on `waited` (an event recorded on one, waited on by the other), on t's
// device. Nothing to do for memory that no stream writes, or when both are
// the same stream.
inline void order_streams([[maybe_unused]] const tensor& t, [[maybe_unused]] cuda_stream waiter,
                          [[maybe_unused]] cuda_stream waited) {
  if (waiter == waited || (t.device().type != kDLCUDA && t.device().type != kDLCUDAManaged)) return;
#if DLBRIDGE_HAVE_CUDA
  namespace cr = cuda_runtime;
  cr::require_device();
  const cr::device_guard on(t.device().type == kDLCUDA ? t.device().id : -1);
  cr::order_after(reinterpret_cast<cr::stream_t>(waiter), reinterpret_cast<cr::stream_t>(waited));
#else
  no_cuda();
#endif
}

// __dlpack__(stream=consumer): the consumer's stream waits for the legacy one.
inline void order_for_consumer(const tensor& t, cuda_stream consumer) {
  order_streams(t, consumer, legacy_default_stream);
}

// An import ready on `producer` (a CUDA array interface's "stream", an
// exchange API's work stream): the legacy stream waits for it.
inline void order_after_producer(const tensor& t, cuda_stream producer) {
  order_streams(t, legacy_default_stream, producer);
}

// A new C-contiguous tensor on `where` holding src's elements converted to
// `type`. Work on a GPU is queued on `stream`, ordered after and then before
// the legacy default stream, so the result follows the rule above; the host
// never waits, unless the result is on the CPU. Host-to-host copies stay on
// the CPU engine.
inline tensor copy_to(const tensor& src, device where, dtype type, [[maybe_unused]] cuda_stream stream) {
  const device from = src.device();
  if (from.type == kDLCPU && where.type == kDLCPU) return astype(src, type);
  for (const device d : {from, where})
    if (d.type != kDLCPU && d.type != kDLCUDA && d.type != kDLCUDAHost && d.type != kDLCUDAManaged)
      throw std::invalid_argument("dlbridge cannot copy data to or from " + std::string(name(d.type)));
#if DLBRIDGE_HAVE_CUDA
  namespace cr = cuda_runtime;
  cr::require_device();
  const auto s = reinterpret_cast<cr::stream_t>(stream);
  tensor out = empty_on(where, src.shape(), type);
  const bool ordered = !cr::same_stream(s, cr::legacy_stream());
  const cr::device_guard on(where.type == kDLCUDA ? where.id : from.type == kDLCUDA ? from.id : -1);
  if (ordered) cr::order_after(s, cr::legacy_stream());
  cr::copy(src, out, s);
  if (ordered) cr::order_after(cr::legacy_stream(), s);
  return out;
#else
  no_cuda();
#endif
}

// Where the memory behind a CUDA array interface pointer lives: device memory
// on its own device, pinned or managed memory as such. Where the runtime does
// not know the pointer (no usable device, the null pointer of an empty array,
// host memory a GPU reaches through HMM) the interface's word is taken:
// (kDLCUDA, 0).
inline device cuda_pointer_device([[maybe_unused]] const void* p) {
#if DLBRIDGE_HAVE_CUDA
  if (p != nullptr && cuda_runtime::device_count() > 0) {
    const device d = cuda_runtime::pointer_device(p);
    if (d.type != kDLCPU) return d;
  }
#endif
  return {kDLCUDA, 0};
}

// Sets every element of `t`, which lives off the CPU, to `value`; the work is
// queued on the legacy default stream.
inline void fill_on_device([[maybe_unused]] const tensor& t, [[maybe_unused]] const scalar& value) {
#if DLBRIDGE_HAVE_CUDA
  cuda_runtime::fill(t, value, cuda_runtime::legacy_stream());
#else
  no_cuda();
#endif
}

}  // namespace dlb::python
