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

namespace {
// The legacy and per-thread default streams: handles of no one device, never destroyed.
bool is_default_stream(stream_t s) noexcept { return same_stream(s, legacy_stream()) || same_stream(s, per_thread_stream()); }
}  // namespace

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

namespace {
// Lets the calling thread make calls that a capture in the default (global)
// mode forbids, for the guard's lifetime (cudaThreadExchangeStreamCaptureMode).
class relaxed_capture_mode {
 public:
  relaxed_capture_mode() { throw_on_error(cudaThreadExchangeStreamCaptureMode(&mode_), "cudaThreadExchangeStreamCaptureMode()"); }
  ~relaxed_capture_mode() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};
}  // namespace

void wait(stream_t waiter, const event& e) {
  require_device();
  // A stream being captured into a CUDA graph (torch.cuda.graph) may wait
  // only on events of the same capture. An external wait would put a node in
  // the graph that names `e`, which the graph does not keep alive: it would
  // wait on a destroyed (or reused) event at its launches. The host waits
  // instead, once, at capture time: the captured work then follows e's work
  // at every launch. (Work queued after the capture, before a launch, is the
  // launcher's to order, as for any input of a CUDA graph.)
  if (capture_of(waiter) == capture_status::active) {
    const relaxed_capture_mode relaxed;  // a host wait is forbidden during a capture otherwise
    e.synchronize();
    return;
  }
  throw_on_error(cudaStreamWaitEvent(waiter, e.get(), cudaEventWaitDefault), "cudaStreamWaitEvent()");
}

int stream_device(stream_t s) {
  if (is_default_stream(s)) return -1;
  require_device();
  int device = -1;
  throw_on_error(cudaStreamGetDevice(s, &device), "cudaStreamGetDevice()");
  return device;
}

void order_after(stream_t consumer, stream_t producer) {
  require_device();
  if (same_stream(consumer, producer)) return;
  order_after(consumer, producer, stream_device(producer));
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

static_assert(stream_non_blocking == cudaStreamNonBlocking);
static_assert(static_cast<int>(capture_status::none) == cudaStreamCaptureStatusNone &&
              static_cast<int>(capture_status::active) == cudaStreamCaptureStatusActive &&
              static_cast<int>(capture_status::invalidated) == cudaStreamCaptureStatusInvalidated);

bool synchronises_with_legacy(stream_t s) {
  if (is_default_stream(s)) return true;
  require_device();
  unsigned flags = 0;
  throw_on_error(cudaStreamGetFlags(s, &flags), "cudaStreamGetFlags()");
  return synchronises_with_legacy(static_cast<cuda_stream>(stream_to_int(s)), flags);
}

capture_status capture_of(stream_t s) {
  if (same_stream(s, legacy_stream())) return capture_status::none;
  require_device();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  throw_on_error(cudaStreamIsCapturing(s, &capture), "cudaStreamIsCapturing()");
  return static_cast<capture_status>(capture);
}

void order_after_release(stream_t waiter, stream_t waited) {
  // The work queued on a capturing stream since its capture began runs when
  // the graph is launched, maybe many times, long after this release: no
  // stream can wait for it here, and the memory must outlive the graph's
  // launches, which only its owner can ensure (as for any memory a CUDA
  // graph uses). Work queued before the capture began is not waited for
  // either: no event recorded now can capture it (torch.cuda.graph
  // synchronises the device before it begins a capture).
  if (records_queued_work(capture_of(waited))) order_after(waiter, waited);
}

void synchronize(stream_t s) {
  require_device();
  throw_on_error(cudaStreamSynchronize(s), "cudaStreamSynchronize()");
}

}  // namespace dlb::cuda_runtime
