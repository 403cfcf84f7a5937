// kernels/vector_math_isa.inc for the x86-64 baseline (SSE2).
#include <emmintrin.h>
#include <sleef.h>

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
#include "kernels/vector_math_isa.inc"
