// What needs no GPU: error messages, stream integers, the architectures, and
// how every call behaves where no device is usable.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "dlbridge/cuda/all.hpp"
#include "gpu_test.hpp"

namespace cr = dlb::cuda_runtime;

TEST_CASE("error_message names the call, the error and its description") {
  CHECK(cr::error_message("cudaMallocAsync(1048576 bytes)", cudaErrorInsufficientDriver) ==
        "cudaMallocAsync(1048576 bytes): cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA "
        "runtime version");
  CHECK(cr::error_message("cudaMalloc(8 bytes)", cudaErrorMemoryAllocation) ==
        "cudaMalloc(8 bytes): cudaErrorMemoryAllocation: out of memory");
  CHECK(cr::error_message("cudaGetDevice()", cudaErrorNoDevice) ==
        "cudaGetDevice(): cudaErrorNoDevice: no CUDA-capable device is detected");
  CHECK(cr::error_message("f()", 99999).rfind("f(): ", 0) == 0);  // unknown codes still read
}

TEST_CASE("sticky errors are told apart, and their message says the fault may be anyone's") {
  for (const int code : std::initializer_list<int>{cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert, cudaErrorMisalignedAddress,
                         cudaErrorIllegalInstruction, cudaErrorHardwareStackError, cudaErrorInvalidPc,
                         cudaErrorInvalidAddressSpace, cudaErrorLaunchTimeout, cudaErrorContained,
                         cudaErrorTensorMemoryLeak, cudaErrorExternalDevice}) {
    CAPTURE(code);
    CHECK(cr::is_sticky(code));
    const std::string message = cr::error_message("launching dlbridge fill kernel", code);
    CHECK(message.rfind("launching dlbridge fill kernel: cudaError", 0) == 0);
    CHECK(message.find("(a sticky error: a kernel faulted earlier, in dlbridge or in any library sharing this "
                       "process's CUDA context, and every CUDA call fails from now on; the process must be restarted)") !=
          std::string::npos);
  }
  // A launch's own errors, and a caller's leftovers that a later call clears, are not.
  for (const int code : std::initializer_list<int>{cudaSuccess, cudaErrorInvalidConfiguration, cudaErrorInvalidValue, cudaErrorMemoryAllocation,
                         cudaErrorNoKernelImageForDevice, cudaErrorLaunchOutOfResources, cudaErrorNotReady,
                         cudaErrorInitializationError, 99999}) {
    CAPTURE(code);
    CHECK_FALSE(cr::is_sticky(code));
    CHECK(cr::error_message("f()", code).find("sticky") == std::string::npos);
  }
}

TEST_CASE("a child forked after CUDA was asked knows it: no device, no pool, releases that free nothing") {
  (void)cr::device_status();  // the parent asks (the probe registers the fork handler)
  CHECK_FALSE(cr::forked_after_init());
  const bool parent_usable = cr::device_usable();
  const std::string parent_status = cr::device_status();
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // No doctest in the child: each failed expectation is one bit of the exit status.
    int failures = 0;
    if (!cr::forked_after_init()) failures |= 1;
    if (cr::device_usable() || cr::device_count() != 0) failures |= 2;
    const std::string expected = parent_usable ? "this process was forked after CUDA was initialised in its parent, "
                                                 "and CUDA cannot be used across fork(); start worker processes with "
                                                 "the 'spawn' or 'forkserver' method"
                                               : parent_status;  // nothing inherited: the parent's own answer
    if (cr::device_status() != expected) failures |= 4;
    try {
      cr::require_device();
      failures |= 8;
    } catch (const dlb::cuda_unavailable& e) {
      if (std::string(e.what()) != "no CUDA device is available (" + expected + ")") failures |= 8;
    }
    try {
      if (cr::release_cached_memory() != 0) failures |= 16;
    } catch (...) {
      failures |= 16;
    }
    _exit(failures);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(cr::forked_after_init());  // the parent is untouched
  CHECK(cr::device_usable() == parent_usable);
}

TEST_CASE("throw_on_error throws cuda_error with the message and the code, and is silent on success") {
  CHECK_NOTHROW(cr::throw_on_error(cudaSuccess, "cudaFree(0x0)"));
  try {
    cr::throw_on_error(cudaErrorMemoryAllocation, "cudaMallocAsync(1024 bytes)");
    FAIL("no exception");
  } catch (const dlb::cuda_error& e) {
    CHECK(std::string(e.what()) == "cudaMallocAsync(1024 bytes): cudaErrorMemoryAllocation: out of memory");
    CHECK(e.code() == cudaErrorMemoryAllocation);
  }
  // A cuda_error is a std::runtime_error; cuda_unavailable is a cuda_error.
  CHECK_THROWS_WITH_AS(cr::throw_on_error(cudaErrorInvalidValue, "x"), "x: cudaErrorInvalidValue: invalid argument",
                       std::runtime_error);
  static_assert(std::is_base_of_v<dlb::cuda_error, dlb::cuda_unavailable>);
}

TEST_CASE("the runtime version and device status are readable without a GPU") {
  CHECK(cr::runtime_version() >= 12000);
  if (cr::device_count() > 0) CHECK(cr::device_status().empty());
  else CHECK(!cr::device_status().empty());
}

TEST_CASE("a machine with no NVIDIA driver is told so, not that its driver is too old") {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver != nullptr) {
    dlclose(driver);
    CHECK(cr::device_status().rfind("no NVIDIA driver found", 0) == std::string::npos);
  } else {
    CHECK(cr::device_status().rfind("no NVIDIA driver found: ", 0) == 0);
    CHECK(cr::device_status().find("libcuda.so.1") != std::string::npos);
  }
}

TEST_CASE("the kernels are compiled for the configured architectures") {
  std::vector<int> expected;
  std::stringstream list(DLB_TEST_GPU_ARCH);
  for (std::string arch; std::getline(list, arch, ';');)
    if (!arch.empty()) expected.push_back(std::atoi(arch.c_str()) * 10);
  const auto compiled = cr::compiled_architectures();
  INFO("gpu_arch = " DLB_TEST_GPU_ARCH);
  if (!expected.empty()) CHECK(compiled == expected);
  else CHECK(compiled.size() == 1);  // nvcc's default
}

// -- Stream integers ---------------------------------------------------------------------

TEST_CASE("stream_t is cudaStream_t and the default streams have their protocol values") {
  static_assert(std::is_same_v<cr::stream_t, cudaStream_t>);
  CHECK(cr::legacy_stream() == cudaStreamLegacy);
  CHECK(cr::per_thread_stream() == cudaStreamPerThread);
}

TEST_CASE("stream_to_int gives the protocol value back, the null stream being the legacy one") {
  CHECK(cr::stream_to_int(nullptr) == 1);
  CHECK(cr::stream_to_int(cr::legacy_stream()) == 1);
  CHECK(cr::stream_to_int(cr::per_thread_stream()) == 2);
  CHECK(cr::stream_to_int(reinterpret_cast<cr::stream_t>(std::uintptr_t{0x55550000})) == 0x55550000);
  for (const std::int64_t v : std::array<std::int64_t, 4>{1, 2, 3, 0x7f0012345600})
    CHECK(cr::stream_to_int(reinterpret_cast<cr::stream_t>(*dlb::consumer_stream(v))) == v);
  CHECK(cr::same_stream(nullptr, cr::legacy_stream()));
  CHECK(!cr::same_stream(cr::legacy_stream(), cr::per_thread_stream()));
}

// -- What a release of lent memory may do ------------------------------------------------

TEST_CASE("the legacy stream synchronises by itself with the default and blocking streams, not non-blocking ones") {
  using cr::synchronises_with_legacy;
  const dlb::cuda_stream handle = 0x7f0012345600;
  CHECK(cr::stream_non_blocking == cudaStreamNonBlocking);
  for (const unsigned flags : {0u, unsigned(cudaStreamNonBlocking)}) {
    CHECK(synchronises_with_legacy(dlb::legacy_default_stream, flags));  // the flags of a default stream are not read
    CHECK(synchronises_with_legacy(dlb::per_thread_default_stream, flags));
  }
  CHECK(synchronises_with_legacy(handle, cudaStreamDefault));  // a blocking stream (CuPy's)
  CHECK(!synchronises_with_legacy(handle, cudaStreamNonBlocking));  // PyTorch's
  CHECK(!synchronises_with_legacy(handle, cudaStreamNonBlocking | 0x80u));  // whatever else is set
  CHECK(synchronises_with_legacy(handle, 0x80u));
}

TEST_CASE("a capturing stream's queued work cannot be waited for from outside its capture") {
  CHECK(cr::records_queued_work(cr::capture_status::none));
  CHECK(!cr::records_queued_work(cr::capture_status::active));
  CHECK(!cr::records_queued_work(cr::capture_status::invalidated));  // still capturing until the capture ends
}

// -- Without a usable device ------------------------------------------------------------

namespace {
// Checks that `call` throws cuda_unavailable with the documented message.
template <class Call>
void check_unavailable(const char* what, Call&& call) {
  INFO(what);
  const std::string expected = "no CUDA device is available (" + cr::device_status() + ")";
  try {
    call();
    FAIL("no exception");
  } catch (const dlb::cuda_unavailable& e) {
    CHECK(std::string(e.what()) == expected);
    CHECK(e.code() != cudaSuccess);
  }
}
}  // namespace

NO_GPU_TEST_CASE("every call that needs a device throws cuda_unavailable, naming the reason") {
  const std::array<std::int64_t, 2> shape{3, 4};
  const std::array<std::int64_t, 2> strides{4, 1};
  float host[12] = {};
  const dlb::tensor t = dlb::tensor::empty(shape, dlb::dtype_of<float>);
  const auto s = cr::legacy_stream();
  check_unavailable("empty_device", [&] { (void)cr::empty_device(shape, dlb::dtype_of<float>, s); });
  check_unavailable("empty_device, empty", [&] { (void)cr::empty_device({}, dlb::dtype_of<float>); });
  check_unavailable("empty_pinned", [&] { (void)cr::empty_pinned(shape, dlb::dtype_of<float>); });
  check_unavailable("empty_managed", [&] { (void)cr::empty_managed(shape, dlb::dtype_of<float>); });
  check_unavailable("memcpy_async", [&] { cr::memcpy_async(host, host + 6, 8, s); });
  check_unavailable("copy_strided", [&] { cr::copy_strided(shape, dlb::dtype_of<float>, host, strides, host, strides, s); });
  check_unavailable("cast_strided", [&] {
    cr::cast_strided(shape, dlb::dtype_of<float>, host, strides, dlb::dtype_of<std::int32_t>, host, strides, s);
  });
  check_unavailable("fill", [&] { cr::fill(shape, dlb::dtype_of<float>, host, strides, dlb::scalar::from_real(1), s); });
  check_unavailable("copy", [&] { cr::copy(t, t, s); });
  check_unavailable("fill(tensor)", [&] { cr::fill(t, dlb::scalar::from_real(1), s); });
  check_unavailable("to_device", [&] { (void)cr::to_device(t, s); });
  check_unavailable("to_host", [&] { (void)cr::to_host(t, s); });
  check_unavailable("current_device", [&] { (void)cr::current_device(); });
  check_unavailable("device_guard", [&] { cr::device_guard guard(0); });
  check_unavailable("stream", [&] { cr::stream created; });
  check_unavailable("event", [&] { cr::event created; });
  check_unavailable("order_after", [&] { cr::order_after(cr::per_thread_stream(), cr::legacy_stream()); });
  const auto handle = reinterpret_cast<cr::stream_t>(std::uintptr_t{0x7f0012345600});
  check_unavailable("stream_device", [&] { (void)cr::stream_device(handle); });
  check_unavailable("synchronises_with_legacy", [&] { (void)cr::synchronises_with_legacy(handle); });
  check_unavailable("capture_of", [&] { (void)cr::capture_of(handle); });
  check_unavailable("order_after_release", [&] { cr::order_after_release(cr::legacy_stream(), handle); });
  check_unavailable("synchronize", [&] { cr::synchronize(s); });
  check_unavailable("require_device", [&] { cr::require_device(); });
  // The stream integers and messages need no device.
  CHECK(reinterpret_cast<cr::stream_t>(*dlb::consumer_stream(2)) == cr::per_thread_stream());
}

NO_GPU_TEST_CASE("without a device every pointer is CPU memory (no error, no crash)") {
  int on_stack = 0;
  void* on_heap = std::malloc(64);
  CHECK(cr::pointer_device(&on_stack) == dlb::device{dlb::kDLCPU, 0});
  CHECK(cr::pointer_device(on_heap) == dlb::device{dlb::kDLCPU, 0});
  CHECK(cr::pointer_device(nullptr) == dlb::device{dlb::kDLCPU, 0});
  CHECK(cr::pointer_device(reinterpret_cast<void*>(std::uintptr_t{0x7f0000000000})) == dlb::device{dlb::kDLCPU, 0});
  std::free(on_heap);
}

NO_GPU_TEST_CASE("a device guard for no device (-1) does nothing") { CHECK_NOTHROW(cr::device_guard(-1)); }

NO_GPU_TEST_CASE("what a release asks of the default streams needs no device: it asks the runtime nothing") {
  for (const auto s : {cr::legacy_stream(), cr::per_thread_stream(), cr::stream_t{nullptr}}) {
    CHECK(cr::synchronises_with_legacy(s));
    CHECK(cr::stream_device(s) == -1);
  }
  CHECK(cr::capture_of(cr::legacy_stream()) == cr::capture_status::none);
  CHECK(cr::capture_of(nullptr) == cr::capture_status::none);
}

NO_GPU_TEST_CASE("without a device there is no cache to release, and CUDA is not asked") {
  CHECK(cr::release_cached_memory() == 0);
}
