// Moving and converting elements with the GPU: the CUDA twins of host_copy.hpp's
// copy_strided / cast_strided, a fill, and tensor-level copies between host
// and device memory. Work is queued on the stream given; unless a function
// says otherwise it returns before the GPU has done it.
#pragma once

#include <cstddef>
#include <optional>

#include "dlbridge/cuda/stream.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/element.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/tensor.hpp"

namespace dlb::cuda_runtime {

// cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream): host to
// device, device to host or device to device, the direction found from the
// pointers (unified addressing). From pageable host memory the source may be
// reused on return; into pageable host memory the call returns when done.
void memcpy_async(void* dst, const void* src, std::size_t bytes, stream_t stream);

// -- Raw strided operations ---------------------------------------------------------
// Pointers must be usable by kernels on the current device: device memory of
// that device, pinned host memory or managed memory. Strides are in elements
// (negative and zero allowed in sources); src and dst must not overlap.
// Packed sub-byte dtypes must be C-contiguous on both sides. Throws
// std::invalid_argument for mismatched sizes or unsupported dtypes.

// dlb::copy_strided on the GPU: axes are coalesced; one contiguous run is a
// cudaMemcpyAsync; 2-D transposes go through shared-memory tiles.
void copy_strided(extents_t shape, dtype type, const void* src, extents_t src_strides, void* dst,
                  extents_t dst_strides, stream_t stream);

// dlb::cast_strided on the GPU, with element.hpp's store() rules bit for bit
// (float16, bfloat16 and the float8/6/4 formats round to nearest even).
void cast_strided(extents_t shape, dtype from, const void* src, extents_t src_strides, dtype to, void* dst,
                  extents_t dst_strides, stream_t stream);

// Sets every element to `value` converted to `type` as element.hpp's store()
// converts it. Packed sub-byte dtypes (C-contiguous) are written as dlb::fill
// writes them, the spare bits of the last byte zero.
void fill(extents_t shape, dtype type, void* dst, extents_t dst_strides, const scalar& value, stream_t stream);

// -- Tensors --------------------------------------------------------------------------
// Tensors may live in CPU (pageable), CUDA, CUDA-host (pinned) or
// CUDA-managed memory; anything else is std::invalid_argument. Work runs on
// the CUDA device of a kDLCUDA operand (made current for the call), which
// `stream` must belong to (or be the legacy / per-thread default stream).

// Copies src's elements into dst (same shape; dtypes may differ: casts follow
// cast_strided). Pageable host operands are staged: a non-contiguous or
// non-dense one goes through a contiguous host buffer made with dlb::copy_strided.
// When dst is on the CPU the call returns once the data is there; otherwise
// it returns once the work is queued. Copies between two different CUDA
// devices need the same dtype and one contiguous run on both sides.
// Throws std::invalid_argument for mismatched shapes, a read-only dst or
// unsupported devices.
void copy(const tensor& src, const tensor& dst, stream_t stream);

// Sets every element of dst (not read-only) to `value` (see fill above).
void fill(const tensor& dst, const scalar& value, stream_t stream);

// A new C-contiguous tensor on the current device (empty_device on `stream`)
// holding src's elements, converted to `type` if given.
[[nodiscard]] tensor to_device(const tensor& src, stream_t stream, std::optional<dtype> type = std::nullopt);

// A new C-contiguous CPU tensor holding src's elements, converted to `type`
// if given; the data is there on return.
[[nodiscard]] tensor to_host(const tensor& src, stream_t stream, std::optional<dtype> type = std::nullopt);

}  // namespace dlb::cuda_runtime
