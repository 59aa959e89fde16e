// Macros shared by the headers, and the language check every header makes
// first (dlpack.hpp, which all of them include, includes this).
#pragma once

// An older language mode gets this one error instead of hundreds from the
// concepts below: the #include of a file that does not exist stops the
// compiler (GCC, clang and MSVC treat it as fatal).
#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 202002L
#error "dlbridge needs C++20 or newer: compile with -std=c++20 (MSVC: /std:c++20)"
#include "dlbridge: stopped, see the error above"
#endif

// Marks functions that CUDA device code may call too (dlb::view's accessors,
// element.hpp's codec). Empty unless compiled by nvcc.
#if defined(__CUDACC__)
#define DLB_HOST_DEVICE __host__ __device__
#else
#define DLB_HOST_DEVICE
#endif
