// Eight float32 draws at a time (kernels/random_avx2.cpp, compiled for
// AVX2 and FMA): the same operations as kernels/random.cpp's scalar ones,
// in the same order and roundings, so every bit is theirs. The scalar code
// stays the reference (and the path of CPUs without AVX2, or of
// SPMD_VECTOR_ISA=baseline); test_random holds the two to each other.
#pragma once

#include <cstdint>

#include "kernels/random.hpp"

namespace spmd::rng::simd {

// Whether this CPU runs the functions below (and SPMD_VECTOR_ISA allows it).
bool available();

// out[j] for the counters first + j, j < n, as UniformF32 draws them:
// max(lo, fma(unit, span, lo)). n is a multiple of 8.
void uniform_f32(Key key, uint64_t first, float lo, float span, int64_t n, float *out);

// The same uniforms, then sqrt(2) * erfinv(u), as NormalF32 draws them.
void normal_f32(Key key, uint64_t first, float lo, float span, int64_t n, float *out);

// The same normals clipped: min(hi, max(lo, sqrt(2) * erfinv(u))), as
// TruncatedNormalF32 draws them (u uniform from u_lo over u_span).
void truncated_normal_f32(Key key, uint64_t first, float u_lo, float u_span, float lo, float hi, int64_t n,
                          float *out);

// erfinv_f32 of each of n floats (n a multiple of 8): for the tests.
void erfinv_f32(const float *x, int64_t n, float *out);

}  // namespace spmd::rng::simd
