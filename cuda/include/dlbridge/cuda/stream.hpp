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

// Makes work queued on `waiter` from now on wait for `e` (cudaStreamWaitEvent;
// an external wait where `waiter` is being captured into a CUDA graph).
void wait(stream_t waiter, const event& e);

// Makes work queued on `consumer` from now on wait for everything queued on
// `producer` so far: an event recorded on producer, waited on by consumer
// (neither host thread blocks). Nothing happens when they are the same stream.
void order_after(stream_t consumer, stream_t producer);

// The same for a producer on another device: the event is recorded there
// (the legacy and per-thread handles name that device's streams) and waited
// on by `consumer`, a stream of the current device.
void order_after(stream_t consumer, stream_t producer, int producer_device);

// Blocks the calling thread until the work queued on `s` has finished.
void synchronize(stream_t s);

}  // namespace dlb::cuda_runtime
