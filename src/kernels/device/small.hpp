// The per-element bodies of the small kernel kinds (backend/kernel.hpp):
// fill, arange, convert, scale by a reciprocal, first difference, and the
// exact integer products, each bit for bit as backend/host/kernels.cpp and
// kernels/gemm.cpp compute them.
#pragma once

#include "kernels/device/elementwise.hpp"
#include "kernels/device/random.hpp"
#include "kernels/gemm.hpp"

namespace spmd::dev::small {

// ---- fill: the element's pattern, as 16-byte words where it can ----

struct Fill {
  uint64_t pattern = 0;      // the element's bytes, little-endian
  uint32_t word[4] = {};     // the pattern repeated over 16 bytes
  int elem = 1;              // bytes of the pattern
  int64_t bytes = 0;         // of the whole fill
  bool words = false;        // out 16-byte aligned and 16 a multiple of elem
};

inline Fill make_fill(const void *out, const unsigned char *pattern, size_t elem, size_t count) {
  Fill f;
  f.elem = static_cast<int>(elem);
  f.bytes = static_cast<int64_t>(elem * count);
  unsigned char p8[8] = {}, w16[16];
  std::memcpy(p8, pattern, elem);
  for (int i = 0; i < 16; ++i) w16[i] = pattern[static_cast<size_t>(i) % elem];
  std::memcpy(&f.pattern, p8, 8);
  std::memcpy(f.word, w16, 16);
  f.words = reinterpret_cast<uintptr_t>(out) % 16 == 0 && 16 % elem == 0;
  return f;
}

// Byte i of the fill's output.
SPMD_HD unsigned char fill_byte(const Fill &f, int64_t i) {
  return static_cast<unsigned char>(f.pattern >> (8 * (i % f.elem)));
}

// A thread's share: whole words, then the tail bytes (all bytes when the
// output is not aligned).
SPMD_HD void fill(const Fill &f, unsigned char *out, int64_t first, int64_t step) {
  const int64_t words = f.words ? f.bytes / 16 : 0;
  for (int64_t w = first; w < words; w += step) {
#if defined(__CUDA_ARCH__)
    reinterpret_cast<uint4 *>(out)[w] = make_uint4(f.word[0], f.word[1], f.word[2], f.word[3]);
#else
    std::memcpy(out + w * 16, f.word, 16);
#endif
  }
  for (int64_t i = words * 16 + first; i < f.bytes; i += step) out[i] = fill_byte(f, i);
}

// ---- arange: start + k * step for the box's element at global index k ----

SPMD_HD void arange(spmd_dtype dtype, double start, double step, const rng::Where &w,
                    unsigned char *out, int64_t first, int64_t stride) {
  const int es = dtype_bytes(dtype);
  for (int64_t i = first; i < w.count; i += stride) {
    const auto flat = static_cast<int64_t>(rng::global_index(w, i));
    ew::store_double(dtype, start + static_cast<double>(flat) * step, out + i * es, false);
  }
}

// ---- convert: through double, as base/dtype.cpp ----

SPMD_HD void convert(spmd_dtype from, spmd_dtype to, const unsigned char *in, unsigned char *out,
                     int64_t count, int64_t first, int64_t step) {
  const int fs = dtype_bytes(from), ts = dtype_bytes(to);
  for (int64_t i = first; i < count; i += step)
    ew::store_double(to, ew::load_double(from, in + i * fs), out + i * ts, false);
}

// ---- scale by a reciprocal: x * (1 / n) as XLA's CPU code rounds it ----

struct Scale {
  spmd_dtype dtype = SPMD_F32;
  bool copy = false;  // n = 1: the values as they are
  float c32 = 0;      // the reciprocal, for f32, bf16 and f16
  double c64 = 0;     // for f64
};

// backend/host/kernels.cpp's constants: f32 and f64 multiply by 1 / n in
// the type; bf16 runs in f32 by 1 / f32(bf16(n)); f16 by 1 / f16(n) rounded
// to f16.
inline Scale make_scale(spmd_dtype dtype, double n) {
  Scale s;
  s.dtype = dtype;
  s.copy = n == 1;
  s.c32 = 1.0f / static_cast<float>(n);
  s.c64 = 1.0 / n;
  if (dtype == SPMD_BF16) s.c32 = 1.0f / bf16_bits_to_f32(f32_to_bf16_bits(static_cast<float>(n)));
  if (dtype == SPMD_F16)
    s.c32 = f16_bits_to_f32(
        f32_to_f16_bits(1.0f / f16_bits_to_f32(f32_to_f16_bits(static_cast<float>(n)))));
  return s;
}

// A product with x86's NaNs and no flushing (f16's products, exact in f32).
SPMD_HD float mul_plain(float a, float b) {
  if (is_nan(a)) return quiet(a);
  if (is_nan(b)) return quiet(b);
  const float r = a * b;
  return is_nan(r) ? default_nan<float>() : r;
}

// Element i; `in` and `out` may be the same memory.
SPMD_HD void scale_one(const Scale &s, const unsigned char *in, unsigned char *out, int64_t i) {
  switch (s.dtype) {
    case SPMD_F32:
      store_as(out + i * 4, s.copy ? load_as<float>(in + i * 4) : mul(load_as<float>(in + i * 4), s.c32));
      return;
    case SPMD_F64:
      store_as(out + i * 8, s.copy ? load_as<double>(in + i * 8) : mul(load_as<double>(in + i * 8), s.c64));
      return;
    case SPMD_BF16: {
      const uint16_t h = load_as<uint16_t>(in + i * 2);
      store_as(out + i * 2, s.copy ? h : f32_to_bf16_bits(mul(bf16_bits_to_f32(h), s.c32)));
      return;
    }
    default: {  // f16
      const uint16_t h = load_as<uint16_t>(in + i * 2);
      store_as(out + i * 2, s.copy ? h : f32_to_f16_bits(mul_plain(f16_bits_to_f32(h), s.c32)));
      return;
    }
  }
}

// ---- first difference: whether element i of a and b differ bitwise ----

SPMD_HD bool differs(const unsigned char *a, const unsigned char *b, int es, int64_t i) {
  for (int k = 0; k < es; ++k)
    if (a[i * es + k] != b[i * es + k]) return true;
  return false;
}

// ---- integer and bool products, exact in int64 and wrapping ----

// Element (bi, i, j) of the product, as kernels/gemm.cpp's integer loop:
// the sum of products in uint64, stored wrapped (bool: whether any
// product is nonzero, the sum of 0/1 products being at most k).
SPMD_HD void int_product(const spmd::gemm::Params &p, const unsigned char *a,
                         const unsigned char *b, unsigned char *c, int64_t index) {
  const int es = dtype_bytes(p.dtype);
  const int64_t j = index % p.n, rest = index / p.n;
  const int64_t i = rest % p.m, bi = rest / p.m;
  const unsigned char *ab = a + bi * p.m * p.k * es;
  const unsigned char *bb = b + bi * p.k * p.n * es;
  const int64_t a_step = p.trans_a ? p.m : 1, b_step = p.trans_b ? 1 : p.n;
  const unsigned char *ap = ab + (p.trans_a ? i : i * p.k) * es;
  const unsigned char *bp = bb + (p.trans_b ? j * p.k : j) * es;
  uint64_t s = 0;
  for (int64_t l = 0; l < p.k; ++l)
    s += static_cast<uint64_t>(load_int(p.dtype, ap + l * a_step * es)) *
         static_cast<uint64_t>(load_int(p.dtype, bp + l * b_step * es));
  store_int(p.dtype, static_cast<int64_t>(s), c + index * es);
}

}  // namespace spmd::dev::small
