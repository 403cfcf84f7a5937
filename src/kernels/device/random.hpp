// The random kernel's per-element body (kernels/random.hpp): Threefry-2x32
// of each element's global index, then the distribution, with the
// polynomials, fused multiply-adds and roundings of kernels/random.cpp, so
// the bits are that file's. The one exception is the float64 normals: where
// erfinv needs log(1 - x^2) with 1 - x^2 below 0.59, kernels/random.cpp
// calls the C library's log, which a GPU does not have; log_f64 below is
// one of our own that rounds correctly, so those draws differ from the
// CPU's only where the C library's log does not round correctly (about
// three in ten thousand of those logs, by at most one ulp).
//
// Compile the device side with -fmad=false: no a * b + c here may become a
// fused multiply-add unless it is written as one.
#pragma once

#include <cmath>
#include <limits>
#include <numbers>

#include "base/shape.hpp"
#include "kernels/device/cpu_float.hpp"
#include "kernels/random.hpp"

namespace spmd::dev::rng {

constexpr int kMaxDims = 16;

// ---- Threefry-2x32, 20 rounds ----

SPMD_HD uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// (x0, x1) encrypted with key (k0, k1), in place.
SPMD_HD void threefry2x32(uint32_t k0, uint32_t k1, uint32_t &x0, uint32_t &x1) {
  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  SPMD_UNROLL
  for (int i = 0; i < 5; ++i) {
    SPMD_UNROLL
    for (int j = 0; j < 4; ++j) {
      x0 += x1;
      x1 = rotl(x1, rot[i % 2][j]);
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + static_cast<uint32_t>(i + 1);
  }
}

// ---- scalar helpers, as kernels/random.cpp ----

template <typename T>
SPMD_HD T xla_max(T a, T b) {  // lax.max: NaN if either side is NaN
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return a > b ? a : b;
}
template <typename T>
SPMD_HD T xla_min(T a, T b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return a < b ? a : b;
}

template <typename T>
SPMD_HD T flush_subnormal(T x) {
  return abs_of(x) < min_normal<T>() ? zero_like(x) : x;
}

template <typename T, int N>
SPMD_HD T horner(const T (&c)[N], T t) {
  T p = c[0];
  for (int k = 1; k < N; ++k) p = m::fma(p, t, c[k]);
  return p;
}

SPMD_HD float round16(spmd_dtype d, float f) {
  return d == SPMD_F16 ? f16_bits_to_f32(f32_to_f16_bits(f)) : bf16_bits_to_f32(f32_to_bf16_bits(f));
}
SPMD_HD uint16_t bits16(spmd_dtype d, float f) {
  return d == SPMD_F16 ? f32_to_f16_bits(f) : f32_to_bf16_bits(f);
}

SPMD_HD float unit_f32(uint32_t bits) { return f32_of((bits >> 9) | 0x3F800000u) - 1.0f; }
SPMD_HD double unit_f64(uint64_t bits) {
  return f64_of((bits >> 12) | 0x3FF0000000000000ull) - 1.0;
}
SPMD_HD float unit_16(spmd_dtype d, uint32_t b0, uint32_t b1) {
  const uint32_t x = b0 ^ b1;
  const uint16_t h = d == SPMD_F16 ? static_cast<uint16_t>(((x & 0xFFFFu) >> 6) | 0x3C00u)
                                   : static_cast<uint16_t>(((x & 0xFFu) >> 1) | 0x3F80u);
  const float f = d == SPMD_F16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h);
  return round16(d, f - 1.0f);
}

// ---- log1p and erfinv, as XLA's CPU code evaluates them ----

template <typename T>
SPMD_HD T log1p_small(T x) {  // Cephes, |x| < sqrt(2) - 1
  const T num_c[7] = {static_cast<T>(4.5270000862445199635215E-5),
                      static_cast<T>(4.9854102823193375972212E-1),
                      static_cast<T>(6.5787325942061044846969E0),
                      static_cast<T>(2.9911919328553073277375E1),
                      static_cast<T>(6.0949667980987787057556E1),
                      static_cast<T>(5.7112963590585538103336E1),
                      static_cast<T>(2.0039553499201281259648E1)};
  const T den_c[7] = {static_cast<T>(1.0),
                      static_cast<T>(1.5062909083469192043167E1),
                      static_cast<T>(8.3047565967967209469434E1),
                      static_cast<T>(2.2176239823732856465394E2),
                      static_cast<T>(3.0909872225312059774938E2),
                      static_cast<T>(2.1642788614495947685003E2),
                      static_cast<T>(6.0118660497603843919306E1)};
  T num = num_c[0];
  T den = den_c[0];
  for (int k = 1; k < 7; ++k) {
    num = m::fma(num, x, num_c[k]);
    den = m::fma(den, x, den_c[k]);
  }
  const T x2 = x * x;
  const T r = (x * x2) * (num / den);
  return x + m::fma(static_cast<T>(-0.5), x2, r);
}

// x = f * 2^e with f in [0.5, 1), for finite x > 0 (std::frexp).
SPMD_HD float frexp_positive(float x, int &e) {
  int adjust = 0;
  if ((bits_of(x) & 0x7f800000u) == 0) {  // subnormal: scale into the normal range
    x *= 16777216.0f;
    adjust = -24;
  }
  const uint32_t u = bits_of(x);
  e = static_cast<int>((u >> 23) & 0xffu) - 126 + adjust;
  return f32_of((u & 0x807fffffu) | 0x3f000000u);
}

// Cephes logf, as kernels/random.cpp's log_f32.
SPMD_HD float log_f32(float v) {
  if (!(v > 0.0f) || v == std::numeric_limits<float>::infinity() || is_nan(v)) return m::log(v);
  const float p[9] = {7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
                      -1.2420140846E-1f, 1.4249322787E-1f,  -1.6668057665E-1f,
                      2.0000714765E-1f,  -2.4999993993E-1f, 3.3333331174E-1f};
  const float q1 = -2.12194440e-4f, q2 = 0.693359375f;
  int exponent;
  float f = frexp_positive(v, exponent);
  float e = static_cast<float>(exponent);
  if (f < 0.707106781186547524f) {
    e -= 1.0f;
    f = f + f - 1.0f;
  } else {
    f = f - 1.0f;
  }
  const float f2 = f * f, f3 = f2 * f;
  float y = m::fma(p[0], f, p[1]), y1 = m::fma(p[3], f, p[4]), y2 = m::fma(p[6], f, p[7]);
  y = m::fma(y, f, p[2]);
  y1 = m::fma(y1, f, p[5]);
  y2 = m::fma(y2, f, p[8]);
  y = m::fma(y, f3, y1);
  y = m::fma(y, f3, y2);
  y = m::fma(y, f3, e * q1);
  float r = m::fma(-0.5f, f2, f);
  r = r + y;
  return m::fma(e, q2, r);
}

constexpr double kLog1pThreshold = 0.41421356237309504880;  // sqrt(2) - 1

SPMD_HD float log1p_f32(float x) {
  return abs_of(x) < static_cast<float>(kLog1pThreshold) ? log1p_small(x) : log_f32(x + 1.0f);
}

// A double-double: hi + lo, |lo| at most half an ulp of hi.
struct DD {
  double hi, lo;
};
SPMD_HD DD two_sum(double a, double b) {
  const double s = a + b, bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
SPMD_HD DD fast_two_sum(double a, double b) {  // |a| >= |b|
  const double s = a + b;
  return {s, b - (s - a)};
}
SPMD_HD DD dd_add(DD a, DD b) {  // operands of one sign, or far apart
  const DD s = two_sum(a.hi, b.hi);
  return fast_two_sum(s.hi, s.lo + (a.lo + b.lo));
}
SPMD_HD DD dd_mul(DD a, DD b) {
  const double p = a.hi * b.hi;
  const double e = m::fma(a.hi, b.hi, -p) + (a.hi * b.lo + a.lo * b.hi);
  return fast_two_sum(p, e);
}

// log(x) rounded to nearest for the finite x > 0 erfinv meets (else the
// C library's / CUDA's log): x = m * 2^e, m in [sqrt(1/2), sqrt(2)), and
// log(m) = 2 atanh(f) = f * (2 + 2/3 s + 2/5 s^2 + ...), f = (m - 1) / (m + 1),
// s = f^2 <= 0.0295, in double-double (about 100 bits), rounded once.
SPMD_HD double log_f64(double x) {
  if (!(x > 0.0) || x == std::numeric_limits<double>::infinity() || is_nan(x)) return m::log(x);
  int e = 0;
  if ((bits_of(x) & 0x7ff0000000000000ull) == 0) {  // subnormal
    x *= 18014398509481984.0;                          // 2^54
    e = -54;
  }
  const uint64_t u = bits_of(x);
  e += static_cast<int>((u >> 52) & 0x7ffu) - 1023;
  double mant = f64_of((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);  // [1, 2)
  if (mant > 1.4142135623730951) {
    mant *= 0.5;
    e += 1;
  }
  const double num = mant - 1.0;  // exact
  const DD den = two_sum(mant, 1.0);
  const double f_hi = num / den.hi;
  const double rem = m::fma(-f_hi, den.hi, num) - f_hi * den.lo;
  const DD f = {f_hi, rem / den.hi};
  const DD s = dd_mul(f, f);
  // The tail, 2/9 + 2/11 s + ... + 2/43 s^17, in double; its error is
  // scaled by s^4 < 2^-20 below.
  const double tail_c[18] = {2.0 / 43, 2.0 / 41, 2.0 / 39, 2.0 / 37, 2.0 / 35, 2.0 / 33,
                             2.0 / 31, 2.0 / 29, 2.0 / 27, 2.0 / 25, 2.0 / 23, 2.0 / 21,
                             2.0 / 19, 2.0 / 17, 2.0 / 15, 2.0 / 13, 2.0 / 11, 2.0 / 9};
  double tail = tail_c[0];
  for (int k = 1; k < 18; ++k) tail = m::fma(tail, s.hi, tail_c[k]);
  // 2/7, 2/5, 2/3 and 2 in double-double, highest first.
  const DD head_c[4] = {{0x1.2492492492492p-2, 0x1.2492492492492p-56},
                        {0x1.999999999999ap-2, -0x1.999999999999ap-56},
                        {0x1.5555555555555p-1, 0x1.5555555555555p-55},
                        {2.0, 0.0}};
  DD poly = {tail, 0.0};
  for (int k = 0; k < 4; ++k) poly = dd_add(head_c[k], dd_mul(s, poly));
  const DD log_m = dd_mul(f, poly);
  const double ed = static_cast<double>(e);
  const double ln2_hi = 0x1.62e42fefa39efp-1, ln2_lo = 0x1.abc9e3b39803fp-56;
  const double p = ed * ln2_hi;
  const DD e_ln2 = fast_two_sum(p, m::fma(ed, ln2_hi, -p) + ed * ln2_lo);
  if (e == 0) return log_m.hi;
  // |e ln2| >= 0.69 and |log m| <= 0.35: no cancellation to speak of.
  return dd_add(e_ln2, log_m).hi;
}

SPMD_HD double log1p_f64(double x) {
  return abs_of(x) < kLog1pThreshold ? log1p_small(x) : log_f64(x + 1.0);
}

SPMD_HD float erfinv_f32(float x) {
  if (abs_of(x) == 1.0f) return x * std::numeric_limits<float>::infinity();
  const float small[9] = {2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f,
                          -4.39150654e-06f, 0.00021858087f, -0.00125372503f,
                          -0.00417768164f, 0.246640727f, 1.50140941f};
  const float large[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                          -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                          0.00943887047f,   1.00167406f,     2.83297682f};
  const float w = -log1p_f32(-(x * x));
  const float p = w < 5.0f ? horner(small, w - 2.5f) : horner(large, m::sqrt(w) - 3.0f);
  return p * x;
}

SPMD_HD double erfinv_f64(double x) {
  if (abs_of(x) == 1.0) return x * std::numeric_limits<double>::infinity();
  const double w = -log1p_f64(-(x * x));
  double p;
  if (w < 6.25) {
    const double c[23] = {
        -3.64441206401782e-21,  -1.6850591381820166e-19, 1.28584807152564e-18,
        1.1157877678025181e-17, -1.333171662854621e-16,  2.0972767875968562e-17,
        6.637638134358324e-15,  -4.054566272975207e-14,  -8.151934197605472e-14,
        2.6335093153082323e-12, -1.2975133253453532e-11, -5.415412054294628e-11,
        1.0512122733215323e-09, -4.112633980346984e-09,  -2.9070369957882005e-08,
        4.2347877827932404e-07, -1.3654692000834679e-06, -1.3882523362786469e-05,
        0.00018673420803405714, -0.000740702534166267,   -0.006033670871430149,
        0.24015818242558962,    1.6536545626831027};
    p = horner(c, w - 3.125);
  } else if (w < 16.0) {
    const double c[19] = {
        2.2137376921775787e-09, 9.075656193888539e-08,  -2.7517406297064545e-07,
        1.8239629214389228e-08, 1.5027403968909828e-06, -4.013867526981546e-06,
        2.9234449089955446e-06, 1.2475304481671779e-05, -4.7318229009055734e-05,
        6.828485145957318e-05,  2.4031110387097894e-05, -0.0003550375203628475,
        0.0009532893797373805,  -0.0016882755560235047, 0.002491442096107851,
        -0.003751208507569241,  0.005370914553590064,   1.0052589676941592,
        3.0838856104922208};
    p = horner(c, m::sqrt(w) - 3.25);
  } else {
    const double c[17] = {
        -2.7109920616438573e-11, -2.555641816996525e-10, 1.5076572693500548e-09,
        -3.789465440126737e-09,  7.61570120807834e-09,   -1.496002662714924e-08,
        2.914795345090108e-08,   -6.771199775845234e-08, 2.2900482228026655e-07,
        -9.9298272942317e-07,    4.526062597223154e-06,  -1.968177810553167e-05,
        7.599527703001776e-05,   -0.00021503011930044477, -0.00013871931833623122,
        1.0103004648645344,      4.849906401408584};
    p = horner(c, m::sqrt(w) - 5.0);
  }
  return p * x;
}

// XLA's float32 erf (Eigen's rational approximation), subnormals flushed.
SPMD_HD float erf_f32(float x) {
  x = flush_subnormal(x);
  if (abs_of(x) >= 3.832506856900711f) return x < 0.0f ? -1.0f : 1.0f;
  const float num[5] = {0.00022905065861350646f, 0.0034082910107109506f, 0.050955695062380861f,
                        0.18520832239976145f, 1.128379143519084f};
  const float den[7] = {-1.1791602954361697e-7f, 0.000023547966471313185f,
                        0.0010179625278914885f, 0.014070470171167667f,
                        0.11098505178285362f,   0.49746925110067538f, 1.0f};
  const float x2 = x * x;
  const float p = x * horner(num, x2);
  return flush_subnormal(p / horner(den, x2));
}

// ---- the draws ----

enum class Kind : uint8_t {
  Bits8, Bits16, Bits32, Bits64,
  UniformF32, UniformF64, Uniform16,
  NormalF32, NormalF64, Normal16,
  TruncatedF32, TruncatedF64, Truncated16,
};

// One request's distribution with its constants worked out (on the host,
// as kernels/random.cpp's constructors do), passed to the kernel by value.
struct Draw {
  Kind kind = Kind::Bits32;
  spmd_dtype dtype = SPMD_I32;  // F16 or BF16 for the 16-bit kinds
  uint32_t key0 = 0, key1 = 0;
  float lo = 0, span = 0;         // the uniform of the f32 and 16-bit kinds
  float sqrt2 = 0;                // 16-bit kinds: sqrt(2) in the type
  float clip_lo = 0, clip_hi = 0; // truncated normals, f32 and 16-bit
  double lo64 = 0, span64 = 0;    // the uniform of the f64 kinds
  double clip_lo64 = 0, clip_hi64 = 0;
};

// jax.random.uniform's float32 draw: max(lo, unit * span + lo), fused.
SPMD_HD float uniform_f32(const Draw &d, uint32_t b0, uint32_t b1) {
  return xla_max(d.lo, m::fma(unit_f32(b0 ^ b1), d.span, d.lo));
}
SPMD_HD double uniform_f64(const Draw &d, uint32_t b0, uint32_t b1) {
  return xla_max(d.lo64, m::fma(unit_f64((uint64_t{b0} << 32) | b1), d.span64, d.lo64));
}
SPMD_HD float uniform_16(const Draw &d, uint32_t b0, uint32_t b1) {
  const float scaled = round16(d.dtype, unit_16(d.dtype, b0, b1) * d.span);
  return xla_max(d.lo, round16(d.dtype, scaled + d.lo));
}

// Writes the element for the threefry output words (b0, b1) at `out`.
SPMD_HD void value(const Draw &d, uint32_t b0, uint32_t b1, unsigned char *out) {
  constexpr float kSqrt2 = std::numbers::sqrt2_v<float>;
  constexpr double kSqrt2d = std::numbers::sqrt2;
  switch (d.kind) {
    case Kind::Bits8: *out = static_cast<uint8_t>(b0 ^ b1); return;
    case Kind::Bits16: store_as(out, static_cast<uint16_t>(b0 ^ b1)); return;
    case Kind::Bits32: store_as(out, b0 ^ b1); return;
    case Kind::Bits64: store_as(out, (uint64_t{b0} << 32) | b1); return;
    case Kind::UniformF32: store_as(out, uniform_f32(d, b0, b1)); return;
    case Kind::UniformF64: store_as(out, uniform_f64(d, b0, b1)); return;
    case Kind::Uniform16: store_as(out, bits16(d.dtype, uniform_16(d, b0, b1))); return;
    case Kind::NormalF32: store_as(out, kSqrt2 * erfinv_f32(uniform_f32(d, b0, b1))); return;
    case Kind::NormalF64: store_as(out, kSqrt2d * erfinv_f64(uniform_f64(d, b0, b1))); return;
    case Kind::Normal16: {
      const float e = round16(d.dtype, erfinv_f32(uniform_16(d, b0, b1)));
      store_as(out, bits16(d.dtype, d.sqrt2 * e));
      return;
    }
    case Kind::TruncatedF32:
      store_as(out, xla_min(d.clip_hi, xla_max(d.clip_lo, kSqrt2 * erfinv_f32(uniform_f32(d, b0, b1)))));
      return;
    case Kind::TruncatedF64:
      store_as(out, xla_min(d.clip_hi64,
                            xla_max(d.clip_lo64, kSqrt2d * erfinv_f64(uniform_f64(d, b0, b1)))));
      return;
    case Kind::Truncated16: {
      const float e = round16(d.dtype, erfinv_f32(uniform_16(d, b0, b1)));
      store_as(out, bits16(d.dtype, xla_min(d.clip_hi, xla_max(d.clip_lo, round16(d.dtype, d.sqrt2 * e)))));
      return;
    }
  }
}

// ---- the host side: a request's constants, as kernels/random.cpp's constructors ----

// nextafter(v, +inf) (up) or toward -inf in a 16-bit float type, v given as
// the float it rounds to.
inline float next16(spmd_dtype dtype, float v, bool up) {
  if (std::isnan(v) || (std::isinf(v) && (v > 0) == up)) return v;
  uint16_t h = bits16(dtype, v);
  if (v == 0.0f) h = up ? 0x0001u : 0x8001u;
  else if ((v > 0) == up) ++h;
  else --h;
  return dtype == SPMD_F16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h);
}

inline void set_uniform16(Draw &d, double minval, double maxval) {
  d.lo = round16(d.dtype, static_cast<float>(minval));
  d.span = round16(d.dtype, round16(d.dtype, static_cast<float>(maxval)) - d.lo);
}

// Whether the request's distribution takes its dtype (as
// spmd::rng::dtype_supported, which lives beside the CPU generator).
inline bool supported(const spmd::rng::Request &r) {
  if (r.distribution == spmd::rng::Distribution::Bits)
    return r.dtype == SPMD_U8 || r.dtype == SPMD_U16 || r.dtype == SPMD_U32 ||
           r.dtype == SPMD_I32 || r.dtype == SPMD_I64;
  return r.dtype == SPMD_F32 || r.dtype == SPMD_F64 || r.dtype == SPMD_F16 || r.dtype == SPMD_BF16;
}

// The Draw of a request its distribution takes (supported).
inline Draw make_draw(const spmd::rng::Request &r) {
  using D = spmd::rng::Distribution;
  constexpr float kSqrt2 = std::numbers::sqrt2_v<float>;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr double kInfd = std::numeric_limits<double>::infinity();
  Draw d;
  d.dtype = r.dtype;
  d.key0 = r.key.w0;
  d.key1 = r.key.w1;
  const auto uniform32 = [&](double minval, double maxval) {
    d.lo = static_cast<float>(minval);
    d.span = static_cast<float>(maxval) - d.lo;
  };
  const auto uniform64 = [&](double minval, double maxval) {
    d.lo64 = minval;
    d.span64 = maxval - minval;
  };
  switch (r.distribution) {
    case D::Bits:
      d.kind = r.dtype == SPMD_U8    ? Kind::Bits8
               : r.dtype == SPMD_U16 ? Kind::Bits16
               : r.dtype == SPMD_I64 ? Kind::Bits64
                                     : Kind::Bits32;  // SPMD_U32, SPMD_I32
      break;
    case D::Uniform:
      if (r.dtype == SPMD_F32) {
        d.kind = Kind::UniformF32;
        uniform32(r.minval, r.maxval);
      } else if (r.dtype == SPMD_F64) {
        d.kind = Kind::UniformF64;
        uniform64(r.minval, r.maxval);
      } else {
        d.kind = Kind::Uniform16;
        set_uniform16(d, r.minval, r.maxval);
      }
      break;
    case D::Normal:
      if (r.dtype == SPMD_F32) {
        d.kind = Kind::NormalF32;
        uniform32(std::nextafter(-1.0f, 0.0f), 1.0);
      } else if (r.dtype == SPMD_F64) {
        d.kind = Kind::NormalF64;
        uniform64(std::nextafter(-1.0, 0.0), 1.0);
      } else {
        d.kind = Kind::Normal16;
        set_uniform16(d, r.dtype == SPMD_F16 ? f16_bits_to_f32(0xBBFFu) : bf16_bits_to_f32(0xBF7Fu),
                      1.0);
        d.sqrt2 = round16(r.dtype, kSqrt2);
      }
      break;
    case D::TruncatedNormal:
      if (r.dtype == SPMD_F32) {
        d.kind = Kind::TruncatedF32;
        d.clip_lo = flush_subnormal(std::nextafter(static_cast<float>(r.minval), kInf));
        d.clip_hi = flush_subnormal(std::nextafter(static_cast<float>(r.maxval), -kInf));
        uniform32(erf_f32(static_cast<float>(r.minval) * (1.0f / kSqrt2)),
                  erf_f32(static_cast<float>(r.maxval) * (1.0f / kSqrt2)));
      } else if (r.dtype == SPMD_F64) {
        d.kind = Kind::TruncatedF64;
        d.clip_lo64 = flush_subnormal(std::nextafter(r.minval, kInfd));
        d.clip_hi64 = flush_subnormal(std::nextafter(r.maxval, -kInfd));
        uniform64(std::erf(r.minval * (1.0 / std::numbers::sqrt2)),
                  std::erf(r.maxval * (1.0 / std::numbers::sqrt2)));
      } else {
        d.kind = Kind::Truncated16;
        const spmd_dtype t = r.dtype;
        d.sqrt2 = round16(t, kSqrt2);
        const float lower = round16(t, static_cast<float>(r.minval));
        const float upper = round16(t, static_cast<float>(r.maxval));
        d.clip_lo = flush_subnormal(next16(t, lower, true));
        d.clip_hi = flush_subnormal(next16(t, upper, false));
        // erf(bound * (1 / sqrt2)) rounded to the type after each step; the
        // reciprocal rounded to float16 for float16, float32 for bfloat16.
        const float rcp = t == SPMD_F16 ? round16(t, 1.0f / d.sqrt2) : 1.0f / d.sqrt2;
        set_uniform16(d, round16(t, erf_f32(round16(t, lower * rcp))),
                      round16(t, erf_f32(round16(t, upper * rcp))));
      }
      break;
  }
  return d;
}

// ---- where each element comes from ----

// A box of a global array: element i of the box (row-major) is global
// element start + index(i), row-major in `global`.
struct Where {
  int nd = 0;
  int64_t global[kMaxDims] = {};
  int64_t start[kMaxDims] = {};
  int64_t extent[kMaxDims] = {};
  int64_t count = 0;
};

inline Where make_where(const Shape &global, const Box &box) {
  Where w;
  w.nd = static_cast<int>(global.size());
  w.count = box.elements();
  for (int d = 0; d < w.nd; ++d) {
    w.global[d] = global[static_cast<size_t>(d)];
    w.start[d] = box.start[static_cast<size_t>(d)];
    w.extent[d] = box.stop[static_cast<size_t>(d)] - box.start[static_cast<size_t>(d)];
  }
  return w;
}

// The global row-major index of the box's element i.
SPMD_HD uint64_t global_index(const Where &w, int64_t i) {
  uint64_t flat = 0, scale = 1;
  for (int d = w.nd - 1; d >= 0; --d) {
    const int64_t q = d > 0 ? i / w.extent[d] : 0;
    const int64_t idx = (d > 0 ? i - q * w.extent[d] : i) + w.start[d];
    flat += static_cast<uint64_t>(idx) * scale;
    scale *= static_cast<uint64_t>(w.global[d]);
    i = q;
  }
  return flat;
}

SPMD_HD int draw_bytes(Kind k) {
  switch (k) {
    case Kind::Bits8: return 1;
    case Kind::Bits64: case Kind::UniformF64: case Kind::NormalF64: case Kind::TruncatedF64: return 8;
    case Kind::Bits16: case Kind::Uniform16: case Kind::Normal16: case Kind::Truncated16: return 2;
    default: return 4;
  }
}

// The box's elements first, first + step, ... (a thread's share).
SPMD_HD void run(const Draw &d, const Where &w, unsigned char *out, int64_t first, int64_t step) {
  const int es = draw_bytes(d.kind);
  for (int64_t i = first; i < w.count; i += step) {
    const uint64_t flat = global_index(w, i);
    uint32_t x0 = static_cast<uint32_t>(flat >> 32), x1 = static_cast<uint32_t>(flat);
    threefry2x32(d.key0, d.key1, x0, x1);
    value(d, x0, x1, out + i * es);
  }
}

}  // namespace spmd::dev::rng
