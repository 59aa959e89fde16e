#include <cuda_runtime_api.h>

#include <type_traits>
#include <string>
#include <utility>

#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/stream.hpp"

namespace dlb::cuda_runtime {

static_assert(std::is_same_v<stream_t, cudaStream_t>);
static_assert(std::is_same_v<event_t, cudaEvent_t>);

std::int64_t stream_to_int(stream_t s) noexcept {
  if (s == nullptr || s == cudaStreamLegacy) return 1;
  if (s == cudaStreamPerThread) return 2;
  return static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(s));
}

bool same_stream(stream_t a, stream_t b) noexcept { return stream_to_int(a) == stream_to_int(b); }

int current_device() {
  require_device();
  int device = 0;
  throw_on_error(cudaGetDevice(&device), "cudaGetDevice()");
  return device;
}

device_guard::device_guard(int device) {
  if (device < 0) return;
  const int previous = current_device();
  if (previous == device) return;
  throw_on_error(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  previous_ = previous;
}

device_guard::~device_guard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);  // must not throw
}

stream::stream(bool non_blocking) {
  require_device();
  throw_on_error(cudaStreamCreateWithFlags(&handle_, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault),
                 non_blocking ? "cudaStreamCreateWithFlags(cudaStreamNonBlocking)" : "cudaStreamCreateWithFlags(cudaStreamDefault)");
}

stream::~stream() {
  if (handle_) (void)cudaStreamDestroy(handle_);  // queued work still completes
}

stream& stream::operator=(stream&& o) noexcept {
  std::swap(handle_, o.handle_);
  return *this;
}

void stream::synchronize() const { cuda_runtime::synchronize(handle_); }

event::event() {
  require_device();
  throw_on_error(cudaEventCreateWithFlags(&handle_, cudaEventDisableTiming), "cudaEventCreateWithFlags(cudaEventDisableTiming)");
}

event::~event() {
  if (handle_) (void)cudaEventDestroy(handle_);  // released once pending waits are done
}

event& event::operator=(event&& o) noexcept {
  std::swap(handle_, o.handle_);
  return *this;
}

void event::record(stream_t s) { throw_on_error(cudaEventRecord(handle_, s), "cudaEventRecord()"); }

bool event::ready() const {
  const cudaError_t status = cudaEventQuery(handle_);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error: clear it
    return false;
  }
  throw_on_error(status, "cudaEventQuery()");
  return true;
}

void event::synchronize() const { throw_on_error(cudaEventSynchronize(handle_), "cudaEventSynchronize()"); }

void wait(stream_t waiter, const event& e) {
  require_device();
  // A stream being captured into a CUDA graph (torch.cuda.graph) may wait
  // only on events of the same capture, unless the wait is external: the
  // graph then waits for the event's last record, which has long completed
  // when it is replayed.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  throw_on_error(cudaStreamIsCapturing(waiter, &capture), "cudaStreamIsCapturing()");
  const unsigned flags = capture == cudaStreamCaptureStatusActive ? cudaEventWaitExternal : cudaEventWaitDefault;
  throw_on_error(cudaStreamWaitEvent(waiter, e.get(), flags), "cudaStreamWaitEvent()");
}

void order_after(stream_t consumer, stream_t producer) {
  require_device();
  if (same_stream(consumer, producer)) return;
  event e;
  e.record(producer);
  wait(consumer, e);
}

void order_after(stream_t consumer, stream_t producer, int producer_device) {
  require_device();
  event e = [&] {
    const device_guard on(producer_device);  // an event is recorded on its own device's streams
    event recorded;
    recorded.record(producer);
    return recorded;
  }();
  wait(consumer, e);
}

void synchronize(stream_t s) {
  require_device();
  throw_on_error(cudaStreamSynchronize(s), "cudaStreamSynchronize()");
}

}  // namespace dlb::cuda_runtime
