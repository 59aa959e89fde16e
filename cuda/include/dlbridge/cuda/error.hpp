// Errors of the CUDA backend: every failed CUDA runtime call becomes a
// dlb::cuda_error naming the call and the CUDA error; a process with no usable
// device gets dlb::cuda_unavailable from every call that needs one.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace dlb {

// A CUDA runtime call failed. what() reads
// "<call>: <error name>: <error description>", for example
// "cudaMallocAsync(1048576 bytes): cudaErrorMemoryAllocation: out of memory".
class cuda_error : public std::runtime_error {
 public:
  cuda_error(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  // The cudaError_t value.
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

// No CUDA device can be used (no GPU, no driver, a driver too old for the
// runtime, CUDA_VISIBLE_DEVICES empty...). what() reads
// "no CUDA device is available (<reason>)" with the reason device_status() gives.
class cuda_unavailable : public cuda_error {
 public:
  using cuda_error::cuda_error;
};

}  // namespace dlb

namespace dlb::cuda_runtime {

// Whether `code` is a sticky error: a fault on the device (an illegal
// address, a device-side assert, a launch failure...) after which the CUDA
// context is unusable and every later call returns the same error, whichever
// library's kernel faulted.
[[nodiscard]] bool is_sticky(int code) noexcept;

// "<call>: <error name>: <error description>" for a cudaError_t value, a
// sticky one followed by " (a sticky error: a kernel faulted earlier, ...)".
// Needs no device; an unknown code reads as the runtime names it
// ("unrecognized error code").
[[nodiscard]] std::string error_message(std::string_view call, int code);

// Throws cuda_error(error_message(call, code), code) unless code is 0 (cudaSuccess).
void throw_on_error(int code, std::string_view call);

// Throws cuda_unavailable unless device_count() > 0. The answer is asked of
// the runtime once per process (devices do not come and go while it runs).
// A process forked after its parent asked (CUDA does not survive fork()) is
// refused with code cudaErrorInitializationError and the reason "this process
// was forked after CUDA was initialised in its parent, ...".
void require_device();

// Whether require_device() passes (the same answer, asked once per process).
[[nodiscard]] bool device_usable();

// Whether this process was forked from one that had already asked CUDA for
// its devices (pthread_atfork). Such a child makes no CUDA call: dlbridge's
// memory it inherited is left to the parent (its releases free nothing).
[[nodiscard]] bool forked_after_init() noexcept;

}  // namespace dlb::cuda_runtime
