// The doctest runner of dlbridge_cuda_tests. Test cases that need a GPU are
// decorated with doctest::skip() where none is usable; this says why, once.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "gpu_test.hpp"

int main(int argc, char** argv) {
  if (!dlb_test::gpu_available())
    std::printf("[dlbridge] GPU test cases are skipped: %s\n", dlb_test::gpu_skip_reason());
  else
    std::printf("[dlbridge] a CUDA device is present: the no-device test cases are skipped\n");
  doctest::Context context(argc, argv);
  return context.run();
}
