// Memory on any device dlbridge can allocate on, whether or not the CUDA
// backend was built: the one place the Python layer reaches the backend.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dlbridge/host_copy.hpp"
#include "dlbridge/element.hpp"
#include "dlbridge/python.hpp"
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

#if DLBRIDGE_HAVE_CUDA
namespace detail {
inline void release_outside_gil(void* held) noexcept {
  without_gil([held] { delete static_cast<tensor*>(held); });
}
}  // namespace detail

// t, whose release frees its memory with the GIL released where the
// releasing thread holds it: freeing pinned or managed memory waits for the
// GPU, and the last reference may go anywhere (an Array, a consumer's
// deleter, a capsule).
inline tensor released_outside_gil(const tensor& t) {
  return t.kept_by(detail::release_outside_gil, new tensor(t));
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
    case kDLCUDAHost: return released_outside_gil(cuda_runtime::empty_pinned(shape, type));
    case kDLCUDAManaged: return released_outside_gil(cuda_runtime::empty_managed(shape, type));
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
// data imported from a producer is ordered onto it. Memory the host reads
// directly (pinned, managed) is ready for the host: dlbridge waits for its
// own work and for the producer's before handing such an array over, since
// tolist(), the buffer protocol or NumPy read it with no stream at all.

// Whether the host reads t's memory directly while GPU work may use it.
[[nodiscard]] inline bool is_pinned_or_managed(const tensor& t) noexcept {
  return t.device().is_cuda_memory() && t.device().is_host_accessible();
}

// Whether t is CUDA memory this process inherited across fork() from a parent
// that used CUDA: the driver's mappings of it do not survive the fork, so the
// host must not read it either.
[[nodiscard]] inline bool inherited_across_fork([[maybe_unused]] const tensor& t) noexcept {
#if DLBRIDGE_HAVE_CUDA
  return t.device().is_cuda_memory() && cuda_runtime::forked_after_init();
#else
  return false;
#endif
}

// Gives the device memory dlbridge's pools keep unused back to the driver
// (cuda_runtime::release_cached_memory) and returns its bytes; 0 without the
// backend or a usable device.
inline std::uint64_t release_cuda_cache() {
#if DLBRIDGE_HAVE_CUDA
  return cuda_runtime::release_cached_memory();
#else
  return 0;
#endif
}

// Makes `waiter` wait, without blocking the host, for the work queued so far
// on `waited` (an event recorded on one, waited on by the other), on t's
// device. Nothing to do for memory that no stream writes, or when both are
// the same stream.
inline void order_streams([[maybe_unused]] const tensor& t, [[maybe_unused]] cuda_stream waiter,
                          [[maybe_unused]] cuda_stream waited) {
  if (waiter == waited || !t.device().is_stream_ordered()) return;
#if DLBRIDGE_HAVE_CUDA
  namespace cr = cuda_runtime;
  cr::require_device();
  const cr::device_guard on(cr::guard_device(t.device()));
  cr::order_after(reinterpret_cast<cr::stream_t>(waiter), reinterpret_cast<cr::stream_t>(waited));
#else
  no_cuda();
#endif
}

#if DLBRIDGE_HAVE_CUDA
// Throws capture_refused (dlbridge/stream.hpp) where `s` is being captured
// into a CUDA graph (actively, or invalidated and not yet ended), before any
// work is queued: the capture stays valid. The legacy stream, which is never
// captured, is not asked (capture_of).
inline void refuse_capturing(cuda_stream s, std::string_view action, std::string_view reason) {
  namespace cr = cuda_runtime;
  if (cr::capture_of(reinterpret_cast<cr::stream_t>(s)) != cr::capture_status::none)
    throw capture_refused(action, s, reason);
}

namespace detail {
// A tensor whose release first makes one stream wait for another.
struct ordered_release {
  tensor memory;
  cuda_runtime::stream_t waiter, waited;
  int device;
};

inline void release_in_order(void* ctx) noexcept {
  auto* r = static_cast<ordered_release*>(ctx);
  namespace cr = cuda_runtime;
  try {
    const cr::device_guard on(r->device);
    cr::order_after_release(r->waiter, r->waited);  // nothing while `waited` is captured into a CUDA graph
  } catch (...) {  // a release must not throw: unordered (the runtime gone at exit), the memory still goes
  }
  delete r;
}
}  // namespace detail
#endif

// t, whose release makes `waiter` wait for the work queued on `waited` until
// then, before t's reference goes; one of the two is the legacy default
// stream. Nothing to order for memory no stream writes, nor where the
// legacy stream and the other one synchronise by themselves (the default
// streams, blocking streams): that release touches no stream at all, so the
// other stream may be destroyed before it, as CuPy's `with Stream():`
// destroys its blocking stream. A non-blocking stream (PyTorch's) must still
// exist when t is released; it is asked now (cudaStreamGetFlags), while the
// caller vouches for it.
inline tensor released_after(const tensor& t, cuda_stream waiter, cuda_stream waited) {
  const cuda_stream other = waiter == legacy_default_stream ? waited : waiter;
  if (other == legacy_default_stream || other == per_thread_default_stream || !t.device().is_stream_ordered())
    return t;
#if DLBRIDGE_HAVE_CUDA
  namespace cr = cuda_runtime;
  if (cr::synchronises_with_legacy(reinterpret_cast<cr::stream_t>(other))) return t;
  auto* r = new detail::ordered_release{t, reinterpret_cast<cr::stream_t>(waiter), reinterpret_cast<cr::stream_t>(waited),
                                        cr::guard_device(t.device())};
  return t.kept_by(detail::release_in_order, r);
#else
  no_cuda();
#endif
}

// t's memory lent to a consumer that works on `consumer` (__dlpack__(stream=
// consumer)): the consumer's stream waits for the legacy one now, and, when
// the consumer lets the memory go, the legacy stream waits for the
// consumer's work, since dlbridge's stream-ordered free, and its next
// allocations, run there (released_after: by itself for blocking streams;
// not while the consumer's stream is capturing a CUDA graph).
inline tensor lend(const tensor& t, cuda_stream consumer) {
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
#if DLBRIDGE_HAVE_CUDA
  if (producer != legacy_default_stream && t.device().is_cuda_memory())
    refuse_capturing(producer, "import data ready on",
                     "the graph writes it only when it is launched, and dlbridge's work runs outside the graph");
#endif
  if (!is_pinned_or_managed(t)) return order_streams(t, legacy_default_stream, producer);
#if DLBRIDGE_HAVE_CUDA
  if (producer == legacy_default_stream && !cuda_runtime::device_usable()) return;
  cuda_runtime::synchronize(reinterpret_cast<cuda_runtime::stream_t>(producer));
#else
  if (producer != legacy_default_stream) no_cuda();
#endif
}

// An import through a producer's exchange table, ready on its work stream
// `producer`: ordered onto the legacy stream now (order_after_producer), and
// when dlbridge lets it go, `producer` waits for the legacy stream, so that
// the producer's allocator does not hand the memory out again (on that
// stream) under work dlbridge queued on it.
inline tensor ordered_import(const tensor& t, cuda_stream producer) {
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
inline tensor copy_to(const tensor& src, device where, dtype type, [[maybe_unused]] cuda_stream stream) {
  const device from = src.device();
  if (from.type == kDLCPU && where.type == kDLCPU) return astype(src, type);
  for (const device d : {from, where})
    if (d.type != kDLCPU && !d.is_cuda_memory())
      throw std::invalid_argument("dlbridge cannot copy data to or from " + std::string(name(d.type)));
#if DLBRIDGE_HAVE_CUDA
  namespace cr = cuda_runtime;
  cr::require_device();
  const auto s = reinterpret_cast<cr::stream_t>(stream);
  const auto legacy = cr::legacy_stream();
  const bool ordered = !cr::same_stream(s, legacy);
  // Captured, the copy would run at each launch of the graph, into memory
  // dlbridge allocated outside it and hands out again once the result is
  // dropped (as a capture's temporaries are), and the legacy stream cannot
  // be ordered after it (nor the host, for pinned and managed memory).
  if (ordered)
    refuse_capturing(stream, "copy on",
                     "the graph would run the copy at each launch, into memory dlbridge hands out again once the "
                     "result is dropped");
  tensor out = empty_on(where, src.shape(), type);
  // Between two GPUs the copy runs on the destination's; the source's legacy
  // stream is ordered around it.
  const bool across = from.type == kDLCUDA && where.type == kDLCUDA && from.id != where.id;
  const cr::device_guard on(where.type == kDLCUDA ? where.id : cr::guard_device(from));
  if (ordered) cr::order_after(s, legacy);
  if (across) cr::order_after(s, legacy, from.id);
  cr::copy(src, out, s);
  if (ordered) cr::order_after(legacy, s);
  if (across) {
    const cr::device_guard source_side(from.id);
    cr::order_after(legacy, s, where.id);
  }
  if (is_pinned_or_managed(src) || is_pinned_or_managed(out)) cr::synchronize(s);
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
// queued on the legacy default stream, and waited for in pinned and managed
// memory.
inline void fill_on_device([[maybe_unused]] const tensor& t, [[maybe_unused]] const scalar& value) {
#if DLBRIDGE_HAVE_CUDA
  namespace cr = cuda_runtime;
  cr::fill(t, value, cr::legacy_stream());
  if (is_pinned_or_managed(t)) cr::synchronize(cr::legacy_stream());
#else
  no_cuda();
#endif
}

}  // namespace dlb::python
