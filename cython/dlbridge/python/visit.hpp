// One call from an array argument to the kernel of its dtype, for Cython
// (cpp.visit, cpp.visit_new in dlbridge/cpp.pxd), whose kernels are cdef
// functions, one specialization of a fused function per dtype:
//
//   cpp.visit(x, "f", "x", kernel[float], kernel[double], extra, ...)
//   return cpp.visit_new(x, "f", "x", kernel[float], kernel[double], extra, ...)
//
// The kernels are the leading function pointers whose first parameter is a
// dlb::view; their views make the argument (array_argument<first parameters>),
// so the array's dtype picks the kernel; what follows them (and the
// optional copy_if_needed tag before them) is passed to the kernel after its
// views. visit_new's kernels take a second view, the output: a new array of
// the input's shape and device and of that view's dtype (new_output), which
// visit_new returns in the currency of x (to_python_like).
//
// The kernel runs without the GIL: Cython checks that a `nogil` function
// touches no Python object. It returns void, or int with Cython's
// `except -1`: -1 with a Python exception set is raised.
#pragma once

#include <Python.h>

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "dlbridge/describe.hpp"
#include "dlbridge/python/argument.hpp"
#include "dlbridge/python/core.hpp"
#include "dlbridge/python/returns.hpp"

namespace dlb::cython {

namespace detail {

// What a kernel's function pointer type says: whether it is one (a view as its
// first parameter), that view, its second parameter and its result. (Cython
// names a function's type as the template argument: it is used decayed.)
template <class F>
struct kernel_traits {
  static constexpr bool is_kernel = false;
};
template <class R, class In, class... Rest>
struct kernel_traits<R (*)(In, Rest...)> {
  using input = std::remove_cvref_t<In>;
  using output = std::remove_cvref_t<std::tuple_element_t<0, std::tuple<Rest..., void>>>;  // for visit_new
  using result = R;
  static constexpr bool is_kernel = python::detail::is_view<input>;
};
template <class R, class In, class... Rest>
struct kernel_traits<R (*)(In, Rest...) noexcept> : kernel_traits<R (*)(In, Rest...)> {};

// Calls the kernel without the GIL; raises what an `except -1` kernel set.
template <class Kernel, class... Args>
void call_without_gil(Kernel kernel, Args&... args) {
  using result = typename kernel_traits<Kernel>::result;
  static_assert(std::is_void_v<result> || std::is_same_v<result, int>,
                "cpp.visit: a kernel returns void (noexcept) or int (except -1)");
  int status = 0;
  {
    struct gil_released {
      PyThreadState* saved = PyEval_SaveThread();
      ~gil_released() { PyEval_RestoreThread(saved); }
    } released;
    if constexpr (std::is_void_v<result>) kernel(args...);
    else status = kernel(args...);
  }
  if (status == -1) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_SystemError, "a cpp.visit kernel returned -1 without setting a Python exception");
    throw python::python_error_already_set{};
  }
}

// Where the kernels and what follows them are among the arguments after the
// names: copy_if_needed first, if given, then the leading kernels.
template <class... Ts>
struct call_layout {
  static constexpr bool copies = std::is_same_v<std::tuple_element_t<0, std::tuple<Ts..., void>>, python::copy_if_needed_t>;
  static constexpr std::size_t first_kernel = copies ? 1 : 0;
  static constexpr std::size_t kernels = [] {
    constexpr bool is_kernel[] = {kernel_traits<std::decay_t<Ts>>::is_kernel..., false};
    std::size_t n = 0;
    while (is_kernel[first_kernel + n]) ++n;
    return n;
  }();
  static constexpr std::size_t first_extra = first_kernel + kernels;
  static constexpr std::size_t extras = sizeof...(Ts) - first_extra;
};

template <std::size_t First, class Tuple, std::size_t... I>
auto slice(const Tuple& all, std::index_sequence<I...>) {
  return std::make_tuple(std::get<First + I>(all)...);
}

template <class Kernels>
struct argument_of;
template <class... Kernels>
struct argument_of<std::tuple<Kernels...>> {
  using type = python::array_argument<typename kernel_traits<Kernels>::input...>;
};

// run(argument, kernels, extras): the argument the kernels' views make (one
// view each, in their order) from `object`, and the two tuples.
template <class Run, class... Ts>
decltype(auto) with_argument(PyObject* object, const char* function, const char* name, Run run, Ts... ts) {
  using layout = call_layout<Ts...>;
  static_assert(layout::kernels >= 1,
                "cpp.visit: give the kernels after the function's and argument's names (and cpp.copy_if_needed, if "
                "given): cdef functions whose first parameter is a cpp.view, one per dtype");
  const std::tuple<std::decay_t<Ts>...> all{ts...};
  const auto kernels = slice<layout::first_kernel>(all, std::make_index_sequence<layout::kernels>{});
  const auto extras = slice<layout::first_extra>(all, std::make_index_sequence<layout::extras>{});
  using argument = typename argument_of<std::remove_const_t<decltype(kernels)>>::type;
  if constexpr (layout::copies) return run(argument(object, function, name, python::copy_if_needed), kernels, extras);
  else return run(argument(object, function, name), kernels, extras);
}

// The kernel of the view View, among the argument's.
template <class View, class Kernels>
constexpr std::size_t kernel_of = []<std::size_t... I>(std::index_sequence<I...>) {
  std::size_t found = 0;
  ((std::is_same_v<typename kernel_traits<std::tuple_element_t<I, Kernels>>::input, View> ? (found = I) : 0), ...);
  return found;
}(std::make_index_sequence<std::tuple_size_v<Kernels>>{});

}  // namespace detail

// kernel(view, extras...) with the view of the object's dtype (above).
template <class... Ts>
void visit(PyObject* object, const char* function, const char* name, Ts... ts) {
  detail::with_argument(object, function, name, [](const auto& argument, const auto& kernels, auto extras) {
    argument.visit([&]<class View>(const View& in) {
      auto kernel = std::get<detail::kernel_of<View, std::remove_cvref_t<decltype(kernels)>>>(kernels);
      std::apply([&](auto&... extra) { detail::call_without_gil(kernel, in, extra...); }, extras);
    });
  }, ts...);
}

// kernel(view, out, extras...) with the view of the object's dtype and the
// view of a new array (above); the array in the object's currency, a new
// reference.
template <class... Ts>
PyObject* visit_new(PyObject* object, const char* function, const char* name, Ts... ts) {
  return detail::with_argument(object, function, name, [](const auto& argument, const auto& kernels, auto extras) {
    tensor result = argument.visit([&]<class View>(const View& in) {
      auto kernel = std::get<detail::kernel_of<View, std::remove_cvref_t<decltype(kernels)>>>(kernels);
      using out_view = typename detail::kernel_traits<decltype(kernel)>::output;
      static_assert(python::detail::is_view<out_view>, "cpp.visit_new: a kernel's second parameter is the output's cpp.view");
      auto [array, out] = python::new_output<out_view>(in);
      std::apply([&](auto&... extra) { detail::call_without_gil(kernel, in, out, extra...); }, extras);
      return std::move(array);
    });
    return python::to_python_like(std::move(result), argument.object());
  }, ts...);
}

// What the argument of cpp.visit with these kernels demands, in
// dlb::describe's words, for dlbridge.annotate.
template <class... Kernels>
[[nodiscard]] std::string describe_kernels(Kernels...) {
  static_assert((detail::kernel_traits<std::decay_t<Kernels>>::is_kernel && ...),
                "cpp.describe_kernels: give the kernels, cdef functions whose first parameter is a cpp.view");
  return dlb::describe(detail::kernel_traits<std::decay_t<Kernels>>::input::demands()...);
}

}  // namespace dlb::cython
