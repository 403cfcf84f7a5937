// kernels/vector_math_isa.inc for the x86-64 baseline (SSE2).
#include <emmintrin.h>
#include <sleef.h>

// SLEEF's sine, but x itself below 2^-12 (where sin x rounds to x), as
// jax.jit's sine returns a subnormal x even where subnormals are flushed.
namespace spmd::vmath::baseline {
inline __m128 sin4(__m128 x) {
  const __m128 tiny = _mm_cmplt_ps(_mm_andnot_ps(_mm_set1_ps(-0.0f), x), _mm_set1_ps(0x1p-12f));
  return _mm_or_ps(_mm_and_ps(tiny, x), _mm_andnot_ps(tiny, Sleef_sinf4_u10(x)));
}
}  // namespace spmd::vmath::baseline

#define VM_TABLE kTableBaseline
#define VM_ISA "baseline"
#define VF __m128
#define VD __m128d
#define WF 4
#define WD 2
#define LOADF _mm_loadu_ps
#define STOREF _mm_storeu_ps
#define LOADD _mm_loadu_pd
#define STORED _mm_storeu_pd
#define SLF(fn, acc) Sleef_##fn##f4_##acc
#define SLD(fn, acc) Sleef_##fn##d2_##acc
#define VM_SIN_F32 spmd::vmath::baseline::sin4
#define VM_COS_F32 Sleef_cosf4_u10
#include "kernels/vector_math_isa.inc"
