// Float32 vectors of one instruction set as a type with the operations the
// lane-wise kernels need (kernels/trig_lanes.hpp, kernels/elementwise_chain
// _simd.hpp), so each of those is written once and compiled for AVX2 (8
// lanes) and AVX-512 (16). Every operation is the IEEE one, lane by lane:
// a kernel gives the same bits in either width.
//
// Include only in a file compiled for the instruction set it uses (-mavx2
// -mfma, and -mavx512f -mavx512dq for Avx512). Everything here has internal
// linkage, so that no function compiled for AVX-512 can stand in for the
// AVX2 file's same-named one at link time.
#pragma once

#include <immintrin.h>
#include <sleef.h>

#include <cstddef>

namespace spmd::simd {
namespace {

#if defined(__AVX2__) && defined(__FMA__)
struct Avx2 {
  using F = __m256;
  using I = __m256i;
  using Mask = __m256;  // all ones or zeros in each lane
  static constexpr size_t kLanes = 8;

  static F set1(float v) { return _mm256_set1_ps(v); }
  static F zero() { return _mm256_setzero_ps(); }
  static F load(const float *p) { return _mm256_loadu_ps(p); }
  static void store(float *p, F v) { _mm256_storeu_ps(p, v); }

  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F sqrt(F a) { return _mm256_sqrt_ps(a); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }    // a*b + c
  static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a*b
  static F fmsub(F a, F b, F c) { return _mm256_fmsub_ps(a, b, c); }    // a*b - c

  static F bit_and(F a, F b) { return _mm256_and_ps(a, b); }
  static F bit_or(F a, F b) { return _mm256_or_ps(a, b); }
  static F bit_xor(F a, F b) { return _mm256_xor_ps(a, b); }
  static F and_not(F a, F b) { return _mm256_andnot_ps(a, b); }  // ~a & b

  template <int Predicate>
  static Mask cmp(F a, F b) { return _mm256_cmp_ps(a, b, Predicate); }
  static bool any(Mask m) { return _mm256_movemask_ps(m) != 0; }
  // Lanes of `m` from b, the others from a.
  static F select(Mask m, F a, F b) { return _mm256_blendv_ps(a, b, m); }

  static I as_int(F a) { return _mm256_castps_si256(a); }
  static F as_float(I a) { return _mm256_castsi256_ps(a); }
  static I add_int(I a, int v) { return _mm256_add_epi32(a, _mm256_set1_epi32(v)); }
  template <int N>
  static I shl(I a) { return _mm256_slli_epi32(a, N); }
  template <int N>
  static I shr(I a) { return _mm256_srli_epi32(a, N); }
  static Mask low_bit(I a) { return as_float(shl<31>(a)); }
  static Mask exponent_zero(F a) {
    const I e = _mm256_and_si256(as_int(a), _mm256_set1_epi32(0x7f800000));
    return as_float(_mm256_cmpeq_epi32(e, _mm256_setzero_si256()));
  }

  static F sleef_sin(F a) { return Sleef_sinf8_u10(a); }
  static F sleef_cos(F a) { return Sleef_cosf8_u10(a); }
  static F exp(F a) { return Sleef_expf8_u10(a); }
  static F log(F a) { return Sleef_logf8_u10(a); }
  static F tanh(F a) { return Sleef_tanhf8_u10(a); }
  static F erfc(F a) { return Sleef_erfcf8_u15(a); }
  static F pow(F a, F b) { return Sleef_powf8_u10(a, b); }
};
#endif

#if defined(__AVX512F__) && defined(__AVX512DQ__)
struct Avx512 {
  using F = __m512;
  using I = __m512i;
  using Mask = __mmask16;
  static constexpr size_t kLanes = 16;

  static F set1(float v) { return _mm512_set1_ps(v); }
  static F zero() { return _mm512_setzero_ps(); }
  static F load(const float *p) { return _mm512_loadu_ps(p); }
  static void store(float *p, F v) { _mm512_storeu_ps(p, v); }

  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  // Masked forms here and below: GCC 12 warns, wrongly, that the unmasked
  // ones read an uninitialised vector.
  static F sqrt(F a) { return _mm512_maskz_sqrt_ps(0xffff, a); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F fmsub(F a, F b, F c) { return _mm512_fmsub_ps(a, b, c); }

  static F bit_and(F a, F b) { return _mm512_and_ps(a, b); }
  static F bit_or(F a, F b) { return _mm512_or_ps(a, b); }
  static F bit_xor(F a, F b) { return _mm512_xor_ps(a, b); }
  static F and_not(F a, F b) { return _mm512_andnot_ps(a, b); }

  template <int Predicate>
  static Mask cmp(F a, F b) { return _mm512_cmp_ps_mask(a, b, Predicate); }
  static bool any(Mask m) { return m != 0; }
  static F select(Mask m, F a, F b) { return _mm512_mask_blend_ps(m, a, b); }

  static I as_int(F a) { return _mm512_castps_si512(a); }
  static F as_float(I a) { return _mm512_castsi512_ps(a); }
  static I add_int(I a, int v) { return _mm512_add_epi32(a, _mm512_set1_epi32(v)); }
  template <int N>
  static I shl(I a) { return _mm512_maskz_slli_epi32(0xffff, a, N); }
  template <int N>
  static I shr(I a) { return _mm512_maskz_srli_epi32(0xffff, a, N); }
  static Mask low_bit(I a) { return _mm512_test_epi32_mask(a, _mm512_set1_epi32(1)); }
  static Mask exponent_zero(F a) {
    return _mm512_testn_epi32_mask(as_int(a), _mm512_set1_epi32(0x7f800000));
  }

  // SLEEF's sine and cosine serve only lanes beyond the reduction of
  // kernels/trig_lanes.hpp: its eight-lane ones, on each half, so that
  // those lanes too have the bits an AVX2 machine gives.
  template <typename Half>
  static F in_halves(Half half, F a) {
    alignas(64) float t[16];
    _mm512_store_ps(t, a);
    _mm256_store_ps(t, half(_mm256_load_ps(t)));
    _mm256_store_ps(t + 8, half(_mm256_load_ps(t + 8)));
    return _mm512_load_ps(t);
  }
  static F sleef_sin(F a) { return in_halves(Sleef_sinf8_u10, a); }
  static F sleef_cos(F a) { return in_halves(Sleef_cosf8_u10, a); }
  static F exp(F a) { return Sleef_expf16_u10(a); }
  static F log(F a) { return Sleef_logf16_u10(a); }
  static F tanh(F a) { return Sleef_tanhf16_u10(a); }
  static F erfc(F a) { return Sleef_erfcf16_u15(a); }
  static F pow(F a, F b) { return Sleef_powf16_u10(a, b); }
};
#endif

}  // namespace
}  // namespace spmd::simd
