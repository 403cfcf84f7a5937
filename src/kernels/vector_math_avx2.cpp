// kernels/vector_math_isa.inc for AVX2 (compiled with -mavx2 -mfma).
#include <immintrin.h>
#include <sleef.h>

#include "kernels/trig_lanes.hpp"

#define VM_TABLE kTableAvx2
#define VM_ISA "avx2"
#define VF __m256
#define VD __m256d
#define WF 8
#define WD 4
#define LOADF _mm256_loadu_ps
#define STOREF _mm256_storeu_ps
#define LOADD _mm256_loadu_pd
#define STORED _mm256_storeu_pd
#define SLF(fn, acc) Sleef_##fn##f8_##acc
#define SLD(fn, acc) Sleef_##fn##d4_##acc
#define VM_SIN_F32 spmd::simd::sin<spmd::simd::Avx2>
#define VM_COS_F32 spmd::simd::cos<spmd::simd::Avx2>
#include "kernels/vector_math_isa.inc"
