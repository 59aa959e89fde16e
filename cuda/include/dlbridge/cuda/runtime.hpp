// The CUDA runtime as dlbridge sees it: whether a device is usable, and what
// went wrong when none is. Nothing here throws; no call needs a GPU.
#pragma once

#include <string>

namespace dlb::cuda_runtime {

// CUDA devices this process can use; 0 when there is no GPU or no driver.
[[nodiscard]] int device_count() noexcept;

// The runtime version dlbridge was built with, as 1000 * major + 10 * minor.
[[nodiscard]] int runtime_version() noexcept;

// Why device_count() is 0 ("" when it is not), as the CUDA runtime says it.
[[nodiscard]] std::string device_status();

}  // namespace dlb::cuda_runtime
