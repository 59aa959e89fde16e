// The backend's kernels: strided copy (with a tiled path for transposes),
// cast and fill. Template instantiations are kept to one per element size,
// and two (aligned or not) per cast kernel.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/runtime.hpp"
#include "dlbridge/element.hpp"
#include "kernels.hpp"

namespace dlb::cuda_runtime::detail {
namespace {

constexpr int threads_per_block = 256;
constexpr std::int64_t max_blocks = 65535;

std::int64_t blocks_for(std::int64_t work) {
  return std::clamp<std::int64_t>((work + threads_per_block - 1) / threads_per_block, 1, max_blocks);
}

__device__ inline std::int64_t global_thread() {
  return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t thread_count() { return std::int64_t(gridDim.x) * blockDim.x; }

template <class W>
__global__ void copy_kernel(const __grid_constant__ strided_plan plan, const __grid_constant__ index_divisors divisors,
                            W* dst, const W* src) {
  for (std::int64_t i = global_thread(); i < plan.count; i += thread_count()) {
    std::int64_t d, s;
    offsets(plan, divisors, i, d, s);
    dst[d] = src[s];
  }
}

template <class W>
__global__ void __launch_bounds__(tile_dim * tile_rows)
    tile_kernel(const __grid_constant__ strided_plan plan, const tile_grid grid, W* dst, const W* src) {
  __shared__ W tile[tile_dim][tile_dim + 1];
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  // Loop bounds depend on the block only, so every thread reaches each barrier.
  for (std::int64_t b = blockIdx.z; b < grid.batches; b += gridDim.z) {
    std::int64_t dst_base, src_base;
    batch_offsets(plan, b, dst_base, src_base);
    for (std::int64_t rt = blockIdx.y; rt < grid.row_tiles; rt += gridDim.y) {
      for (std::int64_t ct = blockIdx.x; ct < grid.col_tiles; ct += gridDim.x) {
        tile_load(plan, src, src_base, rt * tile_dim, ct * tile_dim, tx, ty, tile);
        __syncthreads();
        tile_store(plan, dst, dst_base, rt * tile_dim, ct * tile_dim, tx, ty, tile);
        __syncthreads();
      }
    }
  }
}

template <class W>
__global__ void fill_kernel(const __grid_constant__ strided_plan plan, const __grid_constant__ index_divisors divisors,
                            const W value, W* dst) {
  for (std::int64_t i = global_thread(); i < plan.count; i += thread_count()) {
    std::int64_t d, s;
    offsets(plan, divisors, i, d, s);
    dst[d] = value;
  }
}

// Aligned: every address is word-aligned (is_word_aligned), so elements move whole.
template <bool Aligned>
__global__ void cast_kernel(const __grid_constant__ strided_plan plan, const __grid_constant__ index_divisors divisors,
                            const dtype from, const dtype to, unsigned char* dst, const unsigned char* src) {
  for (std::int64_t i = global_thread(); i < plan.count; i += thread_count()) {
    std::int64_t d, s;
    offsets(plan, divisors, i, d, s);
    store_element<Aligned>(to, dst, d, load_element<Aligned>(from, src, s));
  }
}

// One thread per byte of a packed, C-contiguous destination.
template <bool Aligned>
__global__ void cast_to_packed_kernel(const __grid_constant__ strided_plan plan,
                                      const __grid_constant__ index_divisors divisors, const dtype from, const dtype to,
                                      const std::int64_t bytes, unsigned char* dst, const unsigned char* src) {
  float_format format{};
  dlb::detail::format_of(to, format);
  for (std::int64_t byte = global_thread(); byte < bytes; byte += thread_count()) {
    dst[byte] = pack_byte(byte, plan.count, to.bits, dst[byte], [&](std::int64_t e) {
      std::int64_t d, s;
      offsets(plan, divisors, e, d, s);  // d == e: the destination is C-contiguous
      return dlb::detail::small_float_code(format, load_element<Aligned>(from, src, s));
    });
  }
}

// Launches `kernel` and reads the launch's own status, as cudaLaunchKernelEx
// returns it: the thread's last error is neither cleared before (an error
// another library left pending there stays for it to read) nor read after
// (where such a pending error would pass for ours). A sticky error returned
// here surfaced at the launch but was caused by an earlier fault; its message
// says so (error_message).
template <class... Params, class... Args>
void launch(const char* name, void (*kernel)(Params...), dim3 blocks, dim3 threads, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = blocks;
  config.blockDim = threads;
  config.stream = stream;
  if (const cudaError_t status = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...); status != cudaSuccess)
    throw_on_error(status, std::string("launching ") + name);  // the message made only on failure
}

template <std::size_t Bytes>
void copy_words(const strided_plan& plan, void* dst, const void* src, cudaStream_t stream) {
  using W = typename word_of<Bytes>::type;
  auto* d = static_cast<W*>(dst);
  const auto* s = static_cast<const W*>(src);
  if (const auto tiled = tiled_plan(plan)) {
    const tile_grid grid = make_tile_grid(*tiled);
    const dim3 blocks(unsigned(std::min<std::int64_t>(grid.col_tiles, max_blocks)),
                      unsigned(std::min<std::int64_t>(grid.row_tiles, max_blocks)),
                      unsigned(std::min<std::int64_t>(grid.batches, max_blocks)));
    return launch("dlbridge tiled transpose kernel", tile_kernel<W>, blocks, dim3(tile_dim, tile_rows), stream, *tiled,
                  grid, d, s);
  }
  launch("dlbridge strided copy kernel", copy_kernel<W>, dim3(unsigned(blocks_for(plan.count))), dim3(threads_per_block),
         stream, plan, make_index_divisors(plan), d, s);
}

template <std::size_t Bytes>
void fill_words(const strided_plan& plan, const void* value, void* dst, cudaStream_t stream) {
  using W = typename word_of<Bytes>::type;
  W word;
  std::memcpy(&word, value, Bytes);
  launch("dlbridge fill kernel", fill_kernel<W>, dim3(unsigned(blocks_for(plan.count))), dim3(threads_per_block), stream,
         plan, make_index_divisors(plan), word, static_cast<W*>(dst));
}

template <bool Aligned>
void cast_elements(const strided_plan& plan, dtype from, dtype to, unsigned char* dst, const unsigned char* src,
                   cudaStream_t stream) {
  const index_divisors divisors = make_index_divisors(plan);
  if (to.is_subbyte()) {
    const auto bytes = std::int64_t(to.storage_bytes(std::uint64_t(plan.count)));
    return launch("dlbridge packed cast kernel", cast_to_packed_kernel<Aligned>, dim3(unsigned(blocks_for(bytes))),
                  dim3(threads_per_block), stream, plan, divisors, from, to, bytes, dst, src);
  }
  launch("dlbridge cast kernel", cast_kernel<Aligned>, dim3(unsigned(blocks_for(plan.count))), dim3(threads_per_block),
         stream, plan, divisors, from, to, dst, src);
}

}  // namespace

void launch_copy(strided_plan plan, std::size_t bytes, void* dst, const void* src, stream_t stream) {
  // Elements no word moves whole, or not aligned for one, move as bytes.
  if (!is_word_width(bytes) || !is_word_aligned(plan, dst, src, bytes)) {
    split_into_bytes(plan, std::int64_t(bytes));
    bytes = 1;
  }
  visit_width(bytes, [&](auto width) {
    if constexpr (decltype(width)::value != 0) copy_words<decltype(width)::value>(plan, dst, src, stream);
  });
}

void launch_fill(strided_plan plan, std::size_t bytes, const void* value, void* dst, stream_t stream) {
  if (!is_word_width(bytes) || !is_word_aligned(plan, dst, nullptr, bytes)) {
    // Byte by byte: the plan's innermost axis walks the value's bytes, so
    // each byte gets a fill of its own over a strided view.
    const auto* v = static_cast<const unsigned char*>(value);
    for (std::size_t k = 0; k < bytes; ++k) {
      strided_plan part = plan;
      for (std::int32_t axis = 0; axis < part.ndim; ++axis) part.dst[axis] *= std::int64_t(bytes);
      fill_words<1>(part, v + k, static_cast<unsigned char*>(dst) + k, stream);
    }
    return;
  }
  visit_width(bytes, [&](auto width) {
    if constexpr (decltype(width)::value != 0) fill_words<decltype(width)::value>(plan, value, dst, stream);
  });
}

void launch_cast(const strided_plan& plan, dtype from, dtype to, void* dst, const void* src, stream_t stream) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (is_word_aligned(plan, from, to, dst, src)) return cast_elements<true>(plan, from, to, d, s, stream);
  cast_elements<false>(plan, from, to, d, s, stream);
}

}  // namespace dlb::cuda_runtime::detail

namespace dlb::cuda_runtime {

std::vector<int> compiled_architectures() {
  // nvcc defines __CUDA_ARCH_LIST__ in every pass, host included, as the
  // architectures this file's kernels are compiled for, e.g. 800,900.
#if defined(__CUDA_ARCH_LIST__)
  return {__CUDA_ARCH_LIST__};
#else
  return {};
#endif
}

}  // namespace dlb::cuda_runtime
