// Helpers shared by the ABI tests: each compiles dlbridge's declarations
// (namespace dlb) next to one upstream dlpack.h (global namespace) and compares
// them. Include this after the upstream header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

// Same size and alignment.
#define DLB_SAME_SHAPE(T)                                      \
  static_assert(sizeof(::T) == sizeof(dlb::T), #T ": size");   \
  static_assert(alignof(::T) == alignof(dlb::T), #T ": alignment")

// Same offset and size of one field.
#define DLB_SAME_FIELD(T, f)                                                              \
  static_assert(offsetof(::T, f) == offsetof(dlb::T, f), #T "::" #f ": offset");         \
  static_assert(sizeof(::T::f) == sizeof(dlb::T::f), #T "::" #f ": size")

// Same enumerator value. Enumerators of two enum types are compared as
// integers (comparing the enums directly is deprecated in C++20).
#define DLB_SAME_VALUE(name) \
  static_assert(static_cast<long long>(::name) == static_cast<long long>(dlb::name), #name ": value")

namespace abi_check {

// Both types are standard layout, so offsetof is well defined on them.
template <class A, class B>
inline constexpr bool both_standard_layout = std::is_standard_layout_v<A> && std::is_standard_layout_v<B>;

}  // namespace abi_check
