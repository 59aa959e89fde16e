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
#include <type_traits>

#include "dlbridge/device.hpp"
#include "dlbridge/dlpack.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/validate.hpp"

#if defined(__CUDACC__)
#define DLB_HOST_DEVICE __host__ __device__
#else
#define DLB_HOST_DEVICE
#endif

#if __has_include(<mdspan>)
#include <mdspan>
#endif

namespace dlb {

// -- The constraint vocabulary ------------------------------------------------

template <std::int64_t... Extents>
struct shape {
  static_assert(((Extents >= 0 || Extents == any) && ...), "dlb::shape: extents must be >= 0 or dlb::any");
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

// Element types a view can hold: those with a DLPack dtype.
template <class T>
concept element = std::same_as<std::remove_const_t<T>, bool> ||
                  std::same_as<std::remove_const_t<T>, std::int8_t> || std::same_as<std::remove_const_t<T>, std::int16_t> ||
                  std::same_as<std::remove_const_t<T>, std::int32_t> || std::same_as<std::remove_const_t<T>, std::int64_t> ||
                  std::same_as<std::remove_const_t<T>, std::uint8_t> || std::same_as<std::remove_const_t<T>, std::uint16_t> ||
                  std::same_as<std::remove_const_t<T>, std::uint32_t> || std::same_as<std::remove_const_t<T>, std::uint64_t> ||
                  std::same_as<std::remove_const_t<T>, float> || std::same_as<std::remove_const_t<T>, double> ||
                  std::same_as<std::remove_const_t<T>, std::complex<float>> ||
                  std::same_as<std::remove_const_t<T>, std::complex<double>>;

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
  static constexpr std::int32_t rank = shape_rank >= 0 ? shape_rank : ndim_rank;

  static constexpr std::array<std::int64_t, std::size_t(rank)> extents = [] {
    std::array<std::int64_t, std::size_t(rank)> e{};
    e.fill(any);
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
}  // namespace detail

// -- The view -----------------------------------------------------------------

template <element T, class... Constraints>
class view {
  using config = detail::view_config<T, Constraints...>;
  static constexpr std::size_t dynamic_count = [] {
    std::size_t n = 0;
    for (auto e : config::extents) n += e == any;
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
  [[nodiscard]] static requirements demands() {
    return {dtype, rank, {static_extents.data(), static_extents.size()}, order, has_device, device_type, !readonly};
  }

  constexpr view() = default;

  // Wraps memory by hand: strides default to C order; the device is the
  // type's own when it names one (then `id` picks which one).
  DLB_HOST_DEVICE constexpr view(element_type* data, const extents_type& shape, std::int32_t id = 0)
      : view(data, shape, c_order(shape), id) {}
  DLB_HOST_DEVICE constexpr view(element_type* data, const extents_type& shape, const extents_type& strides,
                                 std::int32_t id = 0)
      : data_(data), strides_(strides), device_{has_device ? device_type : kDLCPU, id} {
    if constexpr (dynamic_count > 0) {
      for (std::size_t i = 0, slot = 0; i < shape.size(); ++i)
        if (static_extents[i] == any) dynamic_[slot++] = shape[i];
    }
  }

  // The checked boundary: a view of `t` if it meets every constraint, else
  // import_failure naming the constraint, the axis, and what was received.
  [[nodiscard]] static view from(const DLTensor& t, bool readonly_data = false) {
    if (auto error = check(t, readonly_data, demands())) throw import_failure(std::move(*error));
    return unchecked(t);
  }

  // The same check, without exceptions.
  [[nodiscard]] static std::optional<import_error> check_tensor(const DLTensor& t, bool readonly_data = false) {
    return check(t, readonly_data, demands());
  }

  DLB_HOST_DEVICE constexpr element_type* data() const noexcept { return data_; }
  DLB_HOST_DEVICE constexpr std::int64_t shape(std::int32_t i) const noexcept {
    if constexpr (dynamic_count == 0) {
      return static_extents[std::size_t(i)];
    } else {
      return static_extents[std::size_t(i)] != any ? static_extents[std::size_t(i)] : dynamic_[slot_of(i)];
    }
  }
  DLB_HOST_DEVICE constexpr std::int64_t stride(std::int32_t i) const noexcept { return strides_[std::size_t(i)]; }
  DLB_HOST_DEVICE constexpr std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (std::int32_t i = 0; i < rank; ++i) n *= shape(i);
    return n;
  }
  DLB_HOST_DEVICE constexpr dlb::device device() const noexcept { return device_; }
  DLB_HOST_DEVICE constexpr bool is_c_contiguous() const noexcept {
    std::int64_t expected = 1;
    for (std::int32_t i = rank; i-- > 0;) {
      if (shape(i) == 0) return true;
      if (shape(i) != 1 && stride(i) != expected) return false;
      expected *= shape(i);
    }
    return true;
  }

  // v(i, j, ...): the element at that index; bounds-checked when assertions are on.
  template <std::integral... Index>
    requires(sizeof...(Index) == std::size_t(rank))
  DLB_HOST_DEVICE constexpr element_type& operator()(Index... index) const noexcept {
    std::int64_t offset = 0;
    std::int32_t axis = 0;
    ((assert(std::int64_t(index) >= 0 && std::int64_t(index) < shape(axis)),
      offset += std::int64_t(index) * stride(axis), ++axis), ...);
    return data_[offset];
  }

  // A DLTensor describing this view (non-owning; it points into the view).
  [[nodiscard]] DLTensor dltensor(std::array<std::int64_t, std::size_t(rank)>& shape_out) {
    for (std::int32_t i = 0; i < rank; ++i) shape_out[std::size_t(i)] = shape(i);
    return {const_cast<value_type*>(data_), device_, rank, dtype, rank ? shape_out.data() : nullptr,
            rank ? strides_.data() : nullptr, 0};
  }

#if defined(__cpp_lib_mdspan)
  // The same memory as a std::mdspan (layout_stride; negative strides are
  // not representable there, so they are checked).
  [[nodiscard]] std::mdspan<element_type, std::dextents<std::int64_t, std::size_t(rank)>, std::layout_stride>
  to_mdspan() const {
    std::array<std::int64_t, std::size_t(rank)> extents{};
    for (std::int32_t i = 0; i < rank; ++i) {
      extents[std::size_t(i)] = shape(i);
      assert(stride(i) >= 0 && "std::layout_stride cannot hold a negative stride");
    }
    using mapping = std::layout_stride::mapping<std::dextents<std::int64_t, std::size_t(rank)>>;
    return {data_, mapping(std::dextents<std::int64_t, std::size_t(rank)>(extents), strides_)};
  }
#endif

 private:
  static constexpr extents_type c_order(const extents_type& shape) {
    extents_type s{};
    std::int64_t step = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
      s[i] = step;
      step *= shape[i] > 1 ? shape[i] : 1;
    }
    return s;
  }
  static constexpr std::size_t slot_of(std::int32_t axis) {
    std::size_t slot = 0;
    for (std::int32_t i = 0; i < axis; ++i) slot += static_extents[std::size_t(i)] == any;
    return slot;
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
  using dynamic_extents = std::conditional_t<dynamic_count == 0, no_extents, std::array<std::int64_t, dynamic_count>>;

  element_type* data_ = nullptr;
  [[no_unique_address]] dynamic_extents dynamic_{};
  extents_type strides_{};
  dlb::device device_{};
};

}  // namespace dlb
