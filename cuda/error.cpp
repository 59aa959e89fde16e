#include <cuda_runtime_api.h>

#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/runtime.hpp"

namespace dlb::cuda_runtime {

std::string error_message(std::string_view call, int code) {
  const auto error = static_cast<cudaError_t>(code);
  std::string message(call);
  message += ": ";
  message += cudaGetErrorName(error);
  message += ": ";
  message += cudaGetErrorString(error);
  return message;
}

void throw_on_error(int code, std::string_view call) {
  if (code == cudaSuccess) return;
  // Reported here, so clear it: a later cudaGetLastError() (after a kernel
  // launch) must not find it again. Sticky errors stay whatever we do.
  (void)cudaGetLastError();
  throw cuda_error(error_message(call, code), code);
}

namespace {
struct availability {
  int code = cudaSuccess;  // why no device is usable; cudaSuccess when one is
  std::string reason;
};

availability probe() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess)
    return {status, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status)};
  if (count <= 0) return {cudaErrorNoDevice, "no CUDA device is present"};
  return {};
}

const availability& state() {
  static const availability answer = probe();  // thread-safe, once per process
  return answer;
}
}  // namespace

bool device_usable() { return state().code == cudaSuccess; }

void require_device() {
  const availability& answer = state();
  if (answer.code != cudaSuccess)
    throw cuda_unavailable("no CUDA device is available (" + answer.reason + ")", answer.code);
}

}  // namespace dlb::cuda_runtime
