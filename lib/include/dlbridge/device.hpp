// Devices: the DLPack (type, id) pair and its names ("cpu", "cuda:1").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "dlbridge/dlpack.hpp"

namespace dlb {

struct device {
  DLDeviceType type = kDLCPU;
  std::int32_t id = 0;

  constexpr device() = default;
  constexpr device(DLDeviceType t, std::int32_t i = 0) : type(t), id(i) {}  // NOLINT
  constexpr device(DLDevice d) : type(d.device_type), id(d.device_id) {}    // NOLINT
  constexpr operator DLDevice() const { return {type, id}; }                // NOLINT
  friend constexpr bool operator==(device, device) = default;

  // Whether the CPU may read and write the memory directly.
  [[nodiscard]] constexpr bool is_host_accessible() const {
    return type == kDLCPU || type == kDLCUDAHost || type == kDLCUDAManaged || type == kDLROCMHost ||
           type == kDLTPUHost;
  }
  // Whether the memory is CUDA's: what the CUDA backend allocates and copies
  // (device, pinned and managed memory), and what has a CUDA array interface.
  [[nodiscard]] constexpr bool is_cuda_memory() const {
    return type == kDLCUDA || type == kDLCUDAHost || type == kDLCUDAManaged;
  }
  // Whether work on the memory is ordered by CUDA streams (device and managed
  // memory): the memory a DLPack stream argument or exchange table's current
  // work stream is about. Pinned memory is host memory to DLPack: no stream.
  [[nodiscard]] constexpr bool is_stream_ordered() const { return type == kDLCUDA || type == kDLCUDAManaged; }
};

struct device_type_info {
  DLDeviceType type;
  std::string_view name;
};

inline constexpr std::array<device_type_info, 19> device_type_table{{
    {kDLCPU, "cpu"},
    {kDLCUDA, "cuda"},
    {kDLCUDAHost, "cuda_host"},
    {kDLOpenCL, "opencl"},
    {kDLVulkan, "vulkan"},
    {kDLMetal, "metal"},
    {kDLVPI, "vpi"},
    {kDLROCM, "rocm"},
    {kDLROCMHost, "rocm_host"},
    {kDLExtDev, "ext_dev"},
    {kDLCUDAManaged, "cuda_managed"},
    {kDLOneAPI, "oneapi"},
    {kDLWebGPU, "webgpu"},
    {kDLHexagon, "hexagon"},
    {kDLMAIA, "maia"},
    {kDLTrn, "trn"},
    {kDLTPU, "tpu"},
    {kDLTPUHost, "tpu_host"},
    {kDLAscend, "ascend"},
}};

namespace detail {
// The table's device types as a bit set: every import asks, and a scan of the
// table costs more than the rest of the device check.
inline constexpr std::uint64_t device_type_bits = [] {
  std::uint64_t bits = 0;
  for (const auto& info : device_type_table) bits |= std::uint64_t(1) << info.type;
  return bits;
}();
static_assert([] {
  for (const auto& info : device_type_table)
    if (info.type < 0 || info.type >= 64) return false;
  return true;
}(), "device_type_bits holds device types below 64");
}  // namespace detail

[[nodiscard]] constexpr bool is_dlpack_device_type(std::int64_t t) {
  return t >= 0 && t < 64 && ((detail::device_type_bits >> t) & 1) != 0;
}

[[nodiscard]] constexpr std::string_view name(DLDeviceType t) {
  for (const auto& info : device_type_table)
    if (info.type == t) return info.name;
  return {};
}

[[nodiscard]] constexpr std::optional<DLDeviceType> device_type_from_name(std::string_view s) {
  for (const auto& info : device_type_table)
    if (info.name == s) return info.type;
  return std::nullopt;
}

// Parses "cpu", "cuda", "cuda:1". A bare name means id 0.
[[nodiscard]] constexpr std::optional<device> device_from_string(std::string_view s) {
  const auto colon = s.find(':');
  const auto type = device_type_from_name(s.substr(0, colon));
  if (!type) return std::nullopt;
  if (colon == std::string_view::npos) return device{*type, 0};
  const auto digits = s.substr(colon + 1);
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  std::int32_t id = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + (c - '0');
  }
  return device{*type, id};
}

}  // namespace dlb
