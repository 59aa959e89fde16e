// Test cases that need a GPU, or need its absence, and how they say so.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "dlbridge/cuda/runtime.hpp"

namespace dlb_test {

inline bool gpu_available() {
  static const bool available = dlb::cuda_runtime::device_count() > 0;
  return available;
}

// "no CUDA device: <status>", for skipped GPU test cases.
inline const char* gpu_skip_reason() {
  static const std::string reason = "no CUDA device: " + dlb::cuda_runtime::device_status();
  return reason.c_str();
}

}  // namespace dlb_test

// A test case that runs only where a CUDA device is usable; elsewhere doctest
// counts it as skipped, and its description gives the reason.
#define GPU_TEST_CASE(name) \
  TEST_CASE(name * doctest::skip(!dlb_test::gpu_available()) * doctest::description(dlb_test::gpu_skip_reason()))

// A test case about the behaviour without a usable device; skipped on a GPU machine.
#define NO_GPU_TEST_CASE(name) \
  TEST_CASE(name * doctest::skip(dlb_test::gpu_available()) * doctest::description("needs a machine without a usable CUDA device"))
