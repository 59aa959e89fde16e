// dlbridge/host_copy.hpp: copy_strided, cast_strided, astype and copy, checked
// against a naive element-by-element reference loop (copy_reference.hpp). The
// tile policy's own cases are in test_copy_tiles.cpp, the threads' and the
// copy state's in test_copy_threads.cpp.
#include "copy_reference.hpp"

TEST_CASE("copy: contiguous, transposed, negative and broadcast sources") {
  for (std::size_t itemsize : {1, 2, 4, 8, 16}) {
    CAPTURE(itemsize);
    const vec shape{3, 4, 5};
    const vec c = c_strides_of(shape);
    check_copy(shape, itemsize, c, c);                          // plain memcpy
    check_copy(shape, itemsize, {1, 3, 12}, c);                 // F order -> C order
    check_copy(shape, itemsize, c, {1, 3, 12});                 // C order -> F order
    check_copy(shape, itemsize, {5, 15, 1}, c);                 // permuted axes
    check_copy(shape, itemsize, {-20, -5, -1}, c);              // fully reversed
    check_copy(shape, itemsize, {20, -5, 1}, c);                // one axis reversed
    check_copy(shape, itemsize, {0, 5, 1}, c);                  // broadcast outer axis
    check_copy(shape, itemsize, {0, 0, 0}, c);                  // one value everywhere
    check_copy(shape, itemsize, {4, 1, 0}, c);                  // broadcast inner axis
    check_copy(shape, itemsize, {40, 10, 2}, c);                // gaps
    check_copy(shape, itemsize, c, {-20, -5, -1});              // reversed destination
    check_copy(shape, itemsize, {1, 3, 12}, {40, 10, 2});       // gaps in the destination
    check_copy(shape, itemsize, {-1, 6, -24}, {2, -6, 24});     // both odd
  }
}

TEST_CASE("copy: the tiled axis of a plan whose source stride is INT64_MIN") {
  // A source axis of extent 2 and stride INT64_MIN (1-byte elements; its span
  // is wider than int64, which validate() accepts) is walked least closely:
  // its magnitude is 2^63, not negative (UBSan before the fix).
  constexpr auto int64_min = std::numeric_limits<std::int64_t>::min();
  dlb::detail::strided_plan p{.ndim = 2, .extent = {2, 8}, .dst = {8, 1}, .src = {int64_min, 2}};
  CHECK(dlb::detail::tile_axis(p) == -1);
  p.src[0] = 1;
  p.src[1] = int64_min;
  CHECK(dlb::detail::tile_axis(p) == 0);
}

TEST_CASE("copy: 0-d, extent-1 and empty shapes") {
  check_copy({}, 8, {}, {});
  check_copy({1, 1}, 4, {99, -7}, {5, 3});
  check_copy({1, 6, 1}, 2, {0, -1, 1000}, {6, 1, 1});
  // Nothing is written for an empty shape.
  bytes src(64, 1), dst(64, 2);
  dlb::copy_strided(vec{0, 4}, dlb::dtype{dlb::kDLInt, 32}, src.data(), vec{4, 1}, dst.data(), vec{4, 1});
  CHECK(dst == bytes(64, 2));
}

TEST_CASE("copy: copy_strided of complex128 (16-byte elements)") {
  std::vector<std::complex<double>> src(6);
  for (int i = 0; i < 6; ++i) src[std::size_t(i)] = {double(i), double(-i) - 0.5};
  std::vector<std::complex<double>> dst(6);
  // Transpose a (2, 3) C array into a (3, 2) C array.
  dlb::copy_strided(vec{3, 2}, dlb::dtype{dlb::kDLComplex, 128}, src.data(), vec{1, 3}, dst.data(), vec{2, 1});
  const int order[] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) CHECK(dst[std::size_t(i)] == src[std::size_t(order[i])]);
}

TEST_CASE("copy: random layouts against the reference loop") {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 300; ++trial) {
    CAPTURE(trial);
    const std::size_t ndim = rng() % 5;
    vec shape(ndim);
    for (auto& e : shape) e = 1 + std::int64_t(rng() % 4);
    auto random_strides = [&] {
      vec order(ndim);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      vec s(ndim);
      std::int64_t step = 1 + std::int64_t(rng() % 2);
      for (auto axis : order) {
        s[std::size_t(axis)] = step;
        step *= shape[std::size_t(axis)] + std::int64_t(rng() % 2);
      }
      return s;
    };
    vec src_strides = random_strides(), dst_strides = random_strides();
    for (auto& v : src_strides) {
      if (rng() % 3 == 0) v = -v;
      if (rng() % 6 == 0) v = 0;
    }
    for (auto& v : dst_strides)
      if (rng() % 3 == 0) v = -v;  // destinations never broadcast
    const std::size_t itemsizes[] = {1, 2, 4, 8, 16};
    check_copy(shape, itemsizes[rng() % 5], src_strides, dst_strides);
  }
}

TEST_CASE("copy: random permutations of larger arrays against the reference loop") {
  std::mt19937 rng(7);
  const std::size_t itemsizes[] = {1, 2, 3, 4, 8, 12, 16};
  const std::int64_t largest[] = {0, 0, 300, 45, 15};  // by ndim: up to ~100k elements
  for (int trial = 0; trial < 150; ++trial) {
    CAPTURE(trial);
    const std::size_t ndim = 2 + rng() % 3;
    vec shape(ndim);
    for (auto& e : shape) e = 1 + std::int64_t(rng() % std::uint64_t(largest[ndim]));
    auto random_strides = [&](bool broadcast) {
      vec order(ndim);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      vec s(ndim);
      std::int64_t step = 1 + std::int64_t(rng() % 3 == 0);
      for (auto axis : order) {
        s[std::size_t(axis)] = step;
        step *= shape[std::size_t(axis)] + std::int64_t(rng() % 4 == 0);
      }
      for (auto& v : s) {
        if (rng() % 4 == 0) v = -v;
        if (broadcast && rng() % 8 == 0) v = 0;
      }
      return s;
    };
    const vec src_strides = random_strides(true), dst_strides = random_strides(false);
    const std::size_t itemsize = itemsizes[rng() % 7];
    CAPTURE(itemsize);
    check_copy(shape, itemsize, src_strides, dst_strides, std::int64_t(rng() % 4), std::int64_t(rng() % 4));
  }
}

TEST_CASE("copy: the common permutations of 3-d and 4-d arrays") {
  const vec shape3{10, 33, 40}, shape4{3, 17, 20, 9};
  const std::vector<vec> perms3{{0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  const std::vector<vec> perms4{{0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0}, {2, 3, 0, 1}, {1, 0, 3, 2}};
  for (std::size_t itemsize : {1, 4, 8, 16}) {
    for (const auto& [shape, perms] : {std::pair{shape3, perms3}, std::pair{shape4, perms4}}) {
      const vec c = c_strides_of(shape);
      for (const auto& perm : perms) {
        // The view a.transpose(perm) of a C-contiguous a, copied to C order.
        vec view_shape(perm.size()), view_strides(perm.size());
        for (std::size_t i = 0; i < perm.size(); ++i) {
          view_shape[i] = shape[std::size_t(perm[i])];
          view_strides[i] = c[std::size_t(perm[i])];
        }
        CAPTURE(itemsize);
        CAPTURE(perm.size());
        CAPTURE(perm[0]);
        check_copy(view_shape, itemsize, view_strides, c_strides_of(view_shape));
      }
    }
  }
}

TEST_CASE("copy: packed sub-byte data is copied as whole bytes") {
  const dlb::dtype f4{dlb::kDLFloat4_e2m1fn, 4};
  const bytes src{0x21, 0x43, 0x65, 0x87, 0xA9};
  bytes dst(8, 0xEE);
  dlb::copy_strided(vec{7}, f4, src.data(), vec{1}, dst.data(), vec{1});  // 7 nibbles: 4 bytes
  CHECK(dst == bytes{0x21, 0x43, 0x65, 0x87, 0xEE, 0xEE, 0xEE, 0xEE});
  const dlb::dtype f6{dlb::kDLFloat6_e2m3fn, 6};
  bytes dst6(8, 0xEE);
  dlb::copy_strided(vec{2, 2}, f6, src.data(), vec{2, 1}, dst6.data(), vec{2, 1});  // 24 bits
  CHECK(dst6 == bytes{0x21, 0x43, 0x65, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE});
}

TEST_CASE("cast: int32 to float64 from a transposed source") {
  std::vector<std::int32_t> src{1, -2, 3, -4, 5, -6};  // (2, 3) C order
  std::vector<double> dst(6, -99);
  dlb::cast_strided(vec{3, 2}, dlb::dtype{dlb::kDLInt, 32}, src.data(), vec{1, 3}, dlb::dtype{dlb::kDLFloat, 64},
                    dst.data(), vec{2, 1});
  CHECK(dst == std::vector<double>{1, -4, -2, 5, 3, -6});
}

TEST_CASE("cast: float64 to int8 and uint8 truncate and saturate") {
  const std::vector<double> src{1.9, -1.9, 300, -300, std::nan(""), 127.5};
  std::vector<std::int8_t> s8(6);
  dlb::cast_strided(vec{6}, dlb::dtype{dlb::kDLFloat, 64}, src.data(), vec{1}, dlb::dtype{dlb::kDLInt, 8},
                    s8.data(), vec{1});
  CHECK(s8 == std::vector<std::int8_t>{1, -1, 127, -128, 0, 127});
  std::vector<std::uint8_t> u8(6);
  dlb::cast_strided(vec{6}, dlb::dtype{dlb::kDLFloat, 64}, src.data(), vec{1}, dlb::dtype{dlb::kDLUInt, 8},
                    u8.data(), vec{1});
  CHECK(u8 == std::vector<std::uint8_t>{1, 0, 255, 0, 0, 127});
}

TEST_CASE("cast: float32 <-> float16 with a reversed source") {
  const std::vector<float> src{1.0f, -2.0f, 65504.0f, 1e6f, 0.1f};
  std::vector<std::uint16_t> half(5);
  dlb::cast_strided(vec{5}, dlb::dtype{dlb::kDLFloat, 32}, src.data() + 4, vec{-1}, dlb::dtype{dlb::kDLFloat, 16},
                    half.data(), vec{1});
  CHECK(half == std::vector<std::uint16_t>{0x2E66, 0x7C00, 0x7BFF, 0xC000, 0x3C00});
  std::vector<float> back(5);
  dlb::cast_strided(vec{5}, dlb::dtype{dlb::kDLFloat, 16}, half.data(), vec{1}, dlb::dtype{dlb::kDLFloat, 32},
                    back.data(), vec{1});
  CHECK(back[0] == doctest::Approx(0.1f).epsilon(1e-3));
  CHECK(std::isinf(back[1]));
  CHECK(back[2] == 65504.0f);
  CHECK(back[3] == -2.0f);
  CHECK(back[4] == 1.0f);
}

TEST_CASE("cast: to and from packed float4") {
  const dlb::dtype f4{dlb::kDLFloat4_e2m1fn, 4};
  // A transposed (2, 3) float32 source into a C-contiguous (3, 2) float4.
  const std::vector<float> src{0.5f, 1.0f, 1.5f, -2.0f, -3.0f, 100.0f};  // (2, 3) C order
  bytes packed(4, 0xFF);
  dlb::cast_strided(vec{3, 2}, dlb::dtype{dlb::kDLFloat, 32}, src.data(), vec{1, 3}, f4, packed.data(),
                    vec{2, 1});
  // Logical order: 0.5, -2, 1, -3, 1.5, 100 -> codes 1, C, 2, D, 3, 7 (saturated).
  CHECK(packed[0] == 0xC1);
  CHECK(packed[1] == 0xD2);
  CHECK(packed[2] == 0x73);
  CHECK(packed[3] == 0xFF);  // past the data: untouched
  std::vector<double> back(6);
  dlb::cast_strided(vec{3, 2}, f4, packed.data(), vec{2, 1}, dlb::dtype{dlb::kDLFloat, 64}, back.data(),
                    vec{1, 3});  // into F order
  // back is (3, 2) in F order: column 0 then column 1.
  CHECK(back == std::vector<double>{0.5, 1.0, 1.5, -2.0, -3.0, 6.0});
}

TEST_CASE("cast: bool, complex, unsigned and broadcast") {
  const std::vector<std::int32_t> ints{0, 5, -1};
  std::vector<std::uint8_t> flags(3);
  dlb::cast_strided(vec{3}, dlb::dtype{dlb::kDLInt, 32}, ints.data(), vec{1}, dlb::dtype{dlb::kDLBool, 8},
                    flags.data(), vec{1});
  CHECK(flags == std::vector<std::uint8_t>{0, 1, 1});

  const std::vector<std::complex<double>> wide{{1.5, -2.5}, {1e300, 0}};
  std::vector<std::complex<float>> narrow(2);
  dlb::cast_strided(vec{2}, dlb::dtype{dlb::kDLComplex, 128}, wide.data(), vec{1}, dlb::dtype{dlb::kDLComplex, 64},
                    narrow.data(), vec{1});
  CHECK(narrow[0] == std::complex<float>(1.5f, -2.5f));
  CHECK(std::isinf(narrow[1].real()));

  const std::vector<std::uint8_t> u{0, 200, 255};
  std::vector<std::int8_t> s(3);
  dlb::cast_strided(vec{3}, dlb::dtype{dlb::kDLUInt, 8}, u.data(), vec{1}, dlb::dtype{dlb::kDLInt, 8}, s.data(),
                    vec{1});
  CHECK(s == std::vector<std::int8_t>{0, -56, -1});

  // One value broadcast over a (2, 3) destination.
  const std::int16_t one = 7;
  std::vector<float> filled(6);
  dlb::cast_strided(vec{2, 3}, dlb::dtype{dlb::kDLInt, 16}, &one, vec{0, 0}, dlb::dtype{dlb::kDLFloat, 32},
                    filled.data(), vec{3, 1});
  CHECK(filled == std::vector<float>(6, 7.0f));
}

TEST_CASE("cast: random layouts against the reference loop") {
  std::mt19937 rng(99);
  const dlb::dtype i16{dlb::kDLInt, 16}, f64{dlb::kDLFloat, 64}, bf16{dlb::kDLBfloat, 16};
  for (int trial = 0; trial < 100; ++trial) {
    CAPTURE(trial);
    const vec shape{1 + std::int64_t(rng() % 3), 1 + std::int64_t(rng() % 4), 1 + std::int64_t(rng() % 3)};
    const std::int64_t n = shape[0] * shape[1] * shape[2];
    std::vector<std::int16_t> src(static_cast<std::size_t>(n));
    for (auto& v : src) v = std::int16_t(rng());
    // A permuted, partly reversed view of src.
    vec order{0, 1, 2};
    std::shuffle(order.begin(), order.end(), rng);
    vec strides(3);
    std::int64_t step = 1;
    for (auto axis : order) {
      strides[std::size_t(axis)] = step;
      step *= shape[std::size_t(axis)];
    }
    std::int64_t first = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      if (rng() % 2) {
        first += (shape[i] - 1) * strides[i];
        strides[i] = -strides[i];
      }
    }
    const auto* base = src.data() + first;
    const auto c = c_strides_of(shape);
    std::vector<double> got(static_cast<std::size_t>(n));
    dlb::cast_strided(shape, i16, base, strides, f64, got.data(), c);
    CHECK(got == reference_cast<std::int16_t, double>(shape, i16, base, strides, f64));
    std::vector<std::uint16_t> got16(static_cast<std::size_t>(n));
    dlb::cast_strided(shape, i16, base, strides, bf16, got16.data(), c);
    CHECK(got16 == reference_cast<std::int16_t, std::uint16_t>(shape, i16, base, strides, bf16));
  }
}

// The cast engine's paths, each against store(load()) element by element,
// byte for byte (the untouched bytes of the destination included): runs
// contiguous on both sides, tiles for transposes (extents of 8 and more,
// with remainders), pieces of strided rows through the gather buffer
// (longer than it, too), reversed axes on either side, broadcasts, gaps,
// unaligned addresses, pairs with a typed loop and pairs without one, and
// the walk split into pieces as threads run it.
TEST_CASE("cast: every path of the engine, typed and not, in pieces, against store(load())") {
  using dlb::dtype;
  const std::pair<dtype, dtype> pairs[] = {
      {dtype{dlb::kDLFloat, 32}, dtype{dlb::kDLFloat, 64}},      {dtype{dlb::kDLFloat, 64}, dtype{dlb::kDLFloat, 32}},
      {dtype{dlb::kDLInt, 32}, dtype{dlb::kDLFloat, 32}},        {dtype{dlb::kDLFloat, 64}, dtype{dlb::kDLInt, 8}},
      {dtype{dlb::kDLBool, 8}, dtype{dlb::kDLFloat, 64}},        {dtype{dlb::kDLUInt, 8}, dtype{dlb::kDLBfloat, 16}},
      {dtype{dlb::kDLFloat, 16}, dtype{dlb::kDLInt, 64}},        {dtype{dlb::kDLInt, 64}, dtype{dlb::kDLUInt, 16}},
      {dtype{dlb::kDLFloat8_e4m3fn, 8}, dtype{dlb::kDLFloat, 32}},  // no typed loop
      {dtype{dlb::kDLFloat, 32}, dtype{dlb::kDLComplex, 64}},       // no typed loop
      {dtype{dlb::kDLFloat, 32}, dtype{dlb::kDLFloat, 32}},         // from == to: no typed loop
  };
  std::mt19937 rng(1515);
  const std::int64_t largest[] = {3000, 300, 60, 20};  // by ndim - 1
  for (int trial = 0; trial < 240; ++trial) {
    CAPTURE(trial);
    const auto& [from, to] = pairs[std::size_t(trial) % std::size(pairs)];
    CHECK(((dlb::converter(from, to) != nullptr) == (std::size_t(trial) % std::size(pairs) < 8)));
    const std::size_t ndim = 1 + rng() % 4;
    vec shape(ndim);
    for (auto& e : shape) e = 1 + std::int64_t(rng() % std::uint64_t(largest[ndim - 1]));
    auto random_strides = [&](bool broadcast) {
      vec order(ndim);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      vec strides(ndim);
      std::int64_t step = 1 + std::int64_t(rng() % 4 == 0);
      for (auto axis : order) {
        strides[std::size_t(axis)] = step;
        step *= shape[std::size_t(axis)] + std::int64_t(rng() % 4 == 0);
      }
      for (auto& v : strides) {
        if (rng() % 4 == 0) v = -v;
        if (broadcast && rng() % 8 == 0) v = 0;
      }
      return strides;
    };
    const vec src_strides = random_strides(true);
    const vec dst_strides = rng() % 2 ? c_strides_of(shape) : random_strides(false);
    const unsigned parts = 1 + unsigned(rng() % 5);
    CAPTURE(ndim);
    CAPTURE(parts);
    strided_buffer src(shape, src_strides, from.itemsize(), 3, std::int64_t(rng() % 3));
    strided_buffer got(shape, dst_strides, to.itemsize(), 90, std::int64_t(rng() % 3));
    strided_buffer want = got;
    const auto from_size = std::int64_t(from.itemsize()), to_size = std::int64_t(to.itemsize());
    for_each_index(shape, src_strides, dst_strides, [&](std::int64_t so, std::int64_t dof) {
      dlb::store(to, want.first() + dof * to_size, dlb::load(from, src.first() + so * from_size));
    });
    dlb::detail::cast_plan(dlb::detail::make_strided_plan(shape, dst_strides, src_strides),
                           {dlb::converter(from, to), from, to}, reinterpret_cast<std::byte*>(got.first()),
                           reinterpret_cast<const std::byte*>(src.first()), parts);
    CHECK(got.storage == want.storage);
  }
}

TEST_CASE("astype: a transposed view becomes a C-contiguous tensor of the new dtype") {
  auto t = dlb::tensor::empty(vec{2, 3}, dlb::dtype{dlb::kDLInt, 32});
  auto* p = static_cast<std::int32_t*>(t.data());
  for (int i = 0; i < 6; ++i) p[i] = i * 10;
  const auto view = t.restrided(t.data(), vec{3, 2}, vec{1, 3});
  const auto out = dlb::astype(view, dlb::dtype{dlb::kDLFloat, 32});
  CHECK(out.type() == dlb::dtype{dlb::kDLFloat, 32});
  CHECK(out.is_c_contiguous());
  CHECK(out.data() != t.data());
  CHECK(out.use_count() == 1);
  CHECK(t.use_count() == 2);  // t and the view; the result owns new memory
  const auto* q = static_cast<const float*>(out.data());
  const float want[] = {0, 30, 10, 40, 20, 50};
  for (int i = 0; i < 6; ++i) CHECK(q[i] == want[i]);
}

TEST_CASE("astype: same dtype copies; copy() is writable and independent") {
  auto t = dlb::tensor::empty(vec{4}, dlb::dtype{dlb::kDLFloat, 64});
  auto* p = static_cast<double*>(t.data());
  for (int i = 0; i < 4; ++i) p[i] = i + 0.5;
  t.make_readonly();
  const auto reversed = t.restrided(p + 3, vec{4}, vec{-1});
  auto c = dlb::copy(reversed);
  CHECK_FALSE(c.readonly());
  CHECK(c.type() == t.type());
  CHECK(c.stride(0) == 1);
  auto* q = static_cast<double*>(c.data());
  CHECK(q[0] == 3.5);
  CHECK(q[3] == 0.5);
  q[0] = -1;
  CHECK(p[3] == 3.5);
}

TEST_CASE("astype: empty, 0-d and sub-byte tensors") {
  auto none = dlb::astype(dlb::tensor::empty(vec{0, 3}, dlb::dtype{dlb::kDLInt, 8}), dlb::dtype{dlb::kDLFloat, 32});
  CHECK(none.size() == 0);
  CHECK(none.shape(1) == 3);

  auto scalar = dlb::tensor::empty(vec{}, dlb::dtype{dlb::kDLFloat, 64});
  *static_cast<double*>(scalar.data()) = -2.75;
  auto as_int = dlb::astype(scalar, dlb::dtype{dlb::kDLInt, 64});
  CHECK(*static_cast<std::int64_t*>(as_int.data()) == -2);

  auto floats = dlb::tensor::empty(vec{5}, dlb::dtype{dlb::kDLFloat, 32});
  auto* f = static_cast<float*>(floats.data());
  const float values[] = {0.5f, -1.0f, 6.0f, 2.5f, 0.0f};
  std::copy(values, values + 5, f);
  auto packed = dlb::astype(floats, dlb::dtype{dlb::kDLFloat4_e2m1fn, 4});
  CHECK(packed.nbytes() == 3);
  const auto* b = static_cast<const std::uint8_t*>(packed.data());
  CHECK(b[0] == 0xA1);         // 0.5 -> 1, -1 -> A
  CHECK(b[1] == 0x47);         // 6 -> 7, 2.5 -> 4 (ties to even)
  CHECK((b[2] & 0x0F) == 0x0);
  auto again = dlb::copy(packed);
  CHECK(std::memcmp(again.data(), packed.data(), 2) == 0);
  CHECK((static_cast<const std::uint8_t*>(again.data())[2] & 0x0F) == 0);
  auto back = dlb::astype(packed, dlb::dtype{dlb::kDLFloat, 32});
  const auto* r = static_cast<const float*>(back.data());
  const float want[] = {0.5f, -1.0f, 6.0f, 2.0f, 0.0f};
  for (int i = 0; i < 5; ++i) CHECK(r[i] == want[i]);
}

TEST_CASE("copy: large transposed tensors, wide and tall") {
  // Over 4 MiB (astype asks for huge pages), many tiles, wide and narrow.
  for (const auto& shape : {vec{1100, 1024}, vec{4100, 300}, vec{300, 4100}, vec{100, 11000}}) {
    auto t = dlb::tensor::empty(shape, dlb::dtype{dlb::kDLFloat, 32});
    auto* p = static_cast<float*>(t.data());
    const std::int64_t rows = shape[0], cols = shape[1];
    for (std::int64_t i = 0; i < rows * cols; ++i) p[i] = float(i);
    const auto view = t.restrided(t.data(), vec{cols, rows}, vec{1, cols});
    const auto out = dlb::copy(view);
    const auto* q = static_cast<const float*>(out.data());
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < cols; ++i)
      for (std::int64_t j = 0; j < rows; ++j) wrong += q[i * rows + j] != p[j * cols + i];
    CHECK(wrong == 0);
  }
}

TEST_CASE("astype: refuses memory the CPU cannot read") {
  auto gpu = dlb::tensor::adopt(reinterpret_cast<void*>(std::uintptr_t(0x1000)), dlb::dtype{dlb::kDLFloat, 32},
                                dlb::device{dlb::kDLCUDA, 0}, vec{4}, {}, false, nullptr, nullptr);
  CHECK_THROWS_WITH_AS((void)dlb::astype(gpu, dlb::dtype{dlb::kDLFloat, 64}),
                       "copying on the CPU needs host-accessible memory", std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::copy(gpu), "copying on the CPU needs host-accessible memory", std::invalid_argument);
  // Pinned and managed memory are fine.
  std::vector<float> buf{1, 2};
  auto pinned = dlb::tensor::adopt(buf.data(), dlb::dtype{dlb::kDLFloat, 32}, dlb::device{dlb::kDLCUDAHost, 0},
                                   vec{2}, {}, false, nullptr, nullptr);
  auto out = dlb::astype(pinned, dlb::dtype{dlb::kDLInt, 32});
  CHECK(static_cast<std::int32_t*>(out.data())[1] == 2);
  CHECK(out.device() == dlb::device{dlb::kDLCPU, 0});
}
