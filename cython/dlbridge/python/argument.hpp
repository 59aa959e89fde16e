// Any framework's array as a checked dlb::view, for the length of a call:
//
//   dlb::python::array_argument<rows_view> rows(object, "row_sums", "x");
//   rows.view()  // a rows_view of the object's memory, no copy
//
// or as one of several views, picked by the array's dtype (their element
// types differ):
//
//   dlb::python::array_argument<image32, image64> image(object, "mean", "image");
//   image.visit([](const auto& v) { ... });  // v is the image32 or the image64
//   return dlb::python::to_python(image.visit_new([](const auto& in, const auto& out) { ... }));
//
// The conversion creates no Python object for dlbridge arrays, NumPy
// ndarrays and PyTorch tensors (through its DLPack C exchange table), and
// validates each tensor once. A valid array that does not fit the view is
// TypeError naming the function and the argument; a tensor DLPack cannot
// describe is BufferError, as in from_dlpack. Create and destroy arguments
// with the GIL held; the view may be used without it while the argument lives.
// With dlb::python::copy_if_needed (read-only views), an input of another
// dtype or memory order, or no array at all, is copied into one that fits.
//
// NULL, wherever a pointer is taken here: a NULL function or argument name is
// left out of the messages ("argument 'x': ...", "row_sums(): argument: ...",
// as CPython words an argument it cannot name); a NULL object is an error,
// the Python exception already set (as when the object came from a call that
// failed) or else ValueError; a NULL `out` of argument_api::borrow is ValueError.
#pragma once

#include <Python.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "dlbridge/python/argument_api.hpp"
#include "dlbridge/python/core.hpp"
#include "dlbridge/python/returns.hpp"
#include "dlbridge/tensor.hpp"
#include "dlbridge/demands.hpp"
#include "dlbridge/describe.hpp"
#include "dlbridge/validate.hpp"

namespace dlb::python {

// How an argument's errors begin: "row_sums(): argument 'x'". A NULL
// function is left out and a NULL name leaves "argument", as CPython words
// the arguments of a function it cannot name.
[[nodiscard]] inline std::string argument_label(const char* function, const char* name) {
  std::string label = function ? std::string(function) + "(): argument" : std::string("argument");
  if (name) label += std::string(" '") + name + "'";
  return label;
}

// An argument's error: "row_sums(): argument 'x': axis 1: expected ..., got ...".
[[nodiscard]] inline std::string mismatch_message(const import_error& error, const char* function,
                                                  const char* name) {
  return argument_label(function, name) + ": " + error.mismatch();
}

// The error of a tensor whose dtype is none of `expected` ("expected float32
// or float64, got int32"), and its argument's message.
[[nodiscard]] inline import_error dtype_mismatch(std::span<const dtype> expected, dtype received) {
  return {"dtype", -1, dtype_choices(expected), std::string(dlb::name(received))};
}
[[nodiscard]] inline std::string dtype_mismatch_message(std::span<const dtype> expected, dtype received,
                                                        const char* function, const char* name) {
  return mismatch_message(dtype_mismatch(expected, received), function, name);
}

// The TypeError of an argument whose tensor does not fit the views. Out of
// line, as the two below, so that the converter's success path stays small
// enough to inline.
[[noreturn, gnu::noinline]] inline void throw_mismatch(const import_error& error, const char* function,
                                                       const char* name) {
  throw argument_mismatch(mismatch_message(error, function, name));
}

// import_failure for a tensor whose dtype is none of `expected`.
[[noreturn, gnu::noinline]] inline void throw_dtype_failure(std::span<const dtype> expected, dtype received) {
  throw import_failure(dtype_mismatch(expected, received));
}

// array_argument::get's error (out of line: every caller of get inlines it).
[[noreturn, gnu::noinline]] inline void throw_not_held(dtype held, dtype asked) {
  throw std::logic_error("array_argument::get<V>: the argument holds the " + std::string(dlb::name(held)) +
                         " view, not V's " + std::string(dlb::name(asked)));
}

namespace detail {
// `value`, stored in 16-byte pieces. The argument's view leaves its
// out-of-line calls through memory, and the caller's copies (Cython moves a
// temporary into its local) read it back 16 bytes at a time. Stored member
// by member (a pointer, then the extents, ...), each of those reads would
// straddle two stores, which the processor does not forward from its store
// buffer: the read would wait for both to reach the cache.
template <class T>
[[nodiscard]] T in_16_byte_pieces(const T& value) noexcept {
  static_assert(std::is_trivially_copyable_v<T>);
#if defined(__GNUC__)  // (and Clang: vector types)
  if constexpr (sizeof(T) >= 16) {
    using piece = long long __attribute__((vector_size(16)));
    long long words[sizeof(T) / 16 * 2];
    std::memcpy(words, &value, sizeof words);
    T stored = value;  // (the bytes after the last piece, a variant's index)
    for (std::size_t k = 0; k < std::size(words); k += 2) {
      const piece p{words[k], words[k + 1]};
      std::memcpy(reinterpret_cast<unsigned char*>(&stored) + 8 * k, &p, sizeof p);
    }
    return stored;
  }
#endif
  return value;
}
}  // namespace detail

// The tag of array_argument's converting constructor.
struct copy_if_needed_t {
  explicit constexpr copy_if_needed_t() = default;
};
inline constexpr copy_if_needed_t copy_if_needed{};

// An array argument seen through one of the view types Views (dlb::views
// with distinct element types): the one whose dtype is the array's.
template <class... Views>
class array_argument {
  static constexpr std::size_t count = sizeof...(Views);
  static_assert(count >= 1, "dlb::python::array_argument<Views...>: give at least one view type");
  static constexpr std::array<dlb::dtype, count> dtypes{Views::dtype...};
  static_assert(
      [] {
        for (std::size_t i = 0; i < count; ++i)
          for (std::size_t j = 0; j < i; ++j)
            if (dtypes[i] == dtypes[j]) return false;
        return true;
      }(),
      "dlb::python::array_argument<Views...>: the views' element types must differ (the array's dtype picks the view)");
  using first = std::tuple_element_t<0, std::tuple<Views...>>;
  // One view is kept as itself: the single-dtype argument pays for no index.
  using storage = std::conditional_t<count == 1, first, std::variant<Views...>>;

  template <class V>
  static constexpr std::size_t index_of = [] {
    std::size_t i = 0;
    (void)((std::is_same_v<V, Views> ? false : (++i, true)) && ...);
    return i;
  }();

 public:
  array_argument() = default;

  // `function` and `name` word the TypeError ("row_sums(): argument 'x': ...").
  array_argument(PyObject* object, const char* function, const char* name)
      : object_(object), view_(borrow(function, name)) {}

  // The same, but an input that does not fit is copied into a fresh
  // C-contiguous array that does (Fortran-contiguous for a dlb::f_contig
  // view), which the argument keeps: one of another memory order, of a dtype
  // that converts to a view's without loss (dlb::can_cast_safely; the first
  // such view in order), or no array at all (a list, as asarray reads it).
  // Never to another device; another loss of precision is TypeError.
  array_argument(PyObject* object, const char* function, const char* name, copy_if_needed_t)
      : object_(object), view_(convert(function, name)) {
    static_assert((Views::readonly && ...),
                  "dlb::python::copy_if_needed: the views must be read-only (dlb::ro or a const element type): "
                  "a kernel's writes to a copy would never reach the caller's array");
  }

  array_argument(const array_argument&) = delete;
  array_argument& operator=(const array_argument&) = delete;
  array_argument(array_argument&& other) noexcept
      : object_(other.object_), owner_(std::exchange(other.owner_, nullptr)), view_(other.view_) {}
  array_argument& operator=(array_argument&& other) noexcept {
    object_ = other.object_;
    std::swap(owner_, other.owner_);
    view_ = other.view_;
    return *this;
  }
  ~array_argument() { Py_XDECREF(owner_); }

  // The view, where there is one view type.
  [[nodiscard]] const first& view() const noexcept
    requires(count == 1)
  {
    return view_;
  }

  // Which of Views the array's dtype picked (0 for the first).
  [[nodiscard]] std::size_t index() const noexcept {
    if constexpr (count == 1) return 0;
    else return view_.index();
  }

  template <class V>
  [[nodiscard]] bool holds() const noexcept {
    static_assert(index_of<V> < count, "dlb::python::array_argument::holds<V>: V is none of the argument's views");
    return index() == index_of<V>;
  }

  // The view as V; std::logic_error (RuntimeError in Python) unless holds<V>().
  template <class V>
  [[nodiscard]] const V& get() const {
    static_assert(index_of<V> < count, "dlb::python::array_argument::get<V>: V is none of the argument's views");
    if constexpr (count == 1) {
      return view_;
    } else {
      if (const V* v = std::get_if<V>(&view_)) return *v;
      throw_not_held(dtype(), V::dtype);
    }
  }

  // f(view) with the view the argument holds, whichever of Views it is.
  template <class F>
  decltype(auto) visit(F&& f) const {
    if constexpr (count == 1) return std::forward<F>(f)(view_);
    else return std::visit(std::forward<F>(f), view_);
  }

  // f(in, out) with the view held and a new array of its shape, dtype and
  // device (zero bits, C-contiguous, seen through output_view<In>: writable),
  // returned in the currency of the argument's object: a `like`, which
  // dlbridge's casters return as such and a plain extension passes to
  // to_python. Call it with the GIL held (the allocation may need it); f may
  // release it.
  template <class F>
  [[nodiscard]] like visit_new(F&& f) const {
    tensor result = visit([&f]<class In>(const In& in) {
      auto [array, out] = new_output<output_view<In>>(in);
      f(in, out);
      return std::move(array);
    });
    return {std::move(result), object_};
  }

  // The dtype of the view held. (Through visit: GCC cannot bound index(), and
  // dtypes[index()] made it warn, -Warray-bounds, in callers built at -O3.)
  [[nodiscard]] dlb::dtype dtype() const noexcept {
    return visit([]<class V>(const V&) { return V::dtype; });
  }

  // What the argument demands, in dlb::describe's words, for signatures:
  // "(float32 | float64)[*, *] C-contiguous cpu read-only".
  [[nodiscard]] static std::string describe() { return dlb::describe(Views::demands()...); }

  // The object the argument was made from, borrowed: the caller's own (not a
  // copy that copy_if_needed made), alive for the call that received it; for
  // to_python_like(result, argument.object()), a result in the caller's
  // currency. NULL for a default-constructed argument.
  [[nodiscard]] PyObject* object() const noexcept { return object_; }

 private:
  // The constructors build the view in place, from what these return; they
  // also set owner_, which is declared before view_.
  storage borrow(const char* function, const char* name) {
    // A NULL object from a call that failed: its exception is set, and no
    // Python code may run (get_argument_api imports) before it is raised.
    if (!object_ && PyErr_Occurred()) throw python_error_already_set{};
    const argument_api& api = get_argument_api();
    if (object_ && Py_TYPE(object_) == api.array_type) {  // (borrow answers a NULL object)
      // The commonest input takes no call: the Array's own tensor, validated
      // when it was made. (An Array holding none goes the long way, to its error.)
      const auto& t = *reinterpret_cast<const tensor*>(reinterpret_cast<const char*>(object_) + api.tensor_offset);
      if (t.has_value()) {
        // (take's catch, without an owner: through take, two to four more
        // instructions a call.)
        try {
          return view_of(t);
        } catch (const import_failure& e) {
          throw_mismatch(e.error(), function, name);
        }
      }
    }
    return borrow_foreign(api, function, name);
  }

  // Any other object. Out of line: a borrowed_array has room for a
  // producer's strides, and in the caller's frame it keeps GCC from inlining
  // a Cython function's body into its Python wrapper. Flattened: the view's
  // checks fold into constants only where inlined, which GCC's growth limits
  // may otherwise refuse.
  [[gnu::noinline, gnu::flatten]] storage borrow_foreign(const argument_api& api, const char* function,
                                                        const char* name) {
    borrowed_array b;
    if (api.borrow(object_, &b, function, name) != 0) throw python_error_already_set{};
    return take(b.tensor, b.readonly, b.owner, function, name);
  }

  // The same for copy_if_needed, which may copy the object.
  [[gnu::noinline, gnu::flatten]] storage convert(const char* function, const char* name) {
    if (!object_ && PyErr_Occurred()) throw python_error_already_set{};
    const argument_api& api = get_argument_api();
    const std::array<requirements, count> demands{Views::demands()...};
    borrowed_array b;
    if (api.convert(object_, &b, demands.data(), count, function, name) != 0) throw python_error_already_set{};
    return take(b.tensor, b.readonly, b.owner, function, name);
  }

  // The view of a validated tensor, keeping the reference `owner` (or
  // nullptr); released when the views' demands are unmet (the constructor
  // fails, and no destructor runs).
  storage take(const DLTensor& tensor, bool readonly, PyObject* owner, const char* function, const char* name) {
    owner_ = owner;
    try {
      return view_of(tensor, readonly);
    } catch (const import_failure& e) {
      Py_XDECREF(owner);
      throw_mismatch(e.error(), function, name);
    }
  }

  // The view of an Array's tensor: one call, as for the other objects, and
  // the DLTensor it describes kept in this frame, not the caller's.
  [[gnu::noinline, gnu::flatten]] static storage view_of(const tensor& t) {
    return view_of(t.dltensor(), t.readonly());
  }

  // The view whose dtype is the tensor's (one view: that view's own error first).
  static storage view_of(const DLTensor& tensor, bool readonly) {
    if constexpr (count == 1) return detail::in_16_byte_pieces(first::from_validated(tensor, readonly));
    else return detail::in_16_byte_pieces(select_from<0>(tensor, readonly));
  }

  template <std::size_t I>
  static storage select_from(const DLTensor& tensor, bool readonly) {
    using V = std::variant_alternative_t<I, storage>;
    if (dlb::dtype(tensor.dtype) == V::dtype)
      return storage(std::in_place_index<I>, V::from_validated(tensor, readonly));
    if constexpr (I + 1 < count) return select_from<I + 1>(tensor, readonly);
    else throw_dtype_failure(dtypes, tensor.dtype);
  }

  PyObject* object_ = nullptr;  // borrowed
  PyObject* owner_ = nullptr;    // (before view_: the constructors set it while making the view)
  storage view_{};
};

namespace detail {
template <class>
inline constexpr bool is_array_argument = false;
template <class... Views>
inline constexpr bool is_array_argument<array_argument<Views...>> = true;
}  // namespace detail

// zeros_like of the view an array argument holds (whichever of its views).
// (One template argument, the argument type, as for views.)
template <class Argument>
  requires detail::is_array_argument<Argument>
[[nodiscard]] tensor zeros_like(const Argument& a) {
  return a.visit([](const auto& v) { return zeros_like(v); });
}

}  // namespace dlb::python
