// The copy engine's moves of bytes: one element, a row of them, and the
// vector primitives the tiles are built of (16-byte vectors without
// intrinsics; AVX2 and streaming stores with them). The only header of
// dlbridge that includes <immintrin.h>. See host_copy.hpp for how a copy runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dlbridge/config.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#endif

namespace dlb::detail {

// One element of Size bytes; a constant-size memcpy is a plain load and store
// at any alignment (NumPy arrays need not be aligned).
template <std::size_t Size>
inline void copy_element(std::byte* dst, const std::byte* src) {
  std::memcpy(dst, src, Size);
}

// Steps in bytes.
template <std::size_t Size>
void copy_row(std::byte* dst, const std::byte* src, std::int64_t length, std::int64_t dst_step,
              std::int64_t src_step) {
  for (std::int64_t i = 0; i < length; ++i) copy_element<Size>(dst + i * dst_step, src + i * src_step);
}

#if defined(__GNUC__)  // GCC and clang: 16-byte vectors (SSE2, NEON) without intrinsics
inline constexpr bool has_vectors = true;
using u32x4 = std::uint32_t __attribute__((vector_size(16)));
using u64x2 = std::uint64_t __attribute__((vector_size(16)));

template <class V>
inline V load_vector(const std::byte* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
inline void store_vector(std::byte* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

// Transposes the square block that fills 16-byte vectors (4x4 elements of 4
// bytes, 2x2 of 8) in registers: whole-vector loads and stores instead of one
// per element. Block row k of dst is at dst + k * dst_row and holds column k
// of the block at src, whose rows are at src + k * src_col; steps in bytes.
template <std::size_t Size>
inline void transpose_block(std::byte* dst, std::int64_t dst_row, const std::byte* src, std::int64_t src_col) {
  if constexpr (Size == 4) {
    const auto a = load_vector<u32x4>(src), b = load_vector<u32x4>(src + src_col),
               c = load_vector<u32x4>(src + 2 * src_col), d = load_vector<u32x4>(src + 3 * src_col);
    const u32x4 ab_lo = __builtin_shufflevector(a, b, 0, 4, 1, 5), ab_hi = __builtin_shufflevector(a, b, 2, 6, 3, 7);
    const u32x4 cd_lo = __builtin_shufflevector(c, d, 0, 4, 1, 5), cd_hi = __builtin_shufflevector(c, d, 2, 6, 3, 7);
    store_vector(dst, u32x4(__builtin_shufflevector(ab_lo, cd_lo, 0, 1, 4, 5)));
    store_vector(dst + dst_row, u32x4(__builtin_shufflevector(ab_lo, cd_lo, 2, 3, 6, 7)));
    store_vector(dst + 2 * dst_row, u32x4(__builtin_shufflevector(ab_hi, cd_hi, 0, 1, 4, 5)));
    store_vector(dst + 3 * dst_row, u32x4(__builtin_shufflevector(ab_hi, cd_hi, 2, 3, 6, 7)));
  } else if constexpr (Size == 8) {
    const auto a = load_vector<u64x2>(src), b = load_vector<u64x2>(src + src_col);
    store_vector(dst, u64x2(__builtin_shufflevector(a, b, 0, 2)));
    store_vector(dst + dst_row, u64x2(__builtin_shufflevector(a, b, 1, 3)));
  }
}
#else
inline constexpr bool has_vectors = false;
template <std::size_t Size>
inline void transpose_block(std::byte*, std::int64_t, const std::byte*, std::int64_t) {}
#endif

// 32-byte vectors (AVX2) on x86, where the CPU has them (has_avx2()): the
// tile loops are compiled a second time for them (copy_tiles_avx2). Twice
// the elements per instruction lift transposes from the caches by a third
// (benchmarks/copy_engine.py, its avx2 column).
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define DLB_AVX2 __attribute__((target("avx2")))

[[nodiscard]] inline bool has_avx2() noexcept {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}

// transpose_block with 32-byte vectors: 8x8 elements of 4 bytes, 4x4 of 8.
// Intrinsics: GCC 12 splits the same shuffles written as vector extensions
// into 16-byte halves (measured 2.5 times slower, benchmarks/copy_engine.py).
template <std::size_t Size>
DLB_AVX2 inline void transpose_block_avx2(std::byte* dst, std::int64_t dst_row, const std::byte* src,
                                          std::int64_t src_col) {
  if constexpr (Size == 4) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + i * src_col));
    for (int i = 0; i < 8; i += 2) {  // interleave pairs of rows
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {  // then pairs of pairs
      r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
      r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {  // then the 16-byte halves
      t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
      t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(reinterpret_cast<float*>(dst + i * dst_row), t[i]);
  } else if constexpr (Size == 8) {
    __m256d r[4], t[4];
    for (int i = 0; i < 4; ++i) r[i] = _mm256_loadu_pd(reinterpret_cast<const double*>(src + i * src_col));
    for (int i = 0; i < 4; i += 2) {
      t[i] = _mm256_unpacklo_pd(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_pd(r[i], r[i + 1]);
    }
    for (int i = 0; i < 2; ++i) {
      r[i] = _mm256_permute2f128_pd(t[i], t[i + 2], 0x20);
      r[i + 2] = _mm256_permute2f128_pd(t[i], t[i + 2], 0x31);
    }
    for (int i = 0; i < 4; ++i) _mm256_storeu_pd(reinterpret_cast<double*>(dst + i * dst_row), r[i]);
  }
}
#else
[[nodiscard]] inline bool has_avx2() noexcept { return false; }
#endif

// Copies Bytes bytes in 16-byte pieces. A constant-size memcpy of a
// hundred bytes or so becomes `rep movs`, slow to start, and so does a loop
// of copies that GCC recognises as one: on x86 each piece passes through a
// register the compiler cannot see into (measured: a third faster than
// `rep movs` on 512-byte rows, the 128 MiB transposes of benchmarks/copy_engine.py).
template <std::int64_t Bytes>
inline void copy_run(std::byte* dst, const std::byte* src) {
  static_assert(Bytes % 16 == 0);
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  for (std::int64_t i = 0; i < Bytes; i += 16) {
    __m128i piece = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __asm__("" : "+x"(piece));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), piece);
  }
#elif defined(__GNUC__)
  for (std::int64_t i = 0; i < Bytes; i += 16) store_vector(dst + i, load_vector<u64x2>(src + i));
#else
  std::memcpy(dst, src, Bytes);
#endif
}

// Block edge in elements for transposes with Vector-byte vectors; 1 where
// there are none.
template <std::size_t Size, std::size_t Vector = 16>
inline constexpr std::int64_t block_edge =
    has_vectors && (Size == 4 || Size == 8) ? std::int64_t(Vector / Size) : 1;

#if defined(DLB_AVX2)
// copy_run in 32-byte pieces.
template <std::int64_t Bytes>
DLB_AVX2 inline void copy_run_avx2(std::byte* dst, const std::byte* src) {
  static_assert(Bytes % 32 == 0);
  for (std::int64_t i = 0; i < Bytes; i += 32) {
    __m256i piece = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    __asm__("" : "+x"(piece));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), piece);
  }
}
#endif

// transpose_block and copy_run with Vector-byte vectors.
template <std::size_t Size, std::size_t Vector>
inline void transpose_block_of(std::byte* dst, std::int64_t dst_row, const std::byte* src, std::int64_t src_col) {
#if defined(DLB_AVX2)
  if constexpr (Vector == 32) return transpose_block_avx2<Size>(dst, dst_row, src, src_col);
#endif
  transpose_block<Size>(dst, dst_row, src, src_col);
}
template <std::int64_t Bytes, std::size_t Vector>
inline void copy_run_of(std::byte* dst, const std::byte* src) {
#if defined(DLB_AVX2)
  if constexpr (Vector == 32 && Bytes % 32 == 0) return copy_run_avx2<Bytes>(dst, src);
#endif
  copy_run<Bytes>(dst, src);
}

// Writes 16 bytes past the caches (a streaming store), where the CPU has
// such stores; `p` is 16-byte aligned. An output larger than the cache it
// could stay in would only evict what is there, and a normal store first
// reads the line it writes (its "read for ownership"): half again the memory
// traffic. When to use them is the tile policy's (uses_streaming_stores).
inline void stream_16(std::byte* p, const std::byte* from) {
#if defined(__SSE2__)
  _mm_stream_si128(reinterpret_cast<__m128i*>(p), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
#else
  std::memcpy(p, from, 16);
#endif
}

// Orders streaming stores before whatever this thread does next (they are
// weakly ordered, and another thread will read the output).
inline void finish_streaming() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace dlb::detail
