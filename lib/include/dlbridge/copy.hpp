// The CPU strided copy and cast engine: any source strides (negative and zero
// included) to any destination layout, on host-accessible memory.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "dlbridge/element.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/tensor.hpp"

namespace dlb {

namespace detail {
// Calls row(dst_offset, src_offset, length, dst_step, src_step) for each
// innermost run of the coalesced iteration space; offsets and steps are in
// elements. Axes are walked in the destination's memory order.
template <class Row>
void for_each_row(extents_t shape, extents_t dst_strides, extents_t src_strides, Row&& row) {
  std::array<std::int64_t, max_ndim> extent{}, dst{}, src{}, index{};
  const auto ndim = std::int32_t(shape.size());
  std::copy(shape.begin(), shape.end(), extent.begin());
  std::copy(dst_strides.begin(), dst_strides.end(), dst.begin());
  std::copy(src_strides.begin(), src_strides.end(), src.begin());
  const std::int32_t n = coalesce<2>(ndim, extent.data(), {dst.data(), src.data()});
  if (n == 0) return row(0, 0, 1, 1, 1);
  const std::int32_t inner = n - 1;
  std::int64_t dst_offset = 0, src_offset = 0;
  for (;;) {
    row(dst_offset, src_offset, extent[inner], dst[inner], src[inner]);
    std::int32_t axis = inner - 1;
    for (; axis >= 0; --axis) {
      dst_offset += dst[axis];
      src_offset += src[axis];
      if (++index[axis] < extent[axis]) break;
      dst_offset -= dst[axis] * extent[axis];
      src_offset -= src[axis] * extent[axis];
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}

template <class T>
void copy_row(std::byte* dst, const std::byte* src, std::int64_t length, std::int64_t dst_step,
              std::int64_t src_step) {
  for (std::int64_t i = 0; i < length; ++i)
    std::memcpy(dst + i * dst_step * std::int64_t(sizeof(T)), src + i * src_step * std::int64_t(sizeof(T)),
                sizeof(T));
}
}  // namespace detail

// Copies the elements of `shape` from src to dst, which must not overlap.
// Packed sub-byte dtypes must be C-contiguous on both sides.
inline void copy_strided(extents_t shape, dtype type, const void* src, extents_t src_strides, void* dst,
                         extents_t dst_strides) {
  const auto count = element_count(shape);
  if (!count || *count == 0) return;
  if (type.is_subbyte()) {
    std::memcpy(dst, src, type.storage_bytes(std::uint64_t(*count)));
    return;
  }
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  const auto itemsize = std::int64_t(type.itemsize());
  detail::for_each_row(shape, dst_strides, src_strides,
                       [&](std::int64_t dst_offset, std::int64_t src_offset, std::int64_t length,
                           std::int64_t dst_step, std::int64_t src_step) {
                         std::byte* out = d + dst_offset * itemsize;
                         const std::byte* in = s + src_offset * itemsize;
                         if (dst_step == 1 && src_step == 1)
                           return void(std::memcpy(out, in, std::size_t(length * itemsize)));
                         switch (itemsize) {
                           case 1: return detail::copy_row<std::uint8_t>(out, in, length, dst_step, src_step);
                           case 2: return detail::copy_row<std::uint16_t>(out, in, length, dst_step, src_step);
                           case 4: return detail::copy_row<std::uint32_t>(out, in, length, dst_step, src_step);
                           case 8: return detail::copy_row<std::uint64_t>(out, in, length, dst_step, src_step);
                           default: return detail::copy_row<std::array<std::uint64_t, 2>>(out, in, length, dst_step, src_step);
                         }
                       });
}

// Converts the elements of `shape` from one dtype to another (see store() for
// the rounding and overflow rules).
inline void cast_strided(extents_t shape, dtype from, const void* src, extents_t src_strides, dtype to,
                         void* dst, extents_t dst_strides) {
  const auto count = element_count(shape);
  if (!count || *count == 0) return;
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  // Packed sub-byte operands are contiguous: address them by element index.
  auto address = [](auto* base, dtype t, std::int64_t offset) {
    return t.is_subbyte() ? base : base + offset * std::int64_t(t.itemsize());
  };
  auto index = [](dtype t, std::int64_t offset) { return t.is_subbyte() ? offset : 0; };
  detail::for_each_row(shape, dst_strides, src_strides,
                       [&](std::int64_t dst_offset, std::int64_t src_offset, std::int64_t length,
                           std::int64_t dst_step, std::int64_t src_step) {
                         for (std::int64_t i = 0; i < length; ++i) {
                           const std::int64_t so = src_offset + i * src_step, dof = dst_offset + i * dst_step;
                           store(to, address(d, to, dof), load(from, address(s, from, so), index(from, so)),
                                 index(to, dof));
                         }
                       });
}

// A new C-contiguous host tensor holding src's values converted to `to`.
// Throws std::invalid_argument when src is not host-accessible.
[[nodiscard]] inline tensor astype(const tensor& src, dtype to) {
  if (!src.device().is_host_accessible())
    throw std::invalid_argument("copying on the CPU needs host-accessible memory");
  tensor out = tensor::empty(src.shape(), to);
  if (to == src.type())
    copy_strided(src.shape(), to, src.data(), src.strides(), out.data(), out.strides());
  else
    cast_strided(src.shape(), src.type(), src.data(), src.strides(), to, out.data(), out.strides());
  return out;
}

// A new C-contiguous, writable host copy of src.
[[nodiscard]] inline tensor copy(const tensor& src) { return astype(src, src.type()); }

}  // namespace dlb
