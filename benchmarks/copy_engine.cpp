// The CPU copy engine's tile loops against memcpy on one machine: what limits
// transposes there, measured (docs/performance.md, "CPU copies"). Built and run
// by benchmarks/copy_engine.py against the installed headers.
//
// For 2 MiB (from the caches) and 128 MiB (from memory) of float32 and
// float64 it times: memcpy and a loop of plain 16-byte loads and stores, on
// buffers already in memory; copy_strided's contiguous copy there, and its
// contiguous copy and transpose into new memory, page faults included, as
// Array.copy() pays them; then 2-D transposes of a power-of-two shape, and
// of the same shape with rows 16 elements longer (strides that are not
// powers of two), with each of the engine's settings: 16-byte or AVX2 tiles
// (where the CPU has AVX2), tiles for the caches or streaming stores and
// tiles for memory, one thread or copy_threads(); at 128 MiB the
// power-of-two transposes with each setting into new memory too, and new
// memory faulted in alone and before a copy (where Linux has
// MADV_POPULATE_WRITE). For the choice between cached and streaming stores,
// which is also the next reader's: memcpy and the power-of-two transposes,
// one thread, each followed by one read of its output. Every figure is the
// minimum of interleaved samples, as bytes copied per second, and its ratio
// to memcpy's minimum.
//
//   copy_engine [--quick]
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "dlbridge/host_copy.hpp"

namespace {
using clock_type = std::chrono::steady_clock;

// Memory touched once, with huge pages asked for where Linux has them.
struct buffer {
  std::byte* data;
  explicit buffer(std::size_t bytes) {
    const std::size_t page = std::size_t(2) << 20;  // aligned_alloc takes whole multiples of the alignment
    bytes = (bytes + page - 1) / page * page;
    data = static_cast<std::byte*>(std::aligned_alloc(page, bytes));
    if (!data) std::abort();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(data, bytes, MADV_HUGEPAGE);
#endif
    for (std::size_t i = 0; i < bytes; ++i) data[i] = std::byte(i * 2654435761u >> 24);
  }
  ~buffer() { std::free(data); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
};

// A copy through plain 16-byte loads and stores: what a store that reads its
// cache line first (unlike memcpy's `rep movsb` or streaming stores) allows.
void plain_copy(std::byte* dst, const std::byte* src, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; i += 64)
    for (std::size_t k = 0; k < 64; k += 16) dlb::detail::copy_run<16>(dst + i + k, src + i + k);
}

struct row {
  std::string name;
  std::function<void()> run;
  double best = 1e30;
};

// One read of `bytes` at p (a sum of its 8-byte words): the next reader.
volatile std::uint64_t read_sink;
void read_once(const std::byte* p, std::size_t bytes) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < bytes; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, p + i, 8);
    sum += word;
  }
  read_sink = sum;
}

double seconds(const std::function<void()>& f, int calls) {
  const auto start = clock_type::now();
  for (int i = 0; i < calls; ++i) f();
  return std::chrono::duration<double>(clock_type::now() - start).count() / calls;
}
}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::int64_t mib = 1 << 20;
  std::printf("| size | what | GB/s | / memcpy |\n| --- | --- | ---: | ---: |\n");
  for (const std::int64_t bytes : {2 * mib, 128 * mib}) {
    for (const std::int64_t size : {4, 8}) {
      const std::int64_t count = bytes / size, exponent = std::countr_zero(std::uint64_t(count));
      const std::int64_t rows = std::int64_t(1) << (exponent / 2), cols = count / rows;  // the source's shape
      const std::int64_t pad = 16;
      buffer src(std::size_t((rows * (cols + pad) + pad) * size)), dst(std::size_t((cols * (rows + pad) + pad) * size));
      const dlb::dtype type{dlb::kDLFloat, std::uint8_t(size * 8), 1};
      std::vector<row> table;
      table.push_back({"memcpy", [&] { std::memcpy(dst.data, src.data, std::size_t(bytes)); }});
      table.push_back({"16-byte loads and stores", [&] { plain_copy(dst.data, src.data, std::size_t(bytes)); }});
      table.push_back({"memcpy, then its output read once", [&] {
                         std::memcpy(dst.data, src.data, std::size_t(bytes));
                         read_once(dst.data, std::size_t(bytes));
                       }});
      // Into memory not touched yet, as Array.copy() writes: its pages are
      // faulted in (and zeroed by the system) as the copy first writes them.
      const std::int64_t flat[] = {count}, unit[] = {1};
      table.push_back({"copy_strided", [&] { dlb::copy_strided(flat, type, src.data, unit, dst.data, unit); }});
      table.push_back({"copy_strided into new memory", [&] {
                         auto out = dlb::tensor::empty(flat, type);
                         dlb::copy_strided(flat, type, src.data, unit, out.data(), unit);
                       }});
      table.push_back({"transpose, power-of-two rows, into new memory", [&] {
                         const std::int64_t shape[] = {cols, rows}, strides[] = {1, cols};
                         auto out = dlb::tensor::empty(shape, type);
                         dlb::copy_strided(shape, type, src.data, strides, out.data(), out.strides());
                       }});
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
      // What the system's part of writing new memory costs: its pages faulted
      // in (and zeroed) alone, then before a copy instead of during it.
      const auto populate = [](dlb::tensor& out) {
        const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE)), start = reinterpret_cast<std::uintptr_t>(out.data());
        const auto first = (start + page - 1) / page * page;
        (void)madvise(reinterpret_cast<void*>(first), start + std::uintptr_t(out.nbytes()) - first, MADV_POPULATE_WRITE);
      };
      if (bytes > 8 * mib) {
        table.push_back({"new memory, faulted in only (MADV_POPULATE_WRITE)", [&] {
                           auto out = dlb::tensor::empty(flat, type);
                           populate(out);
                         }});
        table.push_back({"copy_strided into new memory faulted in first", [&] {
                           auto out = dlb::tensor::empty(flat, type);
                           populate(out);
                           dlb::copy_strided(flat, type, src.data, unit, out.data(), unit);
                         }});
        table.push_back({"transpose, power-of-two rows, into new memory faulted in first", [&] {
                           const std::int64_t shape[] = {cols, rows}, strides[] = {1, cols};
                           auto out = dlb::tensor::empty(shape, type);
                           populate(out);
                           dlb::copy_strided(shape, type, src.data, strides, out.data(), out.strides());
                         }});
      }
#endif
      for (const std::int64_t extra : {std::int64_t(0), pad}) {
        // dst (cols, rows) = the transpose of src (rows, cols), rows `extra` elements longer on both sides.
        const std::int64_t shape[] = {cols, rows}, src_strides[] = {1, cols + extra}, dst_strides[] = {rows + extra, 1};
        const auto plan = dlb::detail::make_strided_plan(shape, dst_strides, src_strides);
        const std::string layout = extra ? "transpose, rows padded" : "transpose, power-of-two rows";
        for (const bool streaming : {false, true}) {
          for (const bool avx2 : {false, true}) {
            if (avx2 && !dlb::detail::has_avx2()) continue;
            std::vector<unsigned> pieces{1};
            if (dlb::copy_threads() > 1 && bytes >= 8 * mib) pieces.push_back(dlb::copy_threads());
            for (const unsigned parts : pieces) {
              const dlb::detail::copy_settings how{parts, streaming, avx2};
              const std::string setting = std::string(avx2 ? ", AVX2" : ", 16-byte") +
                                          (streaming ? ", streaming" : ", cached") +
                                          (parts > 1 ? ", " + std::to_string(parts) + " threads" : "");
              table.push_back({layout + setting, [&, plan, how] {
                                 dlb::detail::copy_plan(plan, std::size_t(size), dst.data, src.data, how);
                               }});
              if (extra == 0 && parts == 1)
                table.push_back({layout + setting + ", then its output read once", [&, plan, how] {
                                   dlb::detail::copy_plan(plan, std::size_t(size), dst.data, src.data, how);
                                   read_once(dst.data, std::size_t(bytes));
                                 }});
              if (extra == 0 && bytes > 8 * mib)  // as Array.copy() writes, with this setting
                table.push_back({layout + ", into new memory" + setting, [&, plan, how] {
                                   auto out = dlb::tensor::empty(shape, type);
                                   dlb::detail::copy_plan(plan, std::size_t(size), static_cast<std::byte*>(out.data()),
                                                          src.data, how);
                                 }});
            }
          }
        }
        table.push_back({layout + ", as copy_strided chooses", [&, plan] {
                           dlb::detail::copy_plan(plan, std::size_t(size), dst.data, src.data,
                                                  dlb::detail::settings_for(bytes));
                         }});
      }
      // Interleaved: each round runs every row once (several calls where they
      // are short), after one call untimed: the row before may have left the
      // caches in another state (streaming stores empty them of the output).
      const int calls = bytes <= 8 * mib ? 16 : 1, rounds = quick ? 2 : (bytes <= 8 * mib ? 30 : 6);
      for (int round = 0; round < rounds; ++round)
        for (auto& r : table) {
          r.run();
          r.best = std::min(r.best, seconds(r.run, calls));
        }
      for (const auto& r : table)
        std::printf("| %lld MiB f%lld | %s | %.1f | %.2f |\n", static_cast<long long>(bytes / mib),
                    static_cast<long long>(size * 8), r.name.c_str(), double(bytes) / r.best / 1e9,
                    table[0].best / r.best);
    }
  }
  return 0;
}
