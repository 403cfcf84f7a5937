// kernels/vector_math_isa.inc for AVX-512 (compiled with -mavx512f).
#include <immintrin.h>
#include <sleef.h>

#include "kernels/trig_avx2.hpp"

// The float sine and cosine in two halves of eight lanes, so that they give
// the same bits as on an AVX2 machine.
namespace spmd::vmath::avx512 {
template <__m256 (*Half)(__m256)>
inline __m512 in_halves(__m512 x) {
  alignas(64) float t[16];
  _mm512_store_ps(t, x);
  _mm256_store_ps(t, Half(_mm256_load_ps(t)));
  _mm256_store_ps(t + 8, Half(_mm256_load_ps(t + 8)));
  return _mm512_load_ps(t);
}
inline __m512 sin16(__m512 x) { return in_halves<avx2::sin8>(x); }
inline __m512 cos16(__m512 x) { return in_halves<avx2::cos8>(x); }
}  // namespace spmd::vmath::avx512

#define VM_TABLE kTableAvx512
#define VM_ISA "avx512"
#define VF __m512
#define VD __m512d
#define WF 16
#define WD 8
#define LOADF _mm512_loadu_ps
#define STOREF _mm512_storeu_ps
#define LOADD _mm512_loadu_pd
#define STORED _mm512_storeu_pd
#define SLF(fn, acc) Sleef_##fn##f16_##acc
#define SLD(fn, acc) Sleef_##fn##d8_##acc
#define VM_SIN_F32 spmd::vmath::avx512::sin16
#define VM_COS_F32 spmd::vmath::avx512::cos16
#include "kernels/vector_math_isa.inc"
