// ABI proof against the system <dlpack/dlpack.h> (Debian's libdlpack-dev,
// DLPack 0.6 on Debian 12): the legacy structs and every enumerator that header
// has must match dlbridge/dlpack.hpp. Newer system headers are checked on the
// 0.6 subset they all share, plus the versioned struct when they have it.
#include <doctest/doctest.h>

#include <dlpack/dlpack.h>  // upstream, global namespace

#include <cstdlib>
#include <cstring>

#include "abi_check.hpp"
#include "dlbridge/dlpack.hpp"
#include "dlbridge/tensor.hpp"

#if defined(DLPACK_VERSION)
#define DLB_LEGACY_VERSION DLPACK_VERSION  // 0.x headers: 60 means 0.6
#elif defined(DLPACK_MAJOR_VERSION)
#define DLB_LEGACY_VERSION (DLPACK_MAJOR_VERSION * 100 + DLPACK_MINOR_VERSION * 10)
#else
#error "<dlpack/dlpack.h> defines neither DLPACK_VERSION nor DLPACK_MAJOR_VERSION"
#endif

// --- structs: size, alignment and every field ---------------------------------
DLB_SAME_SHAPE(DLDevice);
DLB_SAME_FIELD(DLDevice, device_type);
DLB_SAME_FIELD(DLDevice, device_id);

DLB_SAME_SHAPE(DLDataType);
DLB_SAME_FIELD(DLDataType, code);
DLB_SAME_FIELD(DLDataType, bits);
DLB_SAME_FIELD(DLDataType, lanes);

DLB_SAME_SHAPE(DLTensor);
DLB_SAME_FIELD(DLTensor, data);
DLB_SAME_FIELD(DLTensor, device);
DLB_SAME_FIELD(DLTensor, ndim);
DLB_SAME_FIELD(DLTensor, dtype);
DLB_SAME_FIELD(DLTensor, shape);
DLB_SAME_FIELD(DLTensor, strides);
DLB_SAME_FIELD(DLTensor, byte_offset);

DLB_SAME_SHAPE(DLManagedTensor);
DLB_SAME_FIELD(DLManagedTensor, dl_tensor);
DLB_SAME_FIELD(DLManagedTensor, manager_ctx);
DLB_SAME_FIELD(DLManagedTensor, deleter);

// DLDeviceType is a plain C enum upstream (4 bytes with GCC and Clang).
static_assert(sizeof(::DLDeviceType) == sizeof(dlb::DLDeviceType));
static_assert(abi_check::both_standard_layout<::DLTensor, dlb::DLTensor>);
static_assert(abi_check::both_standard_layout<::DLManagedTensor, dlb::DLManagedTensor>);

// --- enumerators of DLPack 0.6 (present in every later header too) -------------
DLB_SAME_VALUE(kDLCPU);
DLB_SAME_VALUE(kDLCUDA);
DLB_SAME_VALUE(kDLCUDAHost);
DLB_SAME_VALUE(kDLOpenCL);
DLB_SAME_VALUE(kDLVulkan);
DLB_SAME_VALUE(kDLMetal);
DLB_SAME_VALUE(kDLVPI);
DLB_SAME_VALUE(kDLROCM);
DLB_SAME_VALUE(kDLROCMHost);
DLB_SAME_VALUE(kDLExtDev);
DLB_SAME_VALUE(kDLCUDAManaged);

DLB_SAME_VALUE(kDLInt);
DLB_SAME_VALUE(kDLUInt);
DLB_SAME_VALUE(kDLFloat);
DLB_SAME_VALUE(kDLOpaqueHandle);
DLB_SAME_VALUE(kDLBfloat);
DLB_SAME_VALUE(kDLComplex);

// --- what 1.x headers add, when the system header is one ------------------------
#if defined(DLPACK_MAJOR_VERSION)
DLB_SAME_SHAPE(DLPackVersion);
DLB_SAME_FIELD(DLPackVersion, major);
DLB_SAME_FIELD(DLPackVersion, minor);
DLB_SAME_SHAPE(DLManagedTensorVersioned);
DLB_SAME_FIELD(DLManagedTensorVersioned, version);
DLB_SAME_FIELD(DLManagedTensorVersioned, manager_ctx);
DLB_SAME_FIELD(DLManagedTensorVersioned, deleter);
DLB_SAME_FIELD(DLManagedTensorVersioned, flags);
DLB_SAME_FIELD(DLManagedTensorVersioned, dl_tensor);
DLB_SAME_VALUE(kDLBool);
static_assert(DLPACK_FLAG_BITMASK_READ_ONLY == dlb::dlpack_flag_read_only);
static_assert(DLPACK_FLAG_BITMASK_IS_COPIED == dlb::dlpack_flag_is_copied);
#endif

TEST_CASE("abi legacy: system header version") {
  MESSAGE("system <dlpack/dlpack.h>: DLPack version code " << DLB_LEGACY_VERSION);
  CHECK(DLB_LEGACY_VERSION >= 60);
}

TEST_CASE("abi legacy: LP64 sizes and offsets") {
  if (sizeof(void*) != 8) return;
  CHECK(sizeof(::DLDevice) == 8);
  CHECK(sizeof(::DLDataType) == 4);
  CHECK(sizeof(::DLTensor) == 48);
  CHECK(sizeof(::DLManagedTensor) == 64);
  CHECK(offsetof(::DLTensor, data) == 0);
  CHECK(offsetof(::DLTensor, device) == 8);
  CHECK(offsetof(::DLTensor, ndim) == 16);
  CHECK(offsetof(::DLTensor, dtype) == 20);
  CHECK(offsetof(::DLTensor, shape) == 24);
  CHECK(offsetof(::DLTensor, strides) == 32);
  CHECK(offsetof(::DLTensor, byte_offset) == 40);
  CHECK(offsetof(::DLManagedTensor, manager_ctx) == 48);
  CHECK(offsetof(::DLManagedTensor, deleter) == 56);
}

TEST_CASE("abi legacy: a dlbridge legacy export reads correctly through the upstream struct") {
  std::int64_t shape[] = {3, 2};
  auto t = dlb::tensor::empty(shape, dlb::dtype{dlb::kDLInt, 16});
  dlb::DLManagedTensor* ours = t.export_legacy();
  ::DLManagedTensor theirs;
  std::memcpy(&theirs, ours, sizeof theirs);
  CHECK(theirs.dl_tensor.data == t.data());
  CHECK(theirs.dl_tensor.device.device_type == ::kDLCPU);
  CHECK(theirs.dl_tensor.ndim == 2);
  CHECK(theirs.dl_tensor.dtype.code == ::kDLInt);
  CHECK(theirs.dl_tensor.dtype.bits == 16);
  CHECK(theirs.dl_tensor.dtype.lanes == 1);
  CHECK(theirs.dl_tensor.shape[0] == 3);
  CHECK(theirs.dl_tensor.shape[1] == 2);
  CHECK(theirs.dl_tensor.strides[0] == 2);
  CHECK(theirs.dl_tensor.strides[1] == 1);
  CHECK(theirs.dl_tensor.byte_offset == 0);
  CHECK(theirs.manager_ctx == ours->manager_ctx);
  ours->deleter(ours);
  CHECK(t.use_count() == 1);
}

TEST_CASE("abi legacy: an upstream-built legacy tensor imports through dlbridge") {
  static int deleted = 0;
  std::int64_t shape[] = {2, 2};
  std::int64_t strides[] = {1, 2};  // column-major
  double data[4] = {1, 2, 3, 4};
  ::DLManagedTensor theirs{};
  theirs.dl_tensor.data = data;
  theirs.dl_tensor.device = {::kDLCPU, 0};
  theirs.dl_tensor.ndim = 2;
  theirs.dl_tensor.dtype = {::kDLFloat, 64, 1};
  theirs.dl_tensor.shape = shape;
  theirs.dl_tensor.strides = strides;
  auto* ours = static_cast<dlb::DLManagedTensor*>(std::malloc(sizeof(dlb::DLManagedTensor)));
  REQUIRE(ours != nullptr);
  std::memcpy(ours, &theirs, sizeof theirs);
  ours->deleter = [](dlb::DLManagedTensor* self) {
    ++deleted;
    std::free(self);
  };
  {
    auto t = dlb::tensor::import(ours, /*readonly=*/true);
    CHECK(t.readonly());
    CHECK(t.is_f_contiguous());
    CHECK_FALSE(t.is_c_contiguous());
    CHECK(t.stride(1) == 2);
    CHECK(static_cast<double*>(t.data())[2] == 3.0);
  }
  CHECK(deleted == 1);
}
