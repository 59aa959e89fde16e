// The CUDA runtime as dlbridge sees it: whether a device is usable, and what
// went wrong when none is. Nothing here throws std exceptions other than
// std::bad_alloc; no call needs a GPU.
#pragma once

#include <string>
#include <vector>

namespace dlb::cuda_runtime {

// CUDA devices this process can use (asked once per process); 0 when there
// is no GPU or no driver, or in a child forked after CUDA was asked.
[[nodiscard]] int device_count() noexcept;

// The runtime version dlbridge was built with, as 1000 * major + 10 * minor.
[[nodiscard]] int runtime_version() noexcept;

// Why no device is usable ("" when one is), asked once per process: "no NVIDIA
// driver found: <why libcuda.so.1 cannot be loaded>", "no CUDA device is
// present", the CUDA runtime's "<error name>: <error description>" (a
// driver too old for the runtime, CUDA_VISIBLE_DEVICES hiding every device...),
// or, in a child forked after its parent found a device, "this process was
// forked after CUDA was initialised in its parent, ...".
[[nodiscard]] std::string device_status();

// The GPU architectures the backend's kernels were compiled for, as nvcc's
// __CUDA_ARCH__ values (800 for sm_80), from the gpu_arch build option.
[[nodiscard]] std::vector<int> compiled_architectures();

}  // namespace dlb::cuda_runtime
