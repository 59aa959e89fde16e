// The DLPack 1.3 ABI, declared by dlbridge in its own namespace, and the one
// type code DLPack's main branch has added since (kDLBcomplex).
//
// Every type here has the size, field order and enum values of the upstream
// C header, so pointers to them can be handed across the C boundary as is.
// tests/cpp/test_abi_legacy.cpp and test_abi_v1.cpp compile these declarations
// next to upstream headers (the system's, and a DLPack 1.3 one fetched at test
// time) and compare every size, offset and value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dlbridge/config.hpp"  // first: the C++20 check

namespace dlb {

inline constexpr std::uint32_t dlpack_major_version = 1;
inline constexpr std::uint32_t dlpack_minor_version = 3;

extern "C" {

enum DLDeviceType : std::int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
  kDLTrn = 18,
  // On DLPack's main branch after 1.3 (dmlc/dlpack #188, #189), in no release yet:
  // JAX exports TPU pinned memory as kDLTPUHost.
  kDLTPU = 19,
  kDLTPUHost = 20,
  kDLAscend = 21,
};

struct DLDevice {
  DLDeviceType device_type;
  std::int32_t device_id;
};

// Upstream declares this as a plain enum and stores it in a uint8_t field.
enum DLDataTypeCode : std::uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
  kDLFloat8_e3m4 = 7,
  kDLFloat8_e4m3 = 8,
  kDLFloat8_e4m3b11fnuz = 9,
  kDLFloat8_e4m3fn = 10,
  kDLFloat8_e4m3fnuz = 11,
  kDLFloat8_e5m2 = 12,
  kDLFloat8_e5m2fnuz = 13,
  kDLFloat8_e8m0fnu = 14,
  kDLFloat6_e2m3fn = 15,
  kDLFloat6_e3m2fn = 16,
  kDLFloat4_e2m1fn = 17,
  // Complex of two bfloat16, real part first, as kDLComplex lays out its
  // parts: merged on DLPack's main branch after v1.3 (dmlc/dlpack PR #187,
  // "complex number (2x bfloat16)"), in no release yet.
  kDLBcomplex = 18,
};

struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; NULL meant C order before DLPack 1.2
  std::uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

struct DLPackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};

// The fields up to and including `flags` are frozen across major versions, so a
// consumer can always find the deleter of a tensor it cannot otherwise read.
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  std::uint64_t flags;
  DLTensor dl_tensor;
};

// The C exchange API (DLPack 1.3). `void*` stands where Python has PyObject*.
typedef void (*DLPackSetError)(void* error_ctx, const char* kind, const char* message);
typedef int (*DLPackManagedTensorAllocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                            void* error_ctx, DLPackSetError set_error);
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void* py_object,
                                                     DLManagedTensorVersioned** out);
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned* tensor,
                                                   void** out_py_object);
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void* py_object, DLTensor* out);
typedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, std::int32_t device_id,
                                       void** out_current_stream);

struct DLPackExchangeAPIHeader {
  DLPackVersion version;
  DLPackExchangeAPIHeader* prev_api;
};

struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  DLPackManagedTensorAllocator managed_tensor_allocator;
  DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
  DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
  DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync;
  DLPackCurrentWorkStream current_work_stream;
};

}  // extern "C"

inline constexpr std::uint64_t dlpack_flag_read_only = 1ULL << 0;
inline constexpr std::uint64_t dlpack_flag_is_copied = 1ULL << 1;
inline constexpr std::uint64_t dlpack_flag_is_subbyte_type_padded = 1ULL << 2;
inline constexpr std::uint64_t dlpack_known_flags =
    dlpack_flag_read_only | dlpack_flag_is_copied | dlpack_flag_is_subbyte_type_padded;

// Python capsule names (DLPack python_spec). They must have static storage.
inline constexpr const char* capsule_name_legacy = "dltensor";
inline constexpr const char* capsule_name_legacy_used = "used_dltensor";
inline constexpr const char* capsule_name_versioned = "dltensor_versioned";
inline constexpr const char* capsule_name_versioned_used = "used_dltensor_versioned";
inline constexpr const char* capsule_name_exchange_api = "dlpack_exchange_api";

static_assert(sizeof(DLDevice) == 8);
static_assert(sizeof(DLDataType) == 4);
static_assert(sizeof(void*) != 8 || sizeof(DLTensor) == 48);
static_assert(sizeof(void*) != 8 || sizeof(DLManagedTensor) == 64);
static_assert(sizeof(void*) != 8 || sizeof(DLManagedTensorVersioned) == 80);
static_assert(sizeof(void*) != 8 || sizeof(DLPackExchangeAPIHeader) == 16);
static_assert(sizeof(void*) != 8 || sizeof(DLPackExchangeAPI) == 56);

}  // namespace dlb
