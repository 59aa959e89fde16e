#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dlbridge/host_copy.hpp"
#include "dlbridge/cuda/copy.hpp"
#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/memory.hpp"
#include "kernels.hpp"

namespace dlb::cuda_runtime {
namespace {

using dlb::detail::describe;

void require_supported(dtype t) {
  if (!is_supported(t)) throw std::invalid_argument("unsupported dtype " + dlb::detail::describe(t));
}

// The checks the raw operations make; returns the element count.
std::int64_t require_layout(extents_t shape, dtype type, extents_t src_strides, extents_t dst_strides) {
  require_shape(shape, type);
  if (src_strides.size() != shape.size() || dst_strides.size() != shape.size())
    throw std::invalid_argument("expected as many strides as axes (" + std::to_string(shape.size()) + "), got " +
                                std::to_string(src_strides.size()) + " and " + std::to_string(dst_strides.size()));
  return *element_count(shape);
}

void require_packed_contiguous(dtype t, extents_t shape, extents_t strides) {
  if (t.is_subbyte() && !is_c_contiguous(shape, strides))
    throw std::invalid_argument("packed sub-byte data must be C-contiguous, got strides " + describe(strides));
}

// Where a copy can touch memory: pageable CPU memory only through the CPU or
// cudaMemcpy; device, pinned and managed memory from kernels too.
enum class memory_kind { pageable, kernel_visible };

memory_kind kind_of(const tensor& t, const char* role) {
  if (t.device().type == kDLCPU) return memory_kind::pageable;
  if (t.device().is_cuda_memory()) return memory_kind::kernel_visible;
  throw std::invalid_argument(std::string("the CUDA backend copies cpu, cuda, cuda_host and cuda_managed memory; the ") +
                              role + " is on " + std::string(name(t.device().type)));
}

const std::byte* at(const void* p, std::int64_t bytes) { return static_cast<const std::byte*>(p) + bytes; }
std::byte* at(void* p, std::int64_t bytes) { return static_cast<std::byte*>(p) + bytes; }

// Pageable host source, kernel-usable destination.
void upload(const tensor& src, const tensor& dst, stream_t stream) {
  const auto plan = detail::make_strided_plan(src.shape(), dst.strides(), src.strides());
  if (src.type() == dst.type() && (src.type().is_subbyte() || detail::is_memcpy(plan)))
    return memcpy_async(dst.data(), src.data(), std::size_t(src.nbytes()), stream);
  // Move the source's bytes as they are when they are exactly its elements;
  // otherwise pack them on the host first.
  tensor packed;
  const void* first = src.data();
  extents_t strides = src.strides();
  // Dense, the span [lo, lo + nbytes) holds exactly the elements: the staging
  // size is nbytes, which validate() bounds, never a width hi - lo past int64.
  std::int64_t lo = 0, bytes = src.nbytes();
  if (is_dense(src.shape(), src.strides())) {
    lo = byte_span(src.shape(), src.strides(), src.type())->lo;
  } else {
    packed = dlb::copy(src);
    first = packed.data();
    strides = packed.strides();
  }
  const std::int64_t extent[] = {bytes};
  const tensor staging = empty_device(extent, {kDLUInt, 8}, stream);  // freed in stream order
  memcpy_async(staging.data(), at(first, lo), std::size_t(bytes), stream);
  cast_strided(src.shape(), src.type(), at(staging.data(), -lo), strides, dst.type(), dst.data(), dst.strides(), stream);
}

// Kernel-usable source, pageable host destination; returns when the data is there.
void download(const tensor& src, const tensor& dst, stream_t stream) {
  const auto plan = detail::make_strided_plan(src.shape(), dst.strides(), src.strides());
  if (src.type() == dst.type() && (src.type().is_subbyte() || detail::is_memcpy(plan))) {
    memcpy_async(dst.data(), src.data(), std::size_t(src.nbytes()), stream);
    return synchronize(stream);
  }
  if (is_dense(dst.shape(), dst.strides())) {
    // Build the destination's exact bytes on the device, then move them whole.
    const std::int64_t lo = byte_span(dst.shape(), dst.strides(), dst.type())->lo, bytes = dst.nbytes();
    const std::int64_t extent[] = {bytes};
    const tensor staging = dst.type().is_subbyte() ? empty_device(dst.shape(), dst.type(), stream)
                                                   : empty_device(extent, {kDLUInt, 8}, stream);
    cast_strided(src.shape(), src.type(), src.data(), src.strides(), dst.type(), at(staging.data(), -lo), dst.strides(), stream);
    memcpy_async(at(dst.data(), lo), staging.data(), std::size_t(bytes), stream);
    return synchronize(stream);
  }
  // Gaps or repeats in the destination: bring a C-contiguous copy over and
  // let the CPU engine scatter it.
  const tensor staging = empty_device(src.shape(), dst.type(), stream);
  cast_strided(src.shape(), src.type(), src.data(), src.strides(), dst.type(), staging.data(), staging.strides(), stream);
  const tensor host = tensor::empty(src.shape(), dst.type());
  memcpy_async(host.data(), staging.data(), std::size_t(host.nbytes()), stream);
  synchronize(stream);
  dlb::copy_strided(host.shape(), host.type(), host.data(), host.strides(), dst.data(), dst.strides());
}

// Writes the `bytes` bytes of `pattern` to every element of the plan: one
// cudaMemsetAsync where they are one run of a repeated byte, else the fill kernel.
void fill_bytes(const detail::strided_plan& plan, const unsigned char* pattern, std::size_t bytes, void* dst,
                stream_t stream) {
  const bool one_run = plan.ndim == 0 || (plan.ndim == 1 && plan.dst[0] == 1);
  if (one_run && std::all_of(pattern, pattern + bytes, [&](unsigned char b) { return b == pattern[0]; })) {
    const std::size_t total = std::size_t(plan.count) * bytes;
    return throw_on_error(cudaMemsetAsync(dst, pattern[0], total, stream), "cudaMemsetAsync(" + std::to_string(total) + " bytes)");
  }
  detail::launch_fill(plan, bytes, pattern, dst, stream);
}

// dlb::fill of `count` packed elements on the GPU: the repeated period as
// an element of its own, then the tail (detail::make_packed_fill).
void fill_packed(dtype type, void* dst, std::int64_t count, const scalar& value, stream_t stream) {
  const detail::packed_fill f = detail::make_packed_fill(type, count, value);
  if (f.periods > 0) {
    const std::int64_t extent[] = {f.periods}, unit[] = {1};
    fill_bytes(detail::make_strided_plan(extent, unit, {}), f.period, f.period_bytes, dst, stream);
  }
  if (f.tail_bytes > 0) {
    const std::int64_t one[] = {1};
    fill_bytes(detail::make_strided_plan(one, one, {}), f.tail, f.tail_bytes,
               at(dst, f.periods * std::int64_t(f.period_bytes)), stream);
  }
}

}  // namespace

void memcpy_async(void* dst, const void* src, std::size_t bytes, stream_t stream) {
  require_device();
  if (bytes == 0) return;
  throw_on_error(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream),
                 "cudaMemcpyAsync(" + std::to_string(bytes) + " bytes)");
}

void copy_strided(extents_t shape, dtype type, const void* src, extents_t src_strides, void* dst,
                  extents_t dst_strides, stream_t stream) {
  require_device();
  require_supported(type);
  const std::int64_t count = require_layout(shape, type, src_strides, dst_strides);
  if (count == 0) return;
  if (type.is_subbyte()) {
    require_packed_contiguous(type, shape, src_strides);
    require_packed_contiguous(type, shape, dst_strides);
    return memcpy_async(dst, src, std::size_t(type.storage_bytes(std::uint64_t(count))), stream);
  }
  const auto plan = detail::make_strided_plan(shape, dst_strides, src_strides);
  if (detail::is_memcpy(plan)) return memcpy_async(dst, src, std::size_t(count) * type.itemsize(), stream);
  detail::launch_copy(plan, type.itemsize(), dst, src, stream);
}

void cast_strided(extents_t shape, dtype from, const void* src, extents_t src_strides, dtype to, void* dst,
                  extents_t dst_strides, stream_t stream) {
  if (from == to) return copy_strided(shape, from, src, src_strides, dst, dst_strides, stream);
  require_device();
  require_supported(from);
  require_supported(to);
  require_shape(shape, to);
  const std::int64_t count = require_layout(shape, from, src_strides, dst_strides);
  if (count == 0) return;
  require_packed_contiguous(from, shape, src_strides);
  require_packed_contiguous(to, shape, dst_strides);
  detail::launch_cast(detail::make_strided_plan(shape, dst_strides, src_strides), from, to, dst, src, stream);
}

void fill(extents_t shape, dtype type, void* dst, extents_t dst_strides, const scalar& value, stream_t stream) {
  require_device();
  require_supported(type);
  const std::int64_t count = require_layout(shape, type, dst_strides, dst_strides);
  if (count == 0) return;
  if (type.is_subbyte()) {
    require_packed_contiguous(type, shape, dst_strides);
    return fill_packed(type, dst, count, value, stream);
  }
  alignas(16) unsigned char pattern[16] = {};
  store(type, pattern, value);
  fill_bytes(detail::make_strided_plan(shape, dst_strides, {}), pattern, type.itemsize(), dst, stream);
}

void copy(const tensor& src, const tensor& dst, stream_t stream) {
  require_device();
  if (!std::equal(src.shape().begin(), src.shape().end(), dst.shape().begin(), dst.shape().end()))
    throw std::invalid_argument("copy: shapes differ: " + describe(src.shape()) + " and " + describe(dst.shape()));
  if (dst.readonly()) throw std::invalid_argument("copy: the destination is read-only");
  require_supported(src.type());
  require_supported(dst.type());
  const memory_kind from = kind_of(src, "source"), to = kind_of(dst, "destination");
  if (src.size() == 0) return;
  if (from == memory_kind::pageable && to == memory_kind::pageable) {
    return dlb::cast_strided(src.shape(), src.type(), src.data(), src.strides(), dst.type(), dst.data(),
                             dst.strides());
  }
  const bool src_cuda = src.device().type == kDLCUDA, dst_cuda = dst.device().type == kDLCUDA;
  if (src_cuda && dst_cuda && src.device().id != dst.device().id) {
    const auto plan = detail::make_strided_plan(src.shape(), dst.strides(), src.strides());
    if (src.type() != dst.type() || !(src.type().is_subbyte() || detail::is_memcpy(plan)))
      throw std::invalid_argument("copy: between CUDA devices " + std::to_string(src.device().id) + " and " +
                                  std::to_string(dst.device().id) +
                                  " the dtypes must match and both sides must be one contiguous run in the same order");
    const device_guard guard(dst.device().id);
    return memcpy_async(dst.data(), src.data(), std::size_t(src.nbytes()), stream);
  }
  const device_guard guard(dst_cuda ? dst.device().id : guard_device(src.device()));
  if (from == memory_kind::pageable) return upload(src, dst, stream);
  if (to == memory_kind::pageable) return download(src, dst, stream);
  cast_strided(src.shape(), src.type(), src.data(), src.strides(), dst.type(), dst.data(), dst.strides(), stream);
}

void fill(const tensor& dst, const scalar& value, stream_t stream) {
  require_device();
  if (dst.readonly()) throw std::invalid_argument("fill: the destination is read-only");
  if (kind_of(dst, "destination") == memory_kind::pageable) {
    require_supported(dst.type());
    if (dst.type().is_subbyte()) {
      require_packed_contiguous(dst.type(), dst.shape(), dst.strides());
      return dlb::fill(dst.type(), dst.data(), dst.size(), value);
    }
    alignas(16) unsigned char pattern[16] = {};
    store(dst.type(), pattern, value);
    const std::array<std::int64_t, max_ndim> zeros{};
    dlb::copy_strided(dst.shape(), dst.type(), pattern, {zeros.data(), dst.shape().size()}, dst.data(), dst.strides());
    return;
  }
  const device_guard guard(guard_device(dst.device()));
  fill(dst.shape(), dst.type(), dst.data(), dst.strides(), value, stream);
}

tensor to_device(const tensor& src, stream_t stream, std::optional<dtype> type) {
  tensor out = empty_device(src.shape(), type.value_or(src.type()), stream);
  copy(src, out, stream);
  return out;
}

tensor to_host(const tensor& src, stream_t stream, std::optional<dtype> type) {
  require_device();
  tensor out = tensor::empty(src.shape(), type.value_or(src.type()));
  copy(src, out, stream);
  return out;
}

}  // namespace dlb::cuda_runtime
