// dlbridge/copy/threads.hpp: copies split among threads, the thread limit
// and the copy state that holds it.
#include <thread>

#include "copy_reference.hpp"

// What threads and streaming stores change: the walk is split into pieces
// along one axis (the outermost with enough indices, else the longest, in
// runs of whole 64-element blocks), and whole tile rows of 16-byte aligned
// destinations are written past the caches. Neither may change a byte.
TEST_CASE("threads: pieces and streaming stores give the bytes of the plain walk") {
  std::mt19937 rng(15);
  const std::size_t itemsizes[] = {1, 2, 3, 4, 8, 12, 16};
  const std::int64_t largest[] = {1000, 300, 70, 20};  // by ndim - 1
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    const std::size_t ndim = 1 + rng() % 4;
    vec shape(ndim);
    for (auto& e : shape) e = 1 + std::int64_t(rng() % std::uint64_t(largest[ndim - 1]));
    vec perm(ndim);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const vec c = c_strides_of(shape);
    vec src_strides(ndim);
    for (std::size_t i = 0; i < ndim; ++i) src_strides[i] = c[std::size_t(perm[i])] * (rng() % 5 == 0 ? -1 : 1);
    const std::size_t itemsize = itemsizes[rng() % 7];
    const engine_run run{1 + unsigned(rng() % 7), rng() % 2 == 0, rng() % 2 == 0 && dlb::detail::has_avx2()};
    CAPTURE(itemsize);
    CAPTURE(run.parts);
    CAPTURE(run.streaming);
    CAPTURE(run.avx2);
    // Destinations at every alignment, which decides where streaming stores go.
    check_copy(shape, itemsize, src_strides, c, 0, std::int64_t(rng() % 17), run);
  }
}

TEST_CASE("threads: a walk in more pieces than any axis has indices") {
  // Every axis shorter than the pieces asked for: the longest is split, one index a piece.
  check_copy({3, 5}, 4, {1, 3}, {5, 1}, 0, 0, {8, false});
  check_copy({2, 2, 2}, 8, {1, 2, 4}, {4, 2, 1}, 0, 0, {64, true});
  check_copy({7}, 2, {1}, {1}, 0, 0, {100, false});
}

TEST_CASE("threads: copy_threads, set_copy_threads and the pieces a copy is split into") {
  const unsigned fallback = dlb::copy_threads();
  CHECK(fallback >= 1);
  CHECK(fallback <= 8);
  CHECK(fallback <= dlb::detail::host_cpu().cpus);
  dlb::set_copy_threads(3);
  CHECK(dlb::copy_threads() == 3);
  const std::int64_t mib = 1 << 20;
  CHECK(dlb::detail::copy_parts(0) == 1);
  CHECK(dlb::detail::copy_parts(8 * mib - 1) == 1);
  CHECK(dlb::detail::copy_parts(8 * mib) == 2);
  CHECK(dlb::detail::copy_parts(1024 * mib) == 3);
  dlb::set_copy_threads(1);
  CHECK(dlb::detail::copy_parts(1024 * mib) == 1);
  dlb::set_copy_threads(0);
  CHECK(dlb::copy_threads() == fallback);
}

TEST_CASE("threads: large copies on several threads equal the copy on one") {
  // 24 MiB: three pieces of 8 MiB with three threads; a transpose, a
  // reversed copy and a contiguous one, each compared with one thread's.
  const std::int64_t rows = 2048, cols = 3072;
  std::vector<float> src(std::size_t(rows * cols));
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = float(i % 65521) + 0.25f;
  const dlb::dtype f32{dlb::kDLFloat, 32};
  struct layout {
    vec shape, src_strides, dst_strides;
  };
  const layout layouts[] = {{{cols, rows}, {1, cols}, {rows, 1}},
                            {{rows, cols}, {-cols, -1}, {cols, 1}},
                            {{rows * cols}, {1}, {1}}};
  for (const auto& [shape, src_strides, dst_strides] : layouts) {
    const float* first = src_strides[0] < 0 ? src.data() + rows * cols - 1 : src.data();
    std::vector<float> want(src.size()), one(src.size()), three(src.size());
    reference_copy(shape, 4, reinterpret_cast<const unsigned char*>(first), src_strides,
                   reinterpret_cast<unsigned char*>(want.data()), dst_strides);
    dlb::set_copy_threads(1);
    dlb::copy_strided(shape, f32, first, src_strides, one.data(), dst_strides);
    dlb::set_copy_threads(3);
    REQUIRE(dlb::detail::copy_parts(std::int64_t(src.size() * 4)) == 3);
    dlb::copy_strided(shape, f32, first, src_strides, three.data(), dst_strides);
    CHECK(one == want);
    CHECK(three == want);
  }
  dlb::set_copy_threads(0);
}

TEST_CASE("threads: large casts on several threads equal the cast on one") {
  // 6M float32 (24 MiB, 48 MiB as float64): three pieces with three threads.
  const std::int64_t rows = 2048, cols = 3072;
  std::vector<float> src(std::size_t(rows * cols));
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = float(i % 65521) * 0.37f - 1000.0f;
  const dlb::dtype f32{dlb::kDLFloat, 32}, f64{dlb::kDLFloat, 64};
  for (const bool transposed : {false, true}) {
    const vec shape = transposed ? vec{cols, rows} : vec{rows, cols};
    const vec strides = transposed ? vec{1, cols} : vec{cols, 1};
    const vec c = c_strides_of(shape);
    std::vector<double> one(src.size()), three(src.size());
    dlb::set_copy_threads(1);
    dlb::cast_strided(shape, f32, src.data(), strides, f64, one.data(), c);
    dlb::set_copy_threads(3);
    dlb::cast_strided(shape, f32, src.data(), strides, f64, three.data(), c);
    CHECK(one == three);
    CHECK(one == reference_cast<float, double>(shape, f32, src.data(), strides, f64));
  }
  dlb::set_copy_threads(0);
}

// The copy state: copy_threads() and set_copy_threads() read and write the
// state in use, this program's own until use_copy_state() names another (as
// a Python extension module does with dlbridge's).
TEST_CASE("threads: the copy state in use, this program's own or another one") {
  dlb::copy_state& own = dlb::copy_state_in_use();
  CHECK(&dlb::copy_state_in_use() == &own);
  const unsigned fallback = dlb::copy_threads();
  dlb::copy_state other;
  other.thread_limit = 5;
  dlb::use_copy_state(other);
  CHECK(&dlb::copy_state_in_use() == &other);
  CHECK(dlb::copy_threads() == 5);
  CHECK(dlb::detail::copy_parts(std::int64_t(1) << 30) == 5);
  dlb::set_copy_threads(2);
  CHECK(other.thread_limit == 2);
  CHECK(own.thread_limit == 0);  // the own state is left alone
  dlb::set_copy_threads(0);
  CHECK(dlb::copy_threads() == fallback);
  // Switched from other threads while copies read it: each sees one or the other.
  dlb::copy_state three;
  three.thread_limit = 3;
  std::vector<std::thread> switchers;
  for (int t = 0; t < 4; ++t)
    switchers.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        dlb::use_copy_state(i % 2 ? three : other);
        const unsigned n = dlb::copy_threads();
        if (n != 3 && n != fallback) FAIL_CHECK("copy_threads() read ", n);
      }
      (void)t;
    });
  for (auto& t : switchers) t.join();
  dlb::use_copy_state(own);
  CHECK(&dlb::copy_state_in_use() == &own);
  CHECK(dlb::copy_threads() == fallback);
}
