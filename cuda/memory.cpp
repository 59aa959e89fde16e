#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/memory.hpp"
#include "dlbridge/cuda/runtime.hpp"

namespace dlb::cuda_runtime {
namespace {

// The checks of tensor::empty, then the bytes to allocate.
std::size_t allocation_bytes(extents_t shape, dtype type) {
  require_shape(shape, type);
  if (!is_supported(type)) throw std::invalid_argument("unsupported dtype " + dlb::detail::describe(type));
  return std::size_t(type.storage_bytes(std::uint64_t(*element_count(shape))));
}

// Release callbacks run on any thread, may run after the runtime is gone and
// must not throw: errors are dropped (and cleared from the thread's last error).
struct device_block {
  void* memory;
  int device;
  cudaStream_t stream;
};

void release_device(void* ctx) noexcept {
  auto* block = static_cast<device_block*>(ctx);
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess || previous == block->device || cudaSetDevice(block->device) != cudaSuccess)
    previous = -1;
  if (cudaFreeAsync(block->memory, block->stream) != cudaSuccess) (void)cudaGetLastError();
  if (previous >= 0) (void)cudaSetDevice(previous);
  delete block;
}

void release_pinned(void* memory) noexcept {
  if (cudaFreeHost(memory) != cudaSuccess) (void)cudaGetLastError();
}

void release_managed(void* memory) noexcept {
  if (cudaFree(memory) != cudaSuccess) (void)cudaGetLastError();
}

std::string bytes_call(const char* function, std::size_t bytes) {
  return std::string(function) + "(" + std::to_string(bytes) + " bytes)";
}

}  // namespace

tensor empty_device(extents_t shape, dtype type, stream_t stream) {
  require_device();
  const std::size_t bytes = allocation_bytes(shape, type);
  const int device = current_device();
  if (bytes == 0) return tensor::adopt(nullptr, type, {kDLCUDA, device}, shape, {}, false, nullptr, nullptr);
  auto* block = new device_block{nullptr, device, stream};
  if (const cudaError_t status = cudaMallocAsync(&block->memory, bytes, stream); status != cudaSuccess) {
    delete block;
    throw_on_error(status, bytes_call("cudaMallocAsync", bytes));
  }
  if (type.is_subbyte()) {
    if (const cudaError_t status = cudaMemsetAsync(block->memory, 0, bytes, stream); status != cudaSuccess) {
      release_device(block);
      throw_on_error(status, bytes_call("cudaMemsetAsync", bytes));
    }
  }
  void* memory = block->memory;
  return tensor::adopt(memory, type, {kDLCUDA, device}, shape, {}, false, release_device, block);
}

tensor empty_pinned(extents_t shape, dtype type) {
  require_device();
  const std::size_t bytes = allocation_bytes(shape, type);
  if (bytes == 0) return tensor::adopt(nullptr, type, {kDLCUDAHost, 0}, shape, {}, false, nullptr, nullptr);
  void* memory = nullptr;
  throw_on_error(cudaMallocHost(&memory, bytes), bytes_call("cudaMallocHost", bytes));
  if (type.is_subbyte()) std::memset(memory, 0, bytes);
  return tensor::adopt(memory, type, {kDLCUDAHost, 0}, shape, {}, false, release_pinned, memory);
}

tensor empty_managed(extents_t shape, dtype type) {
  require_device();
  const std::size_t bytes = allocation_bytes(shape, type);
  if (bytes == 0) return tensor::adopt(nullptr, type, {kDLCUDAManaged, 0}, shape, {}, false, nullptr, nullptr);
  void* memory = nullptr;
  throw_on_error(cudaMallocManaged(&memory, bytes, cudaMemAttachGlobal), bytes_call("cudaMallocManaged", bytes));
  if (type.is_subbyte()) {
    if (const cudaError_t status = cudaMemset(memory, 0, bytes); status != cudaSuccess) {
      release_managed(memory);
      throw_on_error(status, bytes_call("cudaMemset", bytes));
    }
  }
  return tensor::adopt(memory, type, {kDLCUDAManaged, 0}, shape, {}, false, release_managed, memory);
}

device pointer_device(const void* p) {
  if (p == nullptr || !device_usable()) return {kDLCPU, 0};
  cudaPointerAttributes attributes{};
  if (const cudaError_t status = cudaPointerGetAttributes(&attributes, p); status != cudaSuccess) {
    (void)cudaGetLastError();
    char address[32];
    std::snprintf(address, sizeof address, "%p", p);
    throw_on_error(status, std::string("cudaPointerGetAttributes(") + address + ")");
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice: return {kDLCUDA, attributes.device};
    case cudaMemoryTypeHost: return {kDLCUDAHost, 0};
    case cudaMemoryTypeManaged: return {kDLCUDAManaged, 0};
    default: return {kDLCPU, 0};  // cudaMemoryTypeUnregistered
  }
}

}  // namespace dlb::cuda_runtime
