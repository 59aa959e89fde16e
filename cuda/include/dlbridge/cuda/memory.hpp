// CUDA memory as dlb::tensor: device (stream-ordered), pinned host and managed
// allocations whose release frees them, and where a pointer lives.
#pragma once

#include <cstdint>

#include "dlbridge/cuda/stream.hpp"
#include "dlbridge/device.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/tensor.hpp"

struct CUmemPoolHandle_st;  // cudaMemPool_t is CUmemPoolHandle_st*

namespace dlb::cuda_runtime {

using mem_pool_t = CUmemPoolHandle_st*;

// dlbridge's memory pool on `device`, made on first use and kept for the
// process. Unlike the device's default pool it keeps freed memory for the
// next allocation (release threshold: no limit; the default pool hands it
// back to the driver at every synchronisation), every GPU that can reach
// the device as a peer may read and write it, and its memory can be shared
// with other processes where the driver supports POSIX file descriptors.
// What it keeps is dlbridge's alone: other libraries' caches (PyTorch's
// torch.cuda.empty_cache(), CuPy's free_all_blocks()) neither see nor release
// it; release_cached_memory() does, and so does an allocation that finds the
// device out of memory (it releases the cache, then tries once more).
// Throws cuda_unavailable and cuda_error.
[[nodiscard]] mem_pool_t device_pool(int device);

// Gives the memory dlbridge's pools keep and no tensor uses back to the
// driver, on every device, and returns how many bytes that was. It first
// waits for every device to finish its queued work (cudaDeviceSynchronize),
// since memory freed in stream order is the pool's again only then; don't call
// it while another thread captures a CUDA graph. Returns 0, asking nothing of
// CUDA, where no device is usable. Throws cuda_error.
std::uint64_t release_cached_memory();

// New C-contiguous memory on the current device, (kDLCUDA, current device),
// allocated in stream order on `stream` from device_pool() and uninitialised
// (packed sub-byte dtypes: zeroed). Out of memory, it releases the pools'
// cache (release_cached_memory(), which waits for the devices) and tries
// once more. When the last tensor sharing it goes, it is freed with
// cudaFreeAsync on the same stream, from whichever thread that happens:
// `stream` must outlive the tensor, and work queued on other streams that
// uses the memory must be ordered before that (order_after). An empty shape
// allocates nothing (data() is nullptr).
// Throws cuda_unavailable, cuda_error, std::invalid_argument (negative
// extent) and std::length_error (too many axes, size overflow).
[[nodiscard]] tensor empty_device(extents_t shape, dtype type, stream_t stream = legacy_stream());

// New C-contiguous page-locked host memory (cudaMallocHost), labelled
// (kDLCUDAHost, 0); freed with cudaFreeHost. Host code may use it directly;
// kernels may too (unified addressing).
[[nodiscard]] tensor empty_pinned(extents_t shape, dtype type);

// New C-contiguous managed memory (cudaMallocManaged, attached globally),
// labelled (kDLCUDAManaged, 0); freed with cudaFree. Ready for the host on
// return (packed sub-byte dtypes are zeroed on the GPU, then waited for).
[[nodiscard]] tensor empty_managed(extents_t shape, dtype type);

// Where `p` lives, from cudaPointerGetAttributes: device memory is
// (kDLCUDA, its device), page-locked or registered host memory (kDLCUDAHost, 0),
// managed memory (kDLCUDAManaged, 0) and anything else, nullptr included,
// (kDLCPU, 0). Without a usable device no CUDA memory can exist, so every
// pointer is (kDLCPU, 0) and CUDA is not asked. Throws cuda_error if the
// runtime fails otherwise.
[[nodiscard]] device pointer_device(const void* p);

}  // namespace dlb::cuda_runtime
