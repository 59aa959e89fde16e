// How many threads a CPU copy or cast uses, the state that limits it, and
// how a plan is split among them. See host_copy.hpp for how a copy runs.
//
// The state is one dlb::copy_state, reached through copy_state_in_use(). The
// engine is header-only, so each program, and each shared library that
// includes these headers, starts with one of its own. In a Python process
// dlbridge._backend's is the one: dlbridge's other modules use it, its
// argument API table publishes it, and every extension module built on dlbridge's Python headers uses it
// (use_copy_state) once it has found that table (dlbridge/python/argument_api.hpp,
// dlbridge/python/copy.hpp), so that dlbridge.set_copy_threads() reaches
// their copies too. A C++ program made of several shared libraries can share
// one the same way.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

#include "dlbridge/cpu_info.hpp"
#include "dlbridge/plan.hpp"

namespace dlb {

// What the user sets for every CPU copy and cast of a process. Shared
// between modules built separately: fields may only be appended (see
// argument_api.hpp's rule for its table).
struct copy_state {
  std::atomic<unsigned> thread_limit{0};  // 0: the default, copy_threads()
};

namespace detail {
inline copy_state own_copy_state;
inline std::atomic<copy_state*> copy_state_used{&own_copy_state};
}  // namespace detail

// The copy state this program (or shared library) reads: its own, until
// use_copy_state gives it another.
[[nodiscard]] inline copy_state& copy_state_in_use() noexcept {
  return *detail::copy_state_used.load(std::memory_order_acquire);
}

// Makes `state`, which must outlive every copy, the one copy_state_in_use()
// returns from now on. Safe from any thread, at any time: a copy running
// meanwhile reads one state or the other.
inline void use_copy_state(copy_state& state) noexcept {
  detail::copy_state_used.store(&state, std::memory_order_release);
}

// The most threads a copy or cast on the CPU uses; copies of less than a
// few MiB use one. By default one per CPU this process may run on, at most 8
// (more rarely adds memory bandwidth).
[[nodiscard]] inline unsigned copy_threads() noexcept {
  const unsigned limit = copy_state_in_use().thread_limit.load(std::memory_order_relaxed);
  return limit ? limit : std::min(detail::host_cpu().cpus, 8u);
}

// Sets copy_threads(); 0 restores the default. Results are the same, to the
// bit, whatever the number of threads.
inline void set_copy_threads(unsigned threads) noexcept {
  copy_state_in_use().thread_limit.store(threads, std::memory_order_relaxed);
}

namespace detail {
// The number of threads to split a copy writing `bytes` among: one per
// 4 MiB, up to copy_threads(). Starting a thread costs some tens of
// microseconds, a few percent of copying 4 MiB.
[[nodiscard]] inline unsigned copy_parts(std::int64_t bytes) noexcept {
  constexpr std::int64_t min_part_bytes = std::int64_t(4) << 20;
  return unsigned(std::clamp<std::int64_t>(bytes / min_part_bytes, 1, copy_threads()));
}

// Runs f(part, dst_offset, src_offset) for `parts` pieces of plan p, each on
// its own thread, the first on the calling one; offsets are those of the
// piece's first element, in elements. The pieces split one axis: the
// outermost with at least `parts` indices, else the longest, into runs of
// whole 64-element blocks where it is long enough, so that tiles stay whole.
// Where a thread cannot be started, its piece runs on the calling thread.
// f must not throw.
template <class F>
void for_each_part(const strided_plan& p, unsigned parts, F&& f) {
  if (parts <= 1 || p.ndim == 0) return f(p, std::int64_t(0), std::int64_t(0));
  std::int32_t axis = -1, longest = 0;
  for (std::int32_t a = 0; a < p.ndim && axis < 0; ++a) {
    if (p.extent[a] >= std::int64_t(parts)) axis = a;
    if (p.extent[a] > p.extent[longest]) longest = a;
  }
  if (axis < 0) {
    axis = longest;
    parts = unsigned(p.extent[axis]);
  }
  const std::int64_t extent = p.extent[axis];
  std::int64_t step = (extent + parts - 1) / parts;
  if (extent >= 64 * std::int64_t(parts)) step = (step + 63) / 64 * 64;
  auto run = [&](std::int64_t first) {
    strided_plan part = p;
    part.extent[axis] = std::min(step, extent - first);
    part.count = p.count / extent * part.extent[axis];
    f(part, first * p.dst[axis], first * p.src[axis]);
  };
  std::vector<std::thread> threads;
  threads.reserve(parts);
  for (std::int64_t first = step; first < extent; first += step) {
    try {
      threads.emplace_back(run, first);
    } catch (const std::system_error&) {  // no thread to be had
      run(first);
    }
  }
  run(0);
  for (auto& t : threads) t.join();
}
}  // namespace detail

}  // namespace dlb
