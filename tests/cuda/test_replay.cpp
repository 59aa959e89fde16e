// The kernels' index arithmetic replayed on the host, thread by thread (and
// phase by phase for the shared-memory tiles), against the CPU engine
// (dlb::copy_strided / dlb::cast_strided). A GPU runs the same functions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "dlbridge/host_copy.hpp"
#include "dlbridge/cuda/detail/strided.hpp"
#include "dlbridge/element.hpp"
#include "layouts.hpp"

namespace cd = dlb::cuda_runtime::detail;
using dlb_test::layout;

namespace {

template <class W>
void replay_general(const cd::strided_plan& p, W* dst, const W* src) {
  const cd::index_divisors divisors = cd::make_index_divisors(p);
  for (std::int64_t i = 0; i < p.count; ++i) {
    std::int64_t d, s;
    cd::offsets(p, divisors, i, d, s);
    dst[d] = src[s];
  }
}

template <class W>
void replay_tiles(const cd::strided_plan& p, W* dst, const W* src) {
  const cd::tile_grid g = cd::make_tile_grid(p);
  W tile[cd::tile_dim][cd::tile_dim + 1];
  for (std::int64_t b = 0; b < g.batches; ++b) {
    std::int64_t dst_base, src_base;
    cd::batch_offsets(p, b, dst_base, src_base);
    for (std::int64_t rt = 0; rt < g.row_tiles; ++rt)
      for (std::int64_t ct = 0; ct < g.col_tiles; ++ct) {
        for (int ty = 0; ty < cd::tile_rows; ++ty)
          for (int tx = 0; tx < cd::tile_dim; ++tx)
            cd::tile_load(p, src, src_base, rt * cd::tile_dim, ct * cd::tile_dim, tx, ty, tile);
        for (int ty = 0; ty < cd::tile_rows; ++ty)
          for (int tx = 0; tx < cd::tile_dim; ++tx)
            cd::tile_store(p, dst, dst_base, rt * cd::tile_dim, ct * cd::tile_dim, tx, ty, tile);
      }
  }
}

template <std::size_t B>
void replay_words(const cd::strided_plan& p, void* dst, const void* src) {
  using W = typename cd::word_of<B>::type;
  if (const auto tiled = cd::tiled_plan(p)) replay_tiles(*tiled, static_cast<W*>(dst), static_cast<const W*>(src));
  else replay_general(p, static_cast<W*>(dst), static_cast<const W*>(src));
}

// What launch_copy does, on the host: returns which path ran.
enum class path { memcpy, general, tiles, bytes };
path replay_copy(const std::vector<std::int64_t>& shape, std::size_t itemsize, const void* src, const layout& sl,
                 void* dst, const layout& dl) {
  auto plan = cd::make_strided_plan(shape, dl.strides, sl.strides);
  if (plan.count == 0) return path::memcpy;
  if (cd::is_memcpy(plan)) {
    std::memcpy(dst, src, std::size_t(plan.count) * itemsize);
    return path::memcpy;
  }
  path used = cd::tiled_plan(plan) ? path::tiles : path::general;
  if (!cd::is_word_aligned(plan, dst, src, itemsize)) {
    cd::split_into_bytes(plan, std::int64_t(itemsize));
    itemsize = 1;
    used = path::bytes;
  }
  switch (itemsize) {
    case 1: replay_words<1>(plan, dst, src); break;
    case 2: replay_words<2>(plan, dst, src); break;
    case 4: replay_words<4>(plan, dst, src); break;
    case 8: replay_words<8>(plan, dst, src); break;
    default: replay_words<16>(plan, dst, src); break;
  }
  return used;
}

struct buffers {
  std::vector<cd::word16> src, dst, expected;  // 8-byte aligned storage
  buffers(std::mt19937_64& rng, std::size_t src_bytes, std::size_t dst_bytes)
      : src(src_bytes / 16 + 2), dst(dst_bytes / 16 + 2), expected(dst.size()) {
    for (auto& w : src) w = {rng(), rng()};
    for (auto& w : dst) w = {rng(), rng()};
    expected = dst;
  }
  std::uint8_t* s() { return reinterpret_cast<std::uint8_t*>(src.data()); }
  std::uint8_t* d() { return reinterpret_cast<std::uint8_t*>(dst.data()); }
  std::uint8_t* e() { return reinterpret_cast<std::uint8_t*>(expected.data()); }
  bool same() const { return std::memcmp(dst.data(), expected.data(), dst.size() * sizeof(cd::word16)) == 0; }
};

// What cast_elements<Aligned> launches, on the host.
template <bool Aligned>
void replay_cast(const cd::strided_plan& plan, dlb::dtype from, dlb::dtype to, std::uint8_t* dst, const std::uint8_t* src) {
  const cd::index_divisors divisors = cd::make_index_divisors(plan);
  if (to.is_subbyte()) {  // cast_to_packed_kernel: one thread per byte
    dlb::float_format f{};
    REQUIRE(dlb::detail::format_of(to, f));
    const auto packed_bytes = std::int64_t(to.storage_bytes(std::uint64_t(plan.count)));
    for (std::int64_t byte = 0; byte < packed_bytes; ++byte)
      dst[byte] = cd::pack_byte(byte, plan.count, to.bits, dst[byte], [&](std::int64_t e) {
        std::int64_t d, s;
        cd::offsets(plan, divisors, e, d, s);
        REQUIRE(d == e);
        return dlb::detail::small_float_code(f, cd::load_element<Aligned>(from, src, s));
      });
    return;
  }
  for (std::int64_t i = 0; i < plan.count; ++i) {  // cast_kernel: one thread per element
    std::int64_t d, s;
    cd::offsets(plan, divisors, i, d, s);
    cd::store_element<Aligned>(to, dst, d, cd::load_element<Aligned>(from, src, s));
  }
}

// What launch_cast does, on the host: returns whether elements moved as words.
bool replay_cast(const cd::strided_plan& plan, dlb::dtype from, dlb::dtype to, std::uint8_t* dst, const std::uint8_t* src) {
  const bool aligned = cd::is_word_aligned(plan, from, to, dst, src);
  if (aligned) replay_cast<true>(plan, from, to, dst, src);
  else replay_cast<false>(plan, from, to, dst, src);
  return aligned;
}

// The axis of `shape` (a view of a C-contiguous array through `perm`) that is
// contiguous in the array, and the last axis, each skipping extent-1 axes
// (which have no stride that matters): the two unit-stride axes of a copy of
// the view into a C-contiguous destination. -1 where every extent is 1.
struct unit_axes {
  int src = -1, dst = -1;
};
unit_axes unit_axes_of(const std::vector<std::int64_t>& shape, const std::vector<std::size_t>& perm) {
  unit_axes out;
  std::size_t innermost = 0;  // of the array: the largest axis index with extent > 1
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    out.dst = int(k);
    if (out.src < 0 || perm[k] > innermost) {
      innermost = perm[k];
      out.src = int(k);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("plans coalesce in the destination's order, and contiguous copies become one memcpy") {
  const std::vector<std::int64_t> shape{4, 5, 6};
  const auto c = dlb_test::c_order(shape);
  auto p = cd::make_strided_plan(shape, c.strides, c.strides);
  CHECK(p.ndim == 1);
  CHECK(p.count == 120);
  CHECK(cd::is_memcpy(p));
  const auto t = dlb_test::transposed(shape);
  p = cd::make_strided_plan(shape, c.strides, t.strides);
  CHECK(p.ndim == 3);
  CHECK(!cd::is_memcpy(p));
  // A zero-size axis is never planned; a single element is ndim 0.
  const std::vector<std::int64_t> one{1, 1};
  p = cd::make_strided_plan(one, std::vector<std::int64_t>{7, 3}, std::vector<std::int64_t>{-2, 5});
  CHECK(p.ndim == 0);
  CHECK(cd::is_memcpy(p));
}

TEST_CASE("transposes take the tiled path wherever the source's contiguous axis is; small or non-transposing layouts do not") {
  const auto plan_of = [](const std::vector<std::int64_t>& shape, const layout& src) {
    return cd::make_strided_plan(shape, dlb_test::c_order(shape).strides, src.strides);
  };
  const std::vector<std::int64_t> square{64, 48}, batched{3, 40, 33}, small{8, 8};
  CHECK(cd::tiled_plan(plan_of(square, dlb_test::transposed(square))));
  CHECK(!cd::tiled_plan(plan_of(small, dlb_test::transposed(small))));
  CHECK(!cd::tiled_plan(plan_of(square, dlb_test::c_order(square))));
  const auto b = cd::tiled_plan(plan_of(batched, dlb_test::transposed(batched)));
  REQUIRE(b);
  const auto g = cd::make_tile_grid(*b);
  CHECK(g.batches == 3);
  CHECK(g.row_tiles == 2);
  CHECK(g.col_tiles == 2);
  // benchmarks/gpu.py's 4-D permutation: the source's contiguous axis (256)
  // is the destination's outermost. The tiles take it as rows, the
  // destination's contiguous axis (128) as columns, the others as a batch.
  const std::vector<std::int64_t> base{64, 32, 128, 256}, view{256, 32, 64, 128};
  const auto p = cd::tiled_plan(plan_of(view, dlb_test::permuted(base, {3, 1, 0, 2})));
  REQUIRE(p);
  REQUIRE(p->ndim == 4);
  CHECK(std::vector<std::int64_t>(p->extent, p->extent + 4) == std::vector<std::int64_t>{32, 64, 256, 128});
  CHECK(std::vector<std::int64_t>(p->src, p->src + 4) == std::vector<std::int64_t>{32768, 1048576, 1, 256});
  CHECK(std::vector<std::int64_t>(p->dst, p->dst + 4) == std::vector<std::int64_t>{8192, 128, 262144, 1});
  const auto grid = cd::make_tile_grid(*p);
  CHECK(grid.batches == 32 * 64);
  CHECK(grid.row_tiles == 8);
  CHECK(grid.col_tiles == 4);
  // The same with a source row axis too short for a tile, or shared with the destination.
  CHECK(!cd::tiled_plan(plan_of({8, 32, 64, 128}, dlb_test::permuted({64, 32, 128, 8}, {3, 1, 0, 2}))));
  CHECK(!cd::tiled_plan(plan_of({32, 64, 128, 256}, dlb_test::permuted({64, 32, 128, 256}, {1, 0, 2, 3}))));
}

TEST_CASE("fast_divisor divides every 32-bit index exactly") {
  std::mt19937_64 rng(5);
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t d = 1; d <= 5000; ++d) divisors.push_back(d);
  for (int k = 13; k < 32; ++k)
    for (const std::uint32_t d : {(1u << k) - 1, 1u << k, (1u << k) + 1}) divisors.push_back(d);
  divisors.push_back(UINT32_MAX);
  for (int k = 0; k < 2000; ++k) divisors.push_back(std::uint32_t(rng() >> (rng() % 32 + 32)) | 1u);
  std::uint64_t checked = 0, wrong = 0;
  std::uint32_t first_d = 0, first_n = 0;
  for (const std::uint32_t d : divisors) {
    const auto f = cd::fast_divisor::of(d);
    const std::uint64_t top = UINT32_MAX / d * std::uint64_t(d);  // the largest multiple of d below 2^32
    std::vector<std::uint64_t> numbers{0, 1, d - 1ull, d, d + 1ull, top - 1, top, UINT32_MAX, UINT32_MAX - 1ull};
    for (int k = 0; k < 48; ++k) {
      const std::uint64_t multiple = rng() % (std::uint64_t(UINT32_MAX) / d + 1) * d;
      numbers.insert(numbers.end(), {multiple, multiple - 1, multiple + d - 1, rng() >> 32});
    }
    for (const std::uint64_t n : numbers) {
      if (n > UINT32_MAX) continue;
      ++checked;
      if (f.divide(std::uint32_t(n)) != n / d && wrong++ == 0) {
        first_d = d;
        first_n = std::uint32_t(n);
      }
    }
  }
  CAPTURE(first_d);
  CAPTURE(first_n);
  CHECK(checked > 1'000'000);
  CHECK(wrong == 0);
}

TEST_CASE("offsets divide by 32-bit multiplication below 2^32 elements and in 64 bits past it, to the same offsets") {
  // Random plans, every index, both ways.
  std::mt19937_64 rng(8);
  for (int trial = 0; trial < 300; ++trial) {
    const auto shape = dlb_test::random_shape(rng, int(rng() % 6), 9);
    const layout sl = dlb_test::random_layout(rng, shape, true), dl = dlb_test::random_layout(rng, shape, false);
    const auto plan = cd::make_strided_plan(shape, dl.strides, sl.strides);
    const cd::index_divisors fast = cd::make_index_divisors(plan);
    REQUIRE(fast.fast);
    cd::index_divisors wide = fast;
    wide.fast = false;
    for (std::int64_t i = 0; i < plan.count; ++i) {
      std::int64_t d1, s1, d2, s2;
      cd::offsets(plan, fast, i, d1, s1);
      cd::offsets(plan, wide, i, d2, s2);
      REQUIRE(d1 == d2);
      REQUIRE(s1 == s2);
    }
  }
  // The bound: 2^32 - 1 elements divide in 32 bits, 2^32 do not; a C-order
  // destination's offset is the index, an F-order source's is known too.
  const auto check = [](std::int64_t rows, std::int64_t cols, bool fast) {
    const std::vector<std::int64_t> shape{rows, cols}, c{cols, 1}, f{1, rows};
    const auto plan = cd::make_strided_plan(shape, c, f);
    const cd::index_divisors divisors = cd::make_index_divisors(plan);
    CHECK(divisors.fast == fast);
    for (const std::int64_t i : {std::int64_t(0), cols - 1, cols, rows * cols / 2 + 7, rows * cols - 1}) {
      std::int64_t d, s;
      cd::offsets(plan, divisors, i, d, s);
      CHECK(d == i);
      CHECK(s == i / cols + i % cols * rows);
    }
  };
  check(65537, 65535, true);  // 2^32 - 1 elements
  check(65536, 65536, false);
  check(std::int64_t(3) << 20, 5 << 20, false);  // 2^40 + 2^41 elements
}

TEST_CASE("the copy kernels, replayed, match dlb::copy_strided for random layouts") {
  std::mt19937_64 rng(2024);
  int tiles = 0, general = 0, bytes = 0, memcpys = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int ndim = int(rng() % 5);
    const bool big = trial % 10 == 0;
    const auto shape = dlb_test::random_shape(rng, ndim, big ? 40 : 6);
    const std::size_t itemsize = std::size_t(1) << (rng() % 5);
    const layout sl = dlb_test::random_layout(rng, shape, true);
    const layout dl = trial % 4 == 0 ? dlb_test::transposed(shape) : dlb_test::random_layout(rng, shape, false);
    const std::int64_t misalign = trial % 9 == 0 && itemsize > 1 ? 1 : 0;  // bytes
    buffers b(rng, std::size_t(sl.buffer) * itemsize + 1, std::size_t(dl.buffer) * itemsize + 1);
    const auto* src = b.s() + misalign + sl.offset * std::int64_t(itemsize);
    const dlb::dtype type{dlb::kDLUInt, std::uint8_t(itemsize * 8 > 64 ? 64 : itemsize * 8), 1};
    // The CPU engine copies opaque elements of `itemsize` bytes.
    const dlb::dtype opaque = itemsize == 16 ? dlb::dtype{dlb::kDLComplex, 128} : type;
    dlb::copy_strided(shape, opaque, src, sl.strides, b.e() + misalign + dl.offset * std::int64_t(itemsize), dl.strides);
    const path used = replay_copy(shape, itemsize, src, sl, b.d() + misalign + dl.offset * std::int64_t(itemsize), dl);
    tiles += used == path::tiles;
    general += used == path::general;
    bytes += used == path::bytes;
    memcpys += used == path::memcpy;
    CAPTURE(trial);
    CAPTURE(itemsize);
    REQUIRE(b.same());
  }
  MESSAGE("paths: " << memcpys << " memcpy, " << general << " general, " << tiles << " tiled, " << bytes << " bytes");
  CHECK(tiles > 0);
  CHECK(general > 0);
  CHECK(bytes > 0);
  CHECK(memcpys > 0);
}

TEST_CASE("every permutation of 3-D and 4-D arrays around the tile size, replayed, matches dlb::copy_strided") {
  std::mt19937_64 rng(31);
  int tiles = 0, general = 0;
  dlb_test::for_each_permutation_case([&](const dlb_test::permutation_case& c) {
    const unit_axes unit = unit_axes_of(c.shape, c.perm);
    CAPTURE(c.text);
    for (const std::size_t itemsize : {1u, 2u, 4u, 8u, 16u}) {
      CAPTURE(itemsize);
      buffers b(rng, std::size_t(c.src.buffer) * itemsize, std::size_t(c.dst.buffer) * itemsize);
      dlb::copy_strided(c.shape, dlb_test::opaque_type(itemsize), b.s(), c.src.strides, b.e(), c.dst.strides);
      const path used = replay_copy(c.shape, itemsize, b.s(), c.src, b.d(), c.dst);
      // The rule, read off the shapes: distinct unit-stride axes, both
      // at least tile_min_extent long, are a transpose; one axis is not.
      if (unit.src == unit.dst)
        CHECK(used != path::tiles);
      else if (c.shape[std::size_t(unit.src)] >= cd::tile_min_extent && c.shape[std::size_t(unit.dst)] >= cd::tile_min_extent)
        CHECK(used == path::tiles);
      tiles += used == path::tiles;
      general += used == path::general;
      REQUIRE(b.same());
    }
  });
  MESSAGE("paths: " << general << " general, " << tiles << " tiled");
  CHECK(tiles > 0);
  CHECK(general > 0);
}

TEST_CASE("the cast kernels, replayed, match dlb::cast_strided for every pair of dtypes, aligned or not") {
  std::mt19937_64 rng(99);
  int words = 0, bytes = 0;
  for (const auto& from_info : dlb::dtype_table) {
    for (const auto& to_info : dlb::dtype_table) {
      const dlb::dtype from = from_info.type, to = to_info.type;
      if (from == to) continue;
      CAPTURE(from_info.name);
      CAPTURE(to_info.name);
      for (int trial = 0; trial < 9; ++trial) {
        const auto shape = dlb_test::random_shape(rng, int(rng() % 4), 7);
        // Packed operands are C-contiguous; others get random layouts.
        const layout sl = from.is_subbyte() ? dlb_test::c_order(shape) : dlb_test::random_layout(rng, shape, true);
        const layout dl = to.is_subbyte() ? dlb_test::c_order(shape) : dlb_test::random_layout(rng, shape, false);
        const auto src_bytes = std::size_t(from.storage_bytes(std::uint64_t(sl.buffer))) + 1;
        const auto dst_bytes = std::size_t(to.storage_bytes(std::uint64_t(dl.buffer))) + 1;
        buffers b(rng, src_bytes, dst_bytes);
        // One byte off the element size on one side in some trials (packed
        // data is addressed by byte): moved byte by byte, unless 1-byte.
        const std::int64_t src_shift = trial % 3 == 1 && !from.is_subbyte(), dst_shift = trial % 3 == 2 && !to.is_subbyte();
        const auto first_byte = [](dlb::dtype t, std::int64_t offset, std::int64_t shift) {
          return t.is_subbyte() ? 0 : shift + offset * std::int64_t(t.itemsize());
        };
        const auto* src = b.s() + first_byte(from, sl.offset, src_shift);
        dlb::cast_strided(shape, from, src, sl.strides, to, b.e() + first_byte(to, dl.offset, dst_shift), dl.strides);
        const auto plan = cd::make_strided_plan(shape, dl.strides, sl.strides);
        const bool aligned = replay_cast(plan, from, to, b.d() + first_byte(to, dl.offset, dst_shift), src);
        CHECK(aligned == !((src_shift && from.itemsize() > 1) || (dst_shift && to.itemsize() > 1)));
        words += aligned;
        bytes += !aligned;
        REQUIRE(b.same());
      }
    }
  }
  MESSAGE("casts: " << words << " as words, " << bytes << " byte by byte");
}

TEST_CASE("permuted float32 <-> float64 casts of 3-D arrays around the tile size, replayed, match dlb::cast_strided") {
  std::mt19937_64 rng(41);
  const dlb::dtype f32 = dlb::dtype_of<float>, f64 = dlb::dtype_of<double>;
  for (const auto& base : dlb_test::tile_edge_shapes(3, 40'000)) {
    std::vector<std::size_t> perm{0, 1, 2};
    do {
      const std::vector<std::int64_t> shape{base[perm[0]], base[perm[1]], base[perm[2]]};
      const layout sl = dlb_test::permuted(base, perm), dl = dlb_test::c_order(shape);
      const std::string layout_text = dlb_test::describe_permuted(base, perm);
      CAPTURE(layout_text);
      for (const auto& [from, to] : {std::pair{f32, f64}, std::pair{f64, f32}}) {
        buffers b(rng, std::size_t(sl.buffer) * from.itemsize(), std::size_t(dl.buffer) * to.itemsize());
        dlb::cast_strided(shape, from, b.s(), sl.strides, to, b.e(), dl.strides);
        CHECK(replay_cast(cd::make_strided_plan(shape, dl.strides, sl.strides), from, to, b.d(), b.s()));
        REQUIRE(b.same());
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST_CASE("the fill kernel's byte-by-byte fallback for unaligned memory writes the element's bytes") {
  // launch_fill splits an unaligned fill into one strided byte fill per byte.
  const std::vector<std::int64_t> shape{5, 3};
  const std::vector<std::int64_t> strides{-4, 1};  // gaps between rows, a flipped axis
  std::vector<std::uint8_t> expected(80, 0xee), got(80, 0xee);  // bytes 1 .. 76 are written
  const std::uint8_t value[4] = {1, 2, 3, 4};
  const std::int64_t first = 1 + 16 * 4;  // byte offset of element (0, 0): odd, so unaligned
  const std::vector<std::int64_t> zero{0, 0};
  dlb::copy_strided(shape, dlb::dtype_of<std::uint32_t>, value, zero, expected.data() + first, strides);
  auto plan = cd::make_strided_plan(shape, strides, {});
  REQUIRE(!cd::is_word_aligned(plan, got.data() + first, nullptr, 4));
  for (int k = 0; k < 4; ++k) {
    auto part = plan;
    for (std::int32_t axis = 0; axis < part.ndim; ++axis) part.dst[axis] *= 4;
    const cd::index_divisors divisors = cd::make_index_divisors(part);
    for (std::int64_t i = 0; i < part.count; ++i) {
      std::int64_t d, s;
      cd::offsets(part, divisors, i, d, s);
      got[std::size_t(first + k + d)] = value[k];
    }
  }
  CHECK(got == expected);
}

TEST_CASE("a packed fill, its period repeated and its tail after, writes what dlb::fill writes") {
  const dlb::dtype types[] = {{dlb::kDLFloat4_e2m1fn, 4}, {dlb::kDLFloat6_e2m3fn, 6}, {dlb::kDLFloat6_e3m2fn, 6}};
  const dlb::scalar values[] = {dlb::scalar::from_int(0), dlb::scalar::from_real(1.5), dlb::scalar::from_real(-3),
                                dlb::scalar::from_real(0.3)};
  for (const dlb::dtype type : types) {
    for (std::int64_t count = 0; count <= 41; ++count) {
      for (const dlb::scalar& value : values) {
        const auto bytes = std::size_t(type.storage_bytes(std::uint64_t(count)));
        std::vector<std::uint8_t> expected(bytes + 1, 0xee), got(bytes + 1, 0xee);
        dlb::fill(type, expected.data(), count, value);
        const cd::packed_fill f = cd::make_packed_fill(type, count, value);
        std::size_t at = 0;
        for (std::int64_t p = 0; p < f.periods; ++p, at += f.period_bytes)
          std::memcpy(got.data() + at, f.period, f.period_bytes);
        std::memcpy(got.data() + at, f.tail, f.tail_bytes);
        CAPTURE(type.code);
        CAPTURE(count);
        CHECK(at + f.tail_bytes == bytes);
        REQUIRE(got == expected);
      }
    }
  }
}

TEST_CASE("move_word moves exactly one element of any width: one word where there is one, else byte by byte") {
  // Widths no word has (a 3-lane int8 vector, 6 or 12 bytes) once moved 16
  // bytes, over the neighbouring elements.
  for (std::int64_t bytes : {1, 2, 3, 4, 6, 8, 12, 16}) {
    CAPTURE(bytes);
    alignas(16) std::uint8_t from[32], to[32];
    std::iota(from, from + 32, std::uint8_t(1));
    std::fill(to, to + 32, std::uint8_t(0xee));
    cd::move_word(to, from, bytes);
    for (std::int64_t i = 0; i < 32; ++i) CHECK(to[i] == (i < bytes ? from[i] : 0xee));
  }
}
