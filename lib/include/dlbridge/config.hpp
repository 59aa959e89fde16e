// Macros shared by the headers.
#pragma once

// Marks functions that CUDA device code may call too (dlb::view's accessors,
// element.hpp's codec). Empty unless compiled by nvcc.
#if defined(__CUDACC__)
#define DLB_HOST_DEVICE __host__ __device__
#else
#define DLB_HOST_DEVICE
#endif
