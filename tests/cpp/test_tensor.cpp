// dlbridge/tensor.hpp: ownership (empty, adopt, import), the deleter contract,
// export, round trips and views.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "dlbridge/tensor.hpp"

namespace {
using vec = std::vector<std::int64_t>;
const dlb::dtype f32{dlb::kDLFloat, 32}, i32{dlb::kDLInt, 32}, f64{dlb::kDLFloat, 64};

// Counts how often a release function or deleter ran, and on which thread.
struct counter {
  std::atomic<int> calls{0};
  std::thread::id thread;
  void hit() {
    thread = std::this_thread::get_id();
    calls.fetch_add(1);
  }
};

void count_release(void* ctx) noexcept { static_cast<counter*>(ctx)->hit(); }

// A producer's heap-allocated managed tensor whose deleter frees it and
// reports to a counter.
template <class Managed>
struct box {
  Managed m{};
  std::int64_t shape[8] = {};
  std::int64_t strides[8] = {};
  counter* c = nullptr;
  static void deleter(Managed* self) {
    auto* b = static_cast<box*>(self->manager_ctx);
    b->c->hit();
    delete b;
  }
};

template <class Managed>
Managed* make_managed(counter& c, void* data, dlb::dtype type, const vec& shape,
                      const std::optional<vec>& strides = std::nullopt) {
  auto* b = new box<Managed>;
  b->c = &c;
  b->m.manager_ctx = b;
  b->m.deleter = &box<Managed>::deleter;
  auto& t = b->m.dl_tensor;
  t.data = data;
  t.device = {dlb::kDLCPU, 0};
  t.ndim = std::int32_t(shape.size());
  t.dtype = type;
  std::copy(shape.begin(), shape.end(), b->shape);
  t.shape = b->shape;
  if (strides) {
    std::copy(strides->begin(), strides->end(), b->strides);
    t.strides = b->strides;
  }
  return &b->m;
}

dlb::DLManagedTensorVersioned* make_versioned(counter& c, void* data, dlb::dtype type, const vec& shape,
                                              const std::optional<vec>& strides = std::nullopt,
                                              std::uint64_t flags = 0) {
  auto* m = make_managed<dlb::DLManagedTensorVersioned>(c, data, type, shape, strides);
  m->version = {1, 3};
  m->flags = flags;
  return m;
}

dlb::DLManagedTensor* make_legacy(counter& c, void* data, dlb::dtype type, const vec& shape,
                                  const std::optional<vec>& strides = std::nullopt) {
  return make_managed<dlb::DLManagedTensor>(c, data, type, shape, strides);
}

vec to_vec(dlb::extents_t e) { return vec(e.begin(), e.end()); }
vec ones(std::size_t n) { return vec(n, 1); }
}  // namespace

// ---------------------------------------------------------------------------
// empty()

TEST_CASE("tensor: a default tensor holds nothing") {
  const dlb::tensor t;
  CHECK_FALSE(t.has_value());
  CHECK(t.use_count() == 0);
  CHECK(t.data() == nullptr);
  CHECK(t.ndim() == 0);
  CHECK(t.shape().empty());
  CHECK(t.strides().empty());
  const dlb::tensor copy = t;
  CHECK_FALSE(copy.has_value());
}

TEST_CASE("tensor: empty() allocates C-contiguous host memory") {
  auto t = dlb::tensor::empty(vec{2, 3}, f32);
  CHECK(t.has_value());
  CHECK(t.data() != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % dlb::allocation_alignment == 0);
  CHECK(t.type() == f32);
  CHECK(t.device() == dlb::device{dlb::kDLCPU, 0});
  CHECK(t.ndim() == 2);
  CHECK(to_vec(t.shape()) == vec{2, 3});
  CHECK(to_vec(t.strides()) == vec{3, 1});
  CHECK(t.shape(1) == 3);
  CHECK(t.stride(0) == 3);
  CHECK(t.size() == 6);
  CHECK(t.nbytes() == 24);
  CHECK(t.is_c_contiguous());
  CHECK_FALSE(t.is_f_contiguous());
  CHECK_FALSE(t.readonly());
  CHECK(t.use_count() == 1);
  std::memset(t.data(), 0xAB, std::size_t(t.nbytes()));  // the memory is really there
}

TEST_CASE("tensor: empty() of 0-d, empty and sub-byte shapes") {
  auto scalar = dlb::tensor::empty(vec{}, f64);
  CHECK(scalar.ndim() == 0);
  CHECK(scalar.size() == 1);
  CHECK(scalar.nbytes() == 8);
  CHECK(scalar.data() != nullptr);

  auto none = dlb::tensor::empty(vec{0, 5}, f32);
  CHECK(none.size() == 0);
  CHECK(none.nbytes() == 0);
  CHECK(to_vec(none.strides()) == vec{5, 1});

  auto packed = dlb::tensor::empty(vec{5}, dlb::dtype{dlb::kDLFloat4_e2m1fn, 4});
  CHECK(packed.size() == 5);
  CHECK(packed.nbytes() == 3);
  auto packed6 = dlb::tensor::empty(vec{2, 2}, dlb::dtype{dlb::kDLFloat6_e2m3fn, 6});
  CHECK(packed6.nbytes() == 3);
}

TEST_CASE("tensor: empty() refuses impossible shapes") {
  CHECK_NOTHROW((void)dlb::tensor::empty(ones(64), f32));
  CHECK_THROWS_WITH_AS((void)dlb::tensor::empty(ones(65), f32), "too many axes", std::length_error);
  CHECK_THROWS_WITH_AS((void)dlb::tensor::empty(vec{std::numeric_limits<std::int64_t>::max(), 2}, f32),
                       "array size overflows int64", std::length_error);
  // The count fits, the bytes do not.
  CHECK_THROWS_WITH_AS((void)dlb::tensor::empty(vec{std::int64_t(1) << 61}, f64), "array size overflows int64",
                       std::length_error);
  CHECK_THROWS_WITH_AS((void)dlb::tensor::empty(vec{std::int64_t(1) << 60}, dlb::dtype{dlb::kDLComplex, 128}),
                       "array size overflows int64", std::length_error);
  // Empty, but its C-order strides would wrap: 3 * (2**62 + 1) passes int64,
  // and so do the bytes of the largest stride that fits in elements.
  CHECK_THROWS_WITH_AS((void)dlb::tensor::empty(vec{0, 3, (std::int64_t(1) << 62) + 1}, f32),
                       "C-order strides overflow int64", std::length_error);
  CHECK_THROWS_WITH_AS((void)dlb::tensor::empty(vec{0, 7, 1317624576693539401}, f64), "C-order strides overflow int64",
                       std::length_error);
  const auto widest = dlb::tensor::empty(vec{0, 7, 1317624576693539401}, dlb::dtype{dlb::kDLInt, 8});
  CHECK(widest.stride(0) == std::numeric_limits<std::int64_t>::max());  // 7 * 1317624576693539401
  // Negative extents are no shape at all.
  CHECK_THROWS_WITH_AS((void)dlb::tensor::empty(vec{-1}, f32), "negative extent", std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::tensor::empty(vec{3, -2}, f32), "negative extent", std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::tensor::empty(vec{0, -2}, f32), "negative extent", std::invalid_argument);
}

TEST_CASE("tensor: zeros() and full() fill new host memory") {
  const auto z = dlb::tensor::zeros(vec{2, 3}, f64);
  CHECK(to_vec(z.strides()) == vec{3, 1});
  const auto* zd = static_cast<const double*>(z.data());
  for (int i = 0; i < 6; ++i) CHECK(zd[i] == 0.0);

  const auto f = dlb::tensor::full(vec{4}, i32, dlb::scalar::from_int(-7));
  const auto* fd = static_cast<const std::int32_t*>(f.data());
  for (int i = 0; i < 4; ++i) CHECK(fd[i] == -7);
  // Converted as store() converts: a real to float32 rounds once.
  const auto g = dlb::tensor::full(vec{3}, f32, dlb::scalar::from_real(0.1));
  CHECK(static_cast<const float*>(g.data())[2] == 0.1f);
  // Packed sub-byte elements: each written, the spare bits zero.
  const auto p = dlb::tensor::full(vec{3}, dlb::dtype{dlb::kDLFloat4_e2m1fn, 4}, dlb::scalar::from_real(1.0));
  CHECK(static_cast<const std::uint8_t*>(p.data())[0] == 0x22);
  CHECK(static_cast<const std::uint8_t*>(p.data())[1] == 0x02);
  CHECK(dlb::tensor::full(vec{0}, f64, dlb::scalar::from_real(1.0)).size() == 0);

  CHECK_THROWS_WITH_AS((void)dlb::tensor::full(vec{2}, dlb::dtype{dlb::kDLUInt, 8}, dlb::scalar::from_int(300)),
                       "tensor::full: 300 is out of bounds for uint8", std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::tensor::full(vec{2}, i32, dlb::scalar::from_int(-3000000000)),
                       "tensor::full: -3000000000 is out of bounds for int32", std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::tensor::full(vec{2}, f32, dlb::scalar::from_complex(1, 1)),
                       "tensor::full: a complex value does not fit in float32", std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::tensor::zeros(vec{-1}, f32), "negative extent", std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Copies, moves and views

TEST_CASE("tensor: copies share the memory, moves transfer it") {
  counter c;
  std::vector<float> buf(6);
  {
    auto a = dlb::tensor::adopt(buf.data(), f32, {}, vec{2, 3}, {}, false, count_release, &c);
    CHECK(a.use_count() == 1);
    dlb::tensor b = a;
    CHECK(a.use_count() == 2);
    CHECK(b.data() == a.data());
    CHECK(to_vec(b.shape()) == to_vec(a.shape()));
    dlb::tensor d;
    d = b;
    CHECK(a.use_count() == 3);
    auto& alias = d;
    d = alias;  // self-assignment changes nothing
    CHECK(a.use_count() == 3);
    CHECK(d.data() == a.data());

    dlb::tensor e = std::move(d);
    CHECK_FALSE(d.has_value());  // NOLINT(bugprone-use-after-move): moved-from is empty
    CHECK(a.use_count() == 3);
    dlb::tensor f;
    f = std::move(e);
    CHECK_FALSE(e.has_value());  // NOLINT(bugprone-use-after-move)
    CHECK(f.use_count() == 3);
    CHECK(c.calls == 0);
  }
  CHECK(c.calls == 1);
}

TEST_CASE("tensor: moves and swaps carry every field, inline and heap extents alike") {
  std::vector<float> small_data(6), big_data(32);
  const vec small_shape{2, 3}, small_strides{1, 2};
  const vec big_shape{2, 1, 2, 2, 2, 1}, big_strides{8, 8, 4, 2, 1, 1};
  auto small = dlb::tensor::adopt(small_data.data(), f32, {}, small_shape, small_strides, true, nullptr, nullptr);
  auto big = dlb::tensor::adopt(big_data.data(), f32, {}, big_shape, big_strides, false, nullptr, nullptr);
  const auto same = [](const dlb::tensor& t, const std::vector<float>& data, const vec& shape, const vec& strides,
                       bool readonly) {
    return t.data() == data.data() && to_vec(t.shape()) == shape && to_vec(t.strides()) == strides &&
           t.readonly() == readonly && t.ndim() == std::int32_t(shape.size());
  };
  small.swap(big);
  CHECK(same(small, big_data, big_shape, big_strides, false));
  CHECK(same(big, small_data, small_shape, small_strides, true));
  dlb::tensor moved(std::move(small));
  CHECK(same(moved, big_data, big_shape, big_strides, false));
  CHECK_FALSE(small.has_value());  // NOLINT(bugprone-use-after-move): moved-from is empty
  CHECK(small.ndim() == 0);        // NOLINT(bugprone-use-after-move)
  auto& alias = moved;
  moved = std::move(alias);  // self-move changes nothing
  CHECK(same(moved, big_data, big_shape, big_strides, false));
  big = std::move(moved);
  CHECK(same(big, big_data, big_shape, big_strides, false));
}

TEST_CASE("tensor: assigning over a tensor releases what it held") {
  counter first, second;
  float x = 0, y = 0;
  auto a = dlb::tensor::adopt(&x, f32, {}, vec{}, {}, false, count_release, &first);
  auto b = dlb::tensor::adopt(&y, f32, {}, vec{}, {}, false, count_release, &second);
  a = std::move(b);
  CHECK(first.calls == 1);
  CHECK(second.calls == 0);
  CHECK(a.data() == &y);
  auto d = dlb::tensor::adopt(&x, f32, {}, vec{}, {}, false, count_release, &first);
  d = a;  // copy-assign
  CHECK(first.calls == 2);
  CHECK(a.use_count() == 2);
  a = dlb::tensor();
  d = dlb::tensor();
  CHECK(second.calls == 1);
}

TEST_CASE("tensor: restrided views share memory") {
  auto t = dlb::tensor::empty(vec{2, 3}, i32);
  auto* p = static_cast<std::int32_t*>(t.data());
  for (int i = 0; i < 6; ++i) p[i] = i;

  auto transposed = t.restrided(t.data(), vec{3, 2}, vec{1, 3});
  CHECK(t.use_count() == 2);
  CHECK(transposed.use_count() == 2);
  CHECK(transposed.data() == t.data());
  CHECK(transposed.type() == i32);
  CHECK(transposed.is_f_contiguous());
  CHECK_FALSE(transposed.is_c_contiguous());
  CHECK(to_vec(transposed.strides()) == vec{1, 3});

  auto reversed = t.restrided(p + 5, vec{6}, vec{-1});
  CHECK(t.use_count() == 3);
  CHECK(static_cast<std::int32_t*>(reversed.data())[-2] == 3);

  // Writes through a view land in the original memory.
  static_cast<std::int32_t*>(transposed.data())[transposed.stride(0) * 2 + transposed.stride(1) * 1] = 42;
  CHECK(p[5] == 42);

  // A view without strides is C order.
  auto flat = t.restrided(t.data(), vec{6}, {});
  CHECK(to_vec(flat.strides()) == vec{1});

  // Views keep the memory alive after the original goes.
  t = dlb::tensor();
  CHECK(transposed.use_count() == 3);
  CHECK(static_cast<std::int32_t*>(reversed.data())[0] == 42);
}

TEST_CASE("tensor: views inherit read-only; make_readonly is per handle and one-way") {
  auto t = dlb::tensor::empty(vec{4}, f32);
  const dlb::tensor writable = t;
  t.make_readonly();
  CHECK(t.readonly());
  CHECK_FALSE(writable.readonly());
  auto v = t.restrided(t.data(), vec{2}, vec{2});
  CHECK(v.readonly());
  dlb::tensor copy = t;
  CHECK(copy.readonly());
  copy.make_readonly();  // idempotent
  CHECK(copy.readonly());
}

// Nothing makes a read-only handle writable again.
template <class Tensor>
constexpr bool can_clear_readonly = requires(Tensor& t) { t.set_readonly(false); };
struct two_way_flag {
  void set_readonly(bool) {}
};
static_assert(can_clear_readonly<two_way_flag>);  // the check can fail
static_assert(!can_clear_readonly<dlb::tensor>);

// ---------------------------------------------------------------------------
// adopt()

TEST_CASE("tensor: adopt() takes foreign memory and releases it once") {
  counter c;
  std::vector<double> buf(6, 1.5);
  {
    auto t = dlb::tensor::adopt(buf.data(), f64, dlb::device{dlb::kDLCUDAHost, 0}, vec{3, 2}, vec{1, 3}, true,
                                count_release, &c);
    CHECK(t.data() == buf.data());
    CHECK(t.device() == dlb::device{dlb::kDLCUDAHost, 0});
    CHECK(t.readonly());
    CHECK(to_vec(t.strides()) == vec{1, 3});
    CHECK(t.is_f_contiguous());
    auto view = t.restrided(buf.data() + 1, vec{3}, vec{2});
    t = dlb::tensor();
    CHECK(c.calls == 0);
  }
  CHECK(c.calls == 1);
}

TEST_CASE("tensor: adopt() with C order, no release, and a device the CPU cannot read") {
  std::vector<float> buf(6);
  auto t = dlb::tensor::adopt(buf.data(), f32, {}, vec{2, 3}, {}, false, nullptr, nullptr);
  CHECK(to_vec(t.strides()) == vec{3, 1});
  CHECK_FALSE(t.readonly());
  // adopt() only checks the layout; it never reads device memory.
  auto gpu = dlb::tensor::adopt(reinterpret_cast<void*>(std::uintptr_t(0x10000)), f32,
                                dlb::device{dlb::kDLCUDA, 1}, vec{8}, {}, false, nullptr, nullptr);
  CHECK(gpu.device() == dlb::device{dlb::kDLCUDA, 1});
}

TEST_CASE("tensor: adopt() calls release when validation fails") {
  std::vector<float> buf(8);
  struct bad_case {
    const char* what;
    void* data;
    dlb::dtype type;
    vec shape;
    vec strides;
    const char* field;
    std::int32_t axis;
  };
  const std::vector<bad_case> cases = {
      {"too many axes", buf.data(), f32, ones(65), {}, "ndim", -1},
      {"negative extent", buf.data(), f32, vec{2, -1}, {}, "shape", 1},
      {"NULL data", nullptr, f32, vec{2}, {}, "data", -1},
      {"unsupported dtype", buf.data(), dlb::dtype{dlb::kDLFloat, 8}, vec{2}, {}, "dtype", -1},
      {"overflowing stride", buf.data(), f32, vec{2}, vec{std::numeric_limits<std::int64_t>::max()}, "strides", -1},
      {"non-contiguous float4", buf.data(), dlb::dtype{dlb::kDLFloat4_e2m1fn, 4}, vec{2}, vec{2}, "strides", -1},
  };
  for (const auto& bad : cases) {
    const std::string what = bad.what;
    CAPTURE(what);
    counter c;
    try {
      (void)dlb::tensor::adopt(bad.data, bad.type, {}, bad.shape, bad.strides, false, count_release, &c);
      FAIL("adopt() accepted an invalid layout");
    } catch (const dlb::import_failure& e) {
      CHECK(e.error().field == bad.field);
      CHECK(e.error().axis == bad.axis);
      CHECK(std::string(e.what()) == "invalid tensor: " + e.error().message());
    }
    CHECK(c.calls == 1);
  }
  // Without a release function there is nothing to call.
  CHECK_THROWS_WITH_AS((void)dlb::tensor::adopt(nullptr, f32, {}, vec{2}, {}, false, nullptr, nullptr),
                       "invalid tensor: data: expected a pointer for a non-empty tensor, got NULL",
                       dlb::import_failure);
  // import_failure is an invalid_argument.
  CHECK_THROWS_WITH_AS((void)dlb::tensor::adopt(nullptr, f32, {}, vec{2}, {}, false, nullptr, nullptr),
                       "invalid tensor: data: expected a pointer for a non-empty tensor, got NULL",
                       std::invalid_argument);
}

TEST_CASE("tensor: adopt() wants one stride per axis") {
  std::vector<float> buf(4);
  counter c;
  try {
    (void)dlb::tensor::adopt(buf.data(), f32, {}, vec{2, 2}, vec{1}, false, count_release, &c);
    FAIL("adopt() accepted one stride for two axes");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "expected as many strides as axes (2), got 1");
  }
  CHECK(c.calls == 1);  // the memory is released all the same
}

// ---------------------------------------------------------------------------
// import(): versioned

TEST_CASE("tensor: importing a versioned tensor; the deleter runs on the last drop") {
  counter c;
  std::vector<float> buf{0, 1, 2, 3, 4, 5};
  auto* m = make_versioned(c, buf.data(), f32, vec{2, 3});
  {
    auto t = dlb::tensor::import(m);
    CHECK(t.data() == buf.data());
    CHECK(t.type() == f32);
    CHECK(t.device() == dlb::device{dlb::kDLCPU, 0});
    CHECK(to_vec(t.shape()) == vec{2, 3});
    CHECK(to_vec(t.strides()) == vec{3, 1});  // NULL strides mean C order
    CHECK_FALSE(t.readonly());
    CHECK(t.use_count() == 1);
    // The tensor has its own copy of shape and strides.
    static_cast<box<dlb::DLManagedTensorVersioned>*>(m->manager_ctx)->shape[0] = 99;
    CHECK(t.shape(0) == 2);
    dlb::tensor copy = t;
    auto view = t.restrided(buf.data() + 1, vec{3}, vec{2});
    CHECK(t.use_count() == 3);
    t = dlb::tensor();
    copy = dlb::tensor();
    CHECK(c.calls == 0);
    CHECK(static_cast<float*>(view.data())[2] == 3.0f);
  }
  CHECK(c.calls == 1);
}

TEST_CASE("tensor: import honours strides, byte_offset and READ_ONLY") {
  counter c;
  std::vector<std::int32_t> buf{10, 11, 12, 13, 14, 15, 16, 17};
  auto* m = make_versioned(c, buf.data(), i32, vec{3, 2}, vec{1, 3}, dlb::dlpack_flag_read_only);
  m->dl_tensor.byte_offset = 2 * sizeof(std::int32_t);
  {
    auto t = dlb::tensor::import(m);
    CHECK(t.data() == buf.data() + 2);
    CHECK(to_vec(t.strides()) == vec{1, 3});
    CHECK(t.readonly());
    CHECK(static_cast<std::int32_t*>(t.data())[t.stride(0) * 1 + t.stride(1) * 1] == 16);
  }
  CHECK(c.calls == 1);
}

TEST_CASE("tensor: import accepts any 1.x version and every known flag") {
  std::vector<float> buf(4);
  for (std::uint32_t minor : {0u, 1u, 3u, 7u}) {
    for (std::uint64_t flags : {std::uint64_t(0), dlb::dlpack_flag_is_copied,
                                dlb::dlpack_flag_read_only | dlb::dlpack_flag_is_copied}) {
      CAPTURE(minor);
      CAPTURE(flags);
      counter c;
      auto* m = make_versioned(c, buf.data(), f32, vec{4}, std::nullopt, flags);
      m->version = {1, minor};
      {
        auto t = dlb::tensor::import(m);
        CHECK(t.readonly() == bool(flags & dlb::dlpack_flag_read_only));
      }
      CHECK(c.calls == 1);
    }
  }
}

TEST_CASE("tensor: import of an empty tensor with NULL data") {
  counter c;
  auto* m = make_versioned(c, nullptr, f32, vec{0, 3});
  {
    auto t = dlb::tensor::import(m);
    CHECK(t.data() == nullptr);
    CHECK(t.size() == 0);
    CHECK(to_vec(t.strides()) == vec{3, 1});
    auto* out = t.export_versioned();
    CHECK(out->dl_tensor.data == nullptr);
    out->deleter(out);
  }
  CHECK(c.calls == 1);
}

TEST_CASE("tensor: import calls the deleter once when validation fails") {
  std::vector<float> buf(4);
  SUBCASE("ndim") {
    counter c;
    auto* m = make_versioned(c, buf.data(), f32, vec{4});
    m->dl_tensor.ndim = 70;
    try {
      (void)dlb::tensor::import(m);
      FAIL("import accepted ndim 70");
    } catch (const dlb::import_failure& e) {
      CHECK(e.error().field == "ndim");
      CHECK(std::string(e.what()) == "invalid tensor: ndim: expected ndim <= 64, got 70");
    }
    CHECK(c.calls == 1);
  }
  SUBCASE("dtype") {
    counter c;
    auto* m = make_versioned(c, buf.data(), dlb::dtype{99, 32}, vec{4});
    CHECK_THROWS_WITH_AS((void)dlb::tensor::import(m), doctest::Contains("dtype code 99"), dlb::import_failure);
    CHECK(c.calls == 1);
  }
  SUBCASE("unknown flag bits") {
    counter c;
    auto* m = make_versioned(c, buf.data(), f32, vec{4}, std::nullopt, 1 << 4);
    CHECK_THROWS_WITH_AS((void)dlb::tensor::import(m), doctest::Contains("flags 16"), dlb::import_failure);
    CHECK(c.calls == 1);
  }
  SUBCASE("padded sub-byte data") {
    counter c;
    auto* m = make_versioned(c, buf.data(), dlb::dtype{dlb::kDLFloat4_e2m1fn, 4}, vec{4}, std::nullopt,
                             dlb::dlpack_flag_is_subbyte_type_padded);
    CHECK_THROWS_WITH_AS((void)dlb::tensor::import(m), doctest::Contains("IS_SUBBYTE_TYPE_PADDED"),
                         dlb::import_failure);
    CHECK(c.calls == 1);
  }
  SUBCASE("NULL data") {
    counter c;
    auto* m = make_versioned(c, nullptr, f32, vec{4});
    CHECK_THROWS_WITH_AS((void)dlb::tensor::import(m),
                         "invalid tensor: data: expected a pointer for a non-empty tensor, got NULL",
                         dlb::import_failure);
    CHECK(c.calls == 1);
  }
  SUBCASE("a NULL deleter is simply not called") {
    dlb::DLManagedTensorVersioned m{};
    m.version = {1, 3};
    m.dl_tensor.ndim = -1;
    CHECK_THROWS_WITH_AS((void)dlb::tensor::import(&m), "invalid tensor: ndim: expected ndim <= 64, got -1",
                         dlb::import_failure);
  }
}

TEST_CASE("tensor: a NULL deleter on a valid tensor is fine") {
  float x = 2;
  std::int64_t one = 1;
  dlb::DLManagedTensorVersioned m{};
  m.version = {1, 3};
  m.dl_tensor = {&x, {dlb::kDLCPU, 0}, 1, f32, &one, nullptr, 0};
  {
    auto t = dlb::tensor::import(&m);
    CHECK(static_cast<float*>(t.data())[0] == 2.0f);
  }
}

TEST_CASE("tensor: another major version is refused after calling the deleter") {
  for (std::uint32_t major : {0u, 2u, 3u, 1000u}) {
    CAPTURE(major);
    counter c;
    std::vector<float> buf(4);
    auto* m = make_versioned(c, buf.data(), f32, vec{4});
    m->version = {major, 0};
    // Past `flags` the layout of another major is unknown: make it garbage.
    std::memset(&m->dl_tensor, 0xFF, sizeof m->dl_tensor);
    try {
      (void)dlb::tensor::import(m);
      FAIL("import accepted major version " << major);
    } catch (const dlb::import_failure& e) {
      CHECK(e.error().field == "version");
      CHECK(e.error().received == std::to_string(major) + ".0");
      CHECK(std::string(e.what()).find("expected DLPack major version 1") != std::string::npos);
    }
    CHECK(c.calls == 1);
  }
}

// ---------------------------------------------------------------------------
// import(): legacy

TEST_CASE("tensor: importing a legacy tensor") {
  counter c;
  std::vector<double> buf{1, 2, 3, 4};
  auto* m = make_legacy(c, buf.data(), f64, vec{2, 2}, vec{1, 2});
  {
    auto t = dlb::tensor::import(m, /*readonly=*/true);
    CHECK(t.readonly());
    CHECK(t.is_f_contiguous());
    CHECK(t.data() == buf.data());
    dlb::tensor copy = t;
    t = dlb::tensor();
    CHECK(c.calls == 0);
  }
  CHECK(c.calls == 1);

  counter w;
  auto* writable = make_legacy(w, buf.data(), f64, vec{4});
  {
    auto t = dlb::tensor::import(writable, /*readonly=*/false);
    CHECK_FALSE(t.readonly());
    CHECK(to_vec(t.strides()) == vec{1});
  }
  CHECK(w.calls == 1);
}

TEST_CASE("tensor: float4 pairs (PyTorch's float4_e2m1fn_x2) import as float4_e2m1fn on the same bytes") {
  const dlb::dtype pairs{dlb::kDLFloat4_e2m1fn, 4, 2}, f4{dlb::kDLFloat4_e2m1fn, 4};
  // Each byte: element 2k in the low nibble, 2k + 1 in the high one.
  alignas(8) std::uint8_t bytes[6] = {0x21, 0x7f, 0x9a, 0x00, 0x88, 0xf1};
  const double values[12] = {0.5, 1.0, -6.0, 6.0, -1.0, -0.5, 0.0, 0.0, -0.0, -0.0, 0.5, -6.0};
  const auto check_values = [&](const dlb::tensor& t) {
    for (int i = 0; i < 12; ++i) {
      CAPTURE(i);
      const double v = dlb::load(f4, t.data(), i).re;
      CHECK(v == values[i]);
      CHECK(std::signbit(v) == std::signbit(values[i]));
    }
  };
  counter c;
  {
    auto t = dlb::tensor::import(make_versioned(c, bytes, pairs, vec{2, 3}, vec{3, 1}, dlb::dlpack_flag_read_only));
    CHECK(t.type() == f4);
    CHECK(t.data() == bytes);
    CHECK(to_vec(t.shape()) == vec{2, 6});
    CHECK(to_vec(t.strides()) == vec{6, 1});
    CHECK(t.readonly());
    CHECK(t.nbytes() == 6);
    check_values(t);
    // It exports in DLPack's own spelling, lanes 1.
    auto* out = t.export_versioned();
    CHECK(dlb::dtype(out->dl_tensor.dtype) == f4);
    CHECK(out->dl_tensor.shape[1] == 6);
    out->deleter(out);
  }
  CHECK(c.calls == 1);
  {
    auto t = dlb::tensor::import(make_legacy(c, bytes, pairs, vec{6}), false);  // NULL strides: C order
    CHECK(to_vec(t.shape()) == vec{12});
    check_values(t);
  }
  CHECK(c.calls == 2);
  {
    auto t = dlb::tensor::import(make_versioned(c, bytes, pairs, vec{}));  // 0-d: one byte, two values
    CHECK(to_vec(t.shape()) == vec{2});
    CHECK(dlb::load(f4, t.data(), 1).re == 1.0);
  }
  CHECK(c.calls == 3);
  const std::int64_t shape[] = {6}, strides[] = {1};
  auto adopted = dlb::tensor::adopt(bytes, pairs, {dlb::kDLCPU, 0}, shape, strides, false, count_release, &c);
  CHECK(adopted.type() == f4);
  CHECK(to_vec(adopted.shape()) == vec{12});
  check_values(adopted);
  adopted = dlb::tensor();
  CHECK(c.calls == 4);
  // Refused (a last axis whose stride is not 1): the deleter runs once, before the error.
  try {
    (void)dlb::tensor::import(make_versioned(c, bytes, pairs, vec{3}, vec{2}));
    FAIL("a strided last axis of float4 pairs was accepted");
  } catch (const dlb::import_failure& e) {
    CHECK(std::string(e.what()) ==
          "invalid tensor: strides: axis 0: expected stride 1 on the last axis of float4 pairs (float4_e2m1fn_x2, "
          "lanes 2), got stride 2");
  }
  CHECK(c.calls == 5);
}

TEST_CASE("tensor: legacy import calls the deleter once when validation fails") {
  counter c;
  std::vector<float> buf(4);
  auto* m = make_legacy(c, buf.data(), f32, vec{2, 2});
  m->dl_tensor.device = {static_cast<dlb::DLDeviceType>(6), 0};
  CHECK_THROWS_WITH_AS((void)dlb::tensor::import(m, false), doctest::Contains("device type 6"),
                       dlb::import_failure);
  CHECK(c.calls == 1);

  dlb::DLManagedTensor bare{};  // NULL deleter
  bare.dl_tensor.ndim = 100;
  CHECK_THROWS_WITH_AS((void)dlb::tensor::import(&bare, true), "invalid tensor: ndim: expected ndim <= 64, got 100",
                       dlb::import_failure);
}

TEST_CASE("tensor: import of NULL is invalid_argument, with nothing to release") {
  static int releases = 0;
  const auto release = [](void*) { ++releases; };
  CHECK_THROWS_WITH_AS((void)dlb::tensor::import(static_cast<dlb::DLManagedTensorVersioned*>(nullptr), release),
                       "tensor::import: expected a DLManagedTensorVersioned, got NULL", std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::tensor::import(static_cast<dlb::DLManagedTensor*>(nullptr), true, release),
                       "tensor::import: expected a DLManagedTensor, got NULL", std::invalid_argument);
  CHECK(releases == 0);
}

TEST_CASE("tensor: import with no release function releases nothing, even when it refuses the tensor") {
  counter c;
  std::vector<float> buf(4);
  auto* v = make_versioned(c, buf.data(), f32, vec{4});
  v->dl_tensor.ndim = 70;
  CHECK_THROWS_AS((void)dlb::tensor::import(v, nullptr), dlb::import_failure);
  auto* m = make_legacy(c, buf.data(), f32, vec{4});
  m->dl_tensor.ndim = 70;
  CHECK_THROWS_AS((void)dlb::tensor::import(m, true, nullptr), dlb::import_failure);
  auto* valid = make_versioned(c, buf.data(), f32, vec{4});
  { const dlb::tensor kept = dlb::tensor::import(valid, nullptr); }
  CHECK(c.calls == 0);
  for (auto* deleted : {v, valid}) dlb::tensor::call_deleter<dlb::DLManagedTensorVersioned>(deleted);  // the test's
  dlb::tensor::call_deleter<dlb::DLManagedTensor>(m);
  CHECK(c.calls == 3);
}

// ---------------------------------------------------------------------------
// The deleter and threads

TEST_CASE("tensor: the deleter runs on the thread that drops the last reference") {
  counter c;
  std::vector<float> buf(4);
  auto t = dlb::tensor::import(make_versioned(c, buf.data(), f32, vec{4}));
  std::thread::id worker;
  std::thread th([held = std::move(t), &worker]() mutable {
    worker = std::this_thread::get_id();
    dlb::tensor last = std::move(held);
  });
  th.join();
  CHECK(c.calls == 1);
  CHECK(c.thread == worker);
  CHECK(c.thread != std::this_thread::get_id());
}

TEST_CASE("tensor: references dropped concurrently run the deleter exactly once") {
  for (int round = 0; round < 20; ++round) {
    counter c;
    std::vector<float> buf(16);
    auto t = dlb::tensor::import(make_versioned(c, buf.data(), f32, vec{16}));
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([held = dlb::tensor(t), &go]() mutable {
        while (!go.load()) std::this_thread::yield();
        for (int k = 0; k < 200; ++k) {
          dlb::tensor copy = held;
          auto view = held.restrided(held.data(), vec{8}, vec{2});
          auto* e = view.export_versioned();
          e->deleter(e);
        }
        held = dlb::tensor();
      });
    }
    t = dlb::tensor();  // the main thread's reference goes first
    CHECK(c.calls == 0);
    go = true;
    for (auto& th : threads) th.join();
    CHECK(c.calls == 1);
  }
}

// ---------------------------------------------------------------------------
// export

TEST_CASE("tensor: export_versioned describes the tensor") {
  auto t = dlb::tensor::empty(vec{2, 3}, f32);
  auto* m = t.export_versioned();
  REQUIRE(m != nullptr);
  CHECK(m->version.major == dlb::dlpack_major_version);
  CHECK(m->version.minor == dlb::dlpack_minor_version);
  CHECK(m->version.minor == 3);
  CHECK(m->flags == 0);
  CHECK(bool(m->deleter));
  CHECK(m->manager_ctx != nullptr);
  const auto& d = m->dl_tensor;
  CHECK(d.data == t.data());
  CHECK(d.device.device_type == dlb::kDLCPU);
  CHECK(d.device.device_id == 0);
  CHECK(d.ndim == 2);
  CHECK(dlb::dtype(d.dtype) == f32);
  CHECK(d.byte_offset == 0);
  // One allocation: shape then strides right after the struct.
  CHECK(d.shape == reinterpret_cast<std::int64_t*>(m + 1));
  CHECK(d.strides == d.shape + 2);
  CHECK(d.shape[0] == 2);
  CHECK(d.shape[1] == 3);
  CHECK(d.strides[0] == 3);
  CHECK(d.strides[1] == 1);
  CHECK_FALSE(dlb::validate(d, m->flags));
  CHECK(t.use_count() == 2);
  m->deleter(m);
  CHECK(t.use_count() == 1);
}

TEST_CASE("tensor: export_versioned flags") {
  auto t = dlb::tensor::empty(vec{4}, f32);
  auto flags_of = [&](std::uint64_t extra) {
    auto* m = t.export_versioned(extra);
    const auto f = m->flags;
    m->deleter(m);
    return f;
  };
  CHECK(flags_of(0) == 0);
  CHECK(flags_of(dlb::dlpack_flag_is_copied) == dlb::dlpack_flag_is_copied);
  // READ_ONLY passed in by the caller is kept even on a writable tensor.
  CHECK(flags_of(dlb::dlpack_flag_read_only) == dlb::dlpack_flag_read_only);
  t.make_readonly();
  CHECK(flags_of(0) == dlb::dlpack_flag_read_only);
  CHECK(flags_of(dlb::dlpack_flag_is_copied) == (dlb::dlpack_flag_read_only | dlb::dlpack_flag_is_copied));
  CHECK(flags_of(dlb::dlpack_flag_read_only) == dlb::dlpack_flag_read_only);
  CHECK(t.use_count() == 1);
}

TEST_CASE("tensor: export always fills strides, and never rewrites them") {
  auto t = dlb::tensor::empty(vec{2, 3}, i32);
  SUBCASE("C order from an import with NULL strides") {
    counter c;
    std::vector<float> buf(6);
    auto imported = dlb::tensor::import(make_versioned(c, buf.data(), f32, vec{2, 3}));
    auto* m = imported.export_versioned();
    REQUIRE(m->dl_tensor.strides != nullptr);
    CHECK(m->dl_tensor.strides[0] == 3);
    CHECK(m->dl_tensor.strides[1] == 1);
    m->deleter(m);
  }
  SUBCASE("a transposed view") {
    auto v = t.restrided(t.data(), vec{3, 2}, vec{1, 3});
    auto* m = v.export_versioned();
    CHECK(m->dl_tensor.strides[0] == 1);
    CHECK(m->dl_tensor.strides[1] == 3);
    CHECK_FALSE(dlb::validate(m->dl_tensor, m->flags));
    m->deleter(m);
  }
  SUBCASE("strides of extent-1 axes are passed as they are") {
    auto v = t.restrided(t.data(), vec{1, 3}, vec{77, 1});
    auto* m = v.export_versioned();
    CHECK(m->dl_tensor.strides[0] == 77);
    m->deleter(m);
  }
  SUBCASE("a reversed view") {
    auto* p = static_cast<std::int32_t*>(t.data());
    auto v = t.restrided(p + 5, vec{6}, vec{-1});
    auto* m = v.export_versioned();
    CHECK(m->dl_tensor.data == p + 5);
    CHECK(m->dl_tensor.strides[0] == -1);
    m->deleter(m);
  }
  SUBCASE("0-d: shape and strides are NULL") {
    auto s = dlb::tensor::empty(vec{}, f64);
    auto* m = s.export_versioned();
    CHECK(m->dl_tensor.ndim == 0);
    CHECK(m->dl_tensor.shape == nullptr);
    CHECK(m->dl_tensor.strides == nullptr);
    CHECK(m->dl_tensor.data == s.data());
    CHECK_FALSE(dlb::validate(m->dl_tensor));
    m->deleter(m);
  }
  SUBCASE("empty: data is NULL, strides still filled") {
    auto e = dlb::tensor::empty(vec{0, 4}, f32);
    CHECK(e.data() != nullptr);
    auto* m = e.export_versioned();
    CHECK(m->dl_tensor.data == nullptr);
    CHECK(m->dl_tensor.shape[0] == 0);
    CHECK(m->dl_tensor.strides[0] == 4);
    CHECK(m->dl_tensor.strides[1] == 1);
    CHECK_FALSE(dlb::validate(m->dl_tensor));
    m->deleter(m);
  }
}

TEST_CASE("tensor: export_legacy") {
  auto t = dlb::tensor::empty(vec{3}, dlb::dtype{dlb::kDLUInt, 16});
  auto* m = t.export_legacy();
  CHECK(m->dl_tensor.data == t.data());
  CHECK(m->dl_tensor.ndim == 1);
  CHECK(m->dl_tensor.shape == reinterpret_cast<std::int64_t*>(m + 1));
  CHECK(m->dl_tensor.shape[0] == 3);
  CHECK(m->dl_tensor.strides[0] == 1);
  CHECK(m->dl_tensor.byte_offset == 0);
  CHECK(dlb::dtype(m->dl_tensor.dtype) == dlb::dtype{dlb::kDLUInt, 16});
  CHECK(t.use_count() == 2);
  m->deleter(m);
  CHECK(t.use_count() == 1);
}

TEST_CASE("tensor: an export keeps the memory alive after the tensor goes") {
  counter c;
  std::vector<float> buf(4);
  auto t = dlb::tensor::adopt(buf.data(), f32, {}, vec{4}, {}, false, count_release, &c);
  auto* versioned = t.export_versioned();
  auto* legacy = t.export_legacy();
  t = dlb::tensor();
  CHECK(c.calls == 0);
  versioned->deleter(versioned);
  CHECK(c.calls == 0);
  legacy->deleter(legacy);
  CHECK(c.calls == 1);
}

// ---------------------------------------------------------------------------
// Round trips

TEST_CASE("tensor: export + import round trips run the release exactly once") {
  SUBCASE("versioned") {
    counter c;
    std::vector<float> buf{1, 2, 3, 4, 5, 6};
    auto t = dlb::tensor::adopt(buf.data(), f32, {}, vec{2, 3}, {}, false, count_release, &c);
    auto back = dlb::tensor::import(t.export_versioned(dlb::dlpack_flag_is_copied));
    CHECK(back.data() == t.data());
    CHECK(to_vec(back.shape()) == vec{2, 3});
    CHECK(to_vec(back.strides()) == vec{3, 1});
    CHECK_FALSE(back.readonly());
    CHECK(t.use_count() == 2);  // t and the export that `back` holds
    t = dlb::tensor();
    CHECK(c.calls == 0);
    back = dlb::tensor();
    CHECK(c.calls == 1);
  }
  SUBCASE("read-only survives a versioned round trip") {
    auto t = dlb::tensor::empty(vec{2}, f32);
    t.make_readonly();
    auto back = dlb::tensor::import(t.export_versioned());
    CHECK(back.readonly());
  }
  SUBCASE("legacy") {
    counter c;
    std::vector<float> buf(3);
    {
      auto t = dlb::tensor::adopt(buf.data(), f32, {}, vec{3}, {}, false, count_release, &c);
      auto back = dlb::tensor::import(t.export_legacy(), /*readonly=*/true);
      CHECK(back.readonly());
      CHECK(back.data() == buf.data());
    }
    CHECK(c.calls == 1);
  }
  SUBCASE("chains of round trips") {
    counter c;
    std::vector<float> buf(8);
    std::vector<dlb::tensor> generations;
    generations.push_back(dlb::tensor::adopt(buf.data(), f32, {}, vec{2, 4}, {}, false, count_release, &c));
    for (int i = 0; i < 6; ++i) {
      const auto& last = generations.back();
      generations.push_back(i % 2 ? dlb::tensor::import(last.export_legacy(), false)
                                  : dlb::tensor::import(last.export_versioned()));
    }
    CHECK(generations.back().data() == buf.data());
    // Drop them oldest first: only the very last drop releases.
    for (auto& g : generations) {
      CHECK(c.calls == 0);
      g = dlb::tensor();
    }
    CHECK(c.calls == 1);
  }
  SUBCASE("a foreign tensor re-exported and re-imported") {
    counter c;
    std::vector<float> buf(4);
    {
      auto t = dlb::tensor::import(make_versioned(c, buf.data(), f32, vec{4}));
      auto again = dlb::tensor::import(t.export_versioned());
      t = dlb::tensor();
      CHECK(c.calls == 0);
    }
    CHECK(c.calls == 1);
  }
}

namespace {
// import() may take the function that runs the deleter (the Python layer wraps
// it to keep a pending Python exception intact). Checked only where this
// dlb::tensor has that parameter.
template <class M>
concept import_takes_release = requires(M* m, dlb::keeper::release_fn release) {
  dlb::tensor::import(m, release);
};

std::atomic<int> wrapped_calls{0};

template <class M>
void wrapped_release(void* p) noexcept {
  wrapped_calls.fetch_add(1);
  auto* self = static_cast<M*>(p);
  if (self->deleter) self->deleter(self);
}

template <class M>
void check_release_parameter() {
  if constexpr (import_takes_release<M>) {
    std::vector<float> buf(4);
    counter c;
    wrapped_calls = 0;
    M* m = make_managed<M>(c, buf.data(), f32, vec{4});
    if constexpr (std::is_same_v<M, dlb::DLManagedTensorVersioned>) m->version = {1, 3};
    {
      auto t = dlb::tensor::import(m, &wrapped_release<M>);
      dlb::tensor copy = t;
      CHECK(wrapped_calls == 0);
    }
    CHECK(wrapped_calls == 1);
    CHECK(c.calls == 1);
    // On a validation failure it runs before the exception.
    counter bad;
    M* broken = make_managed<M>(bad, nullptr, f32, vec{4});
    if constexpr (std::is_same_v<M, dlb::DLManagedTensorVersioned>) broken->version = {1, 3};
    CHECK_THROWS_WITH_AS((void)dlb::tensor::import(broken, &wrapped_release<M>),
                         "invalid tensor: data: expected a pointer for a non-empty tensor, got NULL",
                         dlb::import_failure);
    CHECK(wrapped_calls == 2);
    CHECK(bad.calls == 1);
  } else {
    MESSAGE("dlb::tensor::import takes no release function here: nothing to check");
  }
}
}  // namespace

TEST_CASE("tensor: import with a caller-supplied release function") {
  check_release_parameter<dlb::DLManagedTensorVersioned>();
}
