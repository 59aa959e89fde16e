#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>

#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/runtime.hpp"

namespace dlb::cuda_runtime {
namespace {
constexpr const char* sticky_note =
    " (a sticky error: a kernel faulted earlier, in dlbridge or in any library sharing this process's CUDA context, "
    "and every CUDA call fails from now on; the process must be restarted)";
}  // namespace

bool is_sticky(int code) noexcept {
  switch (code) {
    case cudaErrorContained:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorExternalDevice: return true;
    default: return false;
  }
}

std::string error_message(std::string_view call, int code) {
  const auto error = static_cast<cudaError_t>(code);
  std::string message(call);
  message += ": ";
  message += cudaGetErrorName(error);
  message += ": ";
  message += cudaGetErrorString(error);
  // Every call returns a sticky error once one kernel faulted, whoever's
  // kernel it was: the call named is where it surfaced, not its cause.
  if (is_sticky(code)) message += sticky_note;
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
  int count = 0;
};

// Set in a child forked after this process asked CUDA for its devices: the
// driver's state (contexts, pinned mappings) does not survive fork(), and no
// CUDA call in the child is defined.
std::atomic<bool> forked{false};
void on_fork_child() noexcept { forked.store(true, std::memory_order_relaxed); }

constexpr const char* fork_reason =
    "this process was forked after CUDA was initialised in its parent, and CUDA cannot be used across fork(); "
    "start worker processes with the 'spawn' or 'forkserver' method";

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
  // Registered before the runtime is first asked anything, so that every
  // child forked from here on knows (a failed registration leaves children
  // as unprotected as before, nothing worse).
  (void)pthread_atfork(nullptr, nullptr, on_fork_child);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorInsufficientDriver) {
    if (std::string why = driver_missing(); !why.empty()) return {status, "no NVIDIA driver found: " + why};
  }
  if (status != cudaSuccess)
    return {status, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status)};
  if (count <= 0) return {cudaErrorNoDevice, "no CUDA device is present"};
  return {cudaSuccess, {}, count};
}

const availability& state() {
  static const availability answer = probe();  // thread-safe, once per process
  return answer;
}

// This process's answer: the probe's, except in a child forked after the
// probe found a device (a parent that found none has no CUDA state to pass on).
availability this_process() {
  const availability& parent = state();
  if (parent.code == cudaSuccess && forked_after_init()) return {cudaErrorInitializationError, fork_reason};
  return parent;
}
}  // namespace

bool forked_after_init() noexcept { return forked.load(std::memory_order_relaxed); }

bool device_usable() { return state().code == cudaSuccess && !forked_after_init(); }

std::string device_status() { return this_process().reason; }

int device_count() noexcept { return device_usable() ? state().count : 0; }

void require_device() {
  if (device_usable()) return;
  const availability why = this_process();
  throw cuda_unavailable("no CUDA device is available (" + why.reason + ")", why.code);
}

}  // namespace dlb::cuda_runtime
