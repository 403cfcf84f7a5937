// kernels/vector_math_isa.inc for AVX-512 (compiled with -mavx512f).
#include <immintrin.h>
#include <sleef.h>

#include "kernels/trig_lanes.hpp"

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
#define VM_SIN_F32 spmd::simd::sin<spmd::simd::Avx512>
#define VM_COS_F32 spmd::simd::cos<spmd::simd::Avx512>
#include "kernels/vector_math_isa.inc"
