// dlbridge/copy/tiles.hpp: the tile policy (tile shapes, streaming stores,
// AVX2) and its one machine fact, the streaming threshold, checked against
// the reference loop (copy_reference.hpp).
#include "copy_reference.hpp"

// The tiled path: a transpose or permutation of arrays at least 8 elements
// wide both ways, in tiles of up to 32 x 32 elements (32 x 64 with AVX2;
// fewer for wide elements), with vector blocks for 4- and 8-byte elements; extents
// that are not multiples of the tile or the block leave remainders.
TEST_CASE("tiles: 2-d transposes of every element size, remainders included") {
  const vec shapes[] = {{8, 8}, {37, 45}, {45, 37}, {64, 33}, {100, 70}, {9, 300}, {300, 9}, {130, 8}, {8, 130}};
  for (std::size_t itemsize : {1, 2, 3, 4, 8, 12, 16}) {
    for (const auto& shape : shapes) {
      CAPTURE(itemsize);
      CAPTURE(shape[0]);
      CAPTURE(shape[1]);
      const vec c = c_strides_of(shape), f{1, shape[0]};
      check_copy(shape, itemsize, f, c);                                // F order -> C order
      check_copy(shape, itemsize, c, f);                                // C order -> F order
      check_copy(shape, itemsize, {-1, shape[0]}, c);                   // transposed, one axis reversed
      check_copy(shape, itemsize, {1, -shape[0]}, c);                   // the other axis reversed
      check_copy(shape, itemsize, f, {-shape[1], 1});                   // reversed destination rows
      check_copy(shape, itemsize, f, {-shape[1], -1});                  // reversed destination
      check_copy(shape, itemsize, {2, 2 * shape[0] + 3}, c);            // gaps in the source
      check_copy(shape, itemsize, f, {shape[1] + 5, 1});                // gaps between destination rows
      check_copy(shape, itemsize, {1, shape[0] + 1}, {2, 2 * shape[0]});  // gaps on both sides
      check_copy(shape, itemsize, f, c, 1, 3);                          // unaligned addresses
      check_copy(shape, itemsize, f, c, std::int64_t(itemsize) / 2, 0);
    }
  }
}

TEST_CASE("tiles: 2-d transposes with and without streaming stores and AVX2, aligned or not") {
  // Whole tiles and remainders of every tile shape (with AVX2 from the
  // caches, blocks 32 to 63 and 16 to 31 columns wide take narrower tiles);
  // streaming stores only where destination rows are 16-byte aligned.
  const vec shapes[] = {{8, 8}, {64, 128}, {37, 45}, {130, 70}, {16, 300}, {300, 16}, {70, 32}, {33, 20}, {40, 48}};
  for (const bool streaming : {false, true}) {
    for (const bool avx2 : {false, dlb::detail::has_avx2()}) {
      for (std::size_t itemsize : {1, 2, 4, 8, 16}) {
        for (const auto& shape : shapes) {
          for (std::int64_t misalign : {0, 8, 16, 1}) {
            CAPTURE(streaming);
            CAPTURE(avx2);
            CAPTURE(itemsize);
            CAPTURE(shape[0]);
            CAPTURE(misalign);
            const vec c = c_strides_of(shape), f{1, shape[0]};
            check_copy(shape, itemsize, f, c, 0, misalign, {1, streaming, avx2});
            check_copy(shape, itemsize, f, {shape[1] + 3, 1}, 0, misalign, {3, streaming, avx2});  // padded rows
            check_copy(shape, itemsize, {-1, shape[0]}, c, 0, misalign, {2, streaming, avx2});
          }
        }
      }
    }
  }
}

TEST_CASE("tiles: the machine's caches and the streaming threshold") {
  using dlb::detail::parse_cache_size;
  CHECK(parse_cache_size("48K\n") == 48 << 10);
  CHECK(parse_cache_size("32768K") == std::size_t(32) << 20);
  CHECK(parse_cache_size("2M") == std::size_t(2) << 20);
  CHECK(parse_cache_size("1G") == std::size_t(1) << 30);
  CHECK(parse_cache_size("64") == 64);
  CHECK(parse_cache_size("") == 0);
  CHECK(parse_cache_size("K") == 0);
  const auto& cpu = dlb::detail::host_cpu();
  CHECK(cpu.cpus >= 1);
  CHECK(cpu.last_level >= 1024);
  // A copy streams when its output would fill half the last-level cache,
  // believed up to 32 MiB: a guest that reports its host's whole L3 (480 MiB
  // on an Intel Xeon KVM guest) streams from 16 MiB on, as a small cache
  // still lowers the threshold.
  using dlb::detail::streaming_threshold;
  const std::uint64_t mib = 1 << 20;
  CHECK(streaming_threshold(480 * mib) == 16 * mib);
  CHECK(streaming_threshold(32 * mib) == 16 * mib);
  CHECK(streaming_threshold(64 * mib) == 16 * mib);
  CHECK(streaming_threshold(4 * mib) == 2 * mib);
  CHECK(streaming_threshold(0) == 0);
  const auto threshold = std::int64_t(streaming_threshold(cpu.last_level));
  CHECK(threshold <= std::int64_t(16 * mib));
  CHECK_FALSE(dlb::detail::uses_streaming_stores(threshold));
  CHECK(dlb::detail::uses_streaming_stores(threshold + 1));
  CHECK(dlb::detail::uses_streaming_stores(std::int64_t(128 * mib)));
  CHECK(dlb::detail::settings_for(std::int64_t(128 * mib)).streaming);
}

#if defined(DLB_AVX2)
// The tile loop each block takes (chosen, not run: no AVX2 CPU needed). From
// the caches with AVX2, a block narrower than the 64-column tile takes the
// widest of 32 and 16 columns it fills, so that its whole tiles transpose in
// vectors instead of the partial-tile path; narrower blocks the 16-byte tile.
TEST_CASE("tiles: the tile loop for each block width, setting and element size") {
  using namespace dlb::detail;
  // (Compared in parentheses: doctest cannot print a function pointer.)
  const copy_settings cached_avx2{1, false, true}, streaming_avx2{1, true, true}, plain{1, false, false};
  CHECK((tiles_for<4>(cached_avx2, 3000) == &copy_tiles_avx2<4, cached_tile_avx2<64>>));
  CHECK((tiles_for<4>(cached_avx2, 64) == &copy_tiles_avx2<4, cached_tile_avx2<64>>));
  CHECK((tiles_for<4>(cached_avx2, 63) == &copy_tiles_avx2<4, cached_tile_avx2<32>>));
  CHECK((tiles_for<4>(cached_avx2, 32) == &copy_tiles_avx2<4, cached_tile_avx2<32>>));
  CHECK((tiles_for<4>(cached_avx2, 31) == &copy_tiles_avx2<4, cached_tile_avx2<16>>));
  CHECK((tiles_for<8>(cached_avx2, 16) == &copy_tiles_avx2<8, cached_tile_avx2<16>>));
  CHECK((tiles_for<8>(cached_avx2, 15) == &copy_tiles<8, cached_tile<8>>));
  CHECK((tiles_for<8>(streaming_avx2, 16) == &copy_tiles_avx2<8, streaming_tile<8>>));
  CHECK((tiles_for<4>(plain, 64) == &copy_tiles<4, cached_tile<4>>));
  CHECK((tiles_for<2>(cached_avx2, 64) == &copy_tiles<2, cached_tile<2>>));  // no vector blocks for 2-byte elements
}
#endif
