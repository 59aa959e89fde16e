// dlbridge/cuda/arrays.hpp with the CUDA backend.
#include "dlbridge/cuda/arrays.hpp"

#include "dlbridge/cuda/copy.hpp"
#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/memory.hpp"
#include "dlbridge/cuda/runtime.hpp"
#include "dlbridge/cuda/stream.hpp"

namespace dlb::cuda_runtime {
namespace {

stream_t handle(cuda_stream s) noexcept { return reinterpret_cast<stream_t>(s); }

// Throws capture_refused (dlbridge/stream.hpp) where `s` is being captured
// into a CUDA graph (actively, or invalidated and not yet ended), before any
// work is queued: the capture stays valid. The legacy stream, which is never
// captured, is not asked (capture_of).
void refuse_capturing(cuda_stream s, std::string_view action, std::string_view reason) {
  if (capture_of(handle(s)) != capture_status::none) throw capture_refused(action, s, reason);
}

// A tensor whose release first makes one stream wait for another.
struct ordered_release {
  tensor memory;
  stream_t waiter, waited;
  int device;
};

void release_in_order(void* ctx) noexcept {
  auto* r = static_cast<ordered_release*>(ctx);
  try {
    const device_guard on(r->device);
    order_after_release(r->waiter, r->waited);  // nothing while `waited` is captured into a CUDA graph
  } catch (...) {  // a release must not throw: unordered (the runtime gone at exit), the memory still goes
  }
  delete r;
}

}  // namespace

bool backend_built() noexcept { return true; }

bool inherited_across_fork(const tensor& t) noexcept { return t.device().is_cuda_memory() && forked_after_init(); }

std::uint64_t release_cuda_cache() { return release_cached_memory(); }

device cuda_pointer_device(const void* p) {
  if (p != nullptr && device_count() > 0) {
    const device d = pointer_device(p);
    if (d.type != kDLCPU) return d;
  }
  return {kDLCUDA, 0};
}

namespace detail {

tensor empty_on_gpu(device where, extents_t shape, dtype type) {
  if (where.type == kDLCUDAHost) return empty_pinned(shape, type);
  if (where.type == kDLCUDAManaged) return empty_managed(shape, type);
  require_device();
  const device_guard on(where.id);
  return empty_device(shape, type);
}

void order_after_on_gpu(device d, cuda_stream waiter, cuda_stream waited) {
  require_device();
  const device_guard on(guard_device(d));
  order_after(handle(waiter), handle(waited));
}

tensor released_after_on_gpu(const tensor& t, cuda_stream waiter, cuda_stream waited) {
  const cuda_stream other = waiter == legacy_default_stream ? waited : waiter;
  if (synchronises_with_legacy(handle(other))) return t;
  auto* r = new ordered_release{t, handle(waiter), handle(waited), guard_device(t.device())};
  return t.kept_by(release_in_order, r);
}

void wait_for_producer(const tensor& t, cuda_stream producer) {
  if (producer != legacy_default_stream)
    refuse_capturing(producer, "import data ready on",
                     "the graph writes it only when it is launched, and dlbridge's work runs outside the graph");
  if (!is_pinned_or_managed(t)) return order_streams(t, legacy_default_stream, producer);
  if (producer == legacy_default_stream && !device_usable()) return;
  synchronize(handle(producer));
}

tensor copy_on_gpu(const tensor& src, device where, dtype type, cuda_stream stream) {
  require_device();
  const stream_t s = handle(stream);
  const stream_t legacy = legacy_stream();
  const bool ordered = !same_stream(s, legacy);
  // Captured, the copy would run at each launch of the graph, into memory
  // dlbridge allocated outside it and hands out again once the result is
  // dropped (as a capture's temporaries are), and the legacy stream cannot
  // be ordered after it (nor the host, for pinned and managed memory).
  if (ordered)
    refuse_capturing(stream, "copy on",
                     "the graph would run the copy at each launch, into memory dlbridge hands out again once the "
                     "result is dropped");
  const device from = src.device();
  tensor out = empty_on(where, src.shape(), type);
  // Between two GPUs the copy runs on the destination's; the source's legacy
  // stream is ordered around it.
  const bool across = from.type == kDLCUDA && where.type == kDLCUDA && from.id != where.id;
  const device_guard on(where.type == kDLCUDA ? where.id : guard_device(from));
  if (ordered) order_after(s, legacy);
  if (across) order_after(s, legacy, from.id);
  copy(src, out, s);
  if (ordered) order_after(legacy, s);
  if (across) {
    const device_guard source_side(from.id);
    order_after(legacy, s, where.id);
  }
  if (is_pinned_or_managed(src) || is_pinned_or_managed(out)) synchronize(s);
  return out;
}

void fill_on_gpu(const tensor& t, const scalar& value) {
  fill(t, value, legacy_stream());
  if (is_pinned_or_managed(t)) synchronize(legacy_stream());
}

}  // namespace detail
}  // namespace dlb::cuda_runtime
