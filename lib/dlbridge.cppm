// The C++20 named module `dlbridge`: `import dlbridge;` gives the whole public
// API of <dlbridge/dlbridge.hpp>, namespace dlb, nothing else.
//
// The headers stay the source of truth: they are included in the global
// module fragment and every public name is re-exported below with a
// using-declaration, so `#include <dlbridge/dlbridge.hpp>` and
// `import dlbridge;` name the same entities and can be mixed in one program.
// Macros do not cross a module boundary: DLB_HOST_DEVICE (for CUDA code) and
// the Python glue (dlbridge/python/core.hpp) need the headers.
//
// Compilers: clang >= 17. GCC 12 cannot re-export declarations from the
// global module fragment (its importers do not see them), so GCC users
// include the headers. A BMI depends on the compiler and its flags: build it
// with your own (see docs/cpp-guide.md). The list is checked against the
// headers by tests/module/check_exports.py.
module;

#include "dlbridge/dlbridge.hpp"

export module dlbridge;

export namespace dlb {

// dlbridge/version.hpp
using dlb::version;

// dlbridge/dlpack.hpp: the DLPack 1.3 ABI
using dlb::dlpack_major_version;
using dlb::dlpack_minor_version;
using dlb::DLDeviceType;
using dlb::kDLCPU;
using dlb::kDLCUDA;
using dlb::kDLCUDAHost;
using dlb::kDLOpenCL;
using dlb::kDLVulkan;
using dlb::kDLMetal;
using dlb::kDLVPI;
using dlb::kDLROCM;
using dlb::kDLROCMHost;
using dlb::kDLExtDev;
using dlb::kDLCUDAManaged;
using dlb::kDLOneAPI;
using dlb::kDLWebGPU;
using dlb::kDLHexagon;
using dlb::kDLMAIA;
using dlb::kDLTrn;
using dlb::kDLTPU;
using dlb::kDLTPUHost;
using dlb::kDLAscend;
using dlb::DLDevice;
using dlb::DLDataTypeCode;
using dlb::kDLInt;
using dlb::kDLUInt;
using dlb::kDLFloat;
using dlb::kDLOpaqueHandle;
using dlb::kDLBfloat;
using dlb::kDLComplex;
using dlb::kDLBool;
using dlb::kDLFloat8_e3m4;
using dlb::kDLFloat8_e4m3;
using dlb::kDLFloat8_e4m3b11fnuz;
using dlb::kDLFloat8_e4m3fn;
using dlb::kDLFloat8_e4m3fnuz;
using dlb::kDLFloat8_e5m2;
using dlb::kDLFloat8_e5m2fnuz;
using dlb::kDLFloat8_e8m0fnu;
using dlb::kDLFloat6_e2m3fn;
using dlb::kDLFloat6_e3m2fn;
using dlb::kDLFloat4_e2m1fn;
using dlb::kDLBcomplex;
using dlb::DLDataType;
using dlb::DLTensor;
using dlb::DLManagedTensor;
using dlb::DLPackVersion;
using dlb::DLManagedTensorVersioned;
using dlb::DLPackSetError;
using dlb::DLPackManagedTensorAllocator;
using dlb::DLPackManagedTensorFromPyObjectNoSync;
using dlb::DLPackManagedTensorToPyObjectNoSync;
using dlb::DLPackDLTensorFromPyObjectNoSync;
using dlb::DLPackCurrentWorkStream;
using dlb::DLPackExchangeAPIHeader;
using dlb::DLPackExchangeAPI;
using dlb::dlpack_flag_read_only;
using dlb::dlpack_flag_is_copied;
using dlb::dlpack_flag_is_subbyte_type_padded;
using dlb::dlpack_known_flags;
using dlb::capsule_name_legacy;
using dlb::capsule_name_legacy_used;
using dlb::capsule_name_versioned;
using dlb::capsule_name_versioned_used;
using dlb::capsule_name_exchange_api;

// dlbridge/device.hpp
using dlb::device;
using dlb::device_type_info;
using dlb::device_type_table;
using dlb::is_dlpack_device_type;
using dlb::name;  // every overload: name(DLDeviceType), name(dtype)
using dlb::device_type_from_name;
using dlb::device_from_string;

// dlbridge/dtype.hpp
using dlb::dtype;
using dlb::dtype_info;
using dlb::dtype_table;
using dlb::find_dtype;
using dlb::is_supported;
using dlb::is_dlpack_code;
using dlb::is_complex;
using dlb::dtype_from_name;
using dlb::dtype_from_typestr;
using dlb::typestr;
using dlb::buffer_format;
using dlb::dtype_of;
using dlb::has_dtype;
using dlb::can_cast_safely;
using dlb::dtype_choices;

// dlbridge/layout.hpp
using dlb::max_ndim;
using dlb::extents_t;
using dlb::checked_mul;
using dlb::checked_add;
using dlb::element_count;
using dlb::stride_volume;
using dlb::is_empty;
using dlb::is_c_contiguous;
using dlb::is_f_contiguous;
using dlb::is_dense;
using dlb::is_non_overlapping;
using dlb::c_strides;
using dlb::byte_extent;
using dlb::byte_span;

// dlbridge/shape.hpp
using dlb::shape_defect;
using dlb::shape_error;
using dlb::check_shape;
using dlb::require_shape;

// dlbridge/plan.hpp
using dlb::coalesce;

// dlbridge/stream.hpp
using dlb::cuda_stream;
using dlb::legacy_default_stream;
using dlb::per_thread_default_stream;
using dlb::consumer_stream;
using dlb::producer_stream;
using dlb::work_stream;
using dlb::capture_refused;

// dlbridge/small_float.hpp
using dlb::float_format;
using dlb::small_float_format;
using dlb::decode;
using dlb::encode;

// dlbridge/element.hpp
using dlb::scalar;
using dlb::load;
using dlb::store;
using dlb::fits;
using dlb::fill;

// dlbridge/convert.hpp
using dlb::convert_fn;
using dlb::converter;

// dlbridge/validate.hpp
using dlb::import_error;
using dlb::import_failure;
using dlb::validate_version;
using dlb::is_float4_pairs;
using dlb::unpair_float4;
using dlb::validate;

// dlbridge/demands.hpp
using dlb::any_extent;
using dlb::memory_order;
using dlb::requirements;
using dlb::check;
using dlb::check_demands;

// dlbridge/describe.hpp
using dlb::write_description;
using dlb::describe;  // every overload: describe(requirements...), describe<Views...>()

// dlbridge/view.hpp
using dlb::shape;
using dlb::ndim;
using dlb::c_contig;
using dlb::f_contig;
using dlb::any_contig;
using dlb::ro;
using dlb::cpu;
using dlb::cuda;
using dlb::cuda_host;
using dlb::cuda_managed;
using dlb::element;
using dlb::view;

// dlbridge/tensor.hpp
using dlb::keeper;
using dlb::allocation_alignment;
using dlb::tensor;

// dlbridge/host_copy.hpp
using dlb::copy_strided;
using dlb::cast_strided;
using dlb::astype;
using dlb::copy;
using dlb::copy_threads;
using dlb::set_copy_threads;

// dlbridge/copy/threads.hpp: the copy state
using dlb::copy_state;
using dlb::copy_state_in_use;
using dlb::use_copy_state;

}  // namespace dlb

// dlbridge/small_float.hpp: the small float formats.
export namespace dlb::formats {
using dlb::formats::float16;
using dlb::formats::bfloat16;
using dlb::formats::float8_e3m4;
using dlb::formats::float8_e4m3;
using dlb::formats::float8_e4m3b11fnuz;
using dlb::formats::float8_e4m3fn;
using dlb::formats::float8_e4m3fnuz;
using dlb::formats::float8_e5m2;
using dlb::formats::float8_e5m2fnuz;
using dlb::formats::float8_e8m0fnu;
using dlb::formats::float6_e2m3fn;
using dlb::formats::float6_e3m2fn;
using dlb::formats::float4_e2m1fn;
}  // namespace dlb::formats
