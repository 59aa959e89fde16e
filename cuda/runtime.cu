#include <cuda_runtime_api.h>

#include "dlbridge/cuda/runtime.hpp"

namespace dlb::cuda_runtime {

int device_count() noexcept {
  int count = 0;
  // On error the runtime leaves `count` untouched; report none.
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

int runtime_version() noexcept {
  int version = 0;
  return cudaRuntimeGetVersion(&version) == cudaSuccess ? version : 0;
}

}  // namespace dlb::cuda_runtime
