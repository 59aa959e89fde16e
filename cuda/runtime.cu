#include <cuda_runtime_api.h>

#include "dlbridge/cuda/runtime.hpp"

namespace dlb::cuda_runtime {

int runtime_version() noexcept {
  int version = 0;
  return cudaRuntimeGetVersion(&version) == cudaSuccess ? version : 0;
}

}  // namespace dlb::cuda_runtime
