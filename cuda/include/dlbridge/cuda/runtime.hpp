// The CUDA runtime as dlbridge sees it: whether a device is usable, and what
// went wrong when none is. Nothing here throws std exceptions other than
// std::bad_alloc; no call needs a GPU.
#pragma once

#include <string>
#include <vector>

namespace dlb::cuda_runtime {

// CUDA devices this process can use; 0 when there is no GPU or no driver.
[[nodiscard]] int device_count() noexcept;

// The runtime version dlbridge was built with, as 1000 * major + 10 * minor.
[[nodiscard]] int runtime_version() noexcept;

// Why device_count() is 0 ("" when it is not), as the CUDA runtime says it:
// "<error name>: <error description>", or "no CUDA device is present".
[[nodiscard]] std::string device_status();

// The GPU architectures the backend's kernels were compiled for, as nvcc's
// __CUDA_ARCH__ values (800 for sm_80), from the gpu_arch build option.
[[nodiscard]] std::vector<int> compiled_architectures();

}  // namespace dlb::cuda_runtime
