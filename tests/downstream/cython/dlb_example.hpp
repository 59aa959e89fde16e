// The C++ half of the Cython example (docs/cython-guide.md): kernels on
// checked dlb::views, and arrays made in C++. Everything returns dlb::tensor,
// which the Cython side wraps as a dlbridge Array (dlbridge.wrap): an object
// with __dlpack__ and __dlpack_device__, never a raw capsule.
#pragma once

#include <atomic>
#include <cstdint>

#include <dlbridge/dlbridge.hpp>

namespace example {

// The same C++ type as the Cython
//   ctypedef cpp.view[float, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] rows_view
// in dlb_example.pyx: 2-D float32, C-contiguous, read-only access, host memory.
using rows_view = dlb::view<float, dlb::ndim<2>, dlb::c_contig, dlb::ro, dlb::cpu>;

// A 1-D float32 array of the row sums, in new memory (dlb::tensor::empty).
inline dlb::tensor row_sums(const rows_view& rows) {
  const std::int64_t shape[] = {rows.shape(0)};
  dlb::tensor out = dlb::tensor::empty(shape, dlb::dtype_of<float>);
  // A view of memory we just made: as<>() cannot fail here, but checks anyway.
  auto sums = out.as<dlb::view<float, dlb::ndim<1>, dlb::c_contig>>();
  for (std::int64_t i = 0; i < rows.shape(0); ++i) {
    double s = 0;
    for (std::int64_t j = 0; j < rows.shape(1); ++j) s += rows(i, j);
    sums(i) = static_cast<float>(s);
  }
  return out;
}

// A new rows x cols float32 array holding 0, 1, 2, ... in C order.
// (A negative extent throws std::invalid_argument: ValueError in Python.)
inline dlb::tensor grid(std::int64_t rows, std::int64_t cols) {
  const std::int64_t shape[] = {rows, cols};
  dlb::tensor t = dlb::tensor::empty(shape, dlb::dtype_of<float>);
  auto v = t.as<dlb::view<float, dlb::ndim<2>, dlb::c_contig>>();
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) v(i, j) = static_cast<float>(i * cols + j);
  return t;
}

// -- Device memory --------------------------------------------------------------
// Memory someone else owns on a GPU, at `address`, described by a view whose
// type says dlb::cuda: a tensor adopting it (dlb::tensor::adopt(view, release,
// ctx), called from dlb_example.pyx) is labelled cuda:<id>, and so are the
// Array and every DLPack export of it, never cpu. Nothing here reads the
// memory.
using cuda_vector = dlb::view<float, dlb::ndim<1>, dlb::cuda>;

inline cuda_vector cuda_vector_at(std::uintptr_t address, std::int64_t n, std::int32_t device_id) {
  return cuda_vector(reinterpret_cast<float*>(address), {n}, device_id);
}

// The release the adopting tensor runs, once, when the last reference goes.
// Real code frees the memory there (cudaFree(ctx), with ctx = the pointer);
// this one counts, so that the example's test sees it run exactly once.
inline std::atomic<std::int64_t> released{0};

inline void count_release(void*) noexcept { released.fetch_add(1, std::memory_order_relaxed); }

inline std::int64_t releases() noexcept { return released.load(std::memory_order_relaxed); }

}  // namespace example
