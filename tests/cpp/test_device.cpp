// dlbridge/device.hpp: the (type, id) pair and its names.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>

#include "dlbridge/device.hpp"

using dlb::device;

TEST_CASE("device: defaults and conversions") {
  constexpr device d;
  static_assert(d.type == dlb::kDLCPU && d.id == 0);
  const device cuda1{dlb::kDLCUDA, 1};
  const dlb::DLDevice raw = cuda1;
  CHECK(raw.device_type == dlb::kDLCUDA);
  CHECK(raw.device_id == 1);
  CHECK(device(raw) == cuda1);
  CHECK(device(dlb::kDLCUDA) == device{dlb::kDLCUDA, 0});
  CHECK(device{dlb::kDLCUDA, 2} != cuda1);
  CHECK(device{dlb::kDLROCM, 1} != cuda1);
}

TEST_CASE("device: device_from_string accepts names with optional ids") {
  CHECK(dlb::device_from_string("cpu") == device{dlb::kDLCPU, 0});
  CHECK(dlb::device_from_string("cpu:0") == device{dlb::kDLCPU, 0});
  CHECK(dlb::device_from_string("cuda") == device{dlb::kDLCUDA, 0});
  CHECK(dlb::device_from_string("cuda:1") == device{dlb::kDLCUDA, 1});
  CHECK(dlb::device_from_string("cuda:007") == device{dlb::kDLCUDA, 7});
  CHECK(dlb::device_from_string("cuda_host") == device{dlb::kDLCUDAHost, 0});
  CHECK(dlb::device_from_string("cuda_managed:3") == device{dlb::kDLCUDAManaged, 3});
  CHECK(dlb::device_from_string("rocm:12") == device{dlb::kDLROCM, 12});
  CHECK(dlb::device_from_string("trn:5") == device{dlb::kDLTrn, 5});
  CHECK(dlb::device_from_string("tpu_host:1") == device{dlb::kDLTPUHost, 1});
  CHECK(dlb::device_from_string("cuda:999999999") == device{dlb::kDLCUDA, 999999999});
  static_assert(dlb::device_from_string("metal:2") == device{dlb::kDLMetal, 2});
}

TEST_CASE("device: device_from_string rejects bad names and ids") {
  for (const char* s : {"", "gpu", "CPU", "Cuda:0", " cpu", "cpu ", "cuda:", "cuda:-1", "cuda:+1", "cuda:x",
                        "cuda:1x", "cuda:1:2", "cuda::1", "cuda: 1", "cuda:1 ", ":1", ":", "cuda:1234567890",
                        "cuda:99999999999999999999", "cuda1", "cuda-1", "opencl:0x1"}) {
    const std::string text = s;
    CAPTURE(text);
    CHECK_FALSE(dlb::device_from_string(s));
  }
}

TEST_CASE("device: the type table") {
  CHECK(dlb::device_type_table.size() == 19);
  std::set<std::string> names;
  for (const auto& info : dlb::device_type_table) {
    CAPTURE(info.name);
    CHECK(names.insert(std::string(info.name)).second);
    CHECK(dlb::name(info.type) == info.name);
    CHECK(dlb::device_type_from_name(info.name) == info.type);
    CHECK(dlb::is_dlpack_device_type(info.type));
    const auto parsed = dlb::device_from_string(std::string(info.name) + ":4");
    REQUIRE(parsed);
    CHECK(*parsed == device{info.type, 4});
  }
  CHECK(dlb::name(dlb::kDLCPU) == "cpu");
  CHECK(dlb::name(dlb::kDLCUDA) == "cuda");
  CHECK(dlb::name(dlb::kDLCUDAHost) == "cuda_host");
  CHECK(dlb::name(dlb::kDLOneAPI) == "oneapi");
  CHECK(dlb::name(dlb::kDLMAIA) == "maia");
  CHECK(dlb::name(dlb::kDLTrn) == "trn");
  CHECK(dlb::name(dlb::kDLTPU) == "tpu");
  CHECK(dlb::name(dlb::kDLTPUHost) == "tpu_host");
  CHECK(dlb::name(dlb::kDLAscend) == "ascend");
  CHECK(dlb::name(static_cast<dlb::DLDeviceType>(5)).empty());
  CHECK_FALSE(dlb::device_type_from_name("gpu"));
}

TEST_CASE("device: which device types exist") {
  // DLPack 1.3: 1..18 except 5 and 6; its main branch since: 19 to 21 (TPU, TPU host, Ascend).
  for (int t = -2; t <= 40; ++t) {
    CAPTURE(t);
    CHECK(dlb::is_dlpack_device_type(t) == (t >= 1 && t <= 21 && t != 5 && t != 6));
  }
  CHECK_FALSE(dlb::is_dlpack_device_type(std::int64_t(1) << 32 | 1));  // not truncated to 1
}

TEST_CASE("device: host accessibility") {
  CHECK(device{dlb::kDLCPU}.is_host_accessible());
  CHECK(device{dlb::kDLCUDAHost}.is_host_accessible());
  CHECK(device{dlb::kDLCUDAManaged, 1}.is_host_accessible());
  CHECK(device{dlb::kDLROCMHost}.is_host_accessible());
  CHECK(device{dlb::kDLTPUHost}.is_host_accessible());  // JAX's TPU pinned memory
  CHECK_FALSE(device{dlb::kDLTPU}.is_host_accessible());
  CHECK_FALSE(device{dlb::kDLAscend}.is_host_accessible());
  CHECK_FALSE(device{dlb::kDLCUDA}.is_host_accessible());
  CHECK_FALSE(device{dlb::kDLROCM}.is_host_accessible());
  CHECK_FALSE(device{dlb::kDLOpenCL}.is_host_accessible());
  CHECK_FALSE(device{dlb::kDLMetal}.is_host_accessible());
  CHECK_FALSE(device{dlb::kDLExtDev}.is_host_accessible());
}

TEST_CASE("device: CUDA memory and stream-ordered memory") {
  // Every device type of the table, with the answer of both predicates.
  for (const auto& info : dlb::device_type_table) {
    CAPTURE(info.name);
    const device d{info.type, 1};
    const bool cuda = info.type == dlb::kDLCUDA, pinned = info.type == dlb::kDLCUDAHost,
               managed = info.type == dlb::kDLCUDAManaged;
    CHECK(d.is_cuda_memory() == (cuda || pinned || managed));
    CHECK(d.is_stream_ordered() == (cuda || managed));
  }
  // Pinned and managed memory: CUDA's and the host's at once.
  static_assert(device{dlb::kDLCUDAHost}.is_cuda_memory() && device{dlb::kDLCUDAHost}.is_host_accessible());
  static_assert(device{dlb::kDLCUDAManaged}.is_cuda_memory() && device{dlb::kDLCUDAManaged}.is_host_accessible());
  static_assert(!device{dlb::kDLROCM}.is_stream_ordered());
}

TEST_CASE("device: is_dlpack_device_type is exactly the table") {
  // is_dlpack_device_type reads a bit set built from device_type_table.
  for (std::int64_t t : {std::int64_t(INT64_MIN), std::int64_t(-1), std::int64_t(64), std::int64_t(1) << 40})
    CHECK_FALSE(dlb::is_dlpack_device_type(t));
  for (std::int64_t t = 0; t < 64; ++t) {
    bool listed = false;
    for (const auto& info : dlb::device_type_table) listed = listed || info.type == t;
    CHECK(dlb::is_dlpack_device_type(t) == listed);
  }
}
