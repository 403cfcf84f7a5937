// float32 sine and cosine, a vector at a time (kernels/simd_lanes.hpp: 8
// lanes on AVX2 with FMA, 16 on AVX-512, the same bits in both), for the
// vector math tables (kernels/vector_math_avx2.cpp and _avx512.cpp) and the
// float32 chains (kernels/elementwise_chain_simd.hpp).
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
// taken from a 60-digit pi. Include only where kernels/simd_lanes.hpp may be.
#pragma once

#include "kernels/simd_lanes.hpp"

namespace spmd::simd {
namespace {

// sin(x) (cosine false) or cos(x) (cosine true) for |x| <= 2^17.
template <class V>
typename V::F sincos_reduced(typename V::F x, bool cosine) {
  using F = typename V::F;
  // q = x * 2/pi rounded to an integer: 1.5 * 2^23 added leaves it in the
  // low bits of `shifted` (|q| < 2^22).
  const F magic = V::set1(0x1.8p23f);
  const F shifted = V::fmadd(x, V::set1(0x1.45f306p-1f), magic);
  const F q = V::sub(shifted, magic);
  // pi/2 = A + B + C (+ 1e-23): x - q*A is exact (a multiple of A's last
  // place below 2); q*B and its rounding error are carried apart.
  const F b = V::set1(-0x1.777a5cp-25f);
  const F r1 = V::fnmadd(q, V::set1(0x1.921fb6p+0f), x);
  const F qb = V::mul(q, b);
  const F qb_err = V::fmsub(q, b, qb);
  const F rest = V::fmadd(q, V::set1(-0x1.ee59dap-50f), qb_err);
  const F rh = V::sub(r1, qb);
  const F rl = V::sub(V::sub(V::sub(r1, rh), qb), rest);
  const F r2 = V::mul(rh, rh);

  F p = V::fmadd(V::set1(0x1.6c9d78p-19f), r2, V::set1(-0x1.a00e9cp-13f));
  p = V::fmadd(p, r2, V::set1(0x1.111108p-7f));
  p = V::fmadd(p, r2, V::set1(-0x1.555556p-3f));
  const F sin_r = V::add(rh, V::fmadd(V::mul(r2, rh), p, rl));

  F c = V::fmadd(V::set1(-0x1.23f438p-22f), r2, V::set1(0x1.a01008p-16f));
  c = V::fmadd(c, r2, V::set1(-0x1.6c16b6p-10f));
  c = V::fmadd(c, r2, V::set1(0x1.555556p-5f));
  const F one = V::set1(1.0f);
  const F h = V::mul(r2, V::set1(0.5f));
  const F lead = V::sub(one, h);  // 1 - h and its rounding error
  const F lead_err = V::sub(V::sub(one, lead), h);
  F tail = V::fmadd(V::mul(r2, r2), c, lead_err);
  tail = V::fnmadd(rh, rl, tail);
  const F cos_r = V::add(lead, tail);

  // Quadrant: sine, cosine, -sine, -cosine (cos x = sin(x + pi/2)).
  typename V::I quadrant = V::as_int(shifted);
  if (cosine) quadrant = V::add_int(quadrant, 1);
  const F sign = V::as_float(V::template shl<31>(V::template shr<1>(quadrant)));
  return V::bit_xor(V::select(V::low_bit(quadrant), sin_r, cos_r), sign);
}

template <class V>
typename V::F magnitude(typename V::F x) { return V::and_not(V::set1(-0.0f), x); }

// Lanes the reduction does not serve (|x| > 2^17, infinities, NaN), from
// |x|.
template <class V>
typename V::Mask beyond_reduction(typename V::F ax) {
  return V::template cmp<_CMP_NLE_UQ>(ax, V::set1(0x1p17f));
}

template <class V>
typename V::F sin(typename V::F x) {
  typename V::F v = sincos_reduced<V>(x, false);
  // sin x rounds to x below 2^-12: x itself, so -0 stays -0 and a
  // subnormal stays itself even where the arithmetic flushes subnormals,
  // as jax.jit's sine gives them.
  const typename V::F ax = magnitude<V>(x);
  v = V::select(V::template cmp<_CMP_LT_OQ>(ax, V::set1(0x1p-12f)), v, x);
  const typename V::Mask far = beyond_reduction<V>(ax);
  if (V::any(far)) v = V::select(far, v, V::sleef_sin(x));
  return v;
}

template <class V>
typename V::F cos(typename V::F x) {
  typename V::F v = sincos_reduced<V>(x, true);
  const typename V::Mask far = beyond_reduction<V>(magnitude<V>(x));
  if (V::any(far)) v = V::select(far, v, V::sleef_cos(x));
  return v;
}

}  // namespace
}  // namespace spmd::simd
