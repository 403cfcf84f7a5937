// What the per-element bodies under kernels/device/ share. Each body is
// written once, as a function both compilers take: SPMD_HD makes it a
// __host__ __device__ function when nvcc compiles it (the CUDA platform's
// kernels call it) and a plain inline function for the host compiler (the
// host tests call it, against the CPU kernels). So a body may use only what
// both sides have: arithmetic, bit casts, and the few math functions of
// spmd::dev::m below, which are the C library's on the host and CUDA's on
// the device.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "spmd/dtype.h"

#if defined(__CUDACC__)
#define SPMD_HD __host__ __device__ inline
#else
#define SPMD_HD inline
#endif

// Unrolls the loop that follows on the device (loops over a few lanes, so
// their arrays stay in registers); nothing on the host.
#if defined(__CUDA_ARCH__)
#define SPMD_UNROLL _Pragma("unroll")
#else
#define SPMD_UNROLL
#endif

namespace spmd::dev {

// ---- bit casts ----

SPMD_HD uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

SPMD_HD uint64_t bits_of(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
#endif
}

SPMD_HD float f32_of(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

SPMD_HD double f64_of(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
#endif
}

// The fields of the two float formats, for the bodies that work on bits.
template <typename T>
struct FloatBits;
template <>
struct FloatBits<float> {
  using U = uint32_t;
  static constexpr U kSign = 0x80000000u;
  static constexpr U kExponent = 0x7f800000u;
  static constexpr U kQuiet = 0x00400000u;
  static constexpr U kMinNormal = 0x00800000u;
};
template <>
struct FloatBits<double> {
  using U = uint64_t;
  static constexpr U kSign = 0x8000000000000000ull;
  static constexpr U kExponent = 0x7ff0000000000000ull;
  static constexpr U kQuiet = 0x0008000000000000ull;
  static constexpr U kMinNormal = 0x0010000000000000ull;
};

template <typename T>
SPMD_HD T float_of(typename FloatBits<T>::U u) {
  if constexpr (sizeof(T) == 4) return f32_of(u);
  else return f64_of(u);
}

// Loads and stores of one element: on the device a plain typed access
// (every buffer, and every element in it, is aligned to the element's
// size), on the host one that needs no alignment.
template <typename V>
SPMD_HD V load_as(const void *p) {
#if defined(__CUDA_ARCH__)
  return *static_cast<const V *>(p);
#else
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}
template <typename V>
SPMD_HD void store_as(void *p, V v) {
#if defined(__CUDA_ARCH__)
  *static_cast<V *>(p) = v;
#else
  std::memcpy(p, &v, sizeof v);
#endif
}

// ---- math functions: the C library's on the host, CUDA's on the device ----

namespace m {
#if defined(__CUDA_ARCH__)
#define SPMD_DEV_MATH1(NAME)                                  \
  SPMD_HD float NAME(float x) { return ::NAME##f(x); }        \
  SPMD_HD double NAME(double x) { return ::NAME(x); }
#define SPMD_DEV_MATH2(NAME)                                             \
  SPMD_HD float NAME(float x, float y) { return ::NAME##f(x, y); }       \
  SPMD_HD double NAME(double x, double y) { return ::NAME(x, y); }
#else
#define SPMD_DEV_MATH1(NAME)                                  \
  SPMD_HD float NAME(float x) { return std::NAME(x); }        \
  SPMD_HD double NAME(double x) { return std::NAME(x); }
#define SPMD_DEV_MATH2(NAME)                                             \
  SPMD_HD float NAME(float x, float y) { return std::NAME(x, y); }       \
  SPMD_HD double NAME(double x, double y) { return std::NAME(x, y); }
#endif
SPMD_DEV_MATH1(exp)
SPMD_DEV_MATH1(log)
SPMD_DEV_MATH1(sin)
SPMD_DEV_MATH1(cos)
SPMD_DEV_MATH1(tanh)
SPMD_DEV_MATH1(erfc)
SPMD_DEV_MATH1(sqrt)  // correctly rounded on both sides (nvcc's -prec-sqrt=true)
SPMD_DEV_MATH1(trunc)
SPMD_DEV_MATH1(rint)
SPMD_DEV_MATH2(pow)
#undef SPMD_DEV_MATH1
#undef SPMD_DEV_MATH2

// Fused multiply-adds: exact on both sides.
#if defined(__CUDA_ARCH__)
SPMD_HD float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
SPMD_HD double fma(double a, double b, double c) { return ::fma(a, b, c); }
#else
SPMD_HD float fma(float a, float b, float c) { return std::fma(a, b, c); }
SPMD_HD double fma(double a, double b, double c) { return std::fma(a, b, c); }
#endif
}  // namespace m

// ---- 16-bit floats, bit for bit as base/dtype.cpp converts them ----

SPMD_HD uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u)  // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {  // subnormal (or zero) in half: the FPU's rounding on the grid
    const float scaled = f32_of(abs) * 16777216.0f;  // exact: a / 2^-24
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(m::rint(scaled)));
  }
  uint32_t h = (abs - 0x38000000u) >> 13;
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

SPMD_HD float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    const float out = static_cast<float>(man) * 5.9604644775390625e-8f;  // exact: man * 2^-24
    return sign ? -out : out;
  }
  if (exp == 31) return f32_of(sign | 0x7f800000u | (man << 13));
  return f32_of(sign | ((exp + 112u) << 23) | (man << 13));
}

SPMD_HD uint16_t f32_to_bf16_bits(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)  // NaN: keep it quiet
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + bias) >> 16);
}

SPMD_HD float bf16_bits_to_f32(uint16_t b) { return f32_of(static_cast<uint32_t>(b) << 16); }

// ---- dtypes ----

SPMD_HD int dtype_bytes(spmd_dtype d) {
  switch (d) {
    case SPMD_F64:
    case SPMD_I64:
      return 8;
    case SPMD_F32:
    case SPMD_I32:
    case SPMD_U32:
      return 4;
    case SPMD_F16:
    case SPMD_BF16:
    case SPMD_I16:
    case SPMD_U16:
      return 2;
    default:
      return 1;
  }
}

// ---- integer types: the one place the bodies learn their widths and signs ----

// Whether d is an integer type (bool is not).
SPMD_HD bool integer_dtype(spmd_dtype d) {
  switch (d) {
    case SPMD_I8: case SPMD_I16: case SPMD_I32: case SPMD_I64:
    case SPMD_U8: case SPMD_U16: case SPMD_U32:
      return true;
    default:
      return false;
  }
}

// An integer or bool element as int64, sign- or zero-extended (bool: 0 or
// 1, any nonzero byte being true).
SPMD_HD int64_t load_int(spmd_dtype d, const unsigned char *p) {
  switch (d) {
    case SPMD_I8: return static_cast<int8_t>(*p);
    case SPMD_I16: return load_as<int16_t>(p);
    case SPMD_I32: return load_as<int32_t>(p);
    case SPMD_I64: return load_as<int64_t>(p);
    case SPMD_U8: return *p;
    case SPMD_U16: return load_as<uint16_t>(p);
    case SPMD_U32: return load_as<uint32_t>(p);
    default: return *p != 0;
  }
}

// v stored as an integer type, wrapped to its width (two's complement, as
// XLA's integer arithmetic and its conversions between integer types
// wrap); bool: whether v is nonzero.
SPMD_HD void store_int(spmd_dtype d, int64_t v, unsigned char *p) {
  switch (d) {
    case SPMD_I8: *p = static_cast<unsigned char>(v); return;
    case SPMD_I16: store_as(p, static_cast<int16_t>(v)); return;
    case SPMD_I32: store_as(p, static_cast<int32_t>(v)); return;
    case SPMD_I64: store_as(p, v); return;
    case SPMD_U8: *p = static_cast<uint8_t>(v); return;
    case SPMD_U16: store_as(p, static_cast<uint16_t>(v)); return;
    case SPMD_U32: store_as(p, static_cast<uint32_t>(v)); return;
    default: *p = v != 0; return;
  }
}

// The smallest and largest values of an integer type (bool: 0 and 1).
SPMD_HD int64_t int_min(spmd_dtype d) {
  switch (d) {
    case SPMD_I8: return INT8_MIN;
    case SPMD_I16: return INT16_MIN;
    case SPMD_I32: return INT32_MIN;
    case SPMD_I64: return INT64_MIN;
    default: return 0;
  }
}
SPMD_HD int64_t int_max(spmd_dtype d) {
  switch (d) {
    case SPMD_I8: return INT8_MAX;
    case SPMD_I16: return INT16_MAX;
    case SPMD_I32: return INT32_MAX;
    case SPMD_I64: return INT64_MAX;
    case SPMD_U8: return UINT8_MAX;
    case SPMD_U16: return UINT16_MAX;
    case SPMD_U32: return UINT32_MAX;
    default: return 1;
  }
}

}  // namespace spmd::dev
