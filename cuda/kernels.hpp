// The kernel launchers of kernels.cu (private to the backend). Each queues
// its work on `stream` on the current device and returns; a launch failure
// throws dlb::cuda_error.
#pragma once

#include <cstddef>

#include "dlbridge/cuda/detail/strided.hpp"
#include "dlbridge/cuda/stream.hpp"
#include "dlbridge/dtype.hpp"

namespace dlb::cuda_runtime::detail {

// dst[i] = src[i] over the plan, for elements of `bytes` bytes (1, 2, 4, 8 or
// 16; packed sub-byte data goes through memcpy). Transposes, N-d ones
// included, go through shared-memory tiles; unaligned addresses are copied
// byte by byte.
void launch_copy(strided_plan plan, std::size_t bytes, void* dst, const void* src, stream_t stream);

// dst[i] = convert(src[i]) from one dtype to another (dlb::store's rules),
// elements read and written whole where every address is aligned. A packed
// sub-byte operand must be C-contiguous (then its offsets in the plan are
// element indices).
void launch_cast(const strided_plan& plan, dtype from, dtype to, void* dst, const void* src, stream_t stream);

// dst[i] = the `bytes` bytes at `value` (host memory), over the plan (src strides unused).
void launch_fill(strided_plan plan, std::size_t bytes, const void* value, void* dst, stream_t stream);

}  // namespace dlb::cuda_runtime::detail
