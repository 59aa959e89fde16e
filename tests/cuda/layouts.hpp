// Random strided layouts for the copy tests: permuted axes, steps, flipped
// (negative) strides, and zero strides for sources.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace dlb_test {

struct layout {
  std::vector<std::int64_t> strides;  // elements
  std::int64_t offset = 0;            // of the first element in its buffer, in elements
  std::int64_t buffer = 0;            // elements the buffer needs
};

inline std::vector<std::int64_t> random_shape(std::mt19937_64& rng, int ndim, std::int64_t max_extent) {
  std::uniform_int_distribution<std::int64_t> extent(1, max_extent);
  std::vector<std::int64_t> shape(std::size_t(ndim), 0);
  for (auto& e : shape) e = extent(rng);
  return shape;
}

// A layout for `shape` inside a buffer of its own. `zero_strides` allows
// broadcast axes (sources only: a destination must not repeat elements).
inline layout random_layout(std::mt19937_64& rng, const std::vector<std::int64_t>& shape, bool zero_strides) {
  const std::size_t n = shape.size();
  layout out;
  out.strides.assign(n, 0);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (rng() % 4) std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::int64_t> step(n, 1);
  for (auto& s : step) s = rng() % 3 == 0 ? 2 : 1;
  std::int64_t size = 1;
  for (std::size_t k = n; k-- > 0;) {  // order[n - 1] is the innermost axis
    const std::size_t axis = order[k];
    out.strides[axis] = size * step[axis];
    size *= std::max<std::int64_t>((shape[axis] - 1) * step[axis] + 1, 1);
  }
  out.buffer = size + (rng() % 2);  // sometimes a spare element at the end
  for (std::size_t axis = 0; axis < n; ++axis) {
    if (zero_strides && rng() % 5 == 0) {
      out.strides[axis] = 0;
    } else if (rng() % 3 == 0) {
      out.offset += (shape[axis] - 1) * out.strides[axis];
      out.strides[axis] = -out.strides[axis];
    }
  }
  return out;
}

// A transposed C-contiguous layout: the last two axes swapped in memory.
inline layout transposed(const std::vector<std::int64_t>& shape) {
  layout out;
  const std::size_t n = shape.size();
  out.strides.assign(n, 0);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (n >= 2) std::swap(order[n - 1], order[n - 2]);
  std::int64_t size = 1;
  for (std::size_t k = n; k-- > 0;) {
    out.strides[order[k]] = size;
    size *= shape[order[k]];
  }
  out.buffer = size;
  return out;
}

inline layout c_order(const std::vector<std::int64_t>& shape) {
  layout out;
  out.strides.assign(shape.size(), 0);
  std::int64_t size = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    out.strides[k] = size;
    size *= shape[k];
  }
  out.buffer = size;
  return out;
}

}  // namespace dlb_test
