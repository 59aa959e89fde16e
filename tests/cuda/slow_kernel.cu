// A kernel for the stream-ordering tests: it spins, then writes.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "slow_kernel.hpp"

namespace {
__device__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void slow_write_kernel(int* p, int value, std::uint64_t ns) {
  const std::uint64_t start = now_ns();
  while (now_ns() - start < ns) __nanosleep(1000);
  *p = value;
}
}  // namespace

int dlb_test::slow_write(int* p, int value, long long nanoseconds, void* stream) {
  slow_write_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(p, value, std::uint64_t(nanoseconds));
  return int(cudaGetLastError());
}
