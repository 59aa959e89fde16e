// The doctest runner of dlbridge_cuda_tests. Test cases that need a GPU are
// decorated with doctest::skip() where none is usable; this says why, once.
// sanitize.py and require_gpu.py read these lines.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "gpu_test.hpp"

int main(int argc, char** argv) {
  if (dlb_test::gpu_available())
    std::printf("[dlbridge] a CUDA device is present: the no-device test cases are skipped\n");
  else if (dlb_test::gpu_required())
    std::printf("[dlbridge] GPU test cases fail (DLBRIDGE_REQUIRE_GPU=1): %s\n", dlb_test::gpu_skip_reason());
  else
    std::printf("[dlbridge] GPU test cases are skipped: %s\n", dlb_test::gpu_skip_reason());
  std::fflush(stdout);
  doctest::Context context(argc, argv);
  return context.run();
}
