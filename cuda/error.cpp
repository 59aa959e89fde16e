#include <cuda_runtime_api.h>
#include <dlfcn.h>

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

// The runtime reports a missing driver as "driver version is insufficient";
// tell the two apart by loading the driver library the runtime itself loads.
std::string driver_missing() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver != nullptr) {
    dlclose(driver);
    return {};
  }
  const char* why = dlerror();
  return why != nullptr ? why : "libcuda.so.1 cannot be loaded";
}

availability probe() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorInsufficientDriver) {
    if (std::string why = driver_missing(); !why.empty()) return {status, "no NVIDIA driver found: " + why};
  }
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

std::string device_status() { return state().reason; }

void require_device() {
  const availability& answer = state();
  if (answer.code != cudaSuccess)
    throw cuda_unavailable("no CUDA device is available (" + answer.reason + ")", answer.code);
}

}  // namespace dlb::cuda_runtime
