// dlbridge/validate.hpp: every way a foreign DLTensor can be refused, with the
// field, axis, expected and received texts, and what must be accepted.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dlbridge/demands.hpp"
#include "dlbridge/validate.hpp"

namespace {
using vec = std::vector<std::int64_t>;
constexpr std::int64_t i64max = std::numeric_limits<std::int64_t>::max();

// A well-formed float32 tensor of shape (2, 3) to break one field at a time.
struct fixture {
  alignas(64) float storage[64] = {};
  vec shape{2, 3};
  vec strides{3, 1};
  dlb::DLTensor t{};

  fixture() { refresh(); }
  void refresh() {
    t.data = storage;
    t.device = {dlb::kDLCPU, 0};
    t.ndim = std::int32_t(shape.size());
    t.dtype = {dlb::kDLFloat, 32, 1};
    t.shape = shape.data();
    t.strides = strides.data();
    t.byte_offset = 0;
  }
};

void* address(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

// Checks one refusal in full.
void check_error(const std::optional<dlb::import_error>& e, std::string_view field, std::int32_t axis,
                 const std::string& expected, const std::string& received) {
  REQUIRE(e.has_value());
  CHECK(e->field == field);
  CHECK(e->axis == axis);
  CHECK(e->expected == expected);
  CHECK(e->received == received);
  std::string message(field);
  message += ": ";
  if (axis >= 0) message += "axis " + std::to_string(axis) + ": ";
  message += "expected " + expected + ", got " + received;
  CHECK(e->message() == message);
}
}  // namespace

TEST_CASE("validate: a well-formed tensor passes") {
  fixture f;
  CHECK_FALSE(dlb::validate(f.t));
  CHECK_FALSE(dlb::validate(f.t, dlb::dlpack_flag_read_only));
  CHECK_FALSE(dlb::validate(f.t, dlb::dlpack_flag_is_copied));
  CHECK_FALSE(dlb::validate(f.t, dlb::dlpack_flag_read_only | dlb::dlpack_flag_is_copied));
}

TEST_CASE("validate: import_error::message") {
  const dlb::import_error plain{"ndim", -1, "ndim <= 64", "70"};
  CHECK(plain.message() == "ndim: expected ndim <= 64, got 70");
  const dlb::import_error with_axis{"shape", 2, "extent >= 0", "extent -1"};
  CHECK(with_axis.message() == "shape: axis 2: expected extent >= 0, got extent -1");
  const dlb::import_error axis0{"shape", 0, "a", "b"};
  CHECK(axis0.message() == "shape: axis 0: expected a, got b");
}

TEST_CASE("validate: flags") {
  fixture f;
  const auto unknown = dlb::validate(f.t, std::uint64_t(1) << 3);
  check_error(unknown, "flags", -1, "only DLPack 1.3 flag bits (mask 0x7)", "flags 8");
  const auto high = dlb::validate(f.t, dlb::dlpack_flag_read_only | (std::uint64_t(1) << 63));
  check_error(high, "flags", -1, "only DLPack 1.3 flag bits (mask 0x7)", "flags 9223372036854775809");
  const auto padded = dlb::validate(f.t, dlb::dlpack_flag_is_subbyte_type_padded);
  check_error(padded, "flags", -1, "packed sub-byte data", "IS_SUBBYTE_TYPE_PADDED");
  CHECK(padded->message() == "flags: expected packed sub-byte data, got IS_SUBBYTE_TYPE_PADDED");
}

TEST_CASE("validate: ndim") {
  fixture f;
  f.t.ndim = 70;
  const auto e = dlb::validate(f.t);
  check_error(e, "ndim", -1, "ndim <= 64", "70");
  CHECK(e->message().find("expected ndim <= 64, got 70") != std::string::npos);
  f.t.ndim = 65;
  check_error(dlb::validate(f.t), "ndim", -1, "ndim <= 64", "65");
  f.t.ndim = -1;
  check_error(dlb::validate(f.t), "ndim", -1, "ndim <= 64", "-1");
  f.t.ndim = std::numeric_limits<std::int32_t>::min();
  check_error(dlb::validate(f.t), "ndim", -1, "ndim <= 64", "-2147483648");
  // 64 axes is the limit, and fine.
  vec ones(64, 1), strides(64, 1);
  f.t.ndim = 64;
  f.t.shape = ones.data();
  f.t.strides = strides.data();
  CHECK_FALSE(dlb::validate(f.t));
}

TEST_CASE("validate: device") {
  fixture f;
  for (int type : {0, 5, 6, 22, 99, -1}) {
    CAPTURE(type);
    f.t.device = {static_cast<dlb::DLDeviceType>(type), 0};
    check_error(dlb::validate(f.t), "device", -1, "a DLPack device type",
                "device type " + std::to_string(type));
  }
  f.t.device = {dlb::kDLCUDA, -1};
  check_error(dlb::validate(f.t), "device", -1, "device_id >= 0", "-1");
  // Any DLPack device passes: validate never touches the data.
  for (const auto& info : dlb::device_type_table) {
    CAPTURE(info.name);
    f.t.device = {info.type, 3};
    CHECK_FALSE(dlb::validate(f.t));
  }
}

TEST_CASE("validate: dtype") {
  fixture f;
  f.t.dtype = {99, 32, 1};
  const auto e = dlb::validate(f.t);
  check_error(e, "dtype", -1, "a DLPack dtype code (0 to 18)", "dtype code 99");
  CHECK(e->message().find("dtype code 99") != std::string::npos);
  f.t.dtype = {19, 8, 1};
  check_error(dlb::validate(f.t), "dtype", -1, "a DLPack dtype code (0 to 18)", "dtype code 19");
  f.t.dtype = {255, 8, 1};
  check_error(dlb::validate(f.t), "dtype", -1, "a DLPack dtype code (0 to 18)", "dtype code 255");

  f.t.dtype = {dlb::kDLFloat, 32, 4};
  check_error(dlb::validate(f.t), "dtype", -1, "lanes == 1", "lanes 4");
  f.t.dtype = {dlb::kDLFloat, 32, 0};
  check_error(dlb::validate(f.t), "dtype", -1, "lanes == 1", "lanes 0");
  // Only float4 pairs (PyTorch's float4_e2m1fn_x2, below) may have lanes 2.
  f.t.dtype = {dlb::kDLFloat4_e2m1fn, 4, 4};
  check_error(dlb::validate(f.t), "dtype", -1, "lanes == 1", "lanes 4");
  f.t.dtype = {dlb::kDLFloat6_e2m3fn, 6, 2};
  check_error(dlb::validate(f.t), "dtype", -1, "lanes == 1", "lanes 2");
  f.t.dtype = {dlb::kDLUInt, 8, 2};
  check_error(dlb::validate(f.t), "dtype", -1, "lanes == 1", "lanes 2");
  f.t.dtype = {dlb::kDLBcomplex, 32, 2};
  check_error(dlb::validate(f.t), "dtype", -1, "lanes == 1", "lanes 2");

  f.t.dtype = {dlb::kDLOpaqueHandle, 64, 1};
  check_error(dlb::validate(f.t), "dtype", -1, "a supported (code, bits) pair", "(code 3, bits 64, lanes 1)");
  f.t.dtype = {dlb::kDLFloat, 8, 1};
  check_error(dlb::validate(f.t), "dtype", -1, "a supported (code, bits) pair", "(code 2, bits 8, lanes 1)");
  f.t.dtype = {dlb::kDLBool, 1, 1};  // bool must be a whole byte
  check_error(dlb::validate(f.t), "dtype", -1, "a supported (code, bits) pair", "(code 6, bits 1, lanes 1)");
  f.t.dtype = {dlb::kDLFloat4_e2m1fn, 8, 1};  // float4 must have bits 4
  check_error(dlb::validate(f.t), "dtype", -1, "a supported (code, bits) pair", "(code 17, bits 8, lanes 1)");
  f.t.dtype = {dlb::kDLFloat6_e2m3fn, 8, 1};  // float6 must have bits 6
  check_error(dlb::validate(f.t), "dtype", -1, "a supported (code, bits) pair", "(code 15, bits 8, lanes 1)");
  f.t.dtype = {dlb::kDLComplex, 32, 1};
  check_error(dlb::validate(f.t), "dtype", -1, "a supported (code, bits) pair", "(code 5, bits 32, lanes 1)");
  f.t.dtype = {dlb::kDLBcomplex, 64, 1};  // bcomplex is two bfloat16: 32 bits
  check_error(dlb::validate(f.t), "dtype", -1, "a supported (code, bits) pair", "(code 18, bits 64, lanes 1)");
  f.t.dtype = {dlb::kDLFloat4_e2m1fn, 8, 2};  // pairs of float4 only
  check_error(dlb::validate(f.t), "dtype", -1, "lanes == 1", "lanes 2");

  // Every supported dtype passes (sub-byte ones with C-contiguous strides).
  for (const auto& info : dlb::dtype_table) {
    CAPTURE(info.name);
    f.t.dtype = info.type;
    CHECK_FALSE(dlb::validate(f.t));
  }
}

TEST_CASE("validate: shape") {
  fixture f;
  f.t.shape = nullptr;
  check_error(dlb::validate(f.t), "shape", -1, "a shape array", "NULL");
  f.refresh();
  f.shape = {2, -3};
  f.refresh();
  const auto e = dlb::validate(f.t);
  check_error(e, "shape", 1, "extent >= 0", "extent -3");
  CHECK(e->message() == "shape: axis 1: expected extent >= 0, got extent -3");
  f.shape = {-1, 0};  // a negative extent is refused even next to an empty axis
  f.refresh();
  check_error(dlb::validate(f.t), "shape", 0, "extent >= 0", "extent -1");
  // 0-d: shape and strides may both be NULL.
  f.t.ndim = 0;
  f.t.shape = nullptr;
  f.t.strides = nullptr;
  CHECK_FALSE(dlb::validate(f.t));
}

TEST_CASE("validate: sizes that overflow int64") {
  fixture f;
  f.shape = {i64max, 2};
  f.strides = {2, 1};
  f.refresh();
  check_error(dlb::validate(f.t), "shape", -1, "a byte size that fits in int64", "an overflowing element count");
  // The count fits but the bytes do not.
  f.shape = {std::int64_t(1) << 61};
  f.strides = {1};
  f.refresh();
  f.t.dtype = {dlb::kDLFloat, 64, 1};
  check_error(dlb::validate(f.t), "shape", -1, "a byte size that fits in int64", "an overflowing element count");
  f.t.dtype = {dlb::kDLFloat, 32, 1};  // 2^63 bytes: one too many
  check_error(dlb::validate(f.t), "shape", -1, "a byte size that fits in int64", "an overflowing element count");
  f.shape = {std::int64_t(1) << 59};
  f.refresh();
  f.t.dtype = {dlb::kDLComplex, 128, 1};
  check_error(dlb::validate(f.t), "shape", -1, "a byte size that fits in int64", "an overflowing element count");
}

TEST_CASE("validate: empty tensors need neither data nor sensible strides") {
  fixture f;
  f.shape = {3, 0, 2};
  f.strides = {i64max, -5, std::numeric_limits<std::int64_t>::min()};
  f.refresh();
  f.t.data = nullptr;
  CHECK_FALSE(dlb::validate(f.t));
  f.t.strides = nullptr;
  CHECK_FALSE(dlb::validate(f.t));
  f.t.byte_offset = 12345;
  CHECK_FALSE(dlb::validate(f.t));
  // ...but C-order strides must fit, as in NumPy and PyTorch (fuzz regression).
  f.shape = {0, i64max, i64max};
  f.refresh();
  f.t.data = nullptr;
  check_error(dlb::validate(f.t), "shape", -1, "C-order strides that fit in int64 (empty axes counted as extent 1)",
              "extents (0, 9223372036854775807, 9223372036854775807)");
  // Empty sub-byte data with non-contiguous strides.
  f.shape = {0, 4};
  f.strides = {1, 7};
  f.refresh();
  f.t.data = nullptr;
  f.t.dtype = {dlb::kDLFloat4_e2m1fn, 4, 1};
  CHECK_FALSE(dlb::validate(f.t));
}

TEST_CASE("validate: data") {
  fixture f;
  f.t.data = nullptr;
  check_error(dlb::validate(f.t), "data", -1, "a pointer for a non-empty tensor", "NULL");
  // A 0-d tensor has one element, so it needs data too.
  f.t.ndim = 0;
  check_error(dlb::validate(f.t), "data", -1, "a pointer for a non-empty tensor", "NULL");
  // Any other pointer is the producer's business: validate never reads it.
  f.refresh();
  f.t.data = address(64);
  CHECK_FALSE(dlb::validate(f.t));
}

TEST_CASE("validate: NULL strides mean C order and are accepted") {
  fixture f;
  f.t.strides = nullptr;
  CHECK_FALSE(dlb::validate(f.t));
  f.t.dtype = {dlb::kDLFloat4_e2m1fn, 4, 1};
  CHECK_FALSE(dlb::validate(f.t));
}

TEST_CASE("validate: arbitrary strides are accepted") {
  fixture f;
  f.strides = {-1, 2};  // reversed, transposed...
  f.refresh();
  f.t.data = f.storage + 8;
  CHECK_FALSE(dlb::validate(f.t));
  f.strides = {0, 0};  // ...broadcast
  f.refresh();
  CHECK_FALSE(dlb::validate(f.t));
  f.shape = {1, 3};  // ...and whatever on an extent-1 axis
  f.strides = {i64max, 1};
  f.refresh();
  CHECK_FALSE(dlb::validate(f.t));
}

TEST_CASE("validate: packed sub-byte data must be C-contiguous") {
  fixture f;
  f.t.dtype = {dlb::kDLFloat4_e2m1fn, 4, 1};
  CHECK_FALSE(dlb::validate(f.t));
  f.strides = {1, 2};
  f.refresh();
  f.t.dtype = {dlb::kDLFloat4_e2m1fn, 4, 1};
  check_error(dlb::validate(f.t), "strides", -1, "C-contiguous strides for a packed sub-byte dtype",
              "non-contiguous strides");
  f.t.dtype = {dlb::kDLFloat6_e3m2fn, 6, 1};
  check_error(dlb::validate(f.t), "strides", -1, "C-contiguous strides for a packed sub-byte dtype",
              "non-contiguous strides");
  f.strides = {3, -1};
  f.refresh();
  f.t.dtype = {dlb::kDLFloat6_e3m2fn, 6, 1};
  CHECK(dlb::validate(f.t));
  // Extent-1 axes may carry any stride.
  f.shape = {1, 6};
  f.strides = {0, 1};
  f.refresh();
  f.t.dtype = {dlb::kDLFloat6_e3m2fn, 6, 1};
  CHECK_FALSE(dlb::validate(f.t));
}

TEST_CASE("validate: float4 pairs (PyTorch's float4_e2m1fn_x2) are bytes, C-contiguous") {
  alignas(8) unsigned char bytes[8] = {};
  std::int64_t dims[2 * dlb::max_ndim];
  vec shape{2, 3}, strides{3, 1};
  dlb::DLTensor t{bytes, {dlb::kDLCPU, 0}, 2, {dlb::kDLFloat4_e2m1fn, 4, 2}, shape.data(), strides.data(), 0};
  CHECK_FALSE(dlb::validate(t));
  CHECK_FALSE(dlb::validate(dlb::unpair_float4(t, dims)));
  CHECK_FALSE(dlb::validate(t, dlb::dlpack_flag_read_only));
  t.strides = nullptr;  // C order
  CHECK_FALSE(dlb::validate(t));
  t.strides = strides.data();
  // The last axis must be the bytes' own: stride 1.
  strides = {6, 2};
  check_error(dlb::validate(t), "strides", 1, "stride 1 on the last axis of float4 pairs (float4_e2m1fn_x2, lanes 2)",
              "stride 2");
  strides = {3, -1};
  check_error(dlb::validate(t), "strides", 1, "stride 1 on the last axis of float4 pairs (float4_e2m1fn_x2, lanes 2)",
              "stride -1");
  // The other axes must be C-contiguous too, as for any packed data.
  strides = {4, 1};
  check_error(dlb::validate(t), "strides", -1, "C-contiguous strides for a packed sub-byte dtype",
              "non-contiguous strides");
  strides = {1, 2};
  CHECK(dlb::validate(t)->field == "strides");
  // Axes of extent 1 may carry any stride, the last one too; empty tensors any strides at all.
  shape = {2, 1};
  strides = {1, 7};
  CHECK_FALSE(dlb::validate(t));
  CHECK_FALSE(dlb::validate(dlb::unpair_float4(t, dims)));
  shape = {1, 3};
  strides = {-5, 1};
  CHECK_FALSE(dlb::validate(t));
  CHECK_FALSE(dlb::validate(dlb::unpair_float4(t, dims)));
  shape = {0, 3};
  strides = {1, 9};
  CHECK_FALSE(dlb::validate(t));
  CHECK_FALSE(dlb::validate(dlb::unpair_float4(t, dims)));
  t.data = nullptr;
  CHECK_FALSE(dlb::validate(t));
  t.data = bytes;
  // Errors name the bytes' layout, as the producer gave it.
  shape = {2, -3};
  strides = {3, 1};
  check_error(dlb::validate(t), "shape", 1, "extent >= 0", "extent -3");
  t.device = {dlb::kDLCPU, -1};
  check_error(dlb::validate(t), "device", -1, "device_id >= 0", "-1");
  t.device = {dlb::kDLCPU, 0};
  check_error(dlb::validate(t, dlb::dlpack_flag_is_subbyte_type_padded), "flags", -1, "packed sub-byte data",
              "IS_SUBBYTE_TYPE_PADDED");
  // As float4, with the last extent doubled, the C-order strides (and so the
  // element count) must fit in int64 too, empty or not.
  const std::string doubled = "C-order strides that fit in int64 with the last extent doubled (float4 pairs)";
  shape = {(std::int64_t(1) << 62) - 1};
  t.ndim = 1;
  t.strides = nullptr;
  CHECK_FALSE(dlb::validate(t));
  CHECK_FALSE(dlb::validate(dlb::unpair_float4(t, dims)));
  shape = {std::int64_t(1) << 62};
  check_error(dlb::validate(t), "shape", -1, doubled, "extents (4611686018427387904,)");
  shape = {0, std::int64_t(1) << 62};
  t.ndim = 2;
  check_error(dlb::validate(t), "shape", -1, doubled, "extents (0, 4611686018427387904)");
  shape = {std::int64_t(1) << 61, 2};  // 2^62 bytes, 2^63 float4 values
  check_error(dlb::validate(t), "shape", -1, doubled, "extents (2305843009213693952, 2)");
  shape = {std::int64_t(1) << 62, 0};  // a last extent of 0 stays 0
  CHECK_FALSE(dlb::validate(t));
  CHECK_FALSE(dlb::validate(dlb::unpair_float4(t, dims)));
  shape = {0, std::int64_t(1) << 61, 2};  // empty: no elements, but C-order strides of 2^63
  t.shape = shape.data();  // (three extents: a new array)
  t.ndim = 3;
  check_error(dlb::validate(t), "shape", -1, doubled, "extents (0, 2305843009213693952, 2)");
  // 0-d: one byte, two values.
  t.ndim = 0;
  t.shape = nullptr;
  CHECK_FALSE(dlb::validate(t));
  CHECK_FALSE(dlb::validate(dlb::unpair_float4(t, dims)));
}

TEST_CASE("validate: unpair_float4 spells float4 pairs as DLPack's float4_e2m1fn on the same bytes") {
  alignas(8) unsigned char bytes[24] = {};
  std::int64_t dims[2 * dlb::max_ndim];
  vec shape{2, 3, 4}, strides{12, 4, 1};
  const dlb::DLTensor t{bytes, {dlb::kDLCUDA, 1}, 3, {dlb::kDLFloat4_e2m1fn, 4, 2}, shape.data(), strides.data(), 5};
  const dlb::DLTensor u = dlb::unpair_float4(t, dims);
  CHECK(u.data == t.data);
  CHECK(u.byte_offset == 5);
  CHECK(u.device.device_type == dlb::kDLCUDA);
  CHECK(u.device.device_id == 1);
  CHECK(dlb::dtype(u.dtype) == dlb::dtype{dlb::kDLFloat4_e2m1fn, 4, 1});
  REQUIRE(u.ndim == 3);
  CHECK(vec(u.shape, u.shape + 3) == vec{2, 3, 8});
  CHECK(vec(u.strides, u.strides + 3) == vec{24, 8, 1});  // the bytes' strides doubled
  CHECK_FALSE(dlb::validate(u));
  // Axes of extent 1 get C-order strides, whatever the bytes had; NULL strides too.
  shape = {1, 2};
  strides = {99, 1};
  dlb::DLTensor v = t;
  v.ndim = 2;
  CHECK(vec(dlb::unpair_float4(v, dims).strides, dims + 4) == vec{4, 1});
  v.strides = nullptr;
  CHECK(vec(dlb::unpair_float4(v, dims).shape, dims + 2) == vec{1, 4});
  CHECK(vec(dlb::unpair_float4(v, dims).strides, dims + 4) == vec{4, 1});
  // 0-d: one byte holds a 1-d pair.
  v.ndim = 0;
  v.shape = nullptr;
  const dlb::DLTensor w = dlb::unpair_float4(v, dims);
  REQUIRE(w.ndim == 1);
  CHECK(w.shape[0] == 2);
  CHECK(w.strides[0] == 1);
  // Empty: the doubled extent is still 0 where it was.
  shape = {3, 0};
  v.ndim = 2;
  v.shape = shape.data();
  CHECK(vec(dlb::unpair_float4(v, dims).shape, dims + 2) == vec{3, 0});
}

TEST_CASE("demands: check_demands names a dtype without a name by its triple") {
  alignas(8) unsigned char bytes[8] = {};
  vec shape{4};
  const dlb::DLTensor t{bytes, {dlb::kDLCPU, 0}, 1, {dlb::kDLFloat4_e2m1fn, 4, 2}, shape.data(), nullptr, 0};
  dlb::requirements r;
  r.type = {dlb::kDLFloat, 32};
  check_error(dlb::check(t, false, r), "dtype", -1, "float32", "(code 17, bits 4, lanes 2)");
  r.type = {dlb::kDLFloat4_e2m1fn, 4};
  CHECK(dlb::check(t, false, r)->received == "(code 17, bits 4, lanes 2)");
}

TEST_CASE("validate: strides whose byte offsets overflow") {
  fixture f;
  f.strides = {i64max, 1};
  f.refresh();
  check_error(dlb::validate(f.t), "strides", -1, "byte offsets that fit in int64", "an overflowing stride");
  f.strides = {std::int64_t(1) << 61, 1};  // * 4 bytes overflows
  f.refresh();
  check_error(dlb::validate(f.t), "strides", -1, "byte offsets that fit in int64", "an overflowing stride");
}

TEST_CASE("validate: byte_offset past the end of the address space") {
  fixture f;
  f.t.data = address(std::numeric_limits<std::uintptr_t>::max() - 10);
  f.t.byte_offset = 100;
  check_error(dlb::validate(f.t), "byte_offset", -1, "an address inside the address space", "byte_offset 100");
  f.t.data = address(16);
  f.t.byte_offset = std::numeric_limits<std::uint64_t>::max();
  check_error(dlb::validate(f.t), "byte_offset", -1, "an address inside the address space",
              "byte_offset 18446744073709551615");
}

TEST_CASE("validate: a strided span outside the address space") {
  fixture f;
  // Three float32 elements 8 elements (32 bytes) apart, going down.
  f.shape = {3};
  f.strides = {-8};
  f.refresh();
  f.t.data = address(16);  // elements at 16, -16, -48: below address 0
  check_error(dlb::validate(f.t), "strides", -1, "a strided span inside the address space",
              "a span of [-64, 4) bytes around address 16");
  // Moving the first element up with byte_offset makes it fit exactly.
  f.t.byte_offset = 48;
  CHECK_FALSE(dlb::validate(f.t));
  f.t.byte_offset = 47;
  check_error(dlb::validate(f.t), "strides", -1, "a strided span inside the address space",
              "a span of [-64, 4) bytes around address 63");

  // Past the top of the address space, with strides...
  const auto top = std::numeric_limits<std::uintptr_t>::max();
  f.strides = {1};
  f.refresh();
  // The end of the span (one past the last byte) must be an address too.
  f.t.data = address(top - 12);
  CHECK_FALSE(dlb::validate(f.t));
  f.t.data = address(top - 11);
  check_error(dlb::validate(f.t), "strides", -1, "a strided span inside the address space",
              "a span of [0, 12) bytes around address " + std::to_string(top - 11));
  // ...and with NULL strides (C order).
  f.t.strides = nullptr;
  check_error(dlb::validate(f.t), "strides", -1, "a strided span inside the address space",
              "a span of [0, 12) bytes around address " + std::to_string(top - 11));
}

TEST_CASE("validate: a span reaching down by exactly 2^63 bytes") {
  // lo == INT64_MIN: computing its magnitude must not overflow.
  fixture f;
  f.shape = {2, 2};
  f.strides = {-(std::int64_t(1) << 62), -(std::int64_t(1) << 62)};
  f.refresh();
  f.t.dtype = {dlb::kDLInt, 8, 1};
  f.t.data = address(std::uintptr_t(1) << 62);
  check_error(dlb::validate(f.t), "strides", -1, "a strided span inside the address space",
              "a span of [-9223372036854775808, 1) bytes around address 4611686018427387904");
  if (sizeof(std::uintptr_t) == 8) {
    f.t.data = address(std::uintptr_t(1) << 63);  // exactly high enough
    CHECK_FALSE(dlb::validate(f.t));
  }
}

TEST_CASE("validate: checks run in a fixed order") {
  // A tensor wrong in every field reports the first check: flags, then ndim...
  fixture f;
  f.t.ndim = 99;
  f.t.device = {static_cast<dlb::DLDeviceType>(0), -1};
  f.t.dtype = {99, 0, 0};
  f.t.data = nullptr;
  CHECK(dlb::validate(f.t, 1 << 5)->field == "flags");
  CHECK(dlb::validate(f.t)->field == "ndim");
  f.t.ndim = 2;
  CHECK(dlb::validate(f.t)->field == "device");
  f.t.device = {dlb::kDLCPU, 0};
  CHECK(dlb::validate(f.t)->field == "dtype");
  f.t.dtype = {dlb::kDLFloat, 32, 1};
  CHECK(dlb::validate(f.t)->field == "data");
}

TEST_CASE("validate: versions") {
  CHECK_FALSE(dlb::validate_version({1, 0}));
  CHECK_FALSE(dlb::validate_version({1, 3}));
  CHECK_FALSE(dlb::validate_version({1, 99}));  // a newer minor only adds values
  check_error(dlb::validate_version({2, 0}), "version", -1, "DLPack major version 1", "2.0");
  check_error(dlb::validate_version({0, 8}), "version", -1, "DLPack major version 1", "0.8");
  check_error(dlb::validate_version({4294967295u, 7}), "version", -1, "DLPack major version 1", "4294967295.7");
  CHECK(dlb::validate_version({2, 1})->message() == "version: expected DLPack major version 1, got 2.1");
}
