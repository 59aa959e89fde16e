// What a consumer demands of a tensor (a view's constraints, as
// `requirements`), the first demand a tensor fails, and its words;
// check(), the one check at every boundary: validate(), then the demands.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "dlbridge/device.hpp"
#include "dlbridge/dlpack.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/validate.hpp"

namespace dlb {

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

// import_failure of demand_error: out of line, so that the frame of
// view::from_validated holds no error.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_unmet_demand(const DLTensor& t, const requirements& r,
                                                                    unmet_demand unmet) {
  throw import_failure(demand_error(t, r, unmet));
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

// The one check at every boundary: validate(t), then check_demands.
[[nodiscard]] inline std::optional<import_error> check(const DLTensor& t, bool readonly, const requirements& r) {
  if (auto error = validate(t)) return error;
  return check_demands(t, readonly, r);
}

}  // namespace dlb
