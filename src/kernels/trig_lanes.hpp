// float32 sine and cosine, eight lanes at a time on AVX2 with FMA, for the
// vector math tables (kernels/vector_math_avx2.cpp and _avx512.cpp).
//
// SLEEF's 1-ulp sine carries its reduced argument and polynomial in
// double-float arithmetic over the whole float range; that costs about as
// much as reading and writing the array twice. Here, for |x| <= 2^17:
//   - x is reduced by pi/2 in three parts (Cody-Waite): x - q*A is exact,
//     and the rest, q*(B + C), is kept as a second float, so the reduced
//     argument r = rh + rl carries about 48 bits;
//   - sin r = rh + (rl + rh^3 * P(rh^2)) and
//     cos r = (1 - rh^2/2) + (r^4 * Q(rh^2) - rh*rl), with the rounding of
//     1 - rh^2/2 carried;
//   - the quadrant q mod 4 picks sine or cosine and the sign.
// Checked against the double-precision sine and cosine over every float in
// that range: at most 0.88 ulp from the true value (SLEEF's bound is 1.0),
// bounded in CI by tests/test_vector_trig.cpp. Lanes beyond 2^17, infinite
// or NaN take SLEEF's value, lane by lane, so that every element's result
// depends on its own value only, not on its neighbours (the bits do not
// change with the sharding).
//
// The polynomials are least-squares fits on Chebyshev nodes of [-0.8, 0.8]
// (the reduced argument reaches a little past pi/4 where x * 2/pi rounds
// up), relative error below 2^-27; the pi/2 parts are its float splits
// taken from a 60-digit pi. Include only where AVX2 and FMA are enabled.
#pragma once

#include <immintrin.h>
#include <sleef.h>

namespace spmd::vmath::avx2 {

// sin(x) (cosine false) or cos(x) (cosine true) for |x| <= 2^17.
inline __m256 sincos_reduced(__m256 x, bool cosine) {
  // q = x * 2/pi rounded to an integer: 1.5 * 2^23 added leaves it in the
  // low bits of `shifted` (|q| < 2^22).
  const __m256 magic = _mm256_set1_ps(0x1.8p23f);
  const __m256 shifted = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.45f306p-1f), magic);
  const __m256 q = _mm256_sub_ps(shifted, magic);
  // pi/2 = A + B + C (+ 1e-23): x - q*A is exact (a multiple of A's last
  // place below 2); q*B and its rounding error are carried apart.
  const __m256 b = _mm256_set1_ps(-0x1.777a5cp-25f);
  const __m256 r1 = _mm256_fnmadd_ps(q, _mm256_set1_ps(0x1.921fb6p+0f), x);
  const __m256 qb = _mm256_mul_ps(q, b);
  const __m256 qb_err = _mm256_fmsub_ps(q, b, qb);
  const __m256 rest = _mm256_fmadd_ps(q, _mm256_set1_ps(-0x1.ee59dap-50f), qb_err);
  const __m256 rh = _mm256_sub_ps(r1, qb);
  const __m256 rl = _mm256_sub_ps(_mm256_sub_ps(_mm256_sub_ps(r1, rh), qb), rest);
  const __m256 r2 = _mm256_mul_ps(rh, rh);

  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(0x1.6c9d78p-19f), r2, _mm256_set1_ps(-0x1.a00e9cp-13f));
  p = _mm256_fmadd_ps(p, r2, _mm256_set1_ps(0x1.111108p-7f));
  p = _mm256_fmadd_ps(p, r2, _mm256_set1_ps(-0x1.555556p-3f));
  const __m256 sin_r = _mm256_add_ps(rh, _mm256_fmadd_ps(_mm256_mul_ps(r2, rh), p, rl));

  __m256 c = _mm256_fmadd_ps(_mm256_set1_ps(-0x1.23f438p-22f), r2, _mm256_set1_ps(0x1.a01008p-16f));
  c = _mm256_fmadd_ps(c, r2, _mm256_set1_ps(-0x1.6c16b6p-10f));
  c = _mm256_fmadd_ps(c, r2, _mm256_set1_ps(0x1.555556p-5f));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256 h = _mm256_mul_ps(r2, half);
  const __m256 lead = _mm256_sub_ps(one, h);  // 1 - h and its rounding error
  const __m256 lead_err = _mm256_sub_ps(_mm256_sub_ps(one, lead), h);
  __m256 tail = _mm256_fmadd_ps(_mm256_mul_ps(r2, r2), c, lead_err);
  tail = _mm256_fnmadd_ps(rh, rl, tail);
  const __m256 cos_r = _mm256_add_ps(lead, tail);

  // Quadrant: sine, cosine, -sine, -cosine (cos x = sin(x + pi/2)).
  __m256i quadrant = _mm256_castps_si256(shifted);
  if (cosine) quadrant = _mm256_add_epi32(quadrant, _mm256_set1_epi32(1));
  const __m256 odd = _mm256_castsi256_ps(_mm256_slli_epi32(quadrant, 31));
  const __m256 sign = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(quadrant, 1), 31));
  return _mm256_xor_ps(_mm256_blendv_ps(sin_r, cos_r, odd), sign);
}

inline __m256 magnitude(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }

// Lanes the reduction does not serve (|x| > 2^17, infinities, NaN), from
// |x|: a mask.
inline __m256 beyond_reduction(__m256 ax) { return _mm256_cmp_ps(ax, _mm256_set1_ps(0x1p17f), _CMP_NLE_UQ); }

inline __m256 sin8(__m256 x) {
  __m256 v = sincos_reduced(x, false);
  // sin x rounds to x below 2^-12: x itself, so -0 stays -0 and a
  // subnormal stays itself even where the arithmetic flushes subnormals,
  // as jax.jit's sine gives them.
  const __m256 ax = magnitude(x);
  v = _mm256_blendv_ps(v, x, _mm256_cmp_ps(ax, _mm256_set1_ps(0x1p-12f), _CMP_LT_OQ));
  const __m256 far = beyond_reduction(ax);
  if (_mm256_movemask_ps(far) != 0) v = _mm256_blendv_ps(v, Sleef_sinf8_u10(x), far);
  return v;
}

inline __m256 cos8(__m256 x) {
  __m256 v = sincos_reduced(x, true);
  const __m256 far = beyond_reduction(magnitude(x));
  if (_mm256_movemask_ps(far) != 0) v = _mm256_blendv_ps(v, Sleef_cosf8_u10(x), far);
  return v;
}

}  // namespace spmd::vmath::avx2
