// What this machine's CPUs report at run time: the size of their last-level
// cache and how many CPUs this process may run on. The copy engine takes its
// streaming-store threshold (copy/tiles.hpp, which caps what it believes of
// the cache) and its thread count (copy/threads.hpp) from them, so that one
// build behaves well on whatever machine runs it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <thread>

#include "dlbridge/config.hpp"

#if defined(__linux__)
#include <sched.h>
#include <unistd.h>
#endif

namespace dlb::detail {

struct cpu_info {
  // The largest cache this CPU has a share of, in bytes; 8 MiB where the
  // system says nothing.
  std::size_t last_level = std::size_t(8) << 20;
  unsigned cpus = 1;  // CPUs this process may run on
};

// "48K", "1024K", "32M" (sysfs's cache sizes) in bytes; 0 if unreadable.
[[nodiscard]] inline std::size_t parse_cache_size(const char* text) {
  std::size_t value = 0;
  const char* p = text;
  for (; *p >= '0' && *p <= '9'; ++p) value = value * 10 + std::size_t(*p - '0');
  if (p == text) return 0;
  switch (*p) {
    case 'K': return value << 10;
    case 'M': return value << 20;
    case 'G': return value << 30;
    default: return value;
  }
}

#if defined(__linux__)
// The first line of a sysfs file, or "" where there is none.
inline bool read_line(const char* path, char (&line)[64]) {
  line[0] = '\0';
  std::FILE* f = std::fopen(path, "r");
  if (!f) return false;
  const bool ok = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  return ok;
}
#endif

[[nodiscard]] inline cpu_info read_cpu_info() {
  cpu_info info;
  const unsigned hardware = std::thread::hardware_concurrency();
  info.cpus = hardware ? hardware : 1;
#if defined(__linux__)
  // Linux reports each cache of CPU 0 in its own folder (index0, index1, ...).
  std::size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    char path[96], type[64], size[64];
    const auto file = [&](const char* name) {
      std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, name);
      return path;
    };
    if (!read_line(file("type"), type) || !read_line(file("size"), size)) break;
    if (type[0] == 'I') continue;  // "Instruction"; "Data" and "Unified" hold data
    largest = std::max(largest, parse_cache_size(size));
  }
#if defined(_SC_LEVEL3_CACHE_SIZE)
  // glibc's own reading of the CPU, where sysfs has none (some containers).
  if (largest == 0)
    for (const int level : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
      if (const long v = sysconf(level); v > 0 && largest == 0) largest = std::size_t(v);
#endif
  if (largest != 0) info.last_level = largest;
#if defined(CPU_COUNT)  // glibc's, with _GNU_SOURCE (which g++ and clang++ define)
  // The CPUs this process may use (taskset, cgroup cpusets), not all the machine has.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) info.cpus = unsigned(CPU_COUNT(&set));
#endif
#endif
  return info;
}

// Read once, on first use.
[[nodiscard]] inline const cpu_info& host_cpu() {
  static const cpu_info info = read_cpu_info();
  return info;
}

}  // namespace dlb::detail
