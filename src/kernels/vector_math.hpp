// Array-at-a-time float functions for the elementwise kernels, compiled
// once per instruction set (AVX-512, AVX2, baseline) and chosen at run time
// for the CPU at hand. Transcendental functions come from SLEEF (1.0 ulp
// forms, full range, IEEE special values), which Debian packages with its
// own dispatch; the arithmetic loops are plain C++ that the compiler
// vectorises for each instruction set. Every function reads n values at
// `a` (and `b`) and writes n at `o`; o may equal a or b.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spmd::vmath {

// The unary functions a table holds, in table order.
enum class Fn {
  Exp, Log, Sin, Cos, Tanh, Erfc, Sqrt, Rsqrt, Logistic, GeluTanh, GeluExact, Count
};
// The binary functions.
enum class Fn2 { Add, Sub, Mul, Div, Max, Min, Pow, Count };

template <typename T>
using Unary = void (*)(const T *a, T *o, size_t n);
template <typename T>
using Binary = void (*)(const T *a, const T *b, T *o, size_t n);

// A reduction's max (or min) of n floats in integer form: each float's
// bits, flushed to its signed zero when subnormal (DAZ), a negative's
// other bits flipped, so signed integers compare in the floats' order (-0
// just below +0); the largest (smallest) of `start` and those keys, and
// whether any of the floats is a NaN (whose keys mean nothing).
template <typename T, typename K>
using KeyFold = K (*)(const T *a, size_t n, K start, bool *nan);

struct Table {
  const char *isa;  // "avx512", "avx2", "baseline"
  Unary<float> f32[static_cast<int>(Fn::Count)];
  Unary<double> f64[static_cast<int>(Fn::Count)];
  Binary<float> f32_2[static_cast<int>(Fn2::Count)];
  Binary<double> f64_2[static_cast<int>(Fn2::Count)];
  KeyFold<float, int32_t> f32_keys[2];   // max, min
  KeyFold<double, int64_t> f64_keys[2];  // max, min
};

// The table for this CPU (SPMD_VECTOR_ISA=baseline|avx2|avx512 forces a
// narrower one, for comparing them).
const Table &table();

inline Unary<float> f32(Fn f) { return table().f32[static_cast<int>(f)]; }
inline Unary<double> f64(Fn f) { return table().f64[static_cast<int>(f)]; }
inline Binary<float> f32(Fn2 f) { return table().f32_2[static_cast<int>(f)]; }
inline Binary<double> f64(Fn2 f) { return table().f64_2[static_cast<int>(f)]; }
inline KeyFold<float, int32_t> f32_keys(bool max) { return table().f32_keys[max ? 0 : 1]; }
inline KeyFold<double, int64_t> f64_keys(bool max) { return table().f64_keys[max ? 0 : 1]; }

}  // namespace spmd::vmath
