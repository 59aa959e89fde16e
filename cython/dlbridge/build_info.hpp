// What the extension was built with, for dlbridge.build_info(); the CUDA
// backend's part is dlbridge/cuda/runtime.hpp's.
#pragma once

namespace dlb::python {

#if defined(__clang__)
inline constexpr const char* compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
inline constexpr const char* compiler = "gcc " __VERSION__;
#else
inline constexpr const char* compiler = "unknown";
#endif

inline constexpr long cplusplus = __cplusplus;

}  // namespace dlb::python
