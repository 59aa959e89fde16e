// dlb::view<T, Constraints...>: a non-owning, trivially copyable strided view
// whose type says what it accepts. Constraints are checked once, at the
// boundary (view::from), by dlb::check; inside, the view is a plain value
// usable in host and device code.
#pragma once

#include <array>
#include <cassert>
#include <complex>
#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "dlbridge/config.hpp"
#include "dlbridge/demands.hpp"
#include "dlbridge/describe.hpp"
#include "dlbridge/device.hpp"
#include "dlbridge/dlpack.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/validate.hpp"

#if __has_include(<mdspan>)
#include <mdspan>
#endif

namespace dlb {

// -- The constraint vocabulary ------------------------------------------------

template <std::int64_t... Extents>
struct shape {
  static_assert(((Extents >= 0 || Extents == any_extent) && ...), "dlb::shape: extents must be >= 0 or dlb::any_extent");
  static_assert(sizeof...(Extents) <= std::size_t(max_ndim), "dlb::shape: more than 64 axes");
  static constexpr std::array<std::int64_t, sizeof...(Extents)> extents{Extents...};
};

template <std::int32_t N>
struct ndim {
  static_assert(N >= 0 && N <= max_ndim, "dlb::ndim<N>: N must be in [0, 64]");
  static constexpr std::int32_t value = N;
};

// Memory order.
struct c_contig {};
struct f_contig {};
struct any_contig {};

// Read-only data (the same as a const element type).
struct ro {};

// Where the memory lives. A view of one of these types refuses memory
// anywhere else, and memory it wraps is labelled with this device.
struct cpu { static constexpr DLDeviceType type = kDLCPU; };
struct cuda { static constexpr DLDeviceType type = kDLCUDA; };
struct cuda_host { static constexpr DLDeviceType type = kDLCUDAHost; };
struct cuda_managed { static constexpr DLDeviceType type = kDLCUDAManaged; };

// Element types a view can hold: those with a DLPack dtype (dtype.hpp's list).
template <class T>
concept element = has_dtype<T>;

// -- Reading the constraints -------------------------------------------------

namespace detail {
template <class C> struct is_shape : std::false_type {};
template <std::int64_t... E> struct is_shape<shape<E...>> : std::true_type {};
template <class C> struct is_ndim : std::false_type {};
template <std::int32_t N> struct is_ndim<ndim<N>> : std::true_type {};
template <class C>
inline constexpr bool is_order = std::is_same_v<C, c_contig> || std::is_same_v<C, f_contig> || std::is_same_v<C, any_contig>;
template <class C>
inline constexpr bool is_device = std::is_same_v<C, cpu> || std::is_same_v<C, cuda> || std::is_same_v<C, cuda_host> ||
                                  std::is_same_v<C, cuda_managed>;

template <class T, class... Cs>
struct view_config {
  static_assert(element<T>,
                "dlb::view: the element type must have a DLPack dtype (bool, std::int8_t ... std::int64_t, "
                "std::uint8_t ... std::uint64_t, float, double, std::complex<float>, std::complex<double>), "
                "optionally const");
  static constexpr int shapes = (int(is_shape<Cs>::value) + ... + 0);
  static constexpr int ndims = (int(is_ndim<Cs>::value) + ... + 0);
  static constexpr int orders = (int(is_order<Cs>) + ... + 0);
  static constexpr int devices = (int(is_device<Cs>) + ... + 0);
  static constexpr int ros = (int(std::is_same_v<Cs, ro>) + ... + 0);
  static_assert(((is_shape<Cs>::value || is_ndim<Cs>::value || is_order<Cs> || is_device<Cs> || std::is_same_v<Cs, ro>) && ...),
                "dlb::view: unknown constraint; use dlb::shape<...>, dlb::ndim<N>, dlb::c_contig, dlb::f_contig, "
                "dlb::any_contig, dlb::cpu, dlb::cuda, dlb::cuda_host, dlb::cuda_managed or dlb::ro");
  static_assert(shapes <= 1, "dlb::view: dlb::shape<...> given more than once");
  static_assert(ndims <= 1, "dlb::view: dlb::ndim<N> given more than once");
  static_assert(orders <= 1, "dlb::view: more than one memory order (dlb::c_contig, dlb::f_contig, dlb::any_contig)");
  static_assert(devices <= 1, "dlb::view: more than one device (dlb::cpu, dlb::cuda, dlb::cuda_host, dlb::cuda_managed)");
  static_assert(ros <= 1, "dlb::view: dlb::ro given more than once");
  static_assert(!(ros && std::is_const_v<T>), "dlb::view: a const element type is already read-only; drop dlb::ro");
  static_assert(shapes + ndims > 0, "dlb::view: the number of axes must be known: add dlb::ndim<N> or dlb::shape<...>");

  static constexpr std::int32_t shape_rank = [] {
    std::int32_t r = -1;
    ([&] { if constexpr (is_shape<Cs>::value) r = std::int32_t(Cs::extents.size()); }(), ...);
    return r;
  }();
  static constexpr std::int32_t ndim_rank = [] {
    std::int32_t r = -1;
    ([&] { if constexpr (is_ndim<Cs>::value) r = Cs::value; }(), ...);
    return r;
  }();
  static_assert(shape_rank < 0 || ndim_rank < 0 || shape_rank == ndim_rank,
                "dlb::view: dlb::shape<...> and dlb::ndim<N> disagree on the number of axes");
  // (0 where the rank is unknown or invalid, so that only the static_assert above is reported.)
  static constexpr std::int32_t rank =
      shape_rank >= 0 ? shape_rank : ndim_rank >= 0 && ndim_rank <= max_ndim ? ndim_rank : 0;

  static constexpr std::array<std::int64_t, std::size_t(rank)> extents = [] {
    std::array<std::int64_t, std::size_t(rank)> e{};
    e.fill(any_extent);
    ([&] { if constexpr (is_shape<Cs>::value) for (std::size_t i = 0; i < e.size(); ++i) e[i] = Cs::extents[i]; }(), ...);
    return e;
  }();
  static constexpr memory_order order = [] {
    memory_order o = memory_order::none;
    ([&] {
      if constexpr (std::is_same_v<Cs, c_contig>) o = memory_order::c;
      if constexpr (std::is_same_v<Cs, f_contig>) o = memory_order::f;
      if constexpr (std::is_same_v<Cs, any_contig>) o = memory_order::any;
    }(), ...);
    return o;
  }();
  static constexpr bool has_device = devices == 1;
  static constexpr DLDeviceType device_type = [] {
    DLDeviceType d = kDLCPU;
    ([&] { if constexpr (is_device<Cs>) d = Cs::type; }(), ...);
    return d;
  }();
  static constexpr bool readonly = ros == 1 || std::is_const_v<T>;
};

// The static extents as a pack, readable in device code (a static constexpr
// std::array is not: its operator[] is a host function to nvcc).
template <std::int64_t... E>
struct extent_list {
  DLB_HOST_DEVICE static constexpr std::int64_t at(std::int32_t axis) noexcept {
    std::int64_t r = any_extent;
    std::int32_t k = 0;
    ((r = k++ == axis ? E : r), ...);
    return r;
  }
  // Where the extent of `axis` (one the type leaves open) is stored.
  DLB_HOST_DEVICE static constexpr std::size_t slot(std::int32_t axis) noexcept {
    std::size_t n = 0;
    std::int32_t k = 0;
    ((n += k++ < axis && E == any_extent), ...);
    return n;
  }
};
template <class Config, std::size_t... I>
auto make_extent_list(std::index_sequence<I...>) -> extent_list<Config::extents[I]...>;

// A fixed number of int64 values, readable in device code.
template <std::size_t N>
struct axes {
  std::int64_t v[N];
  DLB_HOST_DEVICE constexpr std::int64_t& operator[](std::size_t i) noexcept { return v[i]; }
  DLB_HOST_DEVICE constexpr const std::int64_t& operator[](std::size_t i) const noexcept { return v[i]; }
  DLB_HOST_DEVICE constexpr std::int64_t* data() noexcept { return v; }
};
template <>
struct axes<0> {
  DLB_HOST_DEVICE constexpr std::int64_t operator[](std::size_t) const noexcept { return 0; }
  DLB_HOST_DEVICE constexpr std::int64_t* data() noexcept { return nullptr; }
};
}  // namespace detail

// -- The view -----------------------------------------------------------------

// The element type is checked by a static_assert (in view_config) rather than
// by the concept, for a readable message.
template <class T, class... Constraints>
class view {
  using config = detail::view_config<T, Constraints...>;
  using extent_list = decltype(detail::make_extent_list<config>(std::make_index_sequence<std::size_t(config::rank)>{}));
  static constexpr std::size_t dynamic_count = [] {
    std::size_t n = 0;
    for (auto e : config::extents) n += e == any_extent;
    return n;
  }();

 public:
  using value_type = std::remove_const_t<T>;
  using element_type = std::conditional_t<config::readonly, const value_type, value_type>;
  using extents_type = std::array<std::int64_t, std::size_t(config::rank)>;

  static constexpr std::int32_t rank = config::rank;
  static constexpr dlb::dtype dtype = dtype_of<value_type>;
  static constexpr bool readonly = config::readonly;
  static constexpr extents_type static_extents = config::extents;
  static constexpr memory_order order = config::order;
  // The device the type demands, if any.
  static constexpr bool has_device = config::has_device;
  static constexpr DLDeviceType device_type = config::device_type;

  // What dlb::check demands of a tensor for it to be seen through this type.
  [[nodiscard]] static constexpr requirements demands() {
    return {dtype, rank, {static_extents.data(), static_extents.size()}, order, has_device, device_type, !readonly};
  }

  constexpr view() = default;

  // Wraps memory by hand: strides default to C order; the device is the
  // type's own when it names one (then `id` picks which one), else the CPU.
  // Extents the type fixes and its memory order are asserted, not checked.
  // (Host code; in device code these need nvcc's --expt-relaxed-constexpr,
  // as std::array is host-only there. Copying and reading a view are not.)
  DLB_HOST_DEVICE constexpr view(element_type* data, const extents_type& shape) : view(data, shape, c_order(shape)) {}
  // (A template, so that a braced third argument is always strides: for a
  // 1-d view, v(p, {n}, {-1}) has stride -1, v(p, {n}, id) device id `id`.)
  template <std::integral Id>
  DLB_HOST_DEVICE constexpr view(element_type* data, const extents_type& shape, Id id)
      : view(data, shape, c_order(shape), std::int32_t(id)) {}
  DLB_HOST_DEVICE constexpr view(element_type* data, const extents_type& shape, const extents_type& strides,
                                 std::int32_t id = 0)
      : data_(data), device_{has_device ? device_type : kDLCPU, id} {
    assert(id >= 0 && "dlb::view: a negative device id");
    if constexpr (rank > 0) {
      for (std::int32_t i = 0; i < rank; ++i) {
        const std::int64_t fixed = extent_list::at(i);
        assert((fixed == any_extent || shape[std::size_t(i)] == fixed) && "dlb::view: an extent differs from the type's");
        strides_[std::size_t(i)] = strides[std::size_t(i)];
        if constexpr (dynamic_count > 0)
          if (fixed == any_extent) dynamic_[extent_list::slot(i)] = shape[std::size_t(i)];
      }
    }
    assert((order != memory_order::c || is_c_contiguous()) && "dlb::view: strides are not C-contiguous");
    assert((order != memory_order::f || is_f_contiguous()) && "dlb::view: strides are not Fortran-contiguous");
    assert((order != memory_order::any || is_c_contiguous() || is_f_contiguous()) &&
           "dlb::view: strides are not contiguous");
  }

  // The checked boundary: a view of `t` if it meets every constraint, else
  // import_failure naming the constraint, the axis, and what was received.
  [[nodiscard]] static view from(const DLTensor& t, bool readonly_data = false) {
    if (auto error = check(t, readonly_data, demands())) throw import_failure(std::move(*error));
    return unchecked(t);
  }

  // The same for a tensor that has passed validate() (dlbridge's own arrays
  // and imports): only the view's demands are checked.
  [[nodiscard]] static view from_validated(const DLTensor& t, bool readonly_data = false) {
    // check_demands, with its words made only on failure: this runs on
    // every argument a view takes.
    if (const auto unmet = detail::first_unmet_demand(t, readonly_data, demands())) [[unlikely]]
      detail::throw_unmet_demand(t, demands(), *unmet);
    return unchecked(t);
  }

  // The same check, without exceptions.
  [[nodiscard]] static std::optional<import_error> check_tensor(const DLTensor& t, bool readonly_data = false) {
    return check(t, readonly_data, demands());
  }

  DLB_HOST_DEVICE constexpr element_type* data() const noexcept { return data_; }
  DLB_HOST_DEVICE constexpr std::int64_t shape(std::int32_t i) const noexcept {
    if constexpr (dynamic_count == 0) {
      return extent_list::at(i);
    } else {
      const std::int64_t fixed = extent_list::at(i);
      return fixed != any_extent ? fixed : dynamic_[extent_list::slot(i)];
    }
  }
  // In elements; may be negative or zero.
  DLB_HOST_DEVICE constexpr std::int64_t stride(std::int32_t i) const noexcept { return strides_[std::size_t(i)]; }
  DLB_HOST_DEVICE constexpr std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (std::int32_t i = 0; i < rank; ++i) n *= shape(i);
    return n;
  }
  DLB_HOST_DEVICE constexpr dlb::device device() const noexcept { return device_; }
  // Contiguity as dlb::is_c_contiguous / is_f_contiguous define it: axes of
  // extent 1 are ignored, and an empty view is contiguous.
  DLB_HOST_DEVICE constexpr bool is_c_contiguous() const noexcept { return is_contiguous(true); }
  DLB_HOST_DEVICE constexpr bool is_f_contiguous() const noexcept { return is_contiguous(false); }

  // v(i, j, ...): the element at that index, one index per axis;
  // bounds-checked when assertions are on.
  template <std::integral... Index>
  DLB_HOST_DEVICE constexpr element_type& operator()(Index... index) const noexcept {
    static_assert(sizeof...(Index) == std::size_t(rank), "dlb::view: v(i, j, ...) takes exactly one index per axis");
    std::int64_t offset = 0;
    std::int32_t axis = 0;
    ((assert(std::int64_t(index) >= 0 && std::int64_t(index) < shape(axis) && "dlb::view: index out of bounds"),
      offset += std::int64_t(index) * stride(axis), ++axis), ...);
    (void)axis;
    return data_[offset];
  }

  // A DLTensor describing this view (non-owning; it points into the view).
  [[nodiscard]] DLTensor dltensor(std::array<std::int64_t, std::size_t(rank)>& shape_out) {
    for (std::int32_t i = 0; i < rank; ++i) shape_out[std::size_t(i)] = shape(i);
    return {const_cast<value_type*>(data_), device_, rank, dtype, rank ? shape_out.data() : nullptr,
            rank ? strides_.data() : nullptr, 0};
  }

#if defined(__cpp_lib_mdspan)
  using mdspan_type = std::mdspan<element_type, std::dextents<std::int64_t, std::size_t(rank)>, std::layout_stride>;

  // A view of a std::mdspan's memory (any strided layout, the default
  // accessor), checked like a DLTensor by dlb::check: import_failure when it
  // does not meet the constraints. The device is the type's, else the CPU.
  template <class U, class Extents, class Layout>
    requires(Extents::rank() == std::size_t(rank) && std::is_convertible_v<U (*)[], element_type (*)[]> &&
             Layout::template mapping<Extents>::is_always_strided())
  explicit view(const std::mdspan<U, Extents, Layout, std::default_accessor<U>>& m, std::int32_t id = 0) {
    extents_type shape{}, strides{};
    if constexpr (rank > 0) {
      for (std::size_t r = 0; r < std::size_t(rank); ++r) {
        shape[r] = std::int64_t(m.extent(r));
        strides[r] = std::int64_t(m.stride(r));
      }
    }
    const DLTensor t{const_cast<value_type*>(m.data_handle()), dlb::device{has_device ? device_type : kDLCPU, id},
                     rank, dtype, rank ? shape.data() : nullptr, rank ? strides.data() : nullptr, 0};
    *this = from(t, std::is_const_v<U>);
  }

  // The same memory as a std::mdspan (layout_stride). std::layout_stride
  // demands positive, non-overlapping strides: other layouts throw
  // std::invalid_argument (extent-1 axes and empty views are always fine).
  [[nodiscard]] mdspan_type to_mdspan() const {
    using extents = std::dextents<std::int64_t, std::size_t(rank)>;
    extents_type e{}, s{};
    for (std::int32_t i = 0; i < rank; ++i) e[std::size_t(i)] = shape(i);
    if (is_empty(e)) {
      s = c_order(e);  // no element is addressed: any valid strides do
    } else {
      for (std::size_t i = 0; i < std::size_t(rank); ++i) {
        s[i] = e[i] == 1 ? 1 : stride(std::int32_t(i));
        if (s[i] <= 0) throw std::invalid_argument("dlb::view::to_mdspan: std::layout_stride needs positive strides");
      }
      if (!is_non_overlapping(e, s))
        throw std::invalid_argument("dlb::view::to_mdspan: std::layout_stride needs non-overlapping strides");
    }
    return mdspan_type(data_, typename mdspan_type::mapping_type(extents(e), s));
  }
#endif

 private:
  DLB_HOST_DEVICE constexpr bool is_contiguous(bool row_major) const noexcept {
    return detail::is_contiguous(
        rank, [this](std::int32_t i) { return shape(i); }, [this](std::int32_t i) { return stride(i); }, row_major);
  }
  static constexpr extents_type c_order(const extents_type& shape) {
    extents_type s{};
    c_strides(shape, s);
    return s;
  }
  [[nodiscard]] static view unchecked(const DLTensor& t) {
    extents_type shape{}, strides{};
    for (std::int32_t i = 0; i < rank; ++i) shape[std::size_t(i)] = t.shape[i];
    if (t.strides)
      for (std::int32_t i = 0; i < rank; ++i) strides[std::size_t(i)] = t.strides[i];
    else
      strides = c_order(shape);
    auto* first = static_cast<element_type*>(t.data ? static_cast<void*>(static_cast<std::byte*>(t.data) + t.byte_offset) : nullptr);
    view v(first, shape, strides, t.device.device_id);
    v.device_ = t.device;
    return v;
  }

  // Storage for the extents the type leaves open; none when all are static.
  struct no_extents {};
  using dynamic_extents = std::conditional_t<dynamic_count == 0, no_extents, detail::axes<dynamic_count>>;

  element_type* data_ = nullptr;
  [[no_unique_address]] dynamic_extents dynamic_{};
  [[no_unique_address]] detail::axes<std::size_t(config::rank)> strides_{};  // empty when 0-d
  dlb::device device_{has_device ? device_type : kDLCPU, 0};
};

// What one or several view types demand, rendered for a signature or a
// docstring: describe<image32, image64>() is describe(image32::demands(),
// image64::demands()), "(float32 | float64)[*, *] C-contiguous cpu read-only".
template <class... Views>
  requires(sizeof...(Views) > 0 && (std::same_as<decltype(Views::demands()), requirements> && ...))
[[nodiscard]] std::string describe() {
  return describe(Views::demands()...);
}

}  // namespace dlb
