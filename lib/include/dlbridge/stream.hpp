// The stream integers of the Python protocols, DLPack's __dlpack__(stream=...)
// and the CUDA array interface's "stream", read with no CUDA header or runtime.
//
// On CUDA both protocols name a stream by an integer: 1 is the legacy default
// stream, 2 the per-thread default stream, anything larger the value of a
// cudaStream_t. 0 names no stream (it was ambiguous between 1 and 2) and is
// refused; -1 means "do not synchronise" and is valid in __dlpack__ only.
// What these functions return is a cuda_stream: the raw value of a
// cudaStream_t, 1 or 2 for the default streams, never 0. capture_refused is
// the error of work refused across a CUDA graph capture.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dlbridge/config.hpp"  // the C++20 check

namespace dlb {

using cuda_stream = std::uintptr_t;

inline constexpr cuda_stream legacy_default_stream = 1;      // cudaStreamLegacy
inline constexpr cuda_stream per_thread_default_stream = 2;  // cudaStreamPerThread

// __dlpack__(stream=value) of an array on a CUDA device or in managed memory:
// the stream the consumer will use the data on, or nullopt for -1 (the
// consumer orders its own work). Throws std::invalid_argument for 0 and for
// values below -1.
[[nodiscard]] inline std::optional<cuda_stream> consumer_stream(std::int64_t value) {
  if (value == -1) return std::nullopt;
  if (value == 0)
    throw std::invalid_argument(
        "stream 0 is ambiguous on CUDA (it could mean 1 or 2); pass 1 for the legacy default stream, 2 for the "
        "per-thread one, or -1 for no synchronisation");
  if (value < -1) throw std::invalid_argument("stream must be -1, 1, 2 or a stream handle, got " + std::to_string(value));
  return static_cast<cuda_stream>(value);
}

// __cuda_array_interface__["stream"] = value (when not None): the stream the
// producer's work on the data is queued on. Throws std::invalid_argument for
// 0 and negative values.
[[nodiscard]] inline cuda_stream producer_stream(std::int64_t value) {
  if (value <= 0) throw std::invalid_argument("stream must be None or a positive int, got " + std::to_string(value));
  return static_cast<cuda_stream>(value);
}

// A stream dlbridge is told to do its own work on (to_device(stream=value)):
// 1, 2 or a handle. Throws std::invalid_argument for 0 and negative values.
[[nodiscard]] inline cuda_stream work_stream(std::int64_t value) {
  if (value == 0)
    throw std::invalid_argument(
        "stream 0 is ambiguous on CUDA (it could mean 1 or 2); pass 1 for the legacy default stream or 2 for the "
        "per-thread one");
  if (value < 0) throw std::invalid_argument("stream must be 1, 2 or a stream handle, got " + std::to_string(value));
  return static_cast<cuda_stream>(value);
}

// Thrown where dlbridge is asked to work across a CUDA graph capture: to
// import data ready on stream `s`, or to copy on it, while `s` is being
// captured (torch.cuda.graph). Work queued on `s` then runs only when the
// graph is launched, while dlbridge's own work (its allocations, its order
// on the legacy default stream) happens now, outside the graph; no order
// between the two is right at every launch, so dlbridge refuses before it
// queues anything, leaving the capture valid. Python sees BufferError.
// `action` names what was refused ("import data ready on", "copy on"),
// `reason` why it cannot be done inside the graph.
class capture_refused : public std::runtime_error {
 public:
  capture_refused(std::string_view action, cuda_stream s, std::string_view reason)
      : std::runtime_error("cannot " + std::string(action) + " stream " + std::to_string(s) +
                           " while it is being captured into a CUDA graph: " + std::string(reason) +
                           "; do it before the capture begins or after it ends") {}
};

}  // namespace dlb
