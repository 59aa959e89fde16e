// The stream integers of __dlpack__(stream=...), the CUDA array interface's
// "stream" and dlbridge's own stream arguments: one meaning per value.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "dlbridge/stream.hpp"

TEST_CASE("__dlpack__ stream: -1 orders nothing, 1 and 2 are the default streams, larger values handles") {
  CHECK(!dlb::consumer_stream(-1).has_value());
  CHECK(dlb::consumer_stream(1) == dlb::legacy_default_stream);
  CHECK(dlb::consumer_stream(2) == dlb::per_thread_default_stream);
  CHECK(dlb::consumer_stream(3) == 3u);
  CHECK(dlb::consumer_stream(0x7f0012345600) == 0x7f0012345600u);
  CHECK(dlb::consumer_stream(INT64_MAX) == static_cast<std::uintptr_t>(INT64_MAX));
  CHECK_THROWS_WITH_AS((void)dlb::consumer_stream(0),
                       "stream 0 is ambiguous on CUDA (it could mean 1 or 2); pass 1 for the legacy default stream, 2 "
                       "for the per-thread one, or -1 for no synchronisation",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::consumer_stream(-2), "stream must be -1, 1, 2 or a stream handle, got -2",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::consumer_stream(INT64_MIN),
                       "stream must be -1, 1, 2 or a stream handle, got -9223372036854775808", std::invalid_argument);
}

TEST_CASE("CUDA array interface stream: positive values only") {
  CHECK(dlb::producer_stream(1) == dlb::legacy_default_stream);
  CHECK(dlb::producer_stream(2) == dlb::per_thread_default_stream);
  CHECK(dlb::producer_stream(0x1000) == 0x1000u);
  CHECK_THROWS_WITH_AS((void)dlb::producer_stream(0), "stream must be None or a positive int, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::producer_stream(-1), "stream must be None or a positive int, got -1",
                       std::invalid_argument);
}

TEST_CASE("a stream to work on: 1, 2 or a handle; never 0 or -1") {
  CHECK(dlb::work_stream(1) == dlb::legacy_default_stream);
  CHECK(dlb::work_stream(2) == dlb::per_thread_default_stream);
  CHECK(dlb::work_stream(0x55550000) == 0x55550000u);
  CHECK_THROWS_WITH_AS((void)dlb::work_stream(0),
                       "stream 0 is ambiguous on CUDA (it could mean 1 or 2); pass 1 for the legacy default stream or "
                       "2 for the per-thread one",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)dlb::work_stream(-1), "stream must be 1, 2 or a stream handle, got -1",
                       std::invalid_argument);
}

TEST_CASE("work refused across a CUDA graph capture names the stream, the capture, why and what to do") {
  const dlb::capture_refused e("copy on", 0x7f0012345600, "the graph would run the copy at each launch");
  CHECK(std::string(e.what()) ==
        "cannot copy on stream 139638282147328 while it is being captured into a CUDA graph: the graph would run the "
        "copy at each launch; do it before the capture begins or after it ends");
  static_assert(std::is_base_of_v<std::runtime_error, dlb::capture_refused>);
}
