// The reference the copy engine's tests check against: strided buffers with
// a pattern in them, and naive element-by-element copies and casts. Shared
// by test_host_copy.cpp, test_copy_tiles.cpp and test_copy_threads.cpp.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "dlbridge/host_copy.hpp"

namespace {
using vec = std::vector<std::int64_t>;
using bytes = std::vector<unsigned char>;

// A buffer big enough for a strided layout, with the pointer to its first
// element placed so that negative strides stay inside it, `misalign` bytes
// past an aligned address. Filled with a pattern that does not repeat for a
// long way, so that copies of the wrong byte show.
struct strided_buffer {
  bytes storage;
  std::int64_t origin = 0;  // byte offset of the first element
  vec strides;

  strided_buffer(const vec& shape, vec s, std::size_t itemsize, unsigned char seed, std::int64_t misalign = 0)
      : strides(std::move(s)) {
    std::int64_t lo = 0, hi = std::int64_t(itemsize);
    for (std::size_t i = 0; i < shape.size(); ++i) {
      const std::int64_t reach = (shape[i] - 1) * strides[i] * std::int64_t(itemsize);
      (reach < 0 ? lo : hi) += reach;
    }
    origin = -lo + misalign;
    storage.resize(std::size_t(hi - lo + misalign) + 16);
    for (std::size_t i = 0; i < storage.size(); ++i)
      storage[i] = static_cast<unsigned char>(((i + seed) * 2654435761u) >> 13);
  }
  unsigned char* first() { return storage.data() + origin; }
};

// Calls f(src_offset, dst_offset) in elements for every index, in C order.
template <class F>
void for_each_index(const vec& shape, const vec& a, const vec& b, F&& f) {
  for (auto e : shape)
    if (e == 0) return;
  vec index(shape.size(), 0);
  for (;;) {
    std::int64_t oa = 0, ob = 0;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      oa += index[i] * a[i];
      ob += index[i] * b[i];
    }
    f(oa, ob);
    std::size_t axis = shape.size();
    for (; axis-- > 0;) {
      if (++index[axis] < shape[axis]) break;
      index[axis] = 0;
    }
    if (axis == std::size_t(-1)) return;
  }
}

// The naive copy: one element at a time.
void reference_copy(const vec& shape, std::size_t itemsize, const unsigned char* src, const vec& src_strides,
                    unsigned char* dst, const vec& dst_strides) {
  for_each_index(shape, src_strides, dst_strides, [&](std::int64_t so, std::int64_t dof) {
    std::memcpy(dst + dof * std::int64_t(itemsize), src + so * std::int64_t(itemsize), itemsize);
  });
}

// Copies with copy_strided and with the reference into two identical
// destination buffers and compares every byte, the untouched ones included.
// A dtype of `itemsize` bytes: unsigned integers up to 8 bytes, complex128,
// else float32 with lanes (12 bytes: 3 lanes), which the engine moves as bytes.
dlb::dtype dtype_of_size(std::size_t itemsize) {
  if (itemsize == 16) return dlb::dtype{dlb::kDLComplex, 128};
  if (itemsize <= 8) return dlb::dtype{dlb::kDLUInt, std::uint8_t(itemsize * 8)};
  return dlb::dtype{dlb::kDLFloat, 32, std::uint16_t(itemsize / 4)};
}

// How check_copy runs the engine: copy_strided as it chooses (parts 0), or
// its plan walk with these settings: split into `parts` pieces, as threads
// would run them, with or without streaming stores and AVX2 (where the CPU
// has it).
using engine_run = dlb::detail::copy_settings;

void check_copy(const vec& shape, std::size_t itemsize, const vec& src_strides, const vec& dst_strides,
                std::int64_t src_misalign = 0, std::int64_t dst_misalign = 0, engine_run run = {0, false, false}) {
  const dlb::dtype type = dtype_of_size(itemsize);
  REQUIRE(type.itemsize() == itemsize);
  strided_buffer src(shape, src_strides, itemsize, 1, src_misalign);
  strided_buffer got(shape, dst_strides, itemsize, 200, dst_misalign);
  strided_buffer want = got;
  if (run.parts == 0)
    dlb::copy_strided(shape, type, src.first(), src_strides, got.first(), dst_strides);
  else if (std::all_of(shape.begin(), shape.end(), [](std::int64_t e) { return e > 0; }))
    dlb::detail::copy_plan(dlb::detail::make_strided_plan(shape, dst_strides, src_strides), itemsize,
                           reinterpret_cast<std::byte*>(got.first()), reinterpret_cast<const std::byte*>(src.first()),
                           run);
  reference_copy(shape, itemsize, src.first(), src_strides, want.first(), dst_strides);
  CHECK(got.storage == want.storage);
}

vec c_strides_of(const vec& shape) {
  vec s(shape.size());
  dlb::c_strides(shape, s);
  return s;
}
}  // namespace

namespace {
// The reference cast: load and store one element at a time in C order.
template <class From, class To>
std::vector<To> reference_cast(const vec& shape, dlb::dtype from, const From* src, const vec& src_strides,
                               dlb::dtype to) {
  std::vector<To> out(std::size_t(*dlb::element_count(shape)));
  std::size_t k = 0;
  for_each_index(shape, src_strides, src_strides, [&](std::int64_t so, std::int64_t) {
    dlb::store(to, &out[k++], dlb::load(from, src + so));
  });
  return out;
}
}  // namespace
