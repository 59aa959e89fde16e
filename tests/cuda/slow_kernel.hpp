#pragma once

namespace dlb_test {
// Queues one thread on `stream` (a cudaStream_t) that waits `nanoseconds`,
// then stores `value` at `p` (device memory). Returns the launch's cudaError_t.
int slow_write(int* p, int value, long long nanoseconds, void* stream);
}  // namespace dlb_test
