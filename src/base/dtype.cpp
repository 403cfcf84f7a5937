#include "base/dtype.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.hpp"
#include "base/raw_enum.hpp"

namespace spmd {

bool dtype_valid(const spmd_dtype &dtype) {
  const int v = raw_enum(dtype);
  return v >= SPMD_F32 && v <= kLastDtype;
}

void check_dtype(const char *what, const spmd_dtype &dtype) {
  if (!dtype_valid(dtype))
    invalid(what, ": unknown dtype ", raw_enum(dtype),
            " (expected one of SPMD_F32 ... SPMD_U32)");
}

spmd_dtype valid_dtype(const spmd_dtype &dtype) {
  return static_cast<spmd_dtype>(raw_enum(dtype));
}

const char *dtype_name(spmd_dtype dtype) {
  if (!dtype_valid(dtype)) return nullptr;
  switch (dtype) {
    case SPMD_F32: return "float32";
    case SPMD_F64: return "float64";
    case SPMD_F16: return "float16";
    case SPMD_BF16: return "bfloat16";
    case SPMD_I32: return "int32";
    case SPMD_I64: return "int64";
    case SPMD_U8: return "uint8";
    case SPMD_BOOL: return "bool";
    case SPMD_I8: return "int8";
    case SPMD_I16: return "int16";
    case SPMD_U16: return "uint16";
    case SPMD_U32: return "uint32";
    default: return nullptr;
  }
}

uint16_t f32_to_f16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u)  // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {  // result is subnormal (or zero) in half
    // Scale into the half subnormal grid with the FPU's own rounding.
    float a;
    std::memcpy(&a, &abs, 4);
    const float scaled = a * 16777216.0f;  // a / 2^-24
    const uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  // Normal: re-bias the exponent and round the mantissa to nearest even.
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  float out;
  if (exp == 0) {
    out = std::ldexp(static_cast<float>(man), -24);
    if (sign) out = -out;
    return out;
  }
  uint32_t x;
  if (exp == 31)
    x = sign | 0x7f800000u | (man << 13);
  else
    x = sign | ((exp + 112u) << 23) | (man << 13);
  std::memcpy(&out, &x, 4);
  return out;
}

uint16_t f32_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)  // NaN: keep it quiet
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + bias) >> 16);
}

float bf16_bits_to_f32(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

bool integer_range(spmd_dtype dtype, double *lo, double *hi_plus_one) {
  int bits = 0;
  bool is_signed = true;
  switch (dtype) {
    case SPMD_I8: bits = 8; break;
    case SPMD_I16: bits = 16; break;
    case SPMD_I32: bits = 32; break;
    case SPMD_I64: bits = 64; break;
    case SPMD_U8: bits = 8; is_signed = false; break;
    case SPMD_U16: bits = 16; is_signed = false; break;
    case SPMD_U32: bits = 32; is_signed = false; break;
    default: return false;
  }
  // Powers of two: exact as doubles, int64's bounds included.
  *lo = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
  *hi_plus_one = std::ldexp(1.0, is_signed ? bits - 1 : bits);
  return true;
}

namespace {
template <typename T>
T to_integer(double v) {
  // Truncated toward zero and saturated, as XLA converts (jnp.astype):
  // 256.0 -> uint8 255, 3e9 -> int32 2147483647, -1.0 -> uint8 0; NaN -> 0.
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  // min is exact as a double; max + 1 is the power of two above it.
  if (t < static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (t >= std::ldexp(1.0, std::numeric_limits<T>::digits)) return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}
}  // namespace

void store_from_double(spmd_dtype dtype, double v, void *dst) {
  switch (dtype) {
    case SPMD_F32: { float f = static_cast<float>(v); std::memcpy(dst, &f, 4); break; }
    case SPMD_F64: std::memcpy(dst, &v, 8); break;
    case SPMD_F16: { uint16_t h = f32_to_f16_bits(static_cast<float>(v)); std::memcpy(dst, &h, 2); break; }
    case SPMD_BF16: { uint16_t b = f32_to_bf16_bits(static_cast<float>(v)); std::memcpy(dst, &b, 2); break; }
    case SPMD_I32: { int32_t i = to_integer<int32_t>(v); std::memcpy(dst, &i, 4); break; }
    case SPMD_I64: { int64_t i = to_integer<int64_t>(v); std::memcpy(dst, &i, 8); break; }
    case SPMD_U8: { uint8_t u = to_integer<uint8_t>(v); std::memcpy(dst, &u, 1); break; }
    case SPMD_BOOL: { uint8_t b = v != 0.0; std::memcpy(dst, &b, 1); break; }
    case SPMD_I8: { int8_t i = to_integer<int8_t>(v); std::memcpy(dst, &i, 1); break; }
    case SPMD_I16: { int16_t i = to_integer<int16_t>(v); std::memcpy(dst, &i, 2); break; }
    case SPMD_U16: { uint16_t u = to_integer<uint16_t>(v); std::memcpy(dst, &u, 2); break; }
    case SPMD_U32: { uint32_t u = to_integer<uint32_t>(v); std::memcpy(dst, &u, 4); break; }
    default: invalid("dtype ", raw_enum(dtype), " is not a known type");
  }
}

double load_as_double(spmd_dtype dtype, const void *src) {
  switch (dtype) {
    case SPMD_F32: { float f; std::memcpy(&f, src, 4); return f; }
    case SPMD_F64: { double d; std::memcpy(&d, src, 8); return d; }
    case SPMD_F16: { uint16_t h; std::memcpy(&h, src, 2); return f16_bits_to_f32(h); }
    case SPMD_BF16: { uint16_t b; std::memcpy(&b, src, 2); return bf16_bits_to_f32(b); }
    case SPMD_I32: { int32_t i; std::memcpy(&i, src, 4); return i; }
    case SPMD_I64: { int64_t i; std::memcpy(&i, src, 8); return static_cast<double>(i); }
    case SPMD_U8:
    case SPMD_BOOL: { uint8_t u; std::memcpy(&u, src, 1); return u; }
    case SPMD_I8: { int8_t i; std::memcpy(&i, src, 1); return i; }
    case SPMD_I16: { int16_t i; std::memcpy(&i, src, 2); return i; }
    case SPMD_U16: { uint16_t u; std::memcpy(&u, src, 2); return u; }
    case SPMD_U32: { uint32_t u; std::memcpy(&u, src, 4); return u; }
    default: invalid("dtype ", raw_enum(dtype), " is not a known type");
  }
}

}  // namespace spmd
