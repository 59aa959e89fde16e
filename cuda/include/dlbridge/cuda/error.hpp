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

// "<call>: <error name>: <error description>" for a cudaError_t value. Needs no
// device; an unknown code reads as the runtime names it ("unrecognized error code").
[[nodiscard]] std::string error_message(std::string_view call, int code);

// Throws cuda_error(error_message(call, code), code) unless code is 0 (cudaSuccess).
void throw_on_error(int code, std::string_view call);

// Throws cuda_unavailable unless device_count() > 0. The answer is asked of
// the runtime once per process (devices do not come and go while it runs).
void require_device();

// Whether require_device() passes (the same answer, asked once per process).
[[nodiscard]] bool device_usable();

}  // namespace dlb::cuda_runtime
