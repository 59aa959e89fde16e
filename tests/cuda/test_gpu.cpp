// Test cases that need a CUDA device (skipped, with the reason, elsewhere):
// allocation, pointer classification, transfers, the strided copy, fill and
// cast kernels against the CPU engine, and stream ordering.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dlbridge/host_copy.hpp"
#include "dlbridge/cuda/all.hpp"
#include "gpu_test.hpp"
#include "layouts.hpp"
#include "slow_kernel.hpp"

namespace cr = dlb::cuda_runtime;
using dlb_test::layout;

namespace {

// A device buffer of raw bytes, and host mirrors of it.
struct device_bytes {
  dlb::tensor memory;
  explicit device_bytes(std::size_t n, cr::stream_t s = cr::legacy_stream())
      : memory(cr::empty_device(std::array<std::int64_t, 1>{std::int64_t(n)}, dlb::dtype_of<std::uint8_t>, s)) {}
  std::uint8_t* get() const { return static_cast<std::uint8_t*>(memory.data()); }
};

std::vector<std::uint8_t> random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) b = std::uint8_t(rng());
  return out;
}

std::vector<std::uint8_t> download(const void* src, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  cr::memcpy_async(out.data(), src, n, cr::legacy_stream());
  cr::synchronize(cr::legacy_stream());
  return out;
}

dlb::tensor host_tensor(const std::vector<std::int64_t>& shape, dlb::dtype type, const layout& l,
                        std::vector<std::uint8_t>& buffer) {
  auto* first = buffer.data() + l.offset * std::int64_t(type.itemsize());
  return dlb::tensor::adopt(first, type, {dlb::kDLCPU, 0}, shape, l.strides, false, nullptr, nullptr);
}

}  // namespace

GPU_TEST_CASE("empty_device allocates on the current device in stream order, and frees on release") {
  const int device = cr::current_device();
  cr::stream s;
  for (int i = 0; i < 200; ++i) {  // allocate and free repeatedly: the pool must not grow without bound
    const std::array<std::int64_t, 2> shape{512, 1024};
    dlb::tensor t = cr::empty_device(shape, dlb::dtype_of<float>, s.get());
    CHECK(t.device() == dlb::device{dlb::kDLCUDA, device});
    CHECK(t.is_c_contiguous());
    CHECK(t.nbytes() == 512 * 1024 * 4);
    CHECK(t.data() != nullptr);
  }
  s.synchronize();
  const dlb::tensor empty = cr::empty_device(std::array<std::int64_t, 2>{0, 5}, dlb::dtype_of<float>);
  CHECK(empty.data() == nullptr);
  CHECK(empty.device() == dlb::device{dlb::kDLCUDA, device});
  // Packed sub-byte memory starts zeroed.
  const dlb::tensor packed = cr::empty_device(std::array<std::int64_t, 1>{9}, {dlb::kDLFloat4_e2m1fn, 4});
  CHECK(download(packed.data(), 5) == std::vector<std::uint8_t>(5, 0));
}

GPU_TEST_CASE("a device tensor may be released on another thread after its stream's work") {
  cr::stream s;
  dlb::tensor t = cr::empty_device(std::array<std::int64_t, 1>{1 << 20}, dlb::dtype_of<std::uint8_t>, s.get());
  cr::fill(t, dlb::scalar::from_int(7), s.get());
  std::thread([moved = std::move(t)]() mutable { moved = dlb::tensor(); }).join();
  s.synchronize();
}

// Not under compute-sanitizer: memcheck reports the deliberately failed
// allocation as an API error.
GPU_TEST_CASE("allocation failures are cuda_error naming the call and the CUDA error" * dlb_test::not_under_sanitizer) {
  const std::array<std::int64_t, 1> huge{std::int64_t(1) << 52};
  try {
    (void)cr::empty_device(huge, dlb::dtype_of<std::uint8_t>);
    FAIL("no exception");
  } catch (const dlb::cuda_error& e) {
    CHECK(std::string(e.what()).rfind("cudaMallocFromPoolAsync(4503599627370496 bytes): cudaErrorMemoryAllocation: ", 0) == 0);
    CHECK(e.code() == cudaErrorMemoryAllocation);
  }
  CHECK_THROWS_WITH_AS((void)cr::empty_device(std::array<std::int64_t, 1>{-1}, dlb::dtype_of<float>), "negative extent",
                       std::invalid_argument);
}

GPU_TEST_CASE("pointer_device classifies device, pinned, managed, registered and plain host memory") {
  const int device = cr::current_device();
  const auto d = cr::empty_device(std::array<std::int64_t, 1>{16}, dlb::dtype_of<float>);
  const auto p = cr::empty_pinned(std::array<std::int64_t, 1>{16}, dlb::dtype_of<float>);
  const auto m = cr::empty_managed(std::array<std::int64_t, 1>{16}, dlb::dtype_of<float>);
  cr::synchronize(cr::legacy_stream());
  CHECK(cr::pointer_device(d.data()) == dlb::device{dlb::kDLCUDA, device});
  CHECK(cr::pointer_device(static_cast<float*>(d.data()) + 3) == dlb::device{dlb::kDLCUDA, device});
  CHECK(p.device() == dlb::device{dlb::kDLCUDAHost, 0});
  CHECK(cr::pointer_device(p.data()) == dlb::device{dlb::kDLCUDAHost, 0});
  CHECK(m.device() == dlb::device{dlb::kDLCUDAManaged, 0});
  CHECK(cr::pointer_device(m.data()) == dlb::device{dlb::kDLCUDAManaged, 0});
  void* plain = std::malloc(4096);
  int on_stack = 0;
  CHECK(cr::pointer_device(plain) == dlb::device{dlb::kDLCPU, 0});
  CHECK(cr::pointer_device(&on_stack) == dlb::device{dlb::kDLCPU, 0});
  CHECK(cr::pointer_device(nullptr) == dlb::device{dlb::kDLCPU, 0});
  REQUIRE(cudaHostRegister(plain, 4096, cudaHostRegisterDefault) == cudaSuccess);
  CHECK(cr::pointer_device(plain) == dlb::device{dlb::kDLCUDAHost, 0});
  CHECK(cudaHostUnregister(plain) == cudaSuccess);
  std::free(plain);
  // Pinned and managed memory are usable from the host directly.
  static_cast<float*>(p.data())[0] = 1.5f;
  static_cast<float*>(m.data())[0] = 2.5f;
  CHECK(static_cast<float*>(m.data())[0] == 2.5f);
}

GPU_TEST_CASE("host to device, device to host and device to device round trips are exact") {
  std::mt19937_64 rng(1);
  cr::stream s;
  for (const std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(1) << 22}) {
    const auto data = random_bytes(rng, n);
    device_bytes a(n, s.get()), b(n, s.get());
    cr::memcpy_async(a.get(), data.data(), n, s.get());
    cr::memcpy_async(b.get(), a.get(), n, s.get());
    std::vector<std::uint8_t> back(n);
    cr::memcpy_async(back.data(), b.get(), n, s.get());
    s.synchronize();
    CHECK(back == data);
  }
  // Through pinned memory, and with tensors.
  const std::array<std::int64_t, 2> shape{37, 19};
  const dlb::tensor pinned = cr::empty_pinned(shape, dlb::dtype_of<double>);
  for (std::int64_t i = 0; i < pinned.size(); ++i) static_cast<double*>(pinned.data())[i] = double(i) / 3;
  const dlb::tensor dev = cr::to_device(pinned, s.get());
  const dlb::tensor host = cr::to_host(dev, s.get());
  CHECK(host.device() == dlb::device{dlb::kDLCPU, 0});
  CHECK(std::memcmp(host.data(), pinned.data(), std::size_t(host.nbytes())) == 0);
}

GPU_TEST_CASE("copy_strided on the GPU matches dlb::copy_strided for random layouts") {
  std::mt19937_64 rng(7);
  cr::stream s;
  for (int trial = 0; trial < 400; ++trial) {
    const auto shape = dlb_test::random_shape(rng, int(rng() % 5), trial % 10 == 0 ? 70 : 7);
    const std::size_t itemsize = std::size_t(1) << (rng() % 5);
    const dlb::dtype type = dlb_test::opaque_type(itemsize);
    const layout sl = dlb_test::random_layout(rng, shape, true);
    const layout dl = trial % 3 == 0 ? dlb_test::transposed(shape) : dlb_test::random_layout(rng, shape, false);
    const std::size_t misalign = trial % 7 == 0 ? 1 : 0;  // unaligned elements: the byte path
    const auto src = random_bytes(rng, std::size_t(sl.buffer) * itemsize + 1);
    auto expected = random_bytes(rng, std::size_t(dl.buffer) * itemsize + 1);
    device_bytes dsrc(src.size(), s.get()), ddst(expected.size(), s.get());
    cr::memcpy_async(dsrc.get(), src.data(), src.size(), s.get());
    cr::memcpy_async(ddst.get(), expected.data(), expected.size(), s.get());
    const std::int64_t so = sl.offset * std::int64_t(itemsize), dof = dl.offset * std::int64_t(itemsize);
    if (misalign && src.size() > 1) {
      // Shift both sides by one byte inside the spare byte of each buffer.
      dlb::copy_strided(shape, type, src.data() + 1 + so, sl.strides, expected.data() + 1 + dof, dl.strides);
      cr::copy_strided(shape, type, dsrc.get() + 1 + so, sl.strides, ddst.get() + 1 + dof, dl.strides, s.get());
    } else {
      dlb::copy_strided(shape, type, src.data() + so, sl.strides, expected.data() + dof, dl.strides);
      cr::copy_strided(shape, type, dsrc.get() + so, sl.strides, ddst.get() + dof, dl.strides, s.get());
    }
    std::vector<std::uint8_t> got(expected.size());
    cr::memcpy_async(got.data(), ddst.get(), got.size(), s.get());
    s.synchronize();
    CAPTURE(trial);
    REQUIRE(got == expected);
  }
}

GPU_TEST_CASE("large 2-D and batched transposes (the tiled path) for every element size") {
  cr::stream s;
  std::mt19937_64 rng(3);
  for (const auto& shape : {std::vector<std::int64_t>{1000, 777}, std::vector<std::int64_t>{5, 129, 65},
                            std::vector<std::int64_t>{33, 2049}}) {
    for (const std::size_t itemsize : {1, 2, 4, 8, 16}) {
      const dlb::dtype type = dlb_test::opaque_type(itemsize);
      const layout sl = dlb_test::transposed(shape), dl = dlb_test::c_order(shape);
      const auto src = random_bytes(rng, std::size_t(sl.buffer) * itemsize);
      std::vector<std::uint8_t> expected(std::size_t(dl.buffer) * itemsize);
      dlb::copy_strided(shape, type, src.data(), sl.strides, expected.data(), dl.strides);
      device_bytes dsrc(src.size(), s.get()), ddst(expected.size(), s.get());
      cr::memcpy_async(dsrc.get(), src.data(), src.size(), s.get());
      cr::copy_strided(shape, type, dsrc.get(), sl.strides, ddst.get(), dl.strides, s.get());
      std::vector<std::uint8_t> got(expected.size());
      cr::memcpy_async(got.data(), ddst.get(), got.size(), s.get());
      s.synchronize();
      CAPTURE(itemsize);
      CHECK(got == expected);
    }
  }
}

GPU_TEST_CASE("every permutation of 3-D and 4-D arrays around the tile size, copied and cast on the GPU, matches the CPU engine") {
  // The shapes and permutations of test_replay.cpp's replays, run by the kernels.
  cr::stream s;
  std::mt19937_64 rng(29);
  const auto run = [&](const std::vector<std::int64_t>& shape, const layout& sl, const layout& dl, dlb::dtype from,
                       dlb::dtype to) {
    const auto src = random_bytes(rng, std::size_t(sl.buffer) * from.itemsize());
    auto expected = random_bytes(rng, std::size_t(dl.buffer) * to.itemsize());
    device_bytes dsrc(src.size(), s.get()), ddst(expected.size(), s.get());
    cr::memcpy_async(dsrc.get(), src.data(), src.size(), s.get());
    cr::memcpy_async(ddst.get(), expected.data(), expected.size(), s.get());
    if (from == to) {
      dlb::copy_strided(shape, from, src.data(), sl.strides, expected.data(), dl.strides);
      cr::copy_strided(shape, from, dsrc.get(), sl.strides, ddst.get(), dl.strides, s.get());
    } else {
      dlb::cast_strided(shape, from, src.data(), sl.strides, to, expected.data(), dl.strides);
      cr::cast_strided(shape, from, dsrc.get(), sl.strides, to, ddst.get(), dl.strides, s.get());
    }
    std::vector<std::uint8_t> got(expected.size());
    cr::memcpy_async(got.data(), ddst.get(), got.size(), s.get());
    s.synchronize();
    return got == expected;
  };
  const dlb::dtype f32 = dlb::dtype_of<float>, f64 = dlb::dtype_of<double>;
  dlb_test::for_each_permutation_case([&](const dlb_test::permutation_case& c) {
    CAPTURE(c.text);
    for (const std::size_t itemsize : {1u, 2u, 4u, 8u, 16u}) {
      CAPTURE(itemsize);
      REQUIRE(run(c.shape, c.src, c.dst, dlb_test::opaque_type(itemsize), dlb_test::opaque_type(itemsize)));
    }
    if (c.base.size() == 3 && c.base[0] * c.base[1] * c.base[2] <= 40'000) {
      REQUIRE(run(c.shape, c.src, c.dst, f32, f64));
      REQUIRE(run(c.shape, c.src, c.dst, f64, f32));
    }
  });
}

GPU_TEST_CASE("tensor copies between pageable host, pinned, managed and device memory, any layouts") {
  std::mt19937_64 rng(11);
  cr::stream s;
  const dlb::dtype types[] = {dlb::dtype_of<float>, dlb::dtype_of<std::int16_t>, dlb::dtype{dlb::kDLFloat, 16},
                              dlb::dtype{dlb::kDLBfloat, 16}, dlb::dtype_of<std::complex<double>>};
  for (int trial = 0; trial < 120; ++trial) {
    const auto shape = dlb_test::random_shape(rng, int(rng() % 4), 9);
    const dlb::dtype from = types[rng() % 5], to = types[rng() % 5];
    const layout sl = dlb_test::random_layout(rng, shape, true), dl = dlb_test::random_layout(rng, shape, false);
    auto src_bytes = random_bytes(rng, std::size_t(sl.buffer) * from.itemsize());
    for (std::size_t i = 0; i + 1 < src_bytes.size(); i += 2) src_bytes[i + 1] &= 0x3f;  // mostly finite values
    auto dst_bytes = random_bytes(rng, std::size_t(dl.buffer) * to.itemsize());
    const dlb::tensor host_src = host_tensor(shape, from, sl, src_bytes);
    // The CPU reference.
    std::vector<std::uint8_t> expected = dst_bytes;
    const dlb::tensor host_expected = host_tensor(shape, to, dl, expected);
    if (from == to) dlb::copy_strided(shape, from, host_src.data(), host_src.strides(), host_expected.data(), host_expected.strides());
    else dlb::cast_strided(shape, from, host_src.data(), host_src.strides(), to, host_expected.data(), host_expected.strides());
    // Host -> device (strided) -> host (strided).
    const dlb::tensor on_device = cr::to_device(host_src, s.get());
    std::vector<std::uint8_t> got = dst_bytes;
    const dlb::tensor host_dst = host_tensor(shape, to, dl, got);
    // Through a strided device intermediate of the destination's dtype.
    const dlb::tensor wide = cr::empty_device(shape, to, s.get());
    cr::copy(on_device, wide, s.get());
    cr::copy(wide, host_dst, s.get());
    CAPTURE(trial);
    CAPTURE(dlb::name(from));
    CAPTURE(dlb::name(to));
    REQUIRE(got == expected);
    // Pageable host straight into a strided pinned destination, and managed.
    const dlb::tensor pinned = cr::empty_pinned(std::array<std::int64_t, 1>{dl.buffer}, to);
    std::memcpy(pinned.data(), dst_bytes.data(), dst_bytes.size());
    const dlb::tensor pinned_view = pinned.restrided(static_cast<std::uint8_t*>(pinned.data()) + dl.offset * std::int64_t(to.itemsize()), shape, dl.strides);
    cr::copy(host_src, pinned_view, s.get());
    s.synchronize();
    CHECK(std::memcmp(pinned.data(), expected.data(), expected.size()) == 0);
  }
}

GPU_TEST_CASE("fill writes the element store() makes, through memset, words and bytes") {
  cr::stream s;
  std::mt19937_64 rng(5);
  const dlb::dtype types[] = {dlb::dtype_of<std::uint8_t>, dlb::dtype_of<float>, dlb::dtype_of<double>,
                              dlb::dtype{dlb::kDLFloat, 16}, dlb::dtype{dlb::kDLBfloat, 16},
                              dlb::dtype_of<std::complex<double>>, dlb::dtype{dlb::kDLFloat8_e4m3fn, 8}};
  for (int trial = 0; trial < 60; ++trial) {
    const auto shape = dlb_test::random_shape(rng, int(rng() % 4), 9);
    const dlb::dtype type = types[rng() % 7];
    const layout dl = trial % 2 ? dlb_test::c_order(shape) : dlb_test::random_layout(rng, shape, false);
    const dlb::scalar value = trial % 3 == 0 ? dlb::scalar::from_int(0) : dlb::scalar::from_real(-1.0 / 3);
    auto expected = random_bytes(rng, std::size_t(dl.buffer) * type.itemsize() + 1);
    device_bytes d(expected.size(), s.get());
    cr::memcpy_async(d.get(), expected.data(), expected.size(), s.get());
    const std::size_t shift = trial % 5 == 0 ? 1 : 0;  // unaligned
    alignas(16) unsigned char element[16] = {};
    dlb::store(type, element, value);
    const std::vector<std::int64_t> zeros(shape.size(), 0);
    const std::int64_t first = std::int64_t(shift) + dl.offset * std::int64_t(type.itemsize());
    dlb::copy_strided(shape, type, element, zeros, expected.data() + first, dl.strides);
    cr::fill(shape, type, d.get() + first, dl.strides, value, s.get());
    std::vector<std::uint8_t> got(expected.size());
    cr::memcpy_async(got.data(), d.get(), got.size(), s.get());
    s.synchronize();
    CAPTURE(trial);
    REQUIRE(got == expected);
  }
}

GPU_TEST_CASE("fill of packed float4 and float6 writes what dlb::fill writes, spare bits zero, nothing past the end") {
  cr::stream s;
  std::mt19937_64 rng(27);
  const dlb::dtype types[] = {{dlb::kDLFloat4_e2m1fn, 4}, {dlb::kDLFloat6_e2m3fn, 6}, {dlb::kDLFloat6_e3m2fn, 6}};
  const dlb::scalar values[] = {dlb::scalar::from_int(0), dlb::scalar::from_real(1.5), dlb::scalar::from_real(-3)};
  for (const dlb::dtype type : types) {
    for (const std::int64_t count : {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 1001, 4096 + 3}) {
      for (const dlb::scalar& value : values) {
        const auto bytes = std::size_t(type.storage_bytes(std::uint64_t(count)));
        auto expected = random_bytes(rng, bytes + 1);  // one byte past the end, which must stay
        device_bytes d(expected.size(), s.get());
        cr::memcpy_async(d.get(), expected.data(), expected.size(), s.get());
        dlb::fill(type, expected.data(), count, value);
        const std::array<std::int64_t, 1> shape{count}, strides{1};
        cr::fill(shape, type, d.get(), strides, value, s.get());
        std::vector<std::uint8_t> got(expected.size());
        cr::memcpy_async(got.data(), d.get(), got.size(), s.get());
        s.synchronize();
        CAPTURE(type.code);
        CAPTURE(count);
        REQUIRE(got == expected);
      }
    }
  }
  // Pinned and managed memory through the tensor call.
  for (const auto& t : {cr::empty_pinned(std::array<std::int64_t, 2>{3, 5}, types[1]),
                        cr::empty_managed(std::array<std::int64_t, 2>{3, 5}, types[1])}) {
    cr::fill(t, dlb::scalar::from_real(0.5), s.get());
    s.synchronize();
    std::vector<std::uint8_t> expected(std::size_t(t.nbytes()));
    dlb::fill(t.type(), expected.data(), t.size(), dlb::scalar::from_real(0.5));
    CHECK(std::memcmp(t.data(), expected.data(), expected.size()) == 0);
  }
}

GPU_TEST_CASE("float32 <-> float16 / bfloat16 casts on the GPU match element.hpp bit for bit") {
  cr::stream s;
  for (const dlb::dtype half : {dlb::dtype{dlb::kDLFloat, 16}, dlb::dtype{dlb::kDLBfloat, 16}}) {
    // Every 16-bit code to float32 and back.
    std::vector<std::uint16_t> codes(65536);
    for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = std::uint16_t(i);
    const std::array<std::int64_t, 1> n16{65536};
    const dlb::tensor src = dlb::tensor::adopt(codes.data(), half, {dlb::kDLCPU, 0}, n16, {}, true, nullptr, nullptr);
    const dlb::tensor wide = cr::to_device(src, s.get(), dlb::dtype_of<float>);
    const dlb::tensor back = cr::to_host(wide, s.get(), half);
    const dlb::tensor wide_host = cr::to_host(wide, s.get());
    const dlb::tensor expected_wide = dlb::astype(src, dlb::dtype_of<float>);
    CHECK(std::memcmp(wide_host.data(), expected_wide.data(), 65536 * 4) == 0);
    const dlb::tensor expected_back = dlb::astype(expected_wide, half);
    CHECK(std::memcmp(back.data(), expected_back.data(), 65536 * 2) == 0);
    // Random float32 bit patterns (NaNs with payloads and signs, subnormals, ties).
    std::mt19937 rng(17);
    const std::int64_t count = 1 << 22;
    std::vector<std::uint32_t> floats(static_cast<std::size_t>(count));
    for (auto& f : floats) f = rng();
    for (std::size_t i = 0; i < 65536; ++i) floats[i] = std::uint32_t(i << 13 | (i & 1) << 12);  // exact ties
    const std::array<std::int64_t, 1> n{count};
    const dlb::tensor f32 = dlb::tensor::adopt(floats.data(), dlb::dtype_of<float>, {dlb::kDLCPU, 0}, n, {}, true, nullptr, nullptr);
    const dlb::tensor narrow = cr::to_host(cr::to_device(f32, s.get()), s.get(), half);
    const dlb::tensor expected = dlb::astype(f32, half);
    CHECK(std::memcmp(narrow.data(), expected.data(), std::size_t(count) * 2) == 0);
  }
}

GPU_TEST_CASE("casts between every pair of dtypes on the GPU match dlb::cast_strided, aligned or not") {
  cr::stream s;
  std::mt19937_64 rng(23);
  for (const auto& a : dlb::dtype_table) {
    for (const auto& b : dlb::dtype_table) {
      // Shift 1: the source one byte off its alignment; shift 2: the
      // destination (packed data is addressed by byte and stays in place).
      for (int shift = 0; shift < 3; ++shift) {
        const auto shape = dlb_test::random_shape(rng, 2, 40);
        const layout sl = a.type.is_subbyte() ? dlb_test::c_order(shape) : dlb_test::random_layout(rng, shape, true);
        const layout dl = b.type.is_subbyte() ? dlb_test::c_order(shape) : dlb_test::random_layout(rng, shape, false);
        const auto src = random_bytes(rng, std::size_t(a.type.storage_bytes(std::uint64_t(sl.buffer))) + 1);
        auto expected = random_bytes(rng, std::size_t(b.type.storage_bytes(std::uint64_t(dl.buffer))) + 1);
        const auto first = [](dlb::dtype t, std::int64_t offset, bool shifted) {
          return t.is_subbyte() ? 0 : std::int64_t(shifted) + offset * std::int64_t(t.itemsize());
        };
        const std::int64_t src_first = first(a.type, sl.offset, shift == 1), dst_first = first(b.type, dl.offset, shift == 2);
        device_bytes dsrc(src.size(), s.get()), ddst(expected.size(), s.get());
        cr::memcpy_async(dsrc.get(), src.data(), src.size(), s.get());
        cr::memcpy_async(ddst.get(), expected.data(), expected.size(), s.get());
        if (a.type == b.type)  // as cr::cast_strided does: packed data is copied whole bytes
          dlb::copy_strided(shape, a.type, src.data() + src_first, sl.strides, expected.data() + dst_first, dl.strides);
        else
          dlb::cast_strided(shape, a.type, src.data() + src_first, sl.strides, b.type, expected.data() + dst_first,
                            dl.strides);
        cr::cast_strided(shape, a.type, dsrc.get() + src_first, sl.strides, b.type, ddst.get() + dst_first, dl.strides,
                         s.get());
        std::vector<std::uint8_t> got(expected.size());
        cr::memcpy_async(got.data(), ddst.get(), got.size(), s.get());
        s.synchronize();
        CAPTURE(a.name);
        CAPTURE(b.name);
        CAPTURE(shift);
        CHECK(got == expected);
      }
    }
  }
}

namespace {
// Queues a kernel on `a` that spins for `nanoseconds`, then writes 42 into
// device memory (0 before), then, on `b`, reads it into pinned memory after
// order(b, a); returns what b read. Everything is allocated before the kernel
// is queued, so nothing the host does while it spins waits for the GPU.
template <class Order>
int read_after_slow_write(Order&& order, long long nanoseconds = 300'000'000) {
  cr::stream a, b;
  const dlb::tensor flag = cr::empty_device(std::array<std::int64_t, 1>{1}, dlb::dtype_of<std::int32_t>);
  cr::fill(flag, dlb::scalar::from_int(0), cr::legacy_stream());
  cr::synchronize(cr::legacy_stream());
  const dlb::tensor seen = cr::empty_pinned(std::array<std::int64_t, 1>{1}, dlb::dtype_of<std::int32_t>);
  *static_cast<std::int32_t*>(seen.data()) = -1;
  REQUIRE(dlb_test::slow_write(static_cast<int*>(flag.data()), 42, nanoseconds, a.get()) == 0);
  order(b.get(), a.get());
  cr::memcpy_async(seen.data(), flag.data(), 4, b.get());
  b.synchronize();
  const int value = *static_cast<std::int32_t*>(seen.data());
  a.synchronize();
  return value;
}
}  // namespace

GPU_TEST_CASE("order_after makes one stream wait for another's work") {
  // With the event wait, stream b sees the slow kernel's write.
  CHECK(read_after_slow_write([](cr::stream_t b, cr::stream_t a) { cr::order_after(b, a); }) == 42);
  // With an explicit event and wait.
  CHECK(read_after_slow_write([](cr::stream_t b, cr::stream_t a) {
          cr::event e;
          e.record(a);
          cr::wait(b, e);
        }) == 42);
}

// The control of the test above: without the wait, b reads before the kernel
// writes, which proves that test can fail. It needs the two streams to run
// concurrently, and compute-sanitizer serialises kernels: not under it. The
// kernel spins for a second, far longer than the host takes to queue the read.
GPU_TEST_CASE("without order_after the read races ahead of the slow write (the control)" * dlb_test::not_under_sanitizer) {
  CHECK(read_after_slow_write(
            [](cr::stream_t, cr::stream_t a) {
              cr::event e;
              e.record(a);
              CHECK(!e.ready());  // the kernel is still spinning
            },
            1'000'000'000) == 0);
}

GPU_TEST_CASE("synchronises_with_legacy reads whether a stream was made non-blocking") {
  const cr::stream blocking(false), non_blocking(true);
  CHECK(cr::synchronises_with_legacy(blocking.get()));
  CHECK(!cr::synchronises_with_legacy(non_blocking.get()));
  CHECK(cr::synchronises_with_legacy(cr::legacy_stream()));
  CHECK(cr::synchronises_with_legacy(cr::per_thread_stream()));
  CHECK(cr::stream_device(non_blocking.get()) == cr::current_device());
}

namespace {
// What capture_with found: cudaStreamEndCapture's status (cudaErrorUnknown
// where the call under test threw) and the captured graph's node count.
struct captured {
  cudaError_t status;
  std::size_t nodes;
};

// Captures, on a new non-blocking stream (blocking: as CuPy's Stream()), a
// memset of 7 into device memory followed by `call(stream)`, as
// torch.cuda.graph does (global mode); where the capture succeeds, launches
// the graph and checks its memset.
template <class Call>
captured capture_with(Call&& call, bool non_blocking = true) {
  constexpr std::size_t bytes = 256;
  const device_bytes memory(bytes);
  cr::synchronize(cr::legacy_stream());
  const cr::stream s(non_blocking);
  REQUIRE(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal) == cudaSuccess);
  REQUIRE(cudaMemsetAsync(memory.get(), 7, bytes, s.get()) == cudaSuccess);
  bool threw = false;
  try {
    call(s.get());
  } catch (const dlb::cuda_error&) {
    threw = true;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s.get(), &graph);
  (void)cudaGetLastError();
  std::size_t nodes = 0;
  if (ended == cudaSuccess) {
    REQUIRE(cudaGraphGetNodes(graph, nullptr, &nodes) == cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    REQUIRE(cudaGraphLaunch(exec, s.get()) == cudaSuccess);
    s.synchronize();
    CHECK(download(memory.get(), bytes) == std::vector<std::uint8_t>(bytes, 7));
    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
  }
  if (graph != nullptr) CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  return {threw && ended == cudaSuccess ? cudaErrorUnknown : ended, nodes};
}
}  // namespace

GPU_TEST_CASE("a release while the borrower's stream is captured into a CUDA graph leaves the capture valid") {
  const captured lent = capture_with([](cr::stream_t s) { cr::order_after_release(cr::legacy_stream(), s); });
  CHECK(lent.status == cudaSuccess);
  CHECK(lent.nodes == 1);  // the memset alone
  // The other direction (an import's release: the producer's stream waits for
  // the legacy one) is a host wait at capture time.
  const captured imported = capture_with([](cr::stream_t s) { cr::order_after_release(s, cr::legacy_stream()); });
  CHECK(imported.status == cudaSuccess);
  CHECK(imported.nodes == 1);
}

// What a refusal of work across a capture asks (cuda/arrays.cpp:
// refuse_capturing): the question leaves the capture valid, on the
// blocking streams CuPy captures too, where asking of the legacy stream
// would be an error.
GPU_TEST_CASE("asking a stream being captured whether it is leaves the capture valid") {
  for (const bool non_blocking : {true, false}) {
    INFO("non_blocking = " << non_blocking);
    const captured asked = capture_with(
        [](cr::stream_t s) {
          CHECK(cr::capture_of(s) == cr::capture_status::active);
          CHECK(cr::capture_of(cr::legacy_stream()) == cr::capture_status::none);  // not asked
        },
        non_blocking);
    CHECK(asked.status == cudaSuccess);
    CHECK(asked.nodes == 1);
  }
}

// The control: the legacy stream made to wait on an event recorded in the
// capture is what breaks it, so the case above can fail.
GPU_TEST_CASE("ordering the legacy stream after a capturing stream breaks the capture (the control)") {
  CHECK(capture_with([](cr::stream_t s) { cr::order_after(cr::legacy_stream(), s); }).status != cudaSuccess);
}

GPU_TEST_CASE("a stream being captured is ordered after another by a host wait, leaving no event in the graph") {
  // An event node would name an event that order_after destroys on return,
  // long before the graph's launches. (The control of the ordering itself is
  // "without order_after the read races ahead of the slow write".)
  const device_bytes flag(4);
  REQUIRE(dlb_test::slow_write(reinterpret_cast<int*>(flag.get()), 0, 0, cr::legacy_stream()) == 0);  // loaded now
  cr::event queued;
  const captured ordered = capture_with([&](cr::stream_t s) {
    REQUIRE(dlb_test::slow_write(reinterpret_cast<int*>(flag.get()), 42, 300'000'000, cr::legacy_stream()) == 0);
    queued.record(cr::legacy_stream());
    cr::order_after(s, cr::legacy_stream());
  });
  CHECK(queued.ready());  // the host waited for the slow write
  CHECK(ordered.status == cudaSuccess);
  CHECK(ordered.nodes == 1);
}

GPU_TEST_CASE("order_after records its event on the producer stream's device, not the current one") {
  if (cr::device_count() < 2) {
    MESSAGE("needs two GPUs: skipped in the body");
    return;
  }
  const cr::stream on_other = [] {
    const cr::device_guard other(1);
    return cr::stream();
  }();
  const cr::device_guard first(0);
  CHECK(cr::stream_device(on_other.get()) == 1);
  // An event made on device 0 cannot be recorded on a stream of device 1.
  CHECK_NOTHROW(cr::order_after(cr::legacy_stream(), on_other.get()));
  CHECK_NOTHROW(cr::order_after_release(cr::legacy_stream(), on_other.get()));
  cr::synchronize(cr::legacy_stream());
}

GPU_TEST_CASE("device_guard switches the current device and restores it") {
  const int before = cr::current_device();
  {
    cr::device_guard guard(cr::device_count() - 1);
    CHECK(cr::current_device() == cr::device_count() - 1);
  }
  CHECK(cr::current_device() == before);
}

GPU_TEST_CASE("bad arguments are std::invalid_argument, not CUDA errors") {
  const auto d = cr::empty_device(std::array<std::int64_t, 2>{3, 4}, dlb::dtype_of<float>);
  const auto e = cr::empty_device(std::array<std::int64_t, 2>{4, 3}, dlb::dtype_of<float>);
  CHECK_THROWS_WITH_AS(cr::copy(d, e, cr::legacy_stream()), "copy: shapes differ: (3, 4) and (4, 3)",
                       std::invalid_argument);
  dlb::tensor ro = d;
  ro.make_readonly();
  CHECK_THROWS_WITH_AS(cr::copy(d, ro, cr::legacy_stream()), "copy: the destination is read-only",
                       std::invalid_argument);
  const std::array<std::int64_t, 1> shape{4}, strided{2};
  CHECK_THROWS_WITH_AS(cr::copy_strided(shape, {dlb::kDLFloat4_e2m1fn, 4}, d.data(), strided, e.data(), strided,
                                        cr::legacy_stream()),
                       "packed sub-byte data must be C-contiguous, got strides (2,)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(cr::fill(shape, {dlb::kDLFloat4_e2m1fn, 4}, d.data(), strided, dlb::scalar::from_real(1),
                                cr::legacy_stream()),
                       "packed sub-byte data must be C-contiguous, got strides (2,)", std::invalid_argument);
}

// Not under compute-sanitizer, which does not follow a forked child.
GPU_TEST_CASE("a child forked after CUDA was used refuses CUDA, and lets its inherited memory go without it" *
              dlb_test::not_under_sanitizer) {
  const std::array<std::int64_t, 1> shape{1024};
  auto* inherited = new std::vector<dlb::tensor>{cr::empty_device(shape, dlb::dtype_of<float>),
                                                 cr::empty_pinned(shape, dlb::dtype_of<float>),
                                                 cr::empty_managed(shape, dlb::dtype_of<float>)};
  cr::synchronize(cr::legacy_stream());
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int failures = 0;
    try {
      (void)cr::empty_device(shape, dlb::dtype_of<float>);
      failures |= 1;
    } catch (const dlb::cuda_unavailable& e) {
      if (std::string(e.what()).find("forked after CUDA was initialised") == std::string::npos) failures |= 1;
    }
    if (cr::pointer_device(inherited->at(1).data()) != dlb::device{dlb::kDLCPU, 0}) failures |= 2;
    delete inherited;  // cudaFreeAsync, cudaFreeHost, cudaFree would be undefined here: none is called
    _exit(failures);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  delete inherited;  // the parent's memory is still the parent's
  CHECK_NOTHROW(cr::synchronize(cr::legacy_stream()));
}

GPU_TEST_CASE("release_cached_memory hands the pool's unused memory back to the driver") {
  const auto pool = reinterpret_cast<cudaMemPool_t>(cr::device_pool(cr::current_device()));
  const auto reserved = [&] {
    std::uint64_t bytes = 0;
    REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &bytes) == cudaSuccess);
    return bytes;
  };
  const std::uint64_t block = std::uint64_t(64) << 20;
  const auto kept = cr::empty_device(std::array<std::int64_t, 1>{4096}, dlb::dtype_of<std::uint8_t>);
  (void)cr::empty_device(std::array<std::int64_t, 1>{std::int64_t(block)}, dlb::dtype_of<std::uint8_t>);  // freed at once
  const std::uint64_t before = reserved();
  CHECK(before >= block);  // kept, not yet handed back (it may reach the pool only when the free runs)
  const std::uint64_t released = cr::release_cached_memory();  // waits for that free first
  CHECK(released >= block);
  CHECK(reserved() + block <= before);
  CHECK(kept.data() != nullptr);  // memory in use stays
  CHECK(cr::release_cached_memory() == 0);  // nothing left to give
}

// Not under compute-sanitizer: it takes most of the GPU's memory, and the
// sanitizer's own allocations would make the sizes meaningless.
GPU_TEST_CASE("an allocation that finds the device out of memory releases the pool's cache and tries again" *
              dlb_test::not_under_sanitizer) {
  (void)cr::release_cached_memory();
  std::size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  const auto share = [&](double f) { return std::int64_t(double(free) * f) & ~std::int64_t(0xfffff); };
  const auto u8 = dlb::dtype_of<std::uint8_t>;
  // 60% of the free memory kept by dlbridge's pool; 30% taken by "another library".
  (void)cr::empty_device(std::array<std::int64_t, 1>{share(0.6)}, u8);
  cr::synchronize(cr::legacy_stream());
  void* other = nullptr;
  REQUIRE(cudaMalloc(&other, std::size_t(share(0.3))) == cudaSuccess);
  // 65% no longer fits beside both, nor inside the cached 60%: only after the
  // cache goes back to the driver.
  CHECK_NOTHROW((void)cr::empty_device(std::array<std::int64_t, 1>{share(0.65)}, u8));
  REQUIRE(cudaFree(other) == cudaSuccess);
  (void)cr::release_cached_memory();
}

GPU_TEST_CASE("device memory comes from dlbridge's pool, which keeps freed memory and opens it to peers") {
  const int device = cr::current_device();
  const auto pool = reinterpret_cast<cudaMemPool_t>(cr::device_pool(device));
  CHECK(cr::device_pool(device) == cr::device_pool(device));  // one per device
  cudaMemPool_t default_pool = nullptr;
  REQUIRE(cudaDeviceGetDefaultMemPool(&default_pool, device) == cudaSuccess);
  CHECK(pool != default_pool);
  std::uint64_t threshold = 0;
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) == cudaSuccess);
  CHECK(threshold == UINT64_MAX);
  {
    const auto t = cr::empty_device(std::array<std::int64_t, 1>{std::int64_t(64) << 20}, dlb::dtype_of<std::uint8_t>);
    cr::synchronize(cr::legacy_stream());
  }
  cr::synchronize(cr::legacy_stream());  // a synchronisation hands the default pool's memory back; not ours
  std::uint64_t reserved = 0;
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess);
  CHECK(reserved >= (std::uint64_t(64) << 20));
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  for (int peer = 0; peer < count; ++peer) {
    if (peer == device) continue;
    int reachable = 0;
    REQUIRE(cudaDeviceCanAccessPeer(&reachable, peer, device) == cudaSuccess);
    cudaMemLocation where{cudaMemLocationTypeDevice, peer};
    cudaMemAccessFlags flags{};
    REQUIRE(cudaMemPoolGetAccess(&flags, pool, &where) == cudaSuccess);
    CHECK(flags == (reachable ? cudaMemAccessFlagsProtReadWrite : cudaMemAccessFlagsProtNone));
  }
}
