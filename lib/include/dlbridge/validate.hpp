// The one check every foreign tensor passes before dlbridge reads it, whatever
// the route it came by (capsule, exchange API, array interfaces, buffer).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "dlbridge/device.hpp"
#include "dlbridge/dlpack.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/shape.hpp"

namespace dlb {

// What was wrong with a foreign tensor: which field (and axis), what was
// expected and what was received.
struct import_error {
  std::string_view field;  // a DLTensor / DLManagedTensorVersioned field name
  std::int32_t axis = -1;  // -1 when the field has no axis
  std::string expected;
  std::string received;

  // "axis 1: expected X, got Y": the one wording of what differs, which
  // message() puts after the field and an argument's errors after its name.
  [[nodiscard]] std::string mismatch() const {
    std::string m = axis >= 0 ? "axis " + std::to_string(axis) + ": " : std::string();
    return m + "expected " + expected + ", got " + received;
  }

  [[nodiscard]] std::string message() const { return std::string(field) + ": " + mismatch(); }
};

// Thrown where a foreign tensor fails validate() or check(); carries the
// structured error.
class import_failure : public std::invalid_argument {
 public:
  explicit import_failure(import_error e)
      : std::invalid_argument("invalid tensor: " + e.message()), error_(std::move(e)) {}
  [[nodiscard]] const import_error& error() const noexcept { return error_; }

 private:
  import_error error_;
};

namespace detail {
inline std::string describe(dtype t) {
  return "(code " + std::to_string(t.code) + ", bits " + std::to_string(t.bits) + ", lanes " +
         std::to_string(t.lanes) + ")";
}

// A dtype as errors name it: its name, or its triple where it has none.
inline std::string dtype_words(dtype t) {
  const std::string_view n = name(t);
  return n.empty() ? describe(t) : std::string(n);
}

inline import_error packed_not_contiguous() {
  return {"strides", -1, "C-contiguous strides for a packed sub-byte dtype", "non-contiguous strides"};
}
}  // namespace detail

// PyTorch's float4_e2m1fn_x2, as torch exports it: (code 17, bits 4, lanes
// 2), each element one byte holding two float4 values, the first in the low
// nibble (torch/headeronly/util/Float4_e2m1fn_x2.h: "val1 : val0" in bits
// "7654 : 3210"), where DLPack's packing rule for (17, 4, 1) puts element 0
// too ("element i at bit i * bits"). validate() accepts it; dlbridge keeps it
// in DLPack's spelling (unpair_float4) and exports only that.
[[nodiscard]] constexpr bool is_float4_pairs(dtype t) { return t == dtype{kDLFloat4_e2m1fn, 4, 2}; }

// Float4 pairs `t` that validate() accepted as DLPack's float4_e2m1fn on the
// same memory: shape S[:-1] + (2 * S[-1],) (a 0-d tensor: (2,)) and C-order
// strides, which are the bytes' strides doubled on every axis of extent > 1
// (the bytes are C-contiguous), the last axis 1. Shape and strides are
// written to `dims`, which must outlive the result.
[[nodiscard]] inline DLTensor unpair_float4(const DLTensor& t, std::span<std::int64_t, 2 * max_ndim> dims) {
  DLTensor out = t;
  out.dtype = {kDLFloat4_e2m1fn, 4, 1};
  out.ndim = std::max(t.ndim, 1);
  const auto ndim = std::size_t(out.ndim);
  dims[0] = 1;
  std::copy_n(t.shape, t.ndim, dims.data());
  dims[ndim - 1] *= 2;
  c_strides({dims.data(), ndim}, {dims.data() + ndim, ndim});
  out.shape = dims.data();
  out.strides = dims.data() + ndim;
  return out;
}

// Checks everything dlbridge relies on before touching a tensor: flags, ndim,
// device, dtype, shape, strides (NULL means C order), and that data +
// byte_offset plus the strided span stays inside the address space. Float4
// pairs (is_float4_pairs) pass where their bytes pass, C-contiguous with
// stride 1 on the last axis, and the C-order strides of unpair_float4()'s
// shape fit in int64; unpair_float4() of them then passes too.
[[nodiscard]] inline std::optional<import_error> validate(const DLTensor& t, std::uint64_t flags = 0);

namespace detail {
// validate() of float4 pairs, whose flags were checked.
[[nodiscard]] inline std::optional<import_error> validate_float4_pairs(const DLTensor& t) {
  // One byte per element: the layout as bytes first, so that errors name
  // the extents and strides the producer gave.
  DLTensor bytes = t;
  bytes.dtype = {kDLUInt, 8, 1};
  if (auto error = validate(bytes)) return error;
  const extents_t shape(t.shape, std::size_t(t.ndim));
  const std::int32_t last = t.ndim - 1;
  if (t.strides && !is_empty(shape)) {
    const extents_t strides(t.strides, std::size_t(t.ndim));
    if (t.ndim > 0 && shape[std::size_t(last)] > 1 && strides[std::size_t(last)] != 1)
      return import_error{"strides", last, "stride 1 on the last axis of float4 pairs (float4_e2m1fn_x2, lanes 2)",
                          "stride " + std::to_string(strides[std::size_t(last)])};
    if (!is_c_contiguous(shape, strides)) return packed_not_contiguous();
  }
  // Doubling the last extent doubles the bytes' stride volume (which fits),
  // unless that extent is 0; it bounds the element count and every stride.
  const std::int64_t growth = t.ndim > 0 && shape[std::size_t(last)] == 0 ? 1 : 2;
  if (*stride_volume(shape) > INT64_MAX / growth)
    return import_error{"shape", -1, "C-order strides that fit in int64 with the last extent doubled (float4 pairs)",
                        "extents " + describe(shape)};
  return std::nullopt;
}
}  // namespace detail

[[nodiscard]] inline std::optional<import_error> validate_version(DLPackVersion v) {
  if (v.major == dlpack_major_version) return std::nullopt;
  return import_error{"version", -1, "DLPack major version " + std::to_string(dlpack_major_version),
                      std::to_string(v.major) + "." + std::to_string(v.minor)};
}

[[nodiscard]] inline std::optional<import_error> validate(const DLTensor& t, std::uint64_t flags) {
  using std::to_string;
  if (flags & ~dlpack_known_flags)
    return import_error{"flags", -1, "only DLPack 1.3 flag bits (mask 0x7)", "flags " + to_string(flags)};
  if (flags & dlpack_flag_is_subbyte_type_padded)
    return import_error{"flags", -1, "packed sub-byte data", "IS_SUBBYTE_TYPE_PADDED"};
  if (t.ndim < 0 || t.ndim > max_ndim)
    return import_error{"ndim", -1, "ndim <= " + to_string(max_ndim), to_string(t.ndim)};
  if (!is_dlpack_device_type(t.device.device_type))
    return import_error{"device", -1, "a DLPack device type",
                        "device type " + to_string(t.device.device_type)};
  if (t.device.device_id < 0)
    return import_error{"device", -1, "device_id >= 0", to_string(t.device.device_id)};
  const dtype type = t.dtype;
  if (!is_dlpack_code(type.code))
    return import_error{"dtype", -1, "a DLPack dtype code (0 to 18)", "dtype code " + to_string(type.code)};
  if (is_float4_pairs(type)) return detail::validate_float4_pairs(t);
  if (type.lanes != 1)
    return import_error{"dtype", -1, "lanes == 1", "lanes " + to_string(type.lanes)};
  if (!is_supported(type))
    return import_error{"dtype", -1, "a supported (code, bits) pair", detail::describe(type)};
  if (t.ndim > 0 && t.shape == nullptr) return import_error{"shape", -1, "a shape array", "NULL"};
  const extents_t shape(t.shape, static_cast<std::size_t>(t.ndim));
  if (const auto error = check_shape(shape, type)) {
    switch (error->defect) {
      case shape_defect::too_many_axes: break;  // ndim was checked above
      case shape_defect::negative_extent:
        return import_error{"shape", error->axis, "extent >= 0",
                            "extent " + to_string(shape[std::size_t(error->axis)])};
      case shape_defect::size_overflow:
        return import_error{"shape", -1, "a byte size that fits in int64", "an overflowing element count"};
      case shape_defect::strides_overflow:
        return import_error{"shape", -1, "C-order strides that fit in int64 (empty axes counted as extent 1)",
                            "extents " + detail::describe(shape)};
    }
  }
  // Checked for empty tensors too, since the tensor still keeps data + byte_offset.
  const auto base = reinterpret_cast<std::uintptr_t>(t.data);
  if (t.byte_offset > UINTPTR_MAX - base)
    return import_error{"byte_offset", -1, "an address inside the address space",
                        "byte_offset " + to_string(t.byte_offset)};
  // An empty tensor: no element is ever read, so data and strides are free.
  if (std::ranges::find(shape, 0) != shape.end()) return std::nullopt;
  if (t.data == nullptr) return import_error{"data", -1, "a pointer for a non-empty tensor", "NULL"};

  std::optional<byte_extent> span;
  if (t.strides == nullptr) {
    span = byte_extent{0, static_cast<std::int64_t>(type.storage_bytes(std::uint64_t(*element_count(shape))))};
  } else {
    const extents_t strides(t.strides, static_cast<std::size_t>(t.ndim));
    if (type.is_subbyte() && !is_c_contiguous(shape, strides)) return detail::packed_not_contiguous();
    span = byte_span(shape, strides, type);
    if (!span) return import_error{"strides", -1, "byte offsets that fit in int64", "an overflowing stride"};
  }
  const std::uintptr_t first = base + t.byte_offset;
  // -lo computed in unsigned arithmetic: lo may be INT64_MIN.
  if (first < std::uintptr_t(0) - std::uintptr_t(span->lo) || UINTPTR_MAX - first < std::uintptr_t(span->hi))
    return import_error{"strides", -1, "a strided span inside the address space",
                        "a span of [" + to_string(span->lo) + ", " + to_string(span->hi) +
                            ") bytes around address " + to_string(first)};
  return std::nullopt;
}

}  // namespace dlb
