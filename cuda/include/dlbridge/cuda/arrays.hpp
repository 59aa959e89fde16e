// Arrays on any device dlbridge can allocate on, and the rule that orders
// GPU work on them, whether or not the CUDA backend was built: link the
// dlbridge_cuda library, which is either the backend (arrays.cpp) or, where
// nvcc was not found, an implementation that refuses every GPU operation
// with dlb::cuda_unavailable (unavailable.cpp). Host memory works the same
// with both.
//
// The rule. Streams are cuda_stream values (dlbridge/stream.hpp): 1 the
// legacy default stream, 2 the per-thread one, anything else a cudaStream_t;
// never 0. Every array dlbridge holds on a GPU is ready in the order of its
// device's legacy default stream: work queued elsewhere is ordered back onto
// it, and data imported from a producer is ordered onto it. Memory the host
// reads directly (pinned, managed) is ready for the host: dlbridge waits for
// its own work and for the producer's before handing such an array over,
// since tolist(), the buffer protocol or NumPy read it with no stream at all.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "dlbridge/element.hpp"
#include "dlbridge/host_copy.hpp"
#include "dlbridge/stream.hpp"
#include "dlbridge/tensor.hpp"

namespace dlb::cuda_runtime {

// Whether the host reads t's memory directly while GPU work may use it.
[[nodiscard]] inline bool is_pinned_or_managed(const tensor& t) noexcept {
  return t.device().is_cuda_memory() && t.device().is_host_accessible();
}

// Whether dlbridge_cuda is the backend (false: the implementation that
// refuses, unavailable.cpp).
[[nodiscard]] bool backend_built() noexcept;

// Whether t is CUDA memory this process inherited across fork() from a parent
// that used CUDA: the driver's mappings of it do not survive the fork, so the
// host must not read it either.
[[nodiscard]] bool inherited_across_fork(const tensor& t) noexcept;

// Gives the device memory the backend's pools keep unused back to the driver
// and returns its bytes; 0 without the backend or a usable device.
std::uint64_t release_cuda_cache();

// Where the memory behind a CUDA array interface pointer lives: device memory
// on its own device, pinned or managed memory as such. Where the runtime does
// not know the pointer (no usable device, the null pointer of an empty array,
// host memory a GPU reaches through HMM) the interface's word is taken:
// (kDLCUDA, 0).
[[nodiscard]] device cuda_pointer_device(const void* p);

namespace detail {
// The GPU halves of the calls below, one per implementation.
tensor empty_on_gpu(device where, extents_t shape, dtype type);
void order_after_on_gpu(device d, cuda_stream waiter, cuda_stream waited);
tensor released_after_on_gpu(const tensor& t, cuda_stream waiter, cuda_stream waited);
void wait_for_producer(const tensor& t, cuda_stream producer);
tensor copy_on_gpu(const tensor& src, device where, dtype type, cuda_stream stream);
void fill_on_gpu(const tensor& t, const scalar& value);
}  // namespace detail

// New C-contiguous, uninitialised memory on `where`. Throws
// dlb::cuda_unavailable ("no CUDA device is available (...)") where CUDA
// memory is asked for and no device is usable, and std::invalid_argument for
// devices dlbridge cannot allocate on.
[[nodiscard]] inline tensor empty_on(device where, extents_t shape, dtype type) {
  if (where.type == kDLCPU) return tensor::empty(shape, type);
  if (where.is_cuda_memory()) return detail::empty_on_gpu(where, shape, type);
  throw std::invalid_argument("dlbridge cannot allocate memory on " + std::string(name(where.type)));
}

// Makes `waiter` wait, without blocking the host, for the work queued so far
// on `waited` (an event recorded on one, waited on by the other), on t's
// device. Nothing to do for memory that no stream writes, or when both are
// the same stream.
inline void order_streams(const tensor& t, cuda_stream waiter, cuda_stream waited) {
  if (waiter == waited || !t.device().is_stream_ordered()) return;
  detail::order_after_on_gpu(t.device(), waiter, waited);
}

// t, whose release makes `waiter` wait for the work queued on `waited` until
// then, before t's reference goes; one of the two is the legacy default
// stream. Nothing to order for memory no stream writes, nor where the
// legacy stream and the other one synchronise by themselves (the default
// streams, blocking streams): that release touches no stream at all, so the
// other stream may be destroyed before it, as CuPy's `with Stream():`
// destroys its blocking stream. A non-blocking stream (PyTorch's) must still
// exist when t is released; it is asked now (cudaStreamGetFlags), while the
// caller vouches for it.
[[nodiscard]] inline tensor released_after(const tensor& t, cuda_stream waiter, cuda_stream waited) {
  const cuda_stream other = waiter == legacy_default_stream ? waited : waiter;
  if (other == legacy_default_stream || other == per_thread_default_stream || !t.device().is_stream_ordered())
    return t;
  return detail::released_after_on_gpu(t, waiter, waited);
}

// t's memory lent to a consumer that works on `consumer` (__dlpack__(stream=
// consumer)): the consumer's stream waits for the legacy one now, and, when
// the consumer lets the memory go, the legacy stream waits for the
// consumer's work, since dlbridge's stream-ordered free, and its next
// allocations, run there (released_after: by itself for blocking streams;
// not while the consumer's stream is capturing a CUDA graph).
[[nodiscard]] inline tensor lend(const tensor& t, cuda_stream consumer) {
  order_streams(t, consumer, legacy_default_stream);
  return released_after(t, legacy_default_stream, consumer);
}

// An import ready on `producer` (a CUDA array interface's "stream", an
// exchange API's work stream, the legacy stream a __dlpack__ producer was
// told): device memory is ordered onto the legacy stream; pinned and managed
// memory, which the host may read next, is waited for. Where this process
// has no usable device, nothing of its own can be pending on the legacy
// stream; another stream still needs the runtime. Refused (capture_refused)
// while `producer` is being captured into a CUDA graph (PyTorch's current
// stream inside torch.cuda.graph): the data is written only when the graph
// is launched, and neither an event recorded in the capture (waiting on it
// from outside invalidates the capture) nor a host wait (forbidden on a
// capturing stream) orders dlbridge's work after that.
inline void order_after_producer(const tensor& t, cuda_stream producer) {
  if (t.device().is_cuda_memory()) detail::wait_for_producer(t, producer);
}

// An import through a producer's exchange table, ready on its work stream
// `producer`: ordered onto the legacy stream now (order_after_producer), and
// when dlbridge lets it go, `producer` waits for the legacy stream, so that
// the producer's allocator does not hand the memory out again (on that
// stream) under work dlbridge queued on it.
[[nodiscard]] inline tensor ordered_import(const tensor& t, cuda_stream producer) {
  order_after_producer(t, producer);
  return is_pinned_or_managed(t) ? t : released_after(t, producer, legacy_default_stream);
}

// A new C-contiguous tensor on `where` holding src's elements converted to
// `type`. Work on a GPU is queued on `stream`, ordered after and then before
// the legacy default stream of each GPU involved (the source's too, so that
// its memory is not freed or rewritten under the copy), so the result
// follows the rule above. The host waits only where the host may touch
// either side next: a CPU, pinned or managed source or result. Host-to-host
// copies stay on the CPU engine. Refused (capture_refused), before any
// work, where `stream` is being captured into a CUDA graph.
[[nodiscard]] inline tensor copy_to(const tensor& src, device where, dtype type, cuda_stream stream) {
  const device from = src.device();
  if (from.type == kDLCPU && where.type == kDLCPU) return astype(src, type);
  for (const device d : {from, where})
    if (d.type != kDLCPU && !d.is_cuda_memory())
      throw std::invalid_argument("dlbridge cannot copy data to or from " + std::string(name(d.type)));
  return detail::copy_on_gpu(src, where, type, stream);
}

// Sets every element of `t`, which lives off the CPU, to `value`; the work is
// queued on the legacy default stream, and waited for in pinned and managed
// memory.
inline void fill_on_device(const tensor& t, const scalar& value) { detail::fill_on_gpu(t, value); }

}  // namespace dlb::cuda_runtime
