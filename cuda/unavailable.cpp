// dlbridge/cuda/arrays.hpp and dlbridge/cuda/runtime.hpp where the CUDA
// backend was not built (no nvcc): host memory works, and every operation
// that needs a GPU throws dlb::cuda_unavailable, as the backend does on a
// machine with no usable device.
#include <string>
#include <vector>

#include "dlbridge/cuda/arrays.hpp"
#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/runtime.hpp"

namespace dlb::cuda_runtime {
namespace {

const char* const why = "dlbridge was built without the CUDA backend";

[[noreturn]] void unavailable() {
  throw cuda_unavailable(std::string("no CUDA device is available (") + why + ")", 100);  // cudaErrorNoDevice
}

}  // namespace

int device_count() noexcept { return 0; }
int runtime_version() noexcept { return 0; }
std::string device_status() { return why; }
std::vector<int> compiled_architectures() { return {}; }

bool backend_built() noexcept { return false; }
bool inherited_across_fork(const tensor&) noexcept { return false; }
std::uint64_t release_cuda_cache() { return 0; }
device cuda_pointer_device(const void*) { return {kDLCUDA, 0}; }

namespace detail {

tensor empty_on_gpu(device, extents_t, dtype) { unavailable(); }
void order_after_on_gpu(device, cuda_stream, cuda_stream) { unavailable(); }
tensor released_after_on_gpu(const tensor&, cuda_stream, cuda_stream) { unavailable(); }

// Without a device nothing of this process's own is pending on the legacy
// stream (as in the backend); another stream needs the runtime.
void wait_for_producer(const tensor&, cuda_stream producer) {
  if (producer != legacy_default_stream) unavailable();
}

tensor copy_on_gpu(const tensor&, device, dtype, cuda_stream) { unavailable(); }
void fill_on_gpu(const tensor&, const scalar&) { unavailable(); }

}  // namespace detail
}  // namespace dlb::cuda_runtime
