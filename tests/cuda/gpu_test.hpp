// Test cases that need a GPU, or need its absence, and how they say so.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "dlbridge/cuda/runtime.hpp"

namespace dlb_test {

inline bool gpu_available() {
  static const bool available = dlb::cuda_runtime::device_count() > 0;
  return available;
}

// DLBRIDGE_REQUIRE_GPU=1 (tests/gpu/run sets it): a GPU test case fails where
// no device is usable, instead of being skipped, so that a run on a GPU
// machine whose driver or device is unusable cannot pass having tested nothing.
inline bool gpu_required() {
  const char* value = std::getenv("DLBRIDGE_REQUIRE_GPU");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

// "no CUDA device: <status>", for skipped GPU test cases.
inline const char* gpu_skip_reason() {
  static const std::string reason = "no CUDA device: " + dlb::cuda_runtime::device_status();
  return reason.c_str();
}

// The fixture of every GPU test case: it runs before the body, and only where
// the case is not skipped, which without a device means DLBRIDGE_REQUIRE_GPU=1.
struct gpu_fixture {
  gpu_fixture() {
    if (!gpu_available()) FAIL("DLBRIDGE_REQUIRE_GPU=1, but " << std::string(gpu_skip_reason()));
  }
};

// The doctest suite of the GPU test cases that compute-sanitizer cannot run
// as meant; sanitize.py excludes it and prints its cases. Each case says why
// where it is declared.
inline const doctest::test_suite not_under_sanitizer("not-under-compute-sanitizer");

}  // namespace dlb_test

// A test case that runs only where a CUDA device is usable; elsewhere doctest
// counts it as skipped, and its description gives the reason (or, under
// DLBRIDGE_REQUIRE_GPU=1, it fails with that reason).
#define GPU_TEST_CASE(name)                                                                        \
  TEST_CASE_FIXTURE(dlb_test::gpu_fixture,                                                         \
                    name * doctest::skip(!dlb_test::gpu_available() && !dlb_test::gpu_required()) \
                        * doctest::description(dlb_test::gpu_skip_reason()))

// A test case about the behaviour without a usable device; skipped on a GPU machine.
#define NO_GPU_TEST_CASE(name) \
  TEST_CASE(name * doctest::skip(dlb_test::gpu_available()) * doctest::description("needs a machine without a usable CUDA device"))
