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
// Throws cuda_unavailable and cuda_error.
[[nodiscard]] mem_pool_t device_pool(int device);

// New C-contiguous memory on the current device, (kDLCUDA, current device),
// allocated in stream order on `stream` from device_pool() and uninitialised
// (packed sub-byte dtypes: zeroed). When the last tensor sharing it goes, it
// is freed with cudaFreeAsync on the same stream, from whichever thread that
// happens: `stream` must outlive the tensor, and work queued on other streams
// that uses the memory must be ordered before that (order_after). An empty
// shape allocates nothing (data() is nullptr).
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
