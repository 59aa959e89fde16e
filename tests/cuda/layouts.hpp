// Strided layouts for the copy tests: random ones (permuted axes, steps,
// flipped (negative) strides, and zero strides for sources), and the
// permutations of C-contiguous arrays around the GPU's tile size.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "dlbridge/dtype.hpp"

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

// The layout of a C-contiguous array of shape `base` seen through
// transpose(perm): axis k of the view is axis perm[k] of the array.
inline layout permuted(const std::vector<std::int64_t>& base, const std::vector<std::size_t>& perm) {
  const layout c = c_order(base);
  layout out;
  for (const std::size_t axis : perm) out.strides.push_back(c.strides[axis]);
  out.buffer = c.buffer;
  return out;
}

// "(2, 3, 4) through (1, 0, 2)": permuted(base, perm), for messages.
inline std::string describe_permuted(const std::vector<std::int64_t>& base, const std::vector<std::size_t>& perm) {
  std::string out;
  for (std::size_t k = 0; k < base.size(); ++k) out.append(k ? ", " : "(").append(std::to_string(base[k]));
  out += ") through ";
  for (std::size_t k = 0; k < perm.size(); ++k) out.append(k ? ", " : "(").append(std::to_string(perm[k]));
  return out + ")";
}

// Every shape of `ndim` axes with extents around the tile edge of the GPU's
// transposes (32, and 16 for the shortest tiled axis), with at most
// `max_count` elements.
inline std::vector<std::vector<std::int64_t>> tile_edge_shapes(std::size_t ndim, std::int64_t max_count) {
  static constexpr std::int64_t extents[] = {1, 5, 31, 32, 33, 70};
  std::vector<std::vector<std::int64_t>> out;
  std::vector<std::size_t> pick(ndim, 0);  // an odometer of indices into extents
  while (true) {
    std::vector<std::int64_t> shape;
    std::int64_t count = 1;
    for (const std::size_t k : pick) {
      shape.push_back(extents[k]);
      count *= extents[k];
    }
    if (count <= max_count) out.push_back(shape);
    std::size_t axis = ndim;
    while (axis > 0 && pick[axis - 1] == std::size(extents) - 1) pick[--axis] = 0;
    if (axis == 0) return out;
    ++pick[axis - 1];
  }
}

// A dtype of `itemsize` bytes whose values are copied as they are.
inline dlb::dtype opaque_type(std::size_t itemsize) {
  return itemsize == 16 ? dlb::dtype{dlb::kDLComplex, 128} : dlb::dtype{dlb::kDLUInt, std::uint8_t(itemsize * 8)};
}

// One case of the permutation tests: a C-contiguous array of shape `base`
// copied through transpose(perm) into a C-contiguous destination.
struct permutation_case {
  std::vector<std::int64_t> base, shape;  // the array's shape, and the view's
  std::vector<std::size_t> perm;
  layout src, dst;
  std::string text;  // for messages
};

// Calls f(c) for every permutation of every tile_edge_shapes() shape of 3
// axes, and of 4 axes up to 10,000 elements (as many layouts again as the 3-D
// ones for each extent).
template <class F>
void for_each_permutation_case(F&& f) {
  for (const std::size_t ndim : {3u, 4u}) {
    for (const auto& base : tile_edge_shapes(ndim, ndim == 3 ? INT64_MAX : 10'000)) {
      permutation_case c{base, {}, std::vector<std::size_t>(ndim), {}, {}, {}};
      std::iota(c.perm.begin(), c.perm.end(), std::size_t(0));
      do {
        c.shape.clear();
        for (const std::size_t axis : c.perm) c.shape.push_back(base[axis]);
        c.src = permuted(base, c.perm);
        c.dst = c_order(c.shape);
        c.text = describe_permuted(base, c.perm);
        f(c);
      } while (std::next_permutation(c.perm.begin(), c.perm.end()));
    }
  }
}

}  // namespace dlb_test
