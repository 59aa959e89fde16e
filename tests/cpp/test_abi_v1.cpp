// ABI proof against an upstream DLPack >= 1.3 header: every size, alignment,
// field offset, enumerator and flag of dlbridge/dlpack.hpp must equal
// upstream's. The header is fetched at test time by fetch_dlpack_header.py and
// found through -Ddlpack_v1_include; it is never part of the repository.
#include <doctest/doctest.h>

#include <dlpack/dlpack.h>  // upstream, global namespace

#include <cstdlib>
#include <cstring>
#include <string>

#include "abi_check.hpp"
#include "dlbridge/dlpack.hpp"
#include "dlbridge/tensor.hpp"

#if !defined(DLPACK_MAJOR_VERSION) || !defined(DLPACK_MINOR_VERSION)
#error "test_abi_v1.cpp needs a DLPack >= 1.3 header (got one without DLPACK_MAJOR_VERSION)"
#elif DLPACK_MAJOR_VERSION != 1 || DLPACK_MINOR_VERSION < 3
#error "test_abi_v1.cpp needs a DLPack 1.x header with x >= 3"
#endif

// --- versions -----------------------------------------------------------------
static_assert(DLPACK_MAJOR_VERSION == dlb::dlpack_major_version);
// dlbridge declares 1.3; a newer upstream minor only adds enumerators, which
// the checks below would not see, so say so when it happens.
static_assert(DLPACK_MINOR_VERSION >= dlb::dlpack_minor_version);

// --- structs: size, alignment and every field ---------------------------------
DLB_SAME_SHAPE(DLPackVersion);
DLB_SAME_FIELD(DLPackVersion, major);
DLB_SAME_FIELD(DLPackVersion, minor);

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

DLB_SAME_SHAPE(DLManagedTensorVersioned);
DLB_SAME_FIELD(DLManagedTensorVersioned, version);
DLB_SAME_FIELD(DLManagedTensorVersioned, manager_ctx);
DLB_SAME_FIELD(DLManagedTensorVersioned, deleter);
DLB_SAME_FIELD(DLManagedTensorVersioned, flags);
DLB_SAME_FIELD(DLManagedTensorVersioned, dl_tensor);

DLB_SAME_SHAPE(DLPackExchangeAPIHeader);
DLB_SAME_FIELD(DLPackExchangeAPIHeader, version);
DLB_SAME_FIELD(DLPackExchangeAPIHeader, prev_api);

DLB_SAME_SHAPE(DLPackExchangeAPI);
DLB_SAME_FIELD(DLPackExchangeAPI, header);
DLB_SAME_FIELD(DLPackExchangeAPI, managed_tensor_allocator);
DLB_SAME_FIELD(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync);
DLB_SAME_FIELD(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync);
DLB_SAME_FIELD(DLPackExchangeAPI, dltensor_from_py_object_no_sync);
DLB_SAME_FIELD(DLPackExchangeAPI, current_work_stream);

// The function-pointer typedefs of the exchange API.
static_assert(sizeof(::DLPackManagedTensorAllocator) == sizeof(dlb::DLPackManagedTensorAllocator));
static_assert(sizeof(::DLPackManagedTensorFromPyObjectNoSync) ==
              sizeof(dlb::DLPackManagedTensorFromPyObjectNoSync));
static_assert(sizeof(::DLPackManagedTensorToPyObjectNoSync) ==
              sizeof(dlb::DLPackManagedTensorToPyObjectNoSync));
static_assert(sizeof(::DLPackDLTensorFromPyObjectNoSync) == sizeof(dlb::DLPackDLTensorFromPyObjectNoSync));
static_assert(sizeof(::DLPackCurrentWorkStream) == sizeof(dlb::DLPackCurrentWorkStream));

// Field types that are plain integers must be the very same types.
static_assert(std::is_same_v<decltype(::DLPackVersion::major), decltype(dlb::DLPackVersion::major)>);
static_assert(std::is_same_v<decltype(::DLPackVersion::minor), decltype(dlb::DLPackVersion::minor)>);
static_assert(std::is_same_v<decltype(::DLDevice::device_id), decltype(dlb::DLDevice::device_id)>);
static_assert(std::is_same_v<decltype(::DLDataType::code), decltype(dlb::DLDataType::code)>);
static_assert(std::is_same_v<decltype(::DLDataType::bits), decltype(dlb::DLDataType::bits)>);
static_assert(std::is_same_v<decltype(::DLDataType::lanes), decltype(dlb::DLDataType::lanes)>);
static_assert(std::is_same_v<decltype(::DLTensor::ndim), decltype(dlb::DLTensor::ndim)>);
static_assert(std::is_same_v<decltype(::DLTensor::shape), decltype(dlb::DLTensor::shape)>);
static_assert(std::is_same_v<decltype(::DLTensor::strides), decltype(dlb::DLTensor::strides)>);
static_assert(std::is_same_v<decltype(::DLTensor::byte_offset), decltype(dlb::DLTensor::byte_offset)>);
static_assert(std::is_same_v<decltype(::DLManagedTensorVersioned::flags),
                             decltype(dlb::DLManagedTensorVersioned::flags)>);
// In C++ upstream fixes DLDeviceType to int32_t, as dlbridge does.
static_assert(std::is_same_v<std::underlying_type_t<::DLDeviceType>, std::underlying_type_t<dlb::DLDeviceType>>);

static_assert(abi_check::both_standard_layout<::DLTensor, dlb::DLTensor>);
static_assert(abi_check::both_standard_layout<::DLManagedTensorVersioned, dlb::DLManagedTensorVersioned>);
static_assert(abi_check::both_standard_layout<::DLPackExchangeAPI, dlb::DLPackExchangeAPI>);

// --- enumerators ----------------------------------------------------------------
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
DLB_SAME_VALUE(kDLOneAPI);
DLB_SAME_VALUE(kDLWebGPU);
DLB_SAME_VALUE(kDLHexagon);
DLB_SAME_VALUE(kDLMAIA);
DLB_SAME_VALUE(kDLTrn);

DLB_SAME_VALUE(kDLInt);
DLB_SAME_VALUE(kDLUInt);
DLB_SAME_VALUE(kDLFloat);
DLB_SAME_VALUE(kDLOpaqueHandle);
DLB_SAME_VALUE(kDLBfloat);
DLB_SAME_VALUE(kDLComplex);
DLB_SAME_VALUE(kDLBool);
DLB_SAME_VALUE(kDLFloat8_e3m4);
DLB_SAME_VALUE(kDLFloat8_e4m3);
DLB_SAME_VALUE(kDLFloat8_e4m3b11fnuz);
DLB_SAME_VALUE(kDLFloat8_e4m3fn);
DLB_SAME_VALUE(kDLFloat8_e4m3fnuz);
DLB_SAME_VALUE(kDLFloat8_e5m2);
DLB_SAME_VALUE(kDLFloat8_e5m2fnuz);
DLB_SAME_VALUE(kDLFloat8_e8m0fnu);
DLB_SAME_VALUE(kDLFloat6_e2m3fn);
DLB_SAME_VALUE(kDLFloat6_e3m2fn);
DLB_SAME_VALUE(kDLFloat4_e2m1fn);

// kDLBcomplex is on DLPack's main branch (dmlc/dlpack PR #187), in no release
// yet: a 1.3 header has no such name. Qualified lookup finds upstream's
// enumerator where the header declares one, and this stand-in only where it
// does not, so the value is compared as soon as a header has it.
namespace abi_check::not_in_header {
inline constexpr long long kDLBcomplex = -1;
}
using namespace abi_check::not_in_header;
static_assert(static_cast<long long>(::kDLBcomplex) == -1 ||
                  static_cast<long long>(::kDLBcomplex) == static_cast<long long>(dlb::kDLBcomplex),
              "kDLBcomplex: value");
static_assert(dlb::kDLBcomplex == 18, "kDLBcomplex: the value DLPack's main branch gives it");

// The device types DLPack's main branch added after 1.3 (dmlc/dlpack #188,
// #189), compared the same way.
namespace abi_check::not_in_header {
inline constexpr long long kDLTPU = -1, kDLTPUHost = -1, kDLAscend = -1;
}
#define DLB_SAME_VALUE_WHERE_DECLARED(name)                                                                \
  static_assert(static_cast<long long>(::name) == -1 ||                                                   \
                    static_cast<long long>(::name) == static_cast<long long>(dlb::name),                  \
                #name ": value")
DLB_SAME_VALUE_WHERE_DECLARED(kDLTPU);
DLB_SAME_VALUE_WHERE_DECLARED(kDLTPUHost);
DLB_SAME_VALUE_WHERE_DECLARED(kDLAscend);
static_assert(dlb::kDLTPU == 19 && dlb::kDLTPUHost == 20 && dlb::kDLAscend == 21,
              "the values DLPack's main branch gives them");

// --- flag bits --------------------------------------------------------------------
static_assert(DLPACK_FLAG_BITMASK_READ_ONLY == dlb::dlpack_flag_read_only);
static_assert(DLPACK_FLAG_BITMASK_IS_COPIED == dlb::dlpack_flag_is_copied);
static_assert(DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED == dlb::dlpack_flag_is_subbyte_type_padded);
static_assert(dlb::dlpack_known_flags == (DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED |
                                          DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED));

// The same facts at run time, so they show up in the test report too.
TEST_CASE("abi v1: upstream header version") {
  CHECK(DLPACK_MAJOR_VERSION == 1);
  CHECK(DLPACK_MINOR_VERSION >= 3);
  MESSAGE("upstream DLPack " << DLPACK_MAJOR_VERSION << "." << DLPACK_MINOR_VERSION);
}

TEST_CASE("abi v1: kDLBcomplex") {
  const bool declared = static_cast<long long>(::kDLBcomplex) != -1;
  const std::string says = declared ? "declares" : "does not declare";
  MESSAGE("upstream header " << says << " kDLBcomplex");
  if (declared) CHECK(static_cast<long long>(::kDLBcomplex) == static_cast<long long>(dlb::kDLBcomplex));
}

TEST_CASE("abi v1: LP64 sizes") {
  if (sizeof(void*) != 8) return;
  CHECK(sizeof(::DLTensor) == 48);
  CHECK(sizeof(::DLManagedTensor) == 64);
  CHECK(sizeof(::DLManagedTensorVersioned) == 80);
  CHECK(sizeof(::DLPackExchangeAPIHeader) == 16);
  CHECK(sizeof(::DLPackExchangeAPI) == 56);
  CHECK(offsetof(::DLManagedTensorVersioned, flags) == 24);
  CHECK(offsetof(::DLManagedTensorVersioned, dl_tensor) == 32);
  CHECK(offsetof(::DLPackExchangeAPI, managed_tensor_allocator) == 16);
  CHECK(offsetof(::DLPackExchangeAPI, current_work_stream) == 48);
  CHECK(offsetof(::DLTensor, byte_offset) == 40);
}

TEST_CASE("abi v1: a dlbridge export reads correctly through the upstream struct") {
  std::int64_t shape[] = {2, 3};
  auto t = dlb::tensor::empty(shape, dlb::dtype{dlb::kDLFloat, 32});
  t.make_readonly();
  dlb::DLManagedTensorVersioned* ours = t.export_versioned(dlb::dlpack_flag_is_copied);

  ::DLManagedTensorVersioned theirs;
  static_assert(sizeof theirs == sizeof *ours);
  std::memcpy(&theirs, ours, sizeof theirs);
  CHECK(theirs.version.major == DLPACK_MAJOR_VERSION);
  CHECK(theirs.version.minor == 3);
  CHECK(theirs.flags == (DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED));
  CHECK(theirs.dl_tensor.data == t.data());
  CHECK(theirs.dl_tensor.device.device_type == ::kDLCPU);
  CHECK(theirs.dl_tensor.device.device_id == 0);
  CHECK(theirs.dl_tensor.ndim == 2);
  CHECK(theirs.dl_tensor.dtype.code == ::kDLFloat);
  CHECK(theirs.dl_tensor.dtype.bits == 32);
  CHECK(theirs.dl_tensor.dtype.lanes == 1);
  REQUIRE(theirs.dl_tensor.shape != nullptr);
  REQUIRE(theirs.dl_tensor.strides != nullptr);
  CHECK(theirs.dl_tensor.shape[0] == 2);
  CHECK(theirs.dl_tensor.shape[1] == 3);
  CHECK(theirs.dl_tensor.strides[0] == 3);
  CHECK(theirs.dl_tensor.strides[1] == 1);
  CHECK(theirs.dl_tensor.byte_offset == 0);
  CHECK(theirs.manager_ctx == ours->manager_ctx);
  CHECK(t.use_count() == 2);
  ours->deleter(ours);
  CHECK(t.use_count() == 1);
}

TEST_CASE("abi v1: an upstream-built tensor imports through dlbridge") {
  static int deleted = 0;
  std::int64_t shape[] = {3};  // the last three: byte_offset skips the first
  float data[4] = {1, 2, 3, 4};
  ::DLManagedTensorVersioned theirs{};
  theirs.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  theirs.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  theirs.dl_tensor.data = data;
  theirs.dl_tensor.device = {::kDLCPU, 0};
  theirs.dl_tensor.ndim = 1;
  theirs.dl_tensor.dtype = {::kDLFloat, 32, 1};
  theirs.dl_tensor.shape = shape;
  theirs.dl_tensor.strides = nullptr;
  theirs.dl_tensor.byte_offset = sizeof(float);

  // Hand the bytes over as dlbridge's struct (the same memory a capsule carries).
  auto* ours = static_cast<dlb::DLManagedTensorVersioned*>(std::malloc(sizeof(dlb::DLManagedTensorVersioned)));
  REQUIRE(ours != nullptr);
  std::memcpy(ours, &theirs, sizeof theirs);
  ours->deleter = [](dlb::DLManagedTensorVersioned* self) {
    ++deleted;
    std::free(self);
  };
  {
    auto t = dlb::tensor::import(ours);
    CHECK(t.readonly());
    CHECK(t.ndim() == 1);
    CHECK(t.shape(0) == 3);
    CHECK(t.stride(0) == 1);
    CHECK(static_cast<float*>(t.data())[0] == 2.0f);
    CHECK(deleted == 0);
  }
  CHECK(deleted == 1);
}
