// An extension module written with nanobind alone (no dlbridge), whose arrays
// are nanobind's own: nb::ndarray<nb::array_api>, which Python receives as a
// nanobind.nb_ndarray with __dlpack__, __dlpack_device__ and the buffer
// protocol. (Without a framework tag nanobind returns a bare "dltensor"
// capsule instead, which has neither method.) The DLPack conformance kit
// (dlbridge.testing) is run against it through tests/python/kit/kit_nanobind.py,
// as a producer (make) and as a consumer (consume).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// nanobind's own limit on dimensions (nb_ndarray.cpp); above it nanobind
// aborts the call with a RuntimeError, so make declines the case instead.
constexpr std::size_t max_ndim = 128;

// The value NumPy's astype gives to i (0 -> False for bool; modular integers).
template <class T> [[nodiscard]] T value(std::size_t i) {
    if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
        return T(static_cast<typename T::value_type>(i));
    else
        return static_cast<T>(i);
}

template <class T> void fill(void *data, std::size_t count) {
    auto *out = static_cast<T *>(data);
    for (std::size_t i = 0; i < count; ++i)
        out[i] = value<T>(i);
}

struct element {
    const char *name;
    nb::dlpack::dtype dtype;
    void (*fill)(void *, std::size_t);
};

template <class T> [[nodiscard]] constexpr element entry(const char *name, nb::dlpack::dtype_code code) {
    return {name, {static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(8 * sizeof(T)), 1}, &fill<T>};
}

using code = nb::dlpack::dtype_code;
const element elements[] = {
    entry<bool>("bool", code::Bool),
    entry<std::int8_t>("int8", code::Int),           entry<std::int16_t>("int16", code::Int),
    entry<std::int32_t>("int32", code::Int),         entry<std::int64_t>("int64", code::Int),
    entry<std::uint8_t>("uint8", code::UInt),        entry<std::uint16_t>("uint16", code::UInt),
    entry<std::uint32_t>("uint32", code::UInt),      entry<std::uint64_t>("uint64", code::UInt),
#ifdef __FLT16_MAX__  // the compiler's binary16 (GCC and Clang on x86-64 and AArch64)
    entry<_Float16>("float16", code::Float),
#endif
    entry<float>("float32", code::Float),            entry<double>("float64", code::Float),
    entry<std::complex<float>>("complex64", code::Complex),
    entry<std::complex<double>>("complex128", code::Complex),
};

[[noreturn]] void decline(const std::string &why) {
    PyErr_SetString(PyExc_NotImplementedError, why.c_str());
    throw nb::python_error();
}

// A new C++ buffer of `shape` and `dtype` holding 0, 1, 2, ... in C order,
// owned by the array nanobind makes of it.
nb::object make(const std::vector<std::size_t> &shape, const std::string &dtype, bool read_only) {
    const element *type = nullptr;
    for (const element &e : elements)
        if (dtype == e.name)
            type = &e;
    if (type == nullptr)
        decline("nanobind_arrays makes no " + dtype + " arrays");
    if (shape.size() > max_ndim)
        decline("nanobind holds at most " + std::to_string(max_ndim) + " dimensions, not " +
                std::to_string(shape.size()));
    std::size_t count = 1, bytes = 0;
    for (std::size_t extent : shape)
        if (__builtin_mul_overflow(count, extent, &count))
            throw std::bad_alloc();  // nanobind raises MemoryError
    if (__builtin_mul_overflow(count, std::size_t{type->dtype.bits / 8u}, &bytes))
        throw std::bad_alloc();
    std::unique_ptr<std::byte[]> data(new std::byte[bytes]);
    type->fill(data.get(), count);
    nb::capsule owner(data.get(), [](void *p) noexcept { delete[] static_cast<std::byte *>(p); });
    void *memory = data.release();
    if (read_only)
        return nb::cast(nb::ndarray<nb::array_api, nb::ro>(memory, shape.size(), shape.data(), owner, nullptr,
                                                           type->dtype, nb::device::cpu::value));
    return nb::cast(nb::ndarray<nb::array_api>(memory, shape.size(), shape.data(), owner, nullptr, type->dtype,
                                               nb::device::cpu::value));
}

// `x` as a new array of nanobind's over the same memory (dtype, shape,
// strides, byte_offset and device as nanobind imported them), which keeps `x`
// alive. Returning `x` itself would hand Python back the producer's object.
template <class... Args> nb::ndarray<nb::array_api, Args...> consume(const nb::ndarray<Args...> &x) {
    std::vector<std::size_t> shape(x.ndim());
    for (std::size_t i = 0; i < shape.size(); ++i)
        shape[i] = x.shape(i);
    using imported = nb::ndarray<Args...>;
    std::unique_ptr<imported> keep(new imported(x));
    nb::capsule owner(keep.get(), [](void *p) noexcept { delete static_cast<imported *>(p); });
    keep.release();
    return {x.data_handle(), x.ndim(), shape.data(), owner, x.stride_ptr(), x.dtype(), x.device_type(),
            x.device_id(), 'C', x.byte_offset()};
}

}  // namespace

NB_MODULE(nanobind_arrays, m) {
    m.doc() = "Arrays made and taken by nanobind's own DLPack support (nb::ndarray), for dlbridge's conformance kit.";
    m.def("make", &make, "shape"_a, "dtype"_a, nb::kw_only(), "read_only"_a = false,
          "A new array of `dtype` holding 0, 1, 2, ... in C order (nanobind.nb_ndarray owning a C++ buffer); "
          "read-only when `read_only`. NotImplementedError for a dtype it does not make.");
    // Writable data comes back writable; read-only data (the second overload,
    // which nanobind tries when the first refuses it) read-only.
    m.def("consume", &consume<>, "x"_a, "`x`'s memory as an array of nanobind's, without a copy.");
    m.def("consume", &consume<nb::ro>, "x"_a);
}
