// The one check every foreign tensor passes before dlbridge reads it, whatever
// the route it came by (capsule, exchange API, array interfaces, buffer).
#pragma once

#include <algorithm>
#include <concepts>
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
    if (t.ndim > 0 && shape[last] > 1 && strides[last] != 1)
      return import_error{"strides", last, "stride 1 on the last axis of float4 pairs (float4_e2m1fn_x2, lanes 2)",
                          "stride " + std::to_string(strides[last])};
    if (!is_c_contiguous(shape, strides)) return packed_not_contiguous();
  }
  // Doubling the last extent doubles the bytes' stride volume (which fits),
  // unless that extent is 0; it bounds the element count and every stride.
  const std::int64_t growth = t.ndim > 0 && shape[last] == 0 ? 1 : 2;
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
        return import_error{"shape", error->axis, "extent >= 0", "extent " + to_string(shape[error->axis])};
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

// -- What a consumer demands ---------------------------------------------------

// A wildcard extent (in requirements and in dlb::shape<...>).
inline constexpr std::int64_t any_extent = -1;

enum class memory_order : std::uint8_t { none, c, f, any };

// What a consumer demands of a tensor; dlb::view derives it from its type.
struct requirements {
  dtype type;
  std::int32_t ndim = -1;  // -1: any number of axes
  extents_t shape{};       // one extent or dlb::any_extent per axis; empty: no demand
  memory_order order = memory_order::none;
  bool has_device = false;
  DLDeviceType device_type = kDLCPU;
  bool writable = false;
};

namespace detail {
// The demand of a view that a tensor fails (first_unmet_demand), and on
// which axis.
enum class demand : std::uint8_t { device, dtype, ndim, extent, order, writable };
struct unmet_demand {
  demand what;
  std::int32_t axis = -1;  // the extent's axis; -1 for the other demands
};

// The strides of `t`; NULL ones (C order) written out into `c_order`, of
// max_ndim elements.
[[nodiscard]] inline extents_t strides_or_c_order(const DLTensor& t, std::span<std::int64_t> c_order) {
  if (t.strides) return {t.strides, std::size_t(t.ndim)};
  c_strides({t.shape, std::size_t(t.ndim)}, c_order.first(std::size_t(t.ndim)));
  return c_order.first(std::size_t(t.ndim));
}

// Each demand of `r` in turn, of a tensor that has passed validate() (its
// own arrays and imports, which dlbridge validated once): the first one the
// tensor fails. No strings are made here: every argument and view passes
// through it, and kept small it is inlined where a view's requirements are
// constants, which then fold away (check_demands words the failure).
[[nodiscard]] inline std::optional<unmet_demand> first_unmet_demand(const DLTensor& t, bool readonly,
                                                                    const requirements& r) {
  if (r.has_device && t.device.device_type != r.device_type) return unmet_demand{demand::device};
  if (dtype(t.dtype) != r.type) return unmet_demand{demand::dtype};
  if (r.ndim >= 0 && t.ndim != r.ndim) return unmet_demand{demand::ndim};
  for (std::size_t i = 0; i < r.shape.size() && i < std::size_t(t.ndim); ++i)
    if (r.shape[i] != any_extent && t.shape[i] != r.shape[i]) return unmet_demand{demand::extent, std::int32_t(i)};
  if (r.order != memory_order::none) {
    // NULL strides mean C order: C-contiguous, and Fortran-contiguous only
    // when at most one axis has an extent above 1.
    std::int64_t c_order[max_ndim];
    const extents_t shape(t.shape, std::size_t(t.ndim)), strides = strides_or_c_order(t, c_order);
    const bool ok = r.order == memory_order::c   ? is_c_contiguous(shape, strides)
                    : r.order == memory_order::f ? is_f_contiguous(shape, strides)
                                                 : is_c_contiguous(shape, strides) || is_f_contiguous(shape, strides);
    if (!ok) return unmet_demand{demand::order};
  }
  if (r.writable && readonly) return unmet_demand{demand::writable};
  return std::nullopt;
}

// The words of an unmet demand: the constraint, the axis, what was expected
// and what was received ("shape: axis 1: expected extent 3, got 4"). Out of
// line, so that check_demands stays small enough to inline.
[[nodiscard, gnu::cold, gnu::noinline]] inline import_error demand_error(const DLTensor& t, const requirements& r,
                                                                         unmet_demand unmet) {
  using std::to_string;
  switch (unmet.what) {
    case demand::device:
      return {"device", -1, "device " + std::string(name(r.device_type)), std::string(name(t.device.device_type))};
    case demand::dtype:
      return {"dtype", -1, std::string(name(r.type)), dtype_words(t.dtype)};
    case demand::ndim:
      return {"ndim", -1, "ndim " + to_string(r.ndim), to_string(t.ndim)};
    case demand::extent: {
      const auto i = std::size_t(unmet.axis);
      return {"shape", unmet.axis, "extent " + to_string(r.shape[i]), to_string(t.shape[i])};
    }
    case demand::order: {
      std::int64_t c_order[max_ndim];
      const char* wanted = r.order == memory_order::c   ? "C-contiguous strides"
                           : r.order == memory_order::f ? "Fortran-contiguous strides"
                                                        : "contiguous strides";
      return {"strides", -1, wanted, "strides " + describe(strides_or_c_order(t, c_order))};
    }
    case demand::writable:
      break;
  }
  return {"flags", -1, "writable data", "read-only data"};
}
}  // namespace detail

// first_unmet_demand, worded: the first failure, naming the constraint, the
// axis, what was expected and what was received.
[[nodiscard]] inline std::optional<import_error> check_demands(const DLTensor& t, bool readonly,
                                                               const requirements& r) {
  if (const auto unmet = detail::first_unmet_demand(t, readonly, r)) [[unlikely]]
    return detail::demand_error(t, r, *unmet);
  return std::nullopt;
}

namespace detail {
// describe's words go to a sink, anything with put(std::string_view): a
// std::string at run time, a fixed buffer at compile time (the signatures of
// dlbridge/bindings.hpp), so that the words have one home.
struct string_sink {
  std::string text;
  void put(std::string_view s) { text += s; }
};

template <class Out>
constexpr void put_decimal(Out& out, std::int64_t n) {  // n >= 0
  char digits[20]{};
  std::size_t first = sizeof digits;
  do {
    digits[--first] = char('0' + n % 10);
    n /= 10;
  } while (n > 0);
  out.put({digits + first, sizeof digits - first});
}

template <class Out>
constexpr void put_dtype(Out& out, dtype t) {
  // The table directly: name(dtype)'s null-pointer test is not a constant
  // expression to GCC under -fsanitize=undefined.
  for (const auto& info : dtype_table)
    if (info.type == t) out.put(info.name);
}

// Every demand of `r` but its dtype.
template <class Out>
constexpr void put_demands_after_dtype(Out& out, const requirements& r) {
  if (r.ndim < 0) {
    out.put("[...]");
  } else {
    out.put("[");
    for (std::int32_t i = 0; i < r.ndim; ++i) {
      if (i) out.put(", ");
      if (std::size_t(i) < r.shape.size() && r.shape[std::size_t(i)] != any_extent)
        put_decimal(out, r.shape[std::size_t(i)]);
      else
        out.put("*");
    }
    out.put("]");
  }
  switch (r.order) {
    case memory_order::none: break;
    case memory_order::c: out.put(" C-contiguous"); break;
    case memory_order::f: out.put(" Fortran-contiguous"); break;
    case memory_order::any: out.put(" contiguous"); break;
  }
  if (r.has_device) {
    out.put(" ");
    out.put(name(r.device_type));
  }
  out.put(r.writable ? " writable" : " read-only");
}
}  // namespace detail

// describe(all...) written to `out` (anything with put(std::string_view)),
// at compile time too.
template <class Out>
constexpr void write_description(Out& out, std::span<const requirements> all) {
  const requirements& first = all.front();
  const auto same_but_dtype = [&first](const requirements& r) {
    return r.ndim == first.ndim && std::ranges::equal(r.shape, first.shape) && r.order == first.order &&
           r.has_device == first.has_device && (!first.has_device || r.device_type == first.device_type) &&
           r.writable == first.writable;
  };
  if (std::ranges::all_of(all, same_but_dtype)) {
    if (all.size() > 1) out.put("(");
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i) out.put(" | ");
      detail::put_dtype(out, all[i].type);
    }
    if (all.size() > 1) out.put(")");
    detail::put_demands_after_dtype(out, first);
    return;
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i) out.put(" | ");
    detail::put_dtype(out, all[i].type);
    detail::put_demands_after_dtype(out, all[i]);
  }
}

// A readable rendering of what `r` demands, for signatures and docstrings:
// "float32[*, 3] C-contiguous cpu read-only". Each part names one field of
// requirements; a field that demands nothing is left out (no device, any
// memory order), except access, which always says read-only or writable.
[[nodiscard]] inline std::string describe(const requirements& r) {
  detail::string_sink out;
  write_description(out, {&r, 1});
  return std::move(out.text);
}

// Several demands, as a multi-dtype argument tries them: where they differ in
// the dtype alone, the dtypes are grouped before the shared rest,
// "(float32 | float64)[*, *] C-contiguous cpu read-only"; otherwise each
// demand in full, joined by " | ".
template <std::same_as<requirements>... Rest>
[[nodiscard]] std::string describe(const requirements& first, const requirements& second, const Rest&... rest) {
  const requirements all[] = {first, second, rest...};
  detail::string_sink out;
  write_description(out, all);
  return std::move(out.text);
}

// The one check at every boundary: validate(t), then check_demands.
[[nodiscard]] inline std::optional<import_error> check(const DLTensor& t, bool readonly, const requirements& r) {
  if (auto error = validate(t)) return error;
  return check_demands(t, readonly, r);
}

}  // namespace dlb
