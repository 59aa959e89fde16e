// The kernels' index arithmetic replayed on the host, thread by thread (and
// phase by phase for the shared-memory tiles), against the CPU engine
// (dlb::copy_strided / dlb::cast_strided). A GPU runs the same functions.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
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
  for (std::int64_t i = 0; i < p.count; ++i) {
    std::int64_t d, s;
    cd::offsets(p, i, d, s);
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
void replay_words(const cd::strided_plan& p, void* dst, const void* src, bool tiles) {
  using W = typename cd::word_of<B>::type;
  if (tiles) replay_tiles(p, static_cast<W*>(dst), static_cast<const W*>(src));
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
  path used = cd::use_tiles(plan) ? path::tiles : path::general;
  if (!cd::is_word_aligned(plan, dst, src, itemsize)) {
    cd::split_into_bytes(plan, std::int64_t(itemsize));
    itemsize = 1;
    used = path::bytes;
  }
  const bool tiles = cd::use_tiles(plan);
  switch (itemsize) {
    case 1: replay_words<1>(plan, dst, src, tiles); break;
    case 2: replay_words<2>(plan, dst, src, tiles); break;
    case 4: replay_words<4>(plan, dst, src, tiles); break;
    case 8: replay_words<8>(plan, dst, src, tiles); break;
    default: replay_words<16>(plan, dst, src, tiles); break;
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

TEST_CASE("2-D and batched transposes take the tiled path; small or non-transposing layouts do not") {
  const std::vector<std::int64_t> square{64, 48}, batched{3, 40, 33}, small{8, 8};
  CHECK(cd::use_tiles(cd::make_strided_plan(square, dlb_test::c_order(square).strides, dlb_test::transposed(square).strides)));
  CHECK(cd::use_tiles(cd::make_strided_plan(batched, dlb_test::c_order(batched).strides, dlb_test::transposed(batched).strides)));
  CHECK(!cd::use_tiles(cd::make_strided_plan(small, dlb_test::c_order(small).strides, dlb_test::transposed(small).strides)));
  CHECK(!cd::use_tiles(cd::make_strided_plan(square, dlb_test::c_order(square).strides, dlb_test::c_order(square).strides)));
  const auto g = cd::make_tile_grid(cd::make_strided_plan(batched, dlb_test::c_order(batched).strides, dlb_test::transposed(batched).strides));
  CHECK(g.batches == 3);
  CHECK(g.row_tiles == 2);
  CHECK(g.col_tiles == 2);
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

TEST_CASE("the cast kernels, replayed, match dlb::cast_strided for every pair of dtypes") {
  std::mt19937_64 rng(99);
  for (const auto& from_info : dlb::dtype_table) {
    for (const auto& to_info : dlb::dtype_table) {
      const dlb::dtype from = from_info.type, to = to_info.type;
      if (from == to) continue;
      CAPTURE(from_info.name);
      CAPTURE(to_info.name);
      for (int trial = 0; trial < 6; ++trial) {
        const auto shape = dlb_test::random_shape(rng, int(rng() % 4), 7);
        // Packed operands are C-contiguous; others get random layouts.
        const layout sl = from.is_subbyte() ? dlb_test::c_order(shape) : dlb_test::random_layout(rng, shape, true);
        const layout dl = to.is_subbyte() ? dlb_test::c_order(shape) : dlb_test::random_layout(rng, shape, false);
        const auto src_bytes = std::size_t(from.storage_bytes(std::uint64_t(sl.buffer))) + 1;
        const auto dst_bytes = std::size_t(to.storage_bytes(std::uint64_t(dl.buffer))) + 1;
        buffers b(rng, src_bytes, dst_bytes);
        const auto element_offset = [](dlb::dtype t, std::int64_t offset) {
          return t.is_subbyte() ? 0 : offset * std::int64_t(t.itemsize());
        };
        const auto* src = b.s() + element_offset(from, sl.offset);
        dlb::cast_strided(shape, from, src, sl.strides, to, b.e() + element_offset(to, dl.offset), dl.strides);
        auto* dst = b.d() + element_offset(to, dl.offset);
        const auto plan = cd::make_strided_plan(shape, dl.strides, sl.strides);
        const auto from_size = std::int64_t(from.bits) * from.lanes / 8, to_size = std::int64_t(to.bits) * to.lanes / 8;
        const auto read = [&](std::int64_t s) {
          return from.is_subbyte() ? dlb::load(from, src, s) : dlb::load(from, src + s * from_size);
        };
        if (to.is_subbyte()) {  // cast_to_packed_kernel: one thread per byte
          dlb::float_format f{};
          REQUIRE(dlb::detail::format_of(to, f));
          const auto packed_bytes = std::int64_t(to.storage_bytes(std::uint64_t(plan.count)));
          for (std::int64_t byte = 0; byte < packed_bytes; ++byte)
            dst[byte] = cd::pack_byte(byte, plan.count, to.bits, dst[byte], [&](std::int64_t e) {
              std::int64_t d, s;
              cd::offsets(plan, e, d, s);
              REQUIRE(d == e);
              return dlb::detail::small_float_code(f, read(s));
            });
        } else {  // cast_kernel: one thread per element
          for (std::int64_t i = 0; i < plan.count; ++i) {
            std::int64_t d, s;
            cd::offsets(plan, i, d, s);
            dlb::store(to, dst + d * to_size, read(s));
          }
        }
        REQUIRE(b.same());
      }
    }
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
    for (std::int64_t i = 0; i < part.count; ++i) {
      std::int64_t d, s;
      cd::offsets(part, i, d, s);
      got[std::size_t(first + k + d)] = value[k];
    }
  }
  CHECK(got == expected);
}
