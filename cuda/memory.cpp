#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

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
// In a child forked after CUDA was initialised they free nothing: CUDA calls
// are undefined there, and the memory is the parent's to free.
struct device_block {
  void* memory;
  int device;
  cudaStream_t stream;
};

void release_device(void* ctx) noexcept {
  auto* block = static_cast<device_block*>(ctx);
  if (forked_after_init()) {
    delete block;
    return;
  }
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess || previous == block->device || cudaSetDevice(block->device) != cudaSuccess)
    previous = -1;
  if (cudaFreeAsync(block->memory, block->stream) != cudaSuccess) (void)cudaGetLastError();
  if (previous >= 0) (void)cudaSetDevice(previous);
  delete block;
}

void release_pinned(void* memory) noexcept {
  if (!forked_after_init() && cudaFreeHost(memory) != cudaSuccess) (void)cudaGetLastError();
}

void release_managed(void* memory) noexcept {
  if (!forked_after_init() && cudaFree(memory) != cudaSuccess) (void)cudaGetLastError();
}

std::string bytes_call(const char* function, std::size_t bytes) {
  return std::string(function) + "(" + std::to_string(bytes) + " bytes)";
}

cudaMemPool_t make_pool(int device) {
  int handle_types = 0;
  throw_on_error(cudaDeviceGetAttribute(&handle_types, cudaDevAttrMemoryPoolSupportedHandleTypes, device),
                 "cudaDeviceGetAttribute(cudaDevAttrMemoryPoolSupportedHandleTypes)");
  cudaMemPoolProps properties{};
  properties.allocType = cudaMemAllocationTypePinned;
  properties.location = {cudaMemLocationTypeDevice, device};
  properties.handleTypes = (handle_types & cudaMemHandleTypePosixFileDescriptor) ? cudaMemHandleTypePosixFileDescriptor
                                                                                  : cudaMemHandleTypeNone;
  cudaMemPool_t pool = nullptr;
  cudaError_t status = cudaMemPoolCreate(&pool, &properties);
  if (status != cudaSuccess && properties.handleTypes != cudaMemHandleTypeNone) {
    (void)cudaGetLastError();  // shareable pools can be refused (containers); a private one still serves
    properties.handleTypes = cudaMemHandleTypeNone;
    status = cudaMemPoolCreate(&pool, &properties);
  }
  throw_on_error(status, "cudaMemPoolCreate()");
  std::uint64_t keep_everything = std::numeric_limits<std::uint64_t>::max();
  throw_on_error(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything),
                 "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)");
  int count = 0;
  throw_on_error(cudaGetDeviceCount(&count), "cudaGetDeviceCount()");
  for (int peer = 0; peer < count; ++peer) {
    int reachable = 0;
    if (peer == device || cudaDeviceCanAccessPeer(&reachable, peer, device) != cudaSuccess || !reachable) continue;
    const cudaMemAccessDesc access{{cudaMemLocationTypeDevice, peer}, cudaMemAccessFlagsProtReadWrite};
    throw_on_error(cudaMemPoolSetAccess(pool, &access, 1), "cudaMemPoolSetAccess(peer " + std::to_string(peer) + ")");
  }
  return pool;
}

// dlbridge's pools, by device (null until first used); never destroyed, as
// releases may come at exit.
struct pools {
  std::mutex guard;
  std::vector<cudaMemPool_t> by_device;
};
pools& all_pools() {
  static pools p;
  return p;
}

std::uint64_t reserved_bytes(cudaMemPool_t pool) {
  std::uint64_t bytes = 0;
  throw_on_error(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &bytes),
                 "cudaMemPoolGetAttribute(cudaMemPoolAttrReservedMemCurrent)");
  return bytes;
}

// Gives the memory `pool` holds and no allocation uses back to the driver.
// Memory freed in stream order goes back to the pool only when its stream
// reaches the free, so the device is waited for first.
std::uint64_t trim(cudaMemPool_t pool, int device) {
  const device_guard on(device);
  throw_on_error(cudaDeviceSynchronize(), "cudaDeviceSynchronize()");
  const std::uint64_t before = reserved_bytes(pool);
  throw_on_error(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo(0)");
  const std::uint64_t after = reserved_bytes(pool);
  return before > after ? before - after : 0;
}

}  // namespace

std::uint64_t release_cached_memory() {
  if (!device_usable()) return 0;  // no device, no pool
  pools& p = all_pools();
  const std::lock_guard lock(p.guard);
  std::uint64_t released = 0;
  for (std::size_t device = 0; device < p.by_device.size(); ++device)
    if (p.by_device[device] != nullptr) released += trim(p.by_device[device], int(device));
  return released;
}

mem_pool_t device_pool(int device) {
  require_device();
  pools& p = all_pools();
  const std::lock_guard lock(p.guard);
  std::vector<cudaMemPool_t>& pools = p.by_device;
  if (pools.empty()) {
    int count = 0;
    throw_on_error(cudaGetDeviceCount(&count), "cudaGetDeviceCount()");
    pools.resize(std::size_t(count), nullptr);
  }
  if (device < 0 || std::size_t(device) >= pools.size())
    throw std::invalid_argument("no CUDA device " + std::to_string(device));
  if (pools[std::size_t(device)] == nullptr) pools[std::size_t(device)] = make_pool(device);
  return pools[std::size_t(device)];
}

tensor empty_device(extents_t shape, dtype type, stream_t stream) {
  require_device();
  const std::size_t bytes = allocation_bytes(shape, type);
  const int device = current_device();
  if (bytes == 0) return tensor::adopt(nullptr, type, {kDLCUDA, device}, shape, {}, false, nullptr, nullptr);
  const cudaMemPool_t pool = device_pool(device);
  auto* block = new device_block{nullptr, device, stream};
  cudaError_t status = cudaMallocFromPoolAsync(&block->memory, bytes, pool, stream);
  if (status == cudaErrorMemoryAllocation) {
    // The pool keeps what it frees, which the driver can no longer hand to
    // this allocation's size (nor to other libraries): give it back, once.
    (void)cudaGetLastError();
    try {
      (void)release_cached_memory();
    } catch (...) {
      delete block;
      throw;
    }
    status = cudaMallocFromPoolAsync(&block->memory, bytes, pool, stream);
  }
  if (status != cudaSuccess) {
    delete block;
    throw_on_error(status, bytes_call("cudaMallocFromPoolAsync", bytes));
  }
  if (type.is_subbyte()) {
    if (status = cudaMemsetAsync(block->memory, 0, bytes, stream); status != cudaSuccess) {
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
    // cudaMemset returns before managed memory is written; the host may read it next.
    cudaError_t status = cudaMemsetAsync(memory, 0, bytes, cudaStreamLegacy);
    if (status == cudaSuccess) status = cudaStreamSynchronize(cudaStreamLegacy);
    if (status != cudaSuccess) {
      release_managed(memory);
      throw_on_error(status, bytes_call("cudaMemsetAsync", bytes));
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
