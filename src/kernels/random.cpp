#include "kernels/random.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "kernels/random_constants.hpp"
#include "kernels/random_simd.hpp"

// Every floating-point result below must round exactly as XLA's CPU code
// rounds it. Where XLA fuses a multiply and an add (its LLVM pipeline
// contracts them), std::fma says so; no other expression here has the form
// a * b + c, so the compiler's own contraction setting cannot change a bit.

namespace spmd::rng {

namespace {

inline uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// The 64-bit counter of a flat index, as iota_2x32_shape splits it.
inline std::pair<uint32_t, uint32_t> counter_bits(Key key, uint64_t index) {
  return threefry2x32(key, static_cast<uint32_t>(index >> 32), static_cast<uint32_t>(index));
}

template <typename To, typename From>
To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

// lax.max: NaN if either side is NaN.
template <typename T>
T xla_max(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a > b ? a : b;
}

// ---- erfinv ----------------------------------------------------------------

using namespace constants;  // the coefficients the eight-lane draws share (kernels/random_constants.hpp)

// Double precision (Giles): three ranges of w: below 6.25 (in w - 3.125),
// below 16 (in sqrt(w) - 3.25) and above (in sqrt(w) - 5).
constexpr double kErfinvF64Small[23] = {
    -3.64441206401782e-21,  -1.6850591381820166e-19, 1.28584807152564e-18,
    1.1157877678025181e-17, -1.333171662854621e-16,  2.0972767875968562e-17,
    6.637638134358324e-15,  -4.054566272975207e-14,  -8.151934197605472e-14,
    2.6335093153082323e-12, -1.2975133253453532e-11, -5.415412054294628e-11,
    1.0512122733215323e-09, -4.112633980346984e-09,  -2.9070369957882005e-08,
    4.2347877827932404e-07, -1.3654692000834679e-06, -1.3882523362786469e-05,
    0.00018673420803405714, -0.000740702534166267,   -0.006033670871430149,
    0.24015818242558962,    1.6536545626831027};
constexpr double kErfinvF64Medium[19] = {
    2.2137376921775787e-09, 9.075656193888539e-08,  -2.7517406297064545e-07,
    1.8239629214389228e-08, 1.5027403968909828e-06, -4.013867526981546e-06,
    2.9234449089955446e-06, 1.2475304481671779e-05, -4.7318229009055734e-05,
    6.828485145957318e-05,  2.4031110387097894e-05, -0.0003550375203628475,
    0.0009532893797373805,  -0.0016882755560235047, 0.002491442096107851,
    -0.003751208507569241,  0.005370914553590064,   1.0052589676941592,
    3.0838856104922208};
constexpr double kErfinvF64Large[17] = {
    -2.7109920616438573e-11, -2.555641816996525e-10, 1.5076572693500548e-09,
    -3.789465440126737e-09,  7.61570120807834e-09,   -1.496002662714924e-08,
    2.914795345090108e-08,   -6.771199775845234e-08, 2.2900482228026655e-07,
    -9.9298272942317e-07,    4.526062597223154e-06,  -1.968177810553167e-05,
    7.599527703001776e-05,   -0.00021503011930044477, -0.00013871931833623122,
    1.0103004648645344,      4.849906401408584};

// ---- log1p, as XLA's CPU code evaluates it ------------------------------
//
// erfinv's w = -log1p(-x^2) decides which polynomial runs and feeds it, so a
// last-bit difference here moves normals by an ulp. XLA computes log1p(x) for
// |x| < sqrt(2) - 1 as x - x^2/2 + x^3 * P(x) / Q(x) (the Cephes rational
// approximation), and otherwise as log(1 + x); for float32 that log is the
// Cephes logf polynomial on the mantissa reduced to [sqrt(1/2), sqrt(2)).
// Both are written here with the multiply-adds fused where XLA's are.

template <typename T>
T log1p_small(T x) {
  T num = static_cast<T>(kLog1pNumerator[0]);
  T den = static_cast<T>(kLog1pDenominator[0]);
  for (int k = 1; k < 7; ++k) {
    num = std::fma(num, x, static_cast<T>(kLog1pNumerator[k]));
    den = std::fma(den, x, static_cast<T>(kLog1pDenominator[k]));
  }
  const T x2 = x * x;
  const T r = (x * x2) * (num / den);
  return x + std::fma(static_cast<T>(-0.5), x2, r);
}

// Cephes logf: log(m * 2^e) = log(1 + f) + e * log(2), log(2) split into
// q2 + q1, log(1 + f) = f - f^2/2 + f^3 * P(f).
float log_f32(float v) {
  if (!(v > 0.0f) || std::isinf(v) || std::isnan(v)) return std::log(v);
  const auto &p = kLogP;
  constexpr float q1 = kLogQ1, q2 = kLogQ2;
  int exponent;
  float f = std::frexp(v, &exponent);  // v = f * 2^exponent, f in [0.5, 1)
  float e = static_cast<float>(exponent);
  if (f < 0.707106781186547524f) {
    e -= 1.0f;
    f = f + f - 1.0f;
  } else {
    f = f - 1.0f;
  }
  const float f2 = f * f, f3 = f2 * f;
  // The degree-8 polynomial in three interleaved parts.
  float y = std::fma(p[0], f, p[1]), y1 = std::fma(p[3], f, p[4]), y2 = std::fma(p[6], f, p[7]);
  y = std::fma(y, f, p[2]);
  y1 = std::fma(y1, f, p[5]);
  y2 = std::fma(y2, f, p[8]);
  y = std::fma(y, f3, y1);
  y = std::fma(y, f3, y2);
  y = std::fma(y, f3, e * q1);
  float r = std::fma(-0.5f, f2, f);
  r = r + y;
  return std::fma(e, q2, r);
}

float log1p_f32(float x) {
  return std::fabs(x) < static_cast<float>(kLog1pThreshold) ? log1p_small(x)
                                                             : log_f32(x + 1.0f);
}

double log1p_f64(double x) {
  return std::fabs(x) < kLog1pThreshold ? log1p_small(x) : std::log(x + 1.0);
}

// ---- erf -------------------------------------------------------------------
//
// float32: the rational approximation XLA's CPU code emits (Eigen's): x times
// an odd degree-9 numerator over an even degree-12 denominator, both in x^2
// with fused multiply-adds, and +-1 from |x| >= 3.832506856900711. XLA runs
// with subnormals flushed to zero, so a subnormal argument is zero. float64:
// XLA calls the C library's erf (std::erf below).

constexpr float kErfF32Numerator[5] = {0.00022905065861350646f, 0.0034082910107109506f,
                                       0.050955695062380861f, 0.18520832239976145f,
                                       1.128379143519084f};
constexpr float kErfF32Denominator[7] = {-1.1791602954361697e-7f, 0.000023547966471313185f,
                                         0.0010179625278914885f,  0.014070470171167667f,
                                         0.11098505178285362f,    0.49746925110067538f,
                                         1.0f};
constexpr float kErfF32One = 3.832506856900711f;

template <typename T>
T flush_subnormal(T x) {
  return std::fabs(x) < std::numeric_limits<T>::min() ? std::copysign(T{0}, x) : x;
}

template <typename T, size_t N>
T horner(const T (&c)[N], T t) {
  T p = c[0];
  for (size_t k = 1; k < N; ++k) p = std::fma(p, t, c[k]);
  return p;
}

// ---- 16-bit floats: every operation in f32, rounded to the type after each,
// as XLA's CPU code computes them.

float round16(spmd_dtype dtype, float f) {
  return dtype == SPMD_F16 ? f16_bits_to_f32(f32_to_f16_bits(f))
                           : bf16_bits_to_f32(f32_to_bf16_bits(f));
}

uint16_t bits16(spmd_dtype dtype, float f) {
  return dtype == SPMD_F16 ? f32_to_f16_bits(f) : f32_to_bf16_bits(f);
}

// Draws for one dtype. Each has: a constructor taking the request, and
// value(b0, b1) giving the element for the threefry output words.

struct BitsU8 {
  using T = uint8_t;
  explicit BitsU8(const Request &) {}
  T value(uint32_t b0, uint32_t b1) const { return static_cast<T>(b0 ^ b1); }
};
struct BitsU16 {
  using T = uint16_t;
  explicit BitsU16(const Request &) {}
  T value(uint32_t b0, uint32_t b1) const { return static_cast<T>(b0 ^ b1); }
};
struct BitsU32 {
  using T = uint32_t;
  explicit BitsU32(const Request &) {}
  T value(uint32_t b0, uint32_t b1) const { return b0 ^ b1; }
};
struct BitsU64 {
  using T = uint64_t;
  explicit BitsU64(const Request &) {}
  T value(uint32_t b0, uint32_t b1) const { return (uint64_t{b0} << 32) | b1; }
};

// A float in [0, 1): 23 random mantissa bits under the exponent of 1.0, minus 1.
inline float unit_f32(uint32_t bits) {
  return bit_cast<float>((bits >> 9) | 0x3F800000u) - 1.0f;
}
inline double unit_f64(uint64_t bits) {
  return bit_cast<double>((bits >> 12) | 0x3FF0000000000000ull) - 1.0;
}
// 16-bit types: f16 takes 10 mantissa bits of a 16-bit field; bf16, with 7,
// takes them from an 8-bit field (JAX draws 8 bits when the mantissa is
// narrower than 8).
inline float unit_16(spmd_dtype dtype, uint32_t b0, uint32_t b1) {
  const uint32_t x = b0 ^ b1;
  const uint16_t h = dtype == SPMD_F16 ? static_cast<uint16_t>(((x & 0xFFFFu) >> 6) | 0x3C00u)
                                       : static_cast<uint16_t>(((x & 0xFFu) >> 1) | 0x3F80u);
  const float f = dtype == SPMD_F16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h);
  return round16(dtype, f - 1.0f);
}

// jax.random.uniform: max(minval, unit * (maxval - minval) + minval), the
// multiply-add fused.
struct UniformF32 {
  using T = float;
  float lo, span;
  explicit UniformF32(const Request &r)
      : lo(static_cast<float>(r.minval)), span(static_cast<float>(r.maxval) - lo) {}
  T value(uint32_t b0, uint32_t b1) const {
    return xla_max(lo, std::fma(unit_f32(b0 ^ b1), span, lo));
  }
  // n (a multiple of 8) draws from counter `first` on, eight at a time.
  void many(Key key, uint64_t first, int64_t n, T *out) const { simd::uniform_f32(key, first, lo, span, n, out); }
};
struct UniformF64 {
  using T = double;
  double lo, span;
  explicit UniformF64(const Request &r) : lo(r.minval), span(r.maxval - r.minval) {}
  T value(uint32_t b0, uint32_t b1) const {
    return xla_max(lo, std::fma(unit_f64((uint64_t{b0} << 32) | b1), span, lo));
  }
};
struct Uniform16 {
  using T = uint16_t;
  spmd_dtype dtype;
  float lo, span;
  explicit Uniform16(const Request &r)
      : dtype(r.dtype), lo(round16(r.dtype, static_cast<float>(r.minval))),
        span(round16(r.dtype, round16(r.dtype, static_cast<float>(r.maxval)) - lo)) {}
  float sample(uint32_t b0, uint32_t b1) const {
    const float scaled = round16(dtype, unit_16(dtype, b0, b1) * span);
    return xla_max(lo, round16(dtype, scaled + lo));
  }
  T value(uint32_t b0, uint32_t b1) const { return bits16(dtype, sample(b0, b1)); }
};

// jax.random.normal: u uniform on [nextafter(-1, 0), 1), then sqrt(2) * erfinv(u).
Request normal_uniform(const Request &r, double lo) {
  Request u = r;
  u.minval = lo;
  u.maxval = 1.0;
  return u;
}

struct NormalF32 {
  using T = float;
  UniformF32 uniform;
  explicit NormalF32(const Request &r)
      : uniform(normal_uniform(r, std::nextafter(-1.0f, 0.0f))) {}
  T value(uint32_t b0, uint32_t b1) const {
    return std::numbers::sqrt2_v<float> * erfinv_f32(uniform.value(b0, b1));
  }
  void many(Key key, uint64_t first, int64_t n, T *out) const {
    simd::normal_f32(key, first, uniform.lo, uniform.span, n, out);
  }
};
struct NormalF64 {
  using T = double;
  UniformF64 uniform;
  explicit NormalF64(const Request &r) : uniform(normal_uniform(r, std::nextafter(-1.0, 0.0))) {}
  T value(uint32_t b0, uint32_t b1) const { return std::numbers::sqrt2 * erfinv_f64(uniform.value(b0, b1)); }
};
struct Normal16 {
  using T = uint16_t;
  Uniform16 uniform;
  float sqrt2;
  explicit Normal16(const Request &r)
      : uniform(normal_uniform(r, r.dtype == SPMD_F16 ? f16_bits_to_f32(0xBBFFu)
                                                      : bf16_bits_to_f32(0xBF7Fu))),
        sqrt2(round16(r.dtype, std::numbers::sqrt2_v<float>)) {}
  T value(uint32_t b0, uint32_t b1) const {
    const spmd_dtype d = uniform.dtype;
    const float e = round16(d, erfinv_f32(uniform.sample(b0, b1)));
    return bits16(d, sqrt2 * e);
  }
};

// jax.random.truncated_normal: bounds converted to the dtype, a = erf(lower /
// sqrt2) and b = erf(upper / sqrt2), u uniform on [a, b) exactly as
// jax.random.uniform draws it, then sqrt2 * erfinv(u) clipped to
// [nextafter(lower, +inf), nextafter(upper, -inf)] (lax.max, then lax.min).
// XLA turns the division by the constant sqrt2 into a multiplication by its
// reciprocal, rounded to the type (float32 for bfloat16, whose arithmetic
// XLA's CPU code does in float32), so the bounds are scaled that way here.
// The clip bounds of a zero bound, nextafter(0, +-inf), are subnormal, which
// XLA's CPU code (subnormals flushed) compares as zero: flushed here too.
Request truncated_uniform(const Request &r, double a, double b) {
  Request u = r;
  u.minval = a;
  u.maxval = b;
  return u;
}

// lax.min: NaN if either side is NaN.
template <typename T>
T xla_min(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a < b ? a : b;
}

struct TruncatedNormalF32 {
  using T = float;
  static constexpr float kSqrt2 = std::numbers::sqrt2_v<float>;
  static constexpr float kInf = std::numeric_limits<float>::infinity();
  float lo, hi;
  UniformF32 uniform;
  explicit TruncatedNormalF32(const Request &r)
      : lo(flush_subnormal(std::nextafter(static_cast<float>(r.minval), kInf))),
        hi(flush_subnormal(std::nextafter(static_cast<float>(r.maxval), -kInf))),
        uniform(truncated_uniform(r, erf_f32(static_cast<float>(r.minval) * (1.0f / kSqrt2)),
                                  erf_f32(static_cast<float>(r.maxval) * (1.0f / kSqrt2)))) {}
  T value(uint32_t b0, uint32_t b1) const {
    return xla_min(hi, xla_max(lo, kSqrt2 * erfinv_f32(uniform.value(b0, b1))));
  }
  void many(Key key, uint64_t first, int64_t n, T *out) const {
    simd::truncated_normal_f32(key, first, uniform.lo, uniform.span, lo, hi, n, out);
  }
};
struct TruncatedNormalF64 {
  using T = double;
  static constexpr double kSqrt2 = std::numbers::sqrt2;
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  double lo, hi;
  UniformF64 uniform;
  explicit TruncatedNormalF64(const Request &r)
      : lo(flush_subnormal(std::nextafter(r.minval, kInf))),
        hi(flush_subnormal(std::nextafter(r.maxval, -kInf))),
        uniform(truncated_uniform(r, std::erf(r.minval * (1.0 / kSqrt2)),
                                  std::erf(r.maxval * (1.0 / kSqrt2)))) {}
  T value(uint32_t b0, uint32_t b1) const {
    return xla_min(hi, xla_max(lo, kSqrt2 * erfinv_f64(uniform.value(b0, b1))));
  }
};

// nextafter(v, +inf) (up) or nextafter(v, -inf) in a 16-bit float type, v
// given as the float it rounds to.
float next16(spmd_dtype dtype, float v, bool up) {
  if (std::isnan(v) || (std::isinf(v) && (v > 0) == up)) return v;
  uint16_t h = bits16(dtype, v);
  if (v == 0.0f)
    h = up ? 0x0001u : 0x8001u;  // the smallest subnormal of either sign
  else if ((v > 0) == up)
    ++h;  // away from zero
  else
    --h;  // toward zero
  return dtype == SPMD_F16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h);
}

struct TruncatedNormal16 {
  using T = uint16_t;
  float sqrt2, lo, hi;
  Uniform16 uniform;
  // erf(bound * (1 / sqrt2)) in float32, rounded to the type after each
  // step; the reciprocal is rounded to float16 for float16, kept in float32
  // for bfloat16.
  static float erf_bound(spmd_dtype d, float bound, float sqrt2) {
    const float rcp = d == SPMD_F16 ? round16(d, 1.0f / sqrt2) : 1.0f / sqrt2;
    return round16(d, erf_f32(round16(d, bound * rcp)));
  }
  explicit TruncatedNormal16(const Request &r)
      : TruncatedNormal16(r, round16(r.dtype, std::numbers::sqrt2_v<float>),
                          round16(r.dtype, static_cast<float>(r.minval)),
                          round16(r.dtype, static_cast<float>(r.maxval))) {}
  TruncatedNormal16(const Request &r, float s, float lower, float upper)
      : sqrt2(s), lo(flush_subnormal(next16(r.dtype, lower, true))),
        hi(flush_subnormal(next16(r.dtype, upper, false))),
        uniform(truncated_uniform(r, erf_bound(r.dtype, lower, s), erf_bound(r.dtype, upper, s))) {}
  T value(uint32_t b0, uint32_t b1) const {
    const spmd_dtype d = uniform.dtype;
    const float e = round16(d, erfinv_f32(uniform.sample(b0, b1)));
    return bits16(d, xla_min(hi, xla_max(lo, round16(d, sqrt2 * e))));
  }
};

// The per-element loop: walks the box row-major, keeping the global flat
// index of the current element.
template <typename Draw>
void fill(const Request &request, const Shape &global, const Box &box, void *out) {
  const Draw draw(request);
  using T = typename Draw::T;
  auto *dst = static_cast<T *>(out);
  const size_t nd = global.size();
  const int64_t n = box.elements();
  if (n <= 0) return;
  if (nd == 0) {
    const auto [b0, b1] = counter_bits(request.key, 0);
    dst[0] = draw.value(b0, b1);
    return;
  }
  // Rows along the last dimension are contiguous in both the box and the
  // global array.
  const int64_t row = box.stop[nd - 1] - box.start[nd - 1];
  // Draws with an eight-lane form run it over each row's multiple of 8.
  constexpr bool kHasLanes = requires { draw.many(request.key, uint64_t{0}, int64_t{0}, dst); };
  const int64_t lanes = kHasLanes && simd::available() ? row - row % 8 : 0;
  Shape idx(box.start);
  for (int64_t done = 0; done < n; done += row) {
    uint64_t flat = 0;
    for (size_t d = 0; d < nd; ++d)
      flat = flat * static_cast<uint64_t>(global[d]) + static_cast<uint64_t>(idx[d]);
    if constexpr (kHasLanes)
      if (lanes > 0) {
        draw.many(request.key, flat, lanes, dst);
        dst += lanes;
      }
    for (int64_t j = lanes; j < row; ++j) {
      const auto [b0, b1] = counter_bits(request.key, flat + static_cast<uint64_t>(j));
      *dst++ = draw.value(b0, b1);
    }
    for (size_t d = nd - 1; d-- > 0;) {
      if (++idx[d] < box.stop[d]) break;
      idx[d] = box.start[d];
    }
  }
}

}  // namespace

std::pair<uint32_t, uint32_t> threefry2x32(Key key, uint32_t x0, uint32_t x1) {
  static constexpr int kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {key.w0, key.w1, key.w0 ^ key.w1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (int i = 0; i < 5; ++i) {
    for (int r : kRotations[i % 2]) {
      x0 += x1;
      x1 = rotl(x1, r);
      x1 ^= x0;
    }
    // Key injection after every four rounds.
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + static_cast<uint32_t>(i + 1);
  }
  return {x0, x1};
}

Key key_from_seed(uint64_t seed) {
  return {static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed)};
}

Key split(Key key, uint64_t index) {
  const auto [a, b] = counter_bits(key, index);
  return {a, b};
}

Key fold_in(Key key, uint32_t data) {
  const auto [a, b] = threefry2x32(key, 0, data);
  return {a, b};
}

float erfinv_f32(float x) {
  if (std::fabs(x) == 1.0f) return x * std::numeric_limits<float>::infinity();
  const float w = -log1p_f32(-(x * x));
  const float p = w < 5.0f ? horner(kErfinvF32Small, w - 2.5f)
                           : horner(kErfinvF32Large, std::sqrt(w) - 3.0f);
  return p * x;
}

double erfinv_f64(double x) {
  if (std::fabs(x) == 1.0) return x * std::numeric_limits<double>::infinity();
  const double w = -log1p_f64(-(x * x));
  double p;
  if (w < 6.25)
    p = horner(kErfinvF64Small, w - 3.125);
  else if (w < 16.0)
    p = horner(kErfinvF64Medium, std::sqrt(w) - 3.25);
  else
    p = horner(kErfinvF64Large, std::sqrt(w) - 5.0);
  return p * x;
}

float erf_f32(float x) {
  x = flush_subnormal(x);
  if (std::fabs(x) >= kErfF32One) return std::copysign(1.0f, x);
  const float x2 = x * x;
  const float p = x * horner(kErfF32Numerator, x2);
  return flush_subnormal(p / horner(kErfF32Denominator, x2));
}

bool dtype_supported(Distribution distribution, spmd_dtype dtype) {
  if (distribution == Distribution::Bits)
    return dtype == SPMD_U8 || dtype == SPMD_U16 || dtype == SPMD_U32 || dtype == SPMD_I32 ||
           dtype == SPMD_I64;
  return dtype == SPMD_F32 || dtype == SPMD_F64 || dtype == SPMD_F16 || dtype == SPMD_BF16;
}

namespace {

// The shortest decimal that reads back as v ("inf", "nan" for those).
std::string shortest(double v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// A double as the dtype holds it (float16/bfloat16 through float32, as JAX
// converts a Python float).
double in_dtype(spmd_dtype dtype, double v) {
  if (dtype == SPMD_F64) return v;
  const float f = static_cast<float>(v);
  return dtype == SPMD_F32 ? f : round16(dtype, f);
}

void check_bounds(const Request &r) {
  if (!(r.minval < r.maxval))
    invalid("lower, upper: need lower < upper, got lower ", shortest(r.minval), " and upper ",
            shortest(r.maxval));
  const double lo = in_dtype(r.dtype, r.minval), hi = in_dtype(r.dtype, r.maxval);
  if (!(lo < hi))
    invalid("lower, upper: ", shortest(r.minval), " and ", shortest(r.maxval), " are both ",
            shortest(lo), " in ", dtype_name(r.dtype), "; need lower < upper in the dtype");
}

}  // namespace

void validate(const Request &request) {
  if (!dtype_supported(request.distribution, request.dtype)) {
    const char *name = dtype_name(request.dtype);
    invalid("dtype: ", name ? name : cat("unknown dtype ", static_cast<int>(request.dtype)),
            request.distribution == Distribution::Bits
                ? " does not hold random bits; use SPMD_U8, SPMD_U16 or SPMD_U32 (8, 16 or "
                  "32 bits), or SPMD_I32 or SPMD_I64, which store the unsigned bit pattern of "
                  "32 or 64 bits"
                : " is not a floating-point type; use SPMD_F32, SPMD_F64, SPMD_F16 or SPMD_BF16");
  }
  if (request.distribution == Distribution::TruncatedNormal) check_bounds(request);
}

void generate_box(const Request &r, const Shape &global, const Box &box, void *out) {
  using D = Distribution;
  switch (r.distribution) {
    case D::Bits:
      if (r.dtype == SPMD_U8) return fill<BitsU8>(r, global, box, out);
      if (r.dtype == SPMD_U16) return fill<BitsU16>(r, global, box, out);
      if (r.dtype == SPMD_I32 || r.dtype == SPMD_U32) return fill<BitsU32>(r, global, box, out);
      if (r.dtype == SPMD_I64) return fill<BitsU64>(r, global, box, out);
      break;
    case D::Uniform:
      if (r.dtype == SPMD_F32) return fill<UniformF32>(r, global, box, out);
      if (r.dtype == SPMD_F64) return fill<UniformF64>(r, global, box, out);
      if (r.dtype == SPMD_F16 || r.dtype == SPMD_BF16) return fill<Uniform16>(r, global, box, out);
      break;
    case D::Normal:
      if (r.dtype == SPMD_F32) return fill<NormalF32>(r, global, box, out);
      if (r.dtype == SPMD_F64) return fill<NormalF64>(r, global, box, out);
      if (r.dtype == SPMD_F16 || r.dtype == SPMD_BF16) return fill<Normal16>(r, global, box, out);
      break;
    case D::TruncatedNormal:
      if (r.dtype == SPMD_F32) return fill<TruncatedNormalF32>(r, global, box, out);
      if (r.dtype == SPMD_F64) return fill<TruncatedNormalF64>(r, global, box, out);
      if (r.dtype == SPMD_F16 || r.dtype == SPMD_BF16)
        return fill<TruncatedNormal16>(r, global, box, out);
      break;
  }
  fail(SPMD_ERR_INTERNAL, "random: no generator for dtype ", dtype_name(r.dtype));
}

}  // namespace spmd::rng
