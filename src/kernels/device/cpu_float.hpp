// Float arithmetic that gives the CPU kernels' bits on any IEEE machine.
//
// XLA's CPU code, and so the CPU kernels (kernels/flush_subnormals.hpp),
// run with x86's DAZ and FTZ set: a subnormal operand counts as a zero of
// its sign, and a result that is tiny after rounding (rounded to the type's
// precision with an unbounded exponent, as x86 decides) becomes a zero of
// its sign, even where rounding to the subnormal grid would give the
// smallest normal. x86 also decides NaN bits: an operation on a NaN gives
// that NaN made quiet (the first operand's when both are NaN), and an
// invalid operation gives the "real indefinite" NaN, whose sign bit is set.
// A GPU does neither by itself (CUDA's -ftz is per translation unit and
// gives other NaNs), so the bodies say all of it here, explicitly.
#pragma once

#include "kernels/device/common.hpp"

namespace spmd::dev {

template <typename T>
SPMD_HD bool is_nan(T x) {
  return (bits_of(x) & ~FloatBits<T>::kSign) > FloatBits<T>::kExponent;
}

template <typename T>
SPMD_HD T min_normal() {
  return float_of<T>(FloatBits<T>::kMinNormal);
}

// Sign and magnitude by bits: CUDA's neg and abs leave a NaN's bits
// unspecified.
template <typename T>
SPMD_HD T neg(T x) {
  return float_of<T>(bits_of(x) ^ FloatBits<T>::kSign);
}
template <typename T>
SPMD_HD T abs_of(T x) {
  return float_of<T>(bits_of(x) & ~FloatBits<T>::kSign);
}
template <typename T>
SPMD_HD T zero_like(T x) {  // a zero with x's sign
  return float_of<T>(bits_of(x) & FloatBits<T>::kSign);
}

// DAZ: a subnormal as the zero of its sign. Also the FTZ of a result that
// is exact when tiny (a sum, a difference).
template <typename T>
SPMD_HD T daz(T x) {
  return (bits_of(x) & FloatBits<T>::kExponent) == 0 ? zero_like(x) : x;
}
SPMD_HD int64_t daz(int64_t x) { return x; }

// jnp.maximum / jnp.minimum as jax.jit computes them on a CPU: IEEE 754's
// maximum / minimum of the operands under DAZ (a NaN wins, a's first; -0
// is below +0), so a subnormal comes back as a zero of its sign. On the
// bits, so that no compiler turns it into an instruction that treats zeros
// and flushed subnormals otherwise. The CPU loops and the GPU bodies both
// call it; kernels/elementwise_chain_simd.hpp computes the same in lanes.
template <typename T, bool Max>
SPMD_HD T ieee_extremum(T a, T b) {
  const T x = daz(a), y = daz(b);
  if (is_nan(x)) return x;
  if (is_nan(y)) return y;
  if (x == y) return float_of<T>(Max ? (bits_of(x) & bits_of(y)) : (bits_of(x) | bits_of(y)));
  return (Max ? x > y : x < y) ? x : y;
}

template <typename T>
SPMD_HD T quiet(T x) {
  return float_of<T>(bits_of(x) | FloatBits<T>::kQuiet);
}
template <typename T>
SPMD_HD T default_nan() {
  return float_of<T>(FloatBits<T>::kSign | FloatBits<T>::kExponent | FloatBits<T>::kQuiet);
}

// 2^64, which scales a tiny product or quotient into the normal range
// without rounding it.
template <typename T>
SPMD_HD T two_64() {
  return static_cast<T>(18446744073709551616.0);
}

// The FTZ of a product or quotient r of DAZ operands, `scaled` being the
// same operation with one operand scaled up by 2^64 (so rounded to T's
// precision without reaching the subnormal range).
template <typename T>
SPMD_HD T flush_tiny(T r, T scaled) {
  return abs_of(scaled) < min_normal<T>() * two_64<T>() ? zero_like(r) : r;
}

// ---- the operations, DAZ and FTZ, x86's NaNs ----

template <typename T>
SPMD_HD T add(T a, T b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a)) return quiet(a);
  if (is_nan(b)) return quiet(b);
  const T r = a + b;
  return is_nan(r) ? default_nan<T>() : daz(r);  // a tiny sum is exact
}

template <typename T>
SPMD_HD T sub(T a, T b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a)) return quiet(a);
  if (is_nan(b)) return quiet(b);
  const T r = a - b;
  return is_nan(r) ? default_nan<T>() : daz(r);
}

template <typename T>
SPMD_HD T mul(T a, T b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a)) return quiet(a);
  if (is_nan(b)) return quiet(b);
  const T r = a * b;
  if (is_nan(r)) return default_nan<T>();
  if (r == T(0) || !(abs_of(r) <= min_normal<T>())) return r;
  // Tiny: the smaller operand is at most about sqrt(min normal), so
  // scaling it by 2^64 neither overflows nor rounds.
  const T scaled = abs_of(a) < abs_of(b) ? (a * two_64<T>()) * b : a * (b * two_64<T>());
  return flush_tiny(r, scaled);
}

template <typename T>
SPMD_HD T div(T a, T b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a)) return quiet(a);
  if (is_nan(b)) return quiet(b);
  const T r = a / b;
  if (is_nan(r)) return default_nan<T>();
  if (r == T(0) || !(abs_of(r) <= min_normal<T>())) return r;
  // Tiny: |a| is at most a few units, so a * 2^64 is exact.
  return flush_tiny(r, (a * two_64<T>()) / b);
}

template <typename T>
SPMD_HD T sqrt_of(T a) {
  a = daz(a);
  if (is_nan(a)) return quiet(a);
  if (a < T(0)) return default_nan<T>();
  return m::sqrt(a);
}

// ---- conversions between f32 and f64, NaNs as x86 converts them ----

// f32 to f64, exact (no DAZ: base/dtype.cpp's load_as_double).
SPMD_HD double widen(float f) {
  const uint32_t u = bits_of(f);
  if (is_nan(f))
    return f64_of((static_cast<uint64_t>(u & 0x80000000u) << 32) | 0x7ff0000000000000ull |
                  (static_cast<uint64_t>((u & 0x7fffffu) | 0x400000u) << 29));
  return static_cast<double>(f);
}

// f64 to f32 rounded to nearest, subnormal results kept (no FTZ:
// base/dtype.cpp's store_from_double).
SPMD_HD float narrow(double d) {
  const uint64_t u = bits_of(d);
  if (is_nan(d))
    return f32_of(static_cast<uint32_t>((u >> 32) & 0x80000000u) | 0x7fc00000u |
                  static_cast<uint32_t>((u >> 29) & 0x7fffffu));
  return static_cast<float>(d);
}

// The same under DAZ and FTZ, as inside the elementwise and reduction
// kernels: a result below the midpoint of the largest tiny f32 and the
// smallest normal one, 2^-126 * (1 - 2^-25), is tiny after rounding.
SPMD_HD double widen_daz(float f) { return widen(daz(f)); }
SPMD_HD float narrow_ftz(double d) {
  const float r = narrow(d);
  if (!(abs_of(d) < 0x1.ffffffp-127)) return r;  // 2^-126 * (1 - 2^-25)
  return zero_like(r);
}

// ---- conversions to integers ----

// base/dtype.cpp's store_from_double for an integer type d: truncated
// toward zero and saturated to d's range, as XLA converts; NaN gives 0.
SPMD_HD int64_t to_integer(spmd_dtype d, double v) {
  if (is_nan(v)) return 0;
  const double t = m::trunc(v);
  const int64_t lo = int_min(d), hi = int_max(d);
  // Both bounds exact as doubles: lo is 0 or a power of two, and so is the
  // first value past hi (-lo for the signed types).
  const double hi_plus_one = lo < 0 ? -static_cast<double>(lo) : static_cast<double>(hi) + 1.0;
  if (t < static_cast<double>(lo)) return lo;
  if (t >= hi_plus_one) return hi;
  return static_cast<int64_t>(t);
}

// x86's truncating conversion to int64 (cvttsd2si), which C++ leaves
// undefined out of range: NaN and anything beyond int64 give INT64_MIN.
SPMD_HD int64_t truncate_x86(double v) {
  if (is_nan(v) || !(abs_of(v) < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace spmd::dev
