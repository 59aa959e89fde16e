// dlbridge/cuda/arrays.hpp as the Python layer uses it, whichever
// dlbridge_cuda this build links: the backend, or the implementation that
// refuses GPU work (built without nvcc). Host memory works the same with
// both; without a usable device both refuse GPU work with cuda_unavailable.
// What the backend does on a GPU is tests/cuda's.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "dlbridge/cuda/arrays.hpp"
#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/runtime.hpp"

namespace cr = dlb::cuda_runtime;

namespace {

constexpr dlb::device cpu{dlb::kDLCPU, 0};
constexpr dlb::device cuda{dlb::kDLCUDA, 0};
constexpr dlb::cuda_stream other_stream = 0x1000;  // a handle no call here may use

// A tensor on `where` over a host buffer of three int32 (never read off the host).
dlb::tensor on(dlb::device where, std::array<std::int32_t, 3>& values) {
  const std::int64_t shape[] = {3};
  return dlb::tensor::adopt(values.data(), {dlb::kDLInt, 32, 1}, where, {shape, 1}, {}, false, nullptr, nullptr);
}

}  // namespace

TEST_CASE("arrays: host memory needs no GPU and touches no stream") {
  std::array<std::int32_t, 3> values{1, -2, 3};
  const dlb::tensor t = on(cpu, values);
  const dlb::tensor copied = cr::copy_to(t, cpu, {dlb::kDLFloat, 64, 1}, dlb::legacy_default_stream);
  CHECK(copied.device() == cpu);
  CHECK(static_cast<const double*>(copied.data())[1] == -2.0);
  const std::int64_t shape[] = {2, 2};
  CHECK(cr::empty_on(cpu, {shape, 2}, {dlb::kDLFloat, 32, 1}).size() == 4);
  for (const dlb::cuda_stream s : {dlb::legacy_default_stream, dlb::per_thread_default_stream, other_stream}) {
    cr::order_after_producer(t, s);
    CHECK(cr::lend(t, s).data() == values.data());
    CHECK(cr::ordered_import(t, s).data() == values.data());
    CHECK(cr::released_after(t, s, dlb::legacy_default_stream).data() == values.data());
    cr::order_streams(t, s, dlb::legacy_default_stream);
  }
  CHECK_FALSE(cr::inherited_across_fork(t));
  CHECK(cr::cuda_pointer_device(nullptr) == cuda);  // the interface's word, where the runtime knows nothing
}

TEST_CASE("arrays: memory of devices dlbridge does not manage is invalid_argument") {
  std::array<std::int32_t, 3> values{};
  const std::int64_t shape[] = {3};
  CHECK_THROWS_WITH_AS((void)cr::empty_on({dlb::kDLROCM, 0}, {shape, 1}, {dlb::kDLInt, 32, 1}),
                       "dlbridge cannot allocate memory on rocm", std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)cr::copy_to(on(cpu, values), {dlb::kDLROCMHost, 0}, {dlb::kDLInt, 32, 1},
                                         dlb::legacy_default_stream),
                       "dlbridge cannot copy data to or from rocm_host", std::invalid_argument);
}

TEST_CASE("arrays: without a usable device, GPU work is cuda_unavailable") {
  if (cr::device_count() > 0) {
    MESSAGE("skipped: a CUDA device is usable here (tests/cuda runs the GPU work)");
    return;
  }
  CHECK(cr::device_status() != "");
  CHECK(cr::release_cuda_cache() == 0);
  std::array<std::int32_t, 3> values{};
  const dlb::tensor host = on(cpu, values);
  const dlb::tensor device_memory = on(cuda, values);
  const dlb::tensor pinned = on({dlb::kDLCUDAHost, 0}, values);
  const std::int64_t shape[] = {3};
  const std::string refused = "no CUDA device is available (" + cr::device_status() + ")";
  for (const dlb::device d : {cuda, dlb::device{dlb::kDLCUDAHost, 0}, dlb::device{dlb::kDLCUDAManaged, 0}})
    CHECK_THROWS_WITH_AS((void)cr::empty_on(d, {shape, 1}, {dlb::kDLInt, 32, 1}), refused.c_str(),
                         dlb::cuda_unavailable);
  CHECK_THROWS_AS((void)cr::copy_to(host, cuda, host.type(), dlb::legacy_default_stream), dlb::cuda_unavailable);
  CHECK_THROWS_AS((void)cr::copy_to(device_memory, cpu, host.type(), dlb::legacy_default_stream),
                  dlb::cuda_unavailable);
  CHECK_THROWS_AS(cr::fill_on_device(device_memory, dlb::scalar::from_int(1)), dlb::cuda_unavailable);
  CHECK_THROWS_AS(cr::order_streams(device_memory, other_stream, dlb::legacy_default_stream), dlb::cuda_unavailable);
  CHECK_THROWS_AS((void)cr::lend(device_memory, other_stream), dlb::cuda_unavailable);
  // Nothing of this process's own can be pending on the legacy stream; the
  // default streams order themselves: no call, no refusal.
  cr::order_after_producer(device_memory, dlb::legacy_default_stream);
  cr::order_after_producer(pinned, dlb::legacy_default_stream);
  CHECK(cr::ordered_import(device_memory, dlb::legacy_default_stream).data() == values.data());
  CHECK_THROWS_AS(cr::order_after_producer(device_memory, other_stream), dlb::cuda_unavailable);
  CHECK_THROWS_AS(cr::order_after_producer(pinned, other_stream), dlb::cuda_unavailable);
}
