// What the extension was built with, for dlbridge.build_info().
#pragma once

#if DLBRIDGE_HAVE_CUDA
#include "dlbridge/cuda/runtime.hpp"
#endif

namespace dlb::python {

#if defined(__clang__)
inline constexpr const char* compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
inline constexpr const char* compiler = "gcc " __VERSION__;
#else
inline constexpr const char* compiler = "unknown";
#endif

inline constexpr long cplusplus = __cplusplus;

#if DLBRIDGE_HAVE_CUDA
inline constexpr bool have_cuda = true;
inline int cuda_runtime_version() { return dlb::cuda_runtime::runtime_version(); }
inline int cuda_device_count() { return dlb::cuda_runtime::device_count(); }
inline std::string cuda_device_status() { return dlb::cuda_runtime::device_status(); }
#else
inline constexpr bool have_cuda = false;
inline int cuda_runtime_version() { return 0; }
inline int cuda_device_count() { return 0; }
inline std::string cuda_device_status() { return "dlbridge was built without the CUDA backend"; }
#endif

}  // namespace dlb::python
