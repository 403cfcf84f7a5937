// kernels/random_simd.hpp on AVX2 and FMA: eight lanes of
// kernels/random.cpp's scalar draws. Built with -ffp-contract=off, so only
// the multiply-adds written as _mm256_fmadd_ps are fused, as std::fma is
// in the scalar code; each step below names the scalar line it mirrors.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "kernels/random_constants.hpp"
#include "kernels/random_simd.hpp"
#include "kernels/vector_math.hpp"

namespace spmd::rng::simd {

namespace {

using V = __m256;
using I = __m256i;

template <int R>
inline I rotl(I x) {
  return _mm256_or_si256(_mm256_slli_epi32(x, R), _mm256_srli_epi32(x, 32 - R));
}

// Four rounds with rotations R0..R3, then the key injection of round i.
template <int R0, int R1, int R2, int R3>
inline void four_rounds(I &x0, I &x1) {
  x0 = _mm256_add_epi32(x0, x1);
  x1 = _mm256_xor_si256(rotl<R0>(x1), x0);
  x0 = _mm256_add_epi32(x0, x1);
  x1 = _mm256_xor_si256(rotl<R1>(x1), x0);
  x0 = _mm256_add_epi32(x0, x1);
  x1 = _mm256_xor_si256(rotl<R2>(x1), x0);
  x0 = _mm256_add_epi32(x0, x1);
  x1 = _mm256_xor_si256(rotl<R3>(x1), x0);
}

// threefry2x32 of the counters first .. first + 7 (hi, lo words): b0 ^ b1.
inline I threefry_xor(Key key, uint64_t first) {
  const uint32_t ks[3] = {key.w0, key.w1, key.w0 ^ key.w1 ^ 0x1BD11BDAu};
  const auto lo0 = static_cast<uint32_t>(first), hi0 = static_cast<uint32_t>(first >> 32);
  const I lo = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(lo0)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  // A lane whose low word wrapped carries into its high word.
  const I sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const I carry = _mm256_cmpgt_epi32(_mm256_xor_si256(_mm256_set1_epi32(static_cast<int>(lo0)), sign),
                                     _mm256_xor_si256(lo, sign));
  I x0 = _mm256_sub_epi32(_mm256_set1_epi32(static_cast<int>(hi0)), carry);
  I x1 = lo;
  auto inject = [&](int i) {
    x0 = _mm256_add_epi32(x0, _mm256_set1_epi32(static_cast<int>(ks[(i + 1) % 3])));
    x1 = _mm256_add_epi32(x1, _mm256_set1_epi32(static_cast<int>(ks[(i + 2) % 3] + static_cast<uint32_t>(i + 1))));
  };
  x0 = _mm256_add_epi32(x0, _mm256_set1_epi32(static_cast<int>(ks[0])));
  x1 = _mm256_add_epi32(x1, _mm256_set1_epi32(static_cast<int>(ks[1])));
  four_rounds<13, 15, 26, 6>(x0, x1);
  inject(0);
  four_rounds<17, 29, 16, 24>(x0, x1);
  inject(1);
  four_rounds<13, 15, 26, 6>(x0, x1);
  inject(2);
  four_rounds<17, 29, 16, 24>(x0, x1);
  inject(3);
  four_rounds<13, 15, 26, 6>(x0, x1);
  inject(4);
  return _mm256_xor_si256(x0, x1);
}

inline V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V splat(float f) { return _mm256_set1_ps(f); }

// UniformF32::value: unit_f32(bits), then xla_max(lo, fma(unit, span, lo))
// (max_ps returns its second operand unless the first is greater, NaN
// included, as xla_max with lo never NaN).
inline V uniform(I bits, V lo, V span) {
  const I mant = _mm256_or_si256(_mm256_srli_epi32(bits, 9), _mm256_set1_epi32(0x3F800000));
  const V unit = _mm256_sub_ps(_mm256_castsi256_ps(mant), splat(1.0f));
  return _mm256_max_ps(lo, fma(unit, span, lo));
}

template <size_t N>
inline V horner(const float (&c)[N], V t) {
  V p = splat(c[0]);
  for (size_t k = 1; k < N; ++k) p = fma(p, t, splat(c[k]));
  return p;
}

using namespace constants;  // kernels/random_constants.hpp

// log1p_small<float>.
inline V log1p_small(V x) {
  V num = splat(static_cast<float>(kLog1pNumerator[0]));
  V den = splat(static_cast<float>(kLog1pDenominator[0]));
  for (int k = 1; k < 7; ++k) {
    num = fma(num, x, splat(static_cast<float>(kLog1pNumerator[k])));
    den = fma(den, x, splat(static_cast<float>(kLog1pDenominator[k])));
  }
  const V x2 = _mm256_mul_ps(x, x);
  const V r = _mm256_mul_ps(_mm256_mul_ps(x, x2), _mm256_div_ps(num, den));
  return _mm256_add_ps(x, fma(splat(-0.5f), x2, r));
}

// log_f32 of v below infinity and not subnormal (erfinv's 1 - x^2 always
// is: at least 2^-24, at most 1).
inline V log_positive(V v) {
  const I bits = _mm256_castps_si256(v);
  // frexp: v = f * 2^e, f in [0.5, 1).
  const I exponent = _mm256_sub_epi32(_mm256_and_si256(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(0xFF)),
                                      _mm256_set1_epi32(126));
  V f = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(static_cast<int>(0x807FFFFFu))),
                                            _mm256_set1_epi32(0x3F000000)));
  V e = _mm256_cvtepi32_ps(exponent);
  const V below = _mm256_cmp_ps(f, splat(0.707106781186547524f), _CMP_LT_OQ);
  e = _mm256_blendv_ps(e, _mm256_sub_ps(e, splat(1.0f)), below);
  f = _mm256_blendv_ps(_mm256_sub_ps(f, splat(1.0f)), _mm256_sub_ps(_mm256_add_ps(f, f), splat(1.0f)), below);
  const V f2 = _mm256_mul_ps(f, f), f3 = _mm256_mul_ps(f2, f);
  V y = fma(splat(kLogP[0]), f, splat(kLogP[1]));
  V y1 = fma(splat(kLogP[3]), f, splat(kLogP[4]));
  V y2 = fma(splat(kLogP[6]), f, splat(kLogP[7]));
  y = fma(y, f, splat(kLogP[2]));
  y1 = fma(y1, f, splat(kLogP[5]));
  y2 = fma(y2, f, splat(kLogP[8]));
  y = fma(y, f3, y1);
  y = fma(y, f3, y2);
  y = fma(y, f3, _mm256_mul_ps(e, splat(kLogQ1)));
  V r = fma(splat(-0.5f), f2, f);
  r = _mm256_add_ps(r, y);
  r = fma(e, splat(kLogQ2), r);
  // As std::log where the scalar code calls it: log(0) is -inf, below 0 NaN.
  r = _mm256_blendv_ps(r, splat(-INFINITY), _mm256_cmp_ps(v, splat(0.0f), _CMP_EQ_OQ));
  return _mm256_blendv_ps(r, splat(NAN), _mm256_cmp_ps(v, splat(0.0f), _CMP_NGT_UQ));
}

// erfinv_f32.
inline V erfinv(V x) {
  const V abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const V t = _mm256_xor_ps(_mm256_mul_ps(x, x), splat(-0.0f));  // -(x * x)
  // log1p_f32(t): the rational form below sqrt(2) - 1 in magnitude, else log(t + 1).
  const V small =
      _mm256_cmp_ps(_mm256_and_ps(t, abs_mask), splat(static_cast<float>(kLog1pThreshold)), _CMP_LT_OQ);
  const V log1p = _mm256_blendv_ps(log_positive(_mm256_add_ps(t, splat(1.0f))), log1p_small(t), small);
  const V w = _mm256_xor_ps(log1p, splat(-0.0f));
  const V central = horner(kErfinvF32Small, _mm256_sub_ps(w, splat(2.5f)));
  const V tail = horner(kErfinvF32Large, _mm256_sub_ps(_mm256_sqrt_ps(w), splat(3.0f)));
  const V p = _mm256_blendv_ps(tail, central, _mm256_cmp_ps(w, splat(5.0f), _CMP_LT_OQ));
  const V r = _mm256_mul_ps(p, x);
  // |x| == 1: x * inf.
  const V one = _mm256_cmp_ps(_mm256_and_ps(x, abs_mask), splat(1.0f), _CMP_EQ_OQ);
  return _mm256_blendv_ps(r, _mm256_mul_ps(x, splat(INFINITY)), one);
}

}  // namespace

bool available() {
  const char *isa = vmath::table().isa;
  return std::strcmp(isa, "avx2") == 0 || std::strcmp(isa, "avx512") == 0;
}

void uniform_f32(Key key, uint64_t first, float lo, float span, int64_t n, float *out) {
  const V l = splat(lo), s = splat(span);
  for (int64_t j = 0; j < n; j += 8)
    _mm256_storeu_ps(out + j, uniform(threefry_xor(key, first + static_cast<uint64_t>(j)), l, s));
}

void normal_f32(Key key, uint64_t first, float lo, float span, int64_t n, float *out) {
  const V l = splat(lo), s = splat(span), sqrt2 = splat(std::numbers::sqrt2_v<float>);
  for (int64_t j = 0; j < n; j += 8) {
    const V u = uniform(threefry_xor(key, first + static_cast<uint64_t>(j)), l, s);
    _mm256_storeu_ps(out + j, _mm256_mul_ps(sqrt2, erfinv(u)));
  }
}

void truncated_normal_f32(Key key, uint64_t first, float u_lo, float u_span, float lo, float hi, int64_t n,
                          float *out) {
  const V l = splat(u_lo), s = splat(u_span), sqrt2 = splat(std::numbers::sqrt2_v<float>);
  const V clip_lo = splat(lo), clip_hi = splat(hi);
  for (int64_t j = 0; j < n; j += 8) {
    const V u = uniform(threefry_xor(key, first + static_cast<uint64_t>(j)), l, s);
    // xla_min(hi, xla_max(lo, v)): min_ps and max_ps return their second
    // operand unless the first wins, NaN included; the bounds are never NaN.
    const V v = _mm256_max_ps(clip_lo, _mm256_mul_ps(sqrt2, erfinv(u)));
    _mm256_storeu_ps(out + j, _mm256_min_ps(clip_hi, v));
  }
}

void erfinv_f32(const float *x, int64_t n, float *out) {
  for (int64_t j = 0; j < n; j += 8) _mm256_storeu_ps(out + j, erfinv(_mm256_loadu_ps(x + j)));
}

}  // namespace spmd::rng::simd
