// A C++ program on dlbridge's CUDA backend, as installed in the Python
// package (docs/cuda-backend.md, "From C++"): an array on the CPU, and one on
// the GPU where a device is usable; elsewhere the backend says why not.
#include <cstdint>
#include <cstdio>

#include <dlbridge/cuda/arrays.hpp>
#include <dlbridge/cuda/error.hpp>

int main() {
  namespace cr = dlb::cuda_runtime;
  const std::int64_t shape[] = {2, 3};
  const dlb::dtype f32{dlb::kDLFloat, 32, 1};
  const dlb::tensor host = cr::empty_on({dlb::kDLCPU, 0}, {shape, 2}, f32);
  std::printf("backend built: %s; on the CPU: %lld elements\n", cr::backend_built() ? "yes" : "no",
              static_cast<long long>(host.size()));
  try {
    const dlb::tensor gpu = cr::copy_to(host, {dlb::kDLCUDA, 0}, f32, dlb::legacy_default_stream);
    std::printf("on cuda:0: %lld elements\n", static_cast<long long>(gpu.size()));
  } catch (const dlb::cuda_unavailable& e) {
    std::printf("no GPU work: %s\n", e.what());
  }
}
