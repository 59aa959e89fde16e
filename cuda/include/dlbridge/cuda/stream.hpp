// CUDA streams and events. The header needs no CUDA header: stream_t is
// cudaStream_t's own type.
#pragma once

#include <cstdint>

#include "dlbridge/device.hpp"
#include "dlbridge/stream.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*
struct CUevent_st;   // cudaEvent_t is CUevent_st*

namespace dlb::cuda_runtime {

using stream_t = CUstream_st*;
using event_t = CUevent_st*;

// The legacy default stream (cudaStreamLegacy, the value 1 in both protocols)
// and the calling thread's per-thread default stream (cudaStreamPerThread, 2).
// The null stream (nullptr) is the legacy one too.
[[nodiscard]] inline stream_t legacy_stream() noexcept { return reinterpret_cast<stream_t>(legacy_default_stream); }
[[nodiscard]] inline stream_t per_thread_stream() noexcept { return reinterpret_cast<stream_t>(per_thread_default_stream); }

// -- Stream integers (no device needed; dlbridge/stream.hpp reads them) ---------

// The integer naming `s` in both protocols: 1 for the legacy default stream
// (nullptr included), 2 for the per-thread one, else the handle's value.
[[nodiscard]] std::int64_t stream_to_int(stream_t s) noexcept;

// Whether two handles name the same stream (nullptr and legacy_stream() do).
[[nodiscard]] bool same_stream(stream_t a, stream_t b) noexcept;

// -- Devices -----------------------------------------------------------------

// The calling thread's current device (cudaGetDevice).
[[nodiscard]] int current_device();

// The device a device_guard makes current for work on memory `d`: its own
// for device memory (kDLCUDA); -1 for the rest (pinned and managed memory
// belong to no one device).
[[nodiscard]] constexpr int guard_device(device d) noexcept { return d.type == kDLCUDA ? d.id : -1; }

// Makes `device` current for the guard's lifetime, then restores the previous
// one. A negative device leaves the current device alone.
class device_guard {
 public:
  explicit device_guard(int device);
  ~device_guard();
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = -1;
};

// -- Streams and events ---------------------------------------------------------

// An owned stream on the current device; non-blocking streams do not
// synchronise with the legacy default stream.
class stream {
 public:
  explicit stream(bool non_blocking = true);
  ~stream();
  stream(stream&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  stream& operator=(stream&& o) noexcept;
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  [[nodiscard]] stream_t get() const noexcept { return handle_; }
  void synchronize() const;

 private:
  stream_t handle_ = nullptr;
};

// An owned event (timing disabled) on the current device.
class event {
 public:
  event();
  ~event();
  event(event&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  event& operator=(event&& o) noexcept;
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  [[nodiscard]] event_t get() const noexcept { return handle_; }
  // Captures the work queued on `s` so far (cudaEventRecord).
  void record(stream_t s);
  // Whether the captured work has finished (cudaEventQuery).
  [[nodiscard]] bool ready() const;
  void synchronize() const;

 private:
  event_t handle_ = nullptr;
};

// Makes work queued on `waiter` from now on wait for `e` (cudaStreamWaitEvent).
// Where `waiter` is being captured into a CUDA graph, the host waits for `e`
// instead: the graph, launched later, then follows e's work.
void wait(stream_t waiter, const event& e);

// The device whose streams `s` is one of (cudaStreamGetDevice), or -1 for the
// legacy and per-thread handles, which name the current device's.
[[nodiscard]] int stream_device(stream_t s);

// Makes work queued on `consumer` from now on wait for everything queued on
// `producer` so far: an event recorded on producer (on producer's own
// device, which an event must share with the stream it is recorded on),
// waited on by consumer (neither host thread blocks). Nothing happens when
// they are the same stream.
void order_after(stream_t consumer, stream_t producer);

// The same for a producer on another device: the event is recorded there
// (the legacy and per-thread handles name that device's streams) and waited
// on by `consumer`, a stream of the current device.
void order_after(stream_t consumer, stream_t producer, int producer_device);

// -- Orders completed when memory lent to a stream is released -----------------
//
// Memory dlbridge lends to a stream is freed, and handed out again, in the
// order of the legacy default stream; the legacy stream must first wait for
// the work the borrower queued on its stream. When the memory is released,
// that stream may no longer exist (a consumer may destroy its stream before
// it drops the memory, and recording on a destroyed stream is undefined) or
// may be capturing into a CUDA graph. These say what can be done then.

// cudaStreamNonBlocking, the creation flag of a stream that the legacy
// default stream does not synchronise with.
inline constexpr unsigned stream_non_blocking = 1;

// Whether the legacy default stream and stream `s`, made with `flags`, order
// each other's work by themselves (work queued on either waits for the work
// queued on the other before it): the default streams (the legacy and
// per-thread ones) do, and so do blocking streams, made without
// cudaStreamNonBlocking (CuPy's by default); non-blocking streams
// (PyTorch's) do not. `flags` is not read for the default streams.
[[nodiscard]] constexpr bool synchronises_with_legacy(cuda_stream s, unsigned flags) noexcept {
  return s == legacy_default_stream || s == per_thread_default_stream || (flags & stream_non_blocking) == 0;
}

// The same of a live stream, whose flags the runtime is asked for
// (cudaStreamGetFlags) unless it is a default stream.
[[nodiscard]] bool synchronises_with_legacy(stream_t s);

// What cudaStreamIsCapturing says of a stream.
enum class capture_status : unsigned char { none, active, invalidated };

// Whether an event recorded on a stream in `capture` state captures the work
// queued on it, for a stream outside any capture to wait on. Not during a
// capture (active, or invalidated but not yet ended): the record becomes a
// node of the graph, which runs only when the graph is launched, and a
// stream outside the capture that waits on it invalidates the capture.
[[nodiscard]] constexpr bool records_queued_work(capture_status capture) noexcept {
  return capture == capture_status::none;
}

// The capture state of `s`; the legacy stream, which can never be captured,
// is not asked (the runtime refuses the question while a blocking stream of
// its device is being captured).
[[nodiscard]] capture_status capture_of(stream_t s);

// At the release of memory lent to a stream, order_after(waiter, waited)
// where an event recorded on `waited` captures its queued work
// (records_queued_work); nothing where `waited` is being captured. Neither
// may be a destroyed stream.
void order_after_release(stream_t waiter, stream_t waited);

// Blocks the calling thread until the work queued on `s` has finished.
void synchronize(stream_t s);

}  // namespace dlb::cuda_runtime
