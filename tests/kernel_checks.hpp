// What the kernel-body tests share: seeded inputs full of the values
// float kernels get wrong, operand layouts, the cases of the elementwise
// kernel, and the rules by which a result stands for the CPU kernel's
// (bit for bit, except the ulps the transcendental functions may differ
// by, a float sum's rounding, and the few places where the CPU's own bits
// depend on how the compiler built it). test_kernel_bodies runs the bodies
// on the host; test_cuda_kernels runs the CUDA kernels on a GPU.
// Include after <cmocka.h> (print_error, fail_msg), and after the library's
// headers named below (cmocka's fail macro would break them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "base/promotion.hpp"
#include "kernels/device/elementwise.hpp"
#include "kernels/device/elementwise_chain.hpp"
#include "kernels/device/reduce.hpp"
#include "kernels/device/scan.hpp"
#include "kernels/device/scatter_add.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/elementwise_chain.hpp"
#include "kernels/reduce_axes.hpp"
#include "kernels/scatter_add.hpp"

namespace kernel_checks {

using namespace spmd;
using Bytes = std::vector<unsigned char>;

// ---- inputs ----

// splitmix64: every test draws from its own seeded stream.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }
};

inline float f32_bits(uint32_t u) { return dev::f32_of(u); }
inline double f64_bits(uint64_t u) { return dev::f64_of(u); }

// Values where float kernels go wrong: zeros, infinities, NaNs (quiet,
// signalling, with payloads, of both signs), the largest finite values,
// subnormals, the smallest normal and its neighbours, operands whose
// product or quotient lands next to the smallest normal, and ordinary
// values for the functions.
inline std::vector<double> special_values(bool f64) {
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -3.0, 0.1, 1e-3, 10.0,
                           100.0, 1e10, -1e10, 8.5, -2.5, 0.7071067811865476, 4.0, 5.0, 1e5,
                           1e20, -1e20, 16777217.0, 88.72, 89.0, -87.34, -103.9, -104.0, 709.0,
                           710.0, -745.0, 20.0, -20.0, 0.044715, 1.0 / 3.0};
  const double inf = std::numeric_limits<double>::infinity();
  v.insert(v.end(), {inf, -inf});
  if (f64) {
    const double mn = std::numeric_limits<double>::min();
    v.insert(v.end(), {f64_bits(0x7ff8000000000000ull), f64_bits(0xfff8000000000000ull),
                       f64_bits(0x7ff8000000012345ull), f64_bits(0x7ff0000000000001ull),
                       f64_bits(0x0000000000000001ull), f64_bits(0x000fffffffffffffull),
                       f64_bits(0x8000000000000001ull), f64_bits(0x0008000000000000ull), mn, -mn,
                       std::nextafter(mn, 1.0), std::nextafter(1.0, 0.0), 1.0 + 0x1p-52,
                       1.0 - 3 * 0x1p-53, std::numeric_limits<double>::max(),
                       -std::numeric_limits<double>::max(), 0x1p-511, 0x1p-511 * (1 - 0x1p-53),
                       0x1p-511 * (1 + 0x1p-52), 0x1p-1000, 0x1p64, 0x1p-64, 1e-300, 1e300,
                       0x1p-1022 * 0.75, 0x1p-1074 * 3, 1.1754943508222875e-38,
                       0x1.ffffffp-127, 0x1.fffffep-127, 1e-45, 1e-40, 9.223372036854775e18});
  } else {
    v.insert(v.end(), {f32_bits(0x7fc00000u), f32_bits(0xffc00000u), f32_bits(0x7fc12345u),
                       f32_bits(0x7f800001u), f32_bits(0xff812345u), f32_bits(0x00000001u),
                       f32_bits(0x007fffffu), f32_bits(0x80000001u), f32_bits(0x00400000u),
                       f32_bits(0x00800000u), f32_bits(0x80800000u), f32_bits(0x00800001u),
                       f32_bits(0x00ffffffu), f32_bits(0x3f7fffffu), f32_bits(0x3f800001u),
                       f32_bits(0x3f7ffffdu), f32_bits(0x3effffffu), f32_bits(0x7f7fffffu),
                       f32_bits(0xff7fffffu), 0x1p-63, 0x1p-63 * (1 - 0x1p-24),
                       0x1p-63 * (1 + 0x1p-23), 0x1p-63 * (1 + 0x1p-22), 0x1p-100, 0x1p64,
                       0x1p-64, 0x1p126, 0x1p-126 * 0.75, 2147483648.0, -2147483649.0, 255.0,
                       256.0, -1e-40, 1e-40, 1e-45});
  }
  return v;
}

// One random element of dtype d: a special value, one near the smallest
// normal, or random bits.
inline void random_element(spmd_dtype d, Rng &r, unsigned char *p) {
  static const std::vector<double> s32 = special_values(false), s64 = special_values(true);
  const int64_t pick = r.below(16);
  switch (d) {
    case SPMD_F32: {
      float f;
      if (pick < 7) f = static_cast<float>(s32[static_cast<size_t>(r.below(static_cast<int64_t>(s32.size())))]);
      else if (pick < 9) f = f32_bits(0x00800000u + static_cast<uint32_t>(r.below(64)) - 32u);  // around the smallest normal
      else if (pick < 10) f = f32_bits(static_cast<uint32_t>(r.next()));
      else f = static_cast<float>(std::ldexp(r.unit() * 2 - 1, static_cast<int>(r.below(80)) - 40));
      if (pick >= 7 && pick < 9 && r.below(2)) f = -f;
      dev::store_as(p, f);
      return;
    }
    case SPMD_F64: {
      double f;
      if (pick < 7) f = s64[static_cast<size_t>(r.below(static_cast<int64_t>(s64.size())))];
      else if (pick < 9) f = f64_bits(0x0010000000000000ull + static_cast<uint64_t>(r.below(64)) - 32u);
      else if (pick < 10) f = f64_bits(r.next());
      else f = std::ldexp(r.unit() * 2 - 1, static_cast<int>(r.below(80)) - 40);
      if (pick >= 7 && pick < 9 && r.below(2)) f = -f;
      dev::store_as(p, f);
      return;
    }
    case SPMD_F16:
    case SPMD_BF16: {
      static const uint16_t h16[] = {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00,
                                     0x7e00, 0xfe00, 0x7c01, 0x3c00, 0xbc00, 0x3555, 0x4900};
      static const uint16_t b16[] = {0x0000, 0x8000, 0x0001, 0x007f, 0x0080, 0x8081, 0x7f7f,
                                     0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0x3f80, 0xbf80,
                                     0x3eaa, 0x42b1};
      uint16_t h;
      if (pick < 6)
        h = d == SPMD_F16 ? h16[r.below(sizeof h16 / 2)] : b16[r.below(sizeof b16 / 2)];
      else if (pick < 10) h = static_cast<uint16_t>(r.next());
      else {  // a value of moderate size, rounded to the type
        const float f = static_cast<float>(std::ldexp(r.unit() * 2 - 1, static_cast<int>(r.below(24)) - 12));
        h = d == SPMD_F16 ? dev::f32_to_f16_bits(f) : dev::f32_to_bf16_bits(f);
      }
      dev::store_as(p, h);
      return;
    }
    case SPMD_I32: {
      static const int32_t s[] = {0, 1, -1, 2, -2, 3, 7, 31, 32, INT32_MIN, INT32_MAX, 65536};
      const int32_t v = pick < 8 ? s[r.below(12)] : static_cast<int32_t>(r.next() >> (r.below(32)));
      dev::store_as(p, v);
      return;
    }
    case SPMD_I64: {
      static const int64_t s[] = {0, 1, -1, 2, -2, 3, 63, 64, INT64_MIN, INT64_MAX, INT32_MIN,
                                  int64_t{1} << 53};
      const int64_t v = pick < 8 ? s[r.below(12)] : static_cast<int64_t>(r.next() >> r.below(64));
      dev::store_as(p, v);
      return;
    }
    case SPMD_U8: *p = static_cast<unsigned char>(pick < 4 ? (pick < 2 ? 0 : 255) : r.next()); return;
    case SPMD_I8: {
      static const int8_t s[] = {0, 1, -1, 2, -2, INT8_MIN, INT8_MAX, 64};
      *p = static_cast<unsigned char>(pick < 8 ? s[r.below(8)] : static_cast<int8_t>(r.next()));
      return;
    }
    case SPMD_I16: {
      static const int16_t s[] = {0, 1, -1, 2, -2, INT16_MIN, INT16_MAX, 256};
      dev::store_as(p, pick < 8 ? s[r.below(8)] : static_cast<int16_t>(r.next() >> r.below(16)));
      return;
    }
    case SPMD_U16: {
      static const uint16_t s[] = {0, 1, 2, 255, 256, UINT16_MAX, 0x8000, 2049};
      dev::store_as(p, pick < 8 ? s[r.below(8)] : static_cast<uint16_t>(r.next() >> r.below(16)));
      return;
    }
    case SPMD_U32: {
      static const uint32_t s[] = {0, 1, 2, 3, 0x7fffffffu, 0x80000000u, UINT32_MAX, 16777217u};
      dev::store_as(p, pick < 8 ? s[r.below(8)] : static_cast<uint32_t>(r.next() >> r.below(32)));
      return;
    }
    default: *p = static_cast<unsigned char>(pick < 14 ? pick % 2 : 2); return;  // bool, a few 2s
  }
}

inline Bytes random_elements(spmd_dtype d, size_t n, Rng &r) {
  Bytes b(n * dtype_size(d) + 16);
  for (size_t i = 0; i < n; ++i) random_element(d, r, b.data() + i * dtype_size(d));
  return b;
}

inline std::string hex(const unsigned char *p, size_t n) {
  static const char *digits = "0123456789abcdef";
  std::string s;
  for (size_t i = n; i-- > 0;) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

inline std::string shape_text(const Shape &s) { return shape_to_string(s); }

inline const spmd_dtype kAll[] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16, SPMD_I32, SPMD_I64,
                                  SPMD_U8,  SPMD_BOOL, SPMD_I8,  SPMD_I16,  SPMD_U16, SPMD_U32};
inline const spmd_dtype kIntegers[] = {SPMD_I8, SPMD_I16, SPMD_I32, SPMD_I64,
                                       SPMD_U8, SPMD_U16, SPMD_U32};

inline bool is_float(spmd_dtype d) { return d == SPMD_F32 || d == SPMD_F64 || d == SPMD_F16 || d == SPMD_BF16; }

// An element as a double (16-bit floats through f32), for tolerances.
inline double value_of(spmd_dtype d, const unsigned char *p) { return load_as_double(d, p); }

inline bool nan_at(spmd_dtype d, const unsigned char *p) { return is_float(d) && std::isnan(value_of(d, p)); }

// Reports up to a few mismatches, then fails the test with the count.
struct Mismatches {
  int count = 0;
  int shown = 8;
  void note(const std::string &what) {
    if (++count <= shown) print_error("%s\n", what.c_str());
  }
  void check(const char *test) const {
    if (count) fail_msg("%s: %d mismatches", test, count);
  }
};

// ---- ulps ----

// Ordered integers of float bits: neighbours differ by one, -0 == +0.
inline int64_t ordered(spmd_dtype d, const unsigned char *p) {
  int64_t mag, neg;
  switch (d) {
    case SPMD_F32: { const uint32_t u = dev::load_as<uint32_t>(p); mag = u & 0x7fffffffu; neg = u >> 31; break; }
    case SPMD_F64: { const uint64_t u = dev::load_as<uint64_t>(p); mag = static_cast<int64_t>(u & 0x7fffffffffffffffull); neg = static_cast<int64_t>(u >> 63); break; }
    default: { const uint16_t u = dev::load_as<uint16_t>(p); mag = u & 0x7fff; neg = u >> 15; break; }
  }
  return neg ? -mag : mag;
}

inline double ulp_of(spmd_dtype d, double x) {
  x = std::fabs(x);
  const int mant = d == SPMD_F64 ? 52 : d == SPMD_F32 ? 23 : d == SPMD_F16 ? 10 : 7;
  const int emin = d == SPMD_F16 ? -14 : d == SPMD_F64 ? -1022 : -126;
  int e;
  std::frexp(x, &e);  // x in [2^(e-1), 2^e)
  return std::ldexp(1.0, std::max(e - 1, emin) - mant);
}


using ew::Op;

inline const Op kUnary[] = {Op::Copy, Op::Neg, Op::Abs, Op::Exp, Op::Log, Op::Sin, Op::Cos, Op::Tanh,
                     Op::Sqrt, Op::Rsqrt, Op::Relu, Op::Logistic, Op::GeluTanh, Op::GeluExact};
inline const Op kBinary[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min, Op::Pow,
                      Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge};

inline bool transcendental(Op op) {
  switch (op) {
    case Op::Exp: case Op::Log: case Op::Sin: case Op::Cos: case Op::Tanh: case Op::Logistic:
    case Op::GeluTanh: case Op::GeluExact: case Op::Pow:
      return true;
    default:
      return false;
  }
}

// The ulps the device's result may be from the CPU's, in the computing
// type. The device calls CUDA's functions (libdevice), whose largest
// errors the CUDA C++ Programming Guide lists (single precision: expf 2,
// logf 1, sinf and cosf 2, tanhf 2, powf 4, erfcf 4; double: exp 1, log 1,
// sin and cos 2, tanh 2, pow 2, erfc 5); the CPU calls SLEEF's 1.0-ulp
// functions (erfc 1.5), so the two are at most the sum apart, plus one
// ulp for each rounded step the op adds after the function. Here on the
// host the bodies call the C library, which is within those bounds too
// (glibc's tables: at most 2 ulps for these, 5 for double erfc), and the
// device's libdevice differs from the host's libm by at most the bound
// CUDA documents. gelu_tanh loses relative accuracy where 1 + tanh(u)
// cancels (x very negative); there the bound adds tanh's ulps of x.
struct Bound {
  double ulps;
  double ulps_of_x;  // in units of the computing type's epsilon times |x|
};
inline Bound bound_for(Op op, bool f64) {
  switch (op) {
    case Op::Exp: return {f64 ? 2.0 : 3.0, 0};
    case Op::Log: return {2.0, 0};
    case Op::Sin: case Op::Cos: return {3.0, 0};
    case Op::Tanh: return {3.0, 0};
    case Op::Pow: return {f64 ? 3.0 : 5.0, 0};
    case Op::Logistic: return {f64 ? 4.0 : 5.0, 0};
    case Op::GeluTanh: return {6.0, 3.0};
    case Op::GeluExact: return {f64 ? 9.0 : 8.0, 0};
    default: return {0, 0};
  }
}

// Whether the body's element `got` may stand for the CPU's `want` (out
// dtype d) for an op of compute type `compute` whose first operand was x.
inline bool close_enough(Op op, spmd_dtype compute, spmd_dtype d, const unsigned char *want,
                  const unsigned char *got, double x) {
  const bool wn = nan_at(d, want), gn = nan_at(d, got);
  if (wn || gn) return wn && gn;
  const Bound b = bound_for(op, compute == SPMD_F64);
  const double w = value_of(d, want), g = value_of(d, got);
  if (std::isinf(w) || std::isinf(g)) {  // one past the largest finite value, or equal
    if (std::llabs(ordered(d, want) - ordered(d, got)) <= static_cast<long long>(b.ulps)) return true;
    // SLEEF's pow overflows a little early: pow(DBL_MAX, 1 - 2^-53) is
    // 710 ulps below DBL_MAX (so the GPU has it), infinity on the CPU.
    const double largest = d == SPMD_F64   ? std::numeric_limits<double>::max()
                           : d == SPMD_F16 ? 65504.0
                           : d == SPMD_BF16 ? 0x1.fep127
                                            : static_cast<double>(std::numeric_limits<float>::max());
    const double finite = std::isinf(w) ? g : w;
    return op == Op::Pow && !std::isinf(finite) && (w > 0) == (g > 0) &&
           std::fabs(finite) >= largest * (d == SPMD_F64 ? 1 - 0x1p-40 : 1 - 0x1p-16);
  }
  // Where the CPU flushes a result near the smallest normal, one side may
  // flush and the other not.
  const double tiny = 2 * (compute == SPMD_F64 ? std::numeric_limits<double>::min()
                                               : static_cast<double>(std::numeric_limits<float>::min()));
  if (std::fabs(w) <= tiny && std::fabs(g) <= tiny) return true;
  const double big = std::max(std::fabs(w), std::fabs(g));
  const double eps = compute == SPMD_F64 ? 0x1p-52 : 0x1p-23;
  double allowed = b.ulps * ulp_of(compute, big) + b.ulps_of_x * eps * std::fabs(x);
  // Near the smallest normal SLEEF's own intermediate results are flushed
  // (the CPU runs with FTZ), and it loses accuracy: within 2^32 of it
  // (f32) the CPU is good to 2^-16, within 2^64 (f64) to 2^-40. (erfc
  // near 1e-34 in f32 is 36 ulps off on the CPU and near 2^-977 in f64 200
  // ulps, where the GPU's is within an ulp.)
  if (compute == SPMD_F64 ? big < tiny * 0x1p63 : big < tiny * 0x1p31)
    allowed = std::max(allowed, big * (compute == SPMD_F64 ? 0x1p-40 : 0x1p-16));
  if (d == SPMD_F16 || d == SPMD_BF16) allowed += ulp_of(d, big);  // one rounding to 16 bits apart
  return std::fabs(w - g) <= allowed;
}

// Strides of an operand of the result shape: dense, broadcast along some
// dimensions, or a transposed dense block. kind 3 is a scalar (no memory).
inline Shape operand_strides(const Shape &shape, int kind, Rng &r) {
  const size_t n = shape.size();
  Shape st(n, 0);
  if (kind == 0 || kind == 1) {
    int64_t s = 1;
    for (size_t d = n; d-- > 0;) {
      const bool broadcast = kind == 1 && r.below(2) == 0;
      st[d] = broadcast ? 0 : s;
      if (!broadcast) s *= shape[d];
    }
  } else if (kind == 2) {
    std::vector<size_t> perm(n);
    for (size_t i = 0; i < n; ++i) perm[i] = i;
    for (size_t i = n; i > 1; --i) std::swap(perm[i - 1], perm[static_cast<size_t>(r.below(static_cast<int64_t>(i)))]);
    int64_t s = 1;
    for (size_t j = n; j-- > 0;) {
      st[perm[j]] = s;
      s *= shape[perm[j]];
    }
  }
  return st;
}

// A scalar as JAX rounds a Python number to the operand's type.
inline double rounded_scalar(spmd_dtype d, Rng &r) {
  unsigned char b[8];
  random_element(d, r, b);
  return load_as_double(d, b);
}

struct EwCase {
  ew::Params p;
  std::vector<Bytes> in;
};

inline EwCase make_case(Op op, spmd_dtype compute, spmd_dtype out, const spmd_dtype (&dt)[3], Rng &r) {
  EwCase c;
  ew::Params &p = c.p;
  p.op = op;
  p.compute = compute;
  p.out = out;
  p.nin = ew::arity(op);
  const size_t nd = static_cast<size_t>(r.below(5));
  for (size_t d = 0; d < nd; ++d) p.shape.push_back(1 + r.below(r.below(4) == 0 ? 2 : 9));
  if (r.below(40) == 0 && nd) p.shape[0] = 0;
  c.in.resize(3);
  for (int i = 0; i < p.nin; ++i) {
    const int kind = static_cast<int>(r.below(p.nin > 1 ? 4 : 3));
    p.in[i].dtype = dt[i];
    p.in[i].strides = operand_strides(p.shape, kind, r);
    if (kind == 3) {
      p.in[i].scalar = true;
      p.in[i].value = rounded_scalar(dt[i], r);
      continue;
    }
    c.in[static_cast<size_t>(i)] = random_elements(dt[i], std::max<size_t>(ew::input_elements(p, i), 1), r);
  }
  return c;
}


// The dtypes each computing type reads and writes (as the global ops set
// them, and a little beyond).
inline std::vector<spmd_dtype> inputs_of(spmd_dtype compute) {
  std::vector<spmd_dtype> all(std::begin(kIntegers), std::end(kIntegers));
  all.push_back(SPMD_BOOL);
  if (compute != SPMD_I64) all.insert(all.begin(), {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16});
  return all;
}
inline std::vector<spmd_dtype> outputs_of(spmd_dtype compute, Op op) {
  if (ew::is_comparison(op)) return {SPMD_BOOL};
  if (op == Op::Copy) return std::vector<spmd_dtype>(std::begin(kAll), std::end(kAll));
  if (compute == SPMD_F32) return {SPMD_F32, SPMD_F16, SPMD_BF16};
  if (compute == SPMD_F64) return {SPMD_F64, SPMD_F32};
  std::vector<spmd_dtype> ints(std::begin(kIntegers), std::end(kIntegers));
  ints.push_back(SPMD_BOOL);
  return ints;
}


// ---- chains of elementwise passes (a program's fused groups) ----

struct ChainCase {
  ew::Chain chain;
  int64_t n = 0;          // elements of each input and of the result
  std::vector<Bytes> in;  // the chain's inputs
};

// A random chain of 1 to `max_steps` steps over n elements: each step an
// op in a type that takes it, its operands the chain's inputs, earlier
// steps' results (the first operand never a scalar) or scalars, so that
// types change along the chain (f32 to f16, floats to integers, to bool).
inline ChainCase random_chain(Rng &r, int64_t n, int max_steps) {
  ChainCase c;
  c.n = n;
  c.in.resize(3);
  c.chain.nin = 1 + static_cast<int>(r.below(3));
  for (int k = 0; k < c.chain.nin; ++k) {
    const spmd_dtype d = kAll[r.below(static_cast<int64_t>(sizeof kAll / sizeof kAll[0]))];
    c.chain.in_dtype[k] = d;
    c.in[static_cast<size_t>(k)] = random_elements(d, static_cast<size_t>(std::max<int64_t>(n, 1)), r);
  }
  std::vector<Op> ops(std::begin(kUnary), std::end(kUnary));
  ops.insert(ops.end(), std::begin(kBinary), std::end(kBinary));
  ops.push_back(Op::Select);
  const spmd_dtype computes[] = {SPMD_F32, SPMD_F32, SPMD_F64, SPMD_I64};
  const int steps = 1 + static_cast<int>(r.below(max_steps));
  for (int s = 0; s < steps; ++s) {
    ew::ChainStep step;
    ew::Params &p = step.params;
    do {
      p.compute = computes[r.below(4)];
      p.op = ops[static_cast<size_t>(r.below(static_cast<int64_t>(ops.size())))];
    } while (!dev::ew::takes(p.op, p.compute));
    const auto outs = outputs_of(p.compute, p.op);
    p.out = outs[static_cast<size_t>(r.below(static_cast<int64_t>(outs.size())))];
    p.nin = ew::arity(p.op);
    p.shape = {n};
    for (int k = 0; k < p.nin; ++k) {
      const int64_t pick = r.below(4);
      if (k > 0 && pick == 0) {
        const auto ins = inputs_of(p.compute);
        p.in[k].dtype = ins[static_cast<size_t>(r.below(static_cast<int64_t>(ins.size())))];
        p.in[k].scalar = true;
        p.in[k].value = rounded_scalar(p.in[k].dtype, r);
        p.in[k].strides = {0};
        continue;
      }
      if (s > 0 && pick >= 2) {
        const int earlier = static_cast<int>(r.below(s));
        step.from[k] = -earlier - 1;
        p.in[k].dtype = c.chain.steps[static_cast<size_t>(earlier)].params.out;
      } else {
        step.from[k] = static_cast<int>(r.below(c.chain.nin));
        p.in[k].dtype = c.chain.in_dtype[step.from[k]];
      }
      p.in[k].strides = {1};
    }
    c.chain.steps.push_back(step);
  }
  return c;
}

// The chain's steps one at a time through the elementwise body, each
// result a buffer of its own: what the unfused ops compute.
inline Bytes chain_by_steps(const ChainCase &c) {
  std::vector<Bytes> results;
  for (const ew::ChainStep &step : c.chain.steps) {
    const ew::Params &p = step.params;
    const dev::ew::Plan plan = dev::ew::make_plan(p);
    const unsigned char *in[3] = {nullptr, nullptr, nullptr};
    for (int k = 0; k < p.nin; ++k) {
      if (p.in[k].scalar) continue;
      const int f = step.from[k];
      in[k] = f >= 0 ? c.in[static_cast<size_t>(f)].data() : results[static_cast<size_t>(-f - 1)].data();
    }
    Bytes out(static_cast<size_t>(std::max<int64_t>(c.n, 1)) * dtype_size(p.out), 0x5a);
    if (c.n > 0) {
      switch (p.compute) {
        case SPMD_F32: dev::ew::run_strided<float>(plan, out.data(), in, 0, 1); break;
        case SPMD_F64: dev::ew::run_strided<double>(plan, out.data(), in, 0, 1); break;
        default: dev::ew::run_strided<int64_t>(plan, out.data(), in, 0, 1); break;
      }
    }
    results.push_back(std::move(out));
  }
  return results.back();
}

inline std::string chain_text(const ChainCase &c) {
  std::string t = std::to_string(c.n) + " elements:";
  for (const ew::ChainStep &s : c.chain.steps)
    t += std::string(" ") + ew::op_name(s.params.op) + "(" + dtype_name(s.params.compute) + " to " +
         dtype_name(s.params.out) + ")";
  return t;
}

// The reduction as the CUDA kernels compute it with `lanes` lanes per team
// and each output's elements cut into `parts` parts (dev::red::Teams).
struct BodySplit {
  int lanes = 1;
  int parts = 1;
  int64_t part_len = 0;  // 0: the reduced elements over `parts`, rounded up
};

template <typename K, typename A>
inline void reduce_body(const dev::red::Plan &plan, const unsigned char *in, BodySplit split,
                        unsigned char *out) {
  const int64_t part_len = split.part_len > 0 ? split.part_len : (plan.reduced + split.parts - 1) / split.parts;
  const int parts = split.parts > 1 ? static_cast<int>((plan.reduced + part_len - 1) / part_len) : 1;
  for (int64_t o = 0; o < plan.outputs; ++o)
    dev::red::reduce_output<K, A>(plan, in, o, split.lanes, parts, part_len, out);
}

template <typename A>
inline void reduce_typed(const dev::red::Plan &plan, const unsigned char *in, BodySplit split, unsigned char *out) {
  switch (plan.op) {
    case red::Op::Sum: return reduce_body<dev::red::Sum<A>, A>(plan, in, split, out);
    case red::Op::Max:
    case red::Op::Min: return reduce_body<dev::red::Extreme<A>, A>(plan, in, split, out);
    case red::Op::ArgMax: return reduce_body<dev::red::ArgMax<A>, A>(plan, in, split, out);
    case red::Op::ArgMin: return reduce_body<dev::red::ArgMin<A>, A>(plan, in, split, out);
    case red::Op::CumSum: return;  // run_cumsum_body
  }
}

inline void run_reduce_body(const dev::red::Plan &plan, const unsigned char *in, BodySplit split, unsigned char *out) {
  switch (dev::red::acc_type(plan.in)) {
    case dev::red::AccType::F32: return reduce_typed<float>(plan, in, split, out);
    case dev::red::AccType::F64: return reduce_typed<double>(plan, in, split, out);
    case dev::red::AccType::I64: return reduce_typed<int64_t>(plan, in, split, out);
  }
}

// The running sum as the CUDA kernel computes it: every line through the
// scan body, in A.
inline void run_cumsum_body(const red::Params &p, const unsigned char *in, unsigned char *out) {
  const dev::scan::Lines l = dev::scan::lines_of(p);
  for (int64_t line = 0; line < l.count(); ++line) {
    switch (dev::red::acc_type(p.in)) {
      case dev::red::AccType::F32: dev::scan::cumsum_line<float>(p.in, p.out, l, line, in, out); break;
      case dev::red::AccType::F64: dev::scan::cumsum_line<double>(p.in, p.out, l, line, in, out); break;
      case dev::red::AccType::I64: dev::scan::cumsum_line<int64_t>(p.in, p.out, l, line, in, out); break;
    }
  }
}

// A cumsum case: dtype `in`, a random shape of ranks 1 to 3 whose scanned
// dimension's length is one of those that end a level of the scan (16,
// 256, 4096) or pass it by one, or small. Its result type is jnp.cumsum's
// (bool sums to int32, the rest keep their type).
inline red::Params random_cumsum(spmd_dtype in, Rng &r) {
  static const int64_t lengths[] = {0, 1, 2, 15, 16, 17, 31, 255, 256, 257, 4095, 4096, 4097, 70001};
  red::Params p;
  p.op = red::Op::CumSum;
  p.in = in;
  p.out = in == SPMD_BOOL ? SPMD_I32 : in;
  const size_t nd = 1 + static_cast<size_t>(r.below(3));
  const auto axis = static_cast<size_t>(r.below(static_cast<int64_t>(nd)));
  const int64_t len = lengths[r.below(static_cast<int64_t>(sizeof lengths / sizeof lengths[0]))];
  for (size_t d = 0; d < nd; ++d) {
    p.shape.push_back(d == axis ? len : 1 + r.below(len > 4000 ? 3 : 7));
    p.reduced.push_back(d == axis);
  }
  return p;
}

// Notes every element of `got` whose bits are not the CPU's `want`, but for
// which NaN a sum of two NaNs keeps (the host compiler may put either
// operand first, and x86 keeps the first's).
inline void compare_cumsum(const red::Params &p, const Bytes &want, const Bytes &got,
                           const std::string &who, Mismatches &bad) {
  const size_t os = dtype_size(p.out);
  for (int64_t i = 0; i < shape_elements(p.shape); ++i) {
    const unsigned char *w = want.data() + i * static_cast<int64_t>(os);
    const unsigned char *g = got.data() + i * static_cast<int64_t>(os);
    if (std::memcmp(w, g, os) == 0) continue;
    if (is_float(p.out) && nan_at(p.out, w) && nan_at(p.out, g)) continue;
    bad.note(std::string("cumsum of ") + dtype_name(p.in) + " " + shape_text(p.shape) + " " + who +
             " element " + std::to_string(i) + ": cpu " + hex(w, os) + " got " + hex(g, os));
    return;
  }
}

// ---- scatter_add ----

// A scatter_add case of dtype d (not bool): a block of random sizes at a
// random offset along an axis up to twice its length, indices from below
// -axis_size to past it, often repeating (so elements add several
// updates), and random elements, the float ones full of special values.
struct ScatterCase {
  scatter_add::Params p;
  Bytes x, indices, updates;
};

inline ScatterCase random_scatter_add(spmd_dtype d, Rng &r) {
  ScatterCase c;
  scatter_add::Params &p = c.p;
  p.dtype = d;
  p.index_dtype = kIntegers[r.below(std::size(kIntegers))];
  p.pre = 1 + r.below(4);
  p.post = 1 + r.below(5);
  p.len = r.below(9);
  p.start = r.below(p.len + 1);
  p.axis_size = p.start + p.len + r.below(p.len + 1);
  p.count = r.below(40);
  c.x = random_elements(d, static_cast<size_t>(scatter_add::out_elements(p)), r);
  c.updates = random_elements(d, static_cast<size_t>(p.pre * p.count * p.post), r);
  c.indices.assign(static_cast<size_t>(p.count) * 8 + 16, 0);
  const int64_t span = std::max<int64_t>(p.axis_size, 1);
  for (int64_t j = 0; j < p.count; ++j) {
    const int64_t i = r.below(3 * span + 4) - span - 2;
    unsigned char *at = c.indices.data() + j * static_cast<int64_t>(dtype_size(p.index_dtype));
    if (p.index_dtype == SPMD_I64) dev::store_as(at, i);
    else if (p.index_dtype == SPMD_I32) dev::store_as(at, static_cast<int32_t>(i));
    else *at = static_cast<unsigned char>(i < 0 ? -i : i);
  }
  return c;
}

// The result as the CUDA kernel computes it: every element through the body.
inline void run_scatter_add_body(const ScatterCase &c, unsigned char *out) {
  for (int64_t e = 0; e < scatter_add::out_elements(c.p); ++e)
    dev::scatter_add::element(c.p, e, out, c.x.data(), c.indices.data(), c.updates.data());
}

// Notes the first element of `got` whose bits are not the CPU's `want`.
inline void compare_scatter_add(const ScatterCase &c, const Bytes &want, const Bytes &got,
                                const std::string &who, Mismatches &bad) {
  const size_t es = dtype_size(c.p.dtype);
  for (int64_t i = 0; i < scatter_add::out_elements(c.p); ++i) {
    const unsigned char *w = want.data() + i * static_cast<int64_t>(es);
    const unsigned char *g = got.data() + i * static_cast<int64_t>(es);
    if (std::memcmp(w, g, es) == 0) continue;
    bad.note(std::string("scatter_add of ") + dtype_name(c.p.dtype) + " " + who + " element " +
             std::to_string(i) + ": cpu " + hex(w, es) + " got " + hex(g, es));
    return;
  }
}

// ---- elementwise: the CPU's result, and the comparison ----

// The CPU kernel's result for a case (with 16 bytes of slack).
inline Bytes cpu_elementwise(const EwCase &c) {
  const int64_t n = std::max<int64_t>(shape_elements(c.p.shape), 0);
  Bytes want(static_cast<size_t>(n) * dtype_size(c.p.out) + 16, 0x5a);
  const void *in[3] = {c.in[0].data(), c.in[1].data(), c.in[2].data()};
  ew::run(c.p, want.data(), in);
  return want;
}

// Notes every element of `got` (from `who`) that may not stand for the
// CPU's `want`: bits equal, or within the op's bound for the
// transcendental functions, with two exceptions the CPU's own bits allow.
inline void compare_elementwise(const EwCase &c, const Bytes &want, const Bytes &got,
                                const char *who, Mismatches &bad) {
  const ew::Params &p = c.p;
  const int64_t n = shape_elements(p.shape);
  const size_t os = dtype_size(p.out);
  const dev::ew::Plan plan = dev::ew::make_plan(p);
  const bool approx = transcendental(p.op) && (p.compute == SPMD_F32 || p.compute == SPMD_F64);
  int noted = 0;
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char *w = want.data() + i * static_cast<int64_t>(os);
    const unsigned char *g = got.data() + i * static_cast<int64_t>(os);
    if (!std::memcmp(w, g, os)) continue;
    // The element's operands, for the message and the exceptions below.
    int64_t off[3];
    dev::ew::offsets(plan, i, off);
    std::string operands;
    int nans = 0;
    double x = 0;
    unsigned char v[3][8] = {};
    for (int k = 0; k < p.nin; ++k) {
      const size_t es = dtype_size(p.in[k].dtype);
      if (p.in[k].scalar) store_from_double(p.in[k].dtype, p.in[k].value, v[k]);
      else std::memcpy(v[k], c.in[static_cast<size_t>(k)].data() + off[k] * static_cast<int64_t>(es), es);
      nans += nan_at(p.in[k].dtype, v[k]);
      if (k == 0) x = value_of(p.in[k].dtype, v[k]);
      operands += std::string(" ") + dtype_name(p.in[k].dtype) + ":" + hex(v[k], es);
    }
    if (approx && close_enough(p.op, p.compute, p.out, w, g, x)) continue;
    // Two NaN operands: x86 returns the first source's, whichever the
    // compiler made first.
    if (nans >= 2 && nan_at(p.out, w) && nan_at(p.out, g)) continue;
    if (++noted > 3) {  // a few per case, so that other cases show too
      ++bad.count;
      continue;
    }
    bad.note(std::string(ew::op_name(p.op)) + " in " + dtype_name(p.compute) + " to " +
             dtype_name(p.out) + " shape " + shape_text(p.shape) + " element " +
             std::to_string(i) + ":" + operands + " cpu " + hex(w, os) + " " + who + " " + hex(g, os));
  }
}

// ---- reductions: cases and the comparison ----

// A reduction of `in` by `op` over a random shape (ranks 0 to 4, sizes 0
// and 1 among them, some long) and random axes; ArgMax and ArgMin over one
// axis. Returns false when the draw has no case (an arg-reduction of a scalar).
inline bool random_reduction(red::Op op, spmd_dtype in, int trial, Rng &r, red::Params &p) {
  p = red::Params{};
  p.op = op;
  p.in = in;
  p.out = red::is_arg(op) ? SPMD_I32 : op == red::Op::Sum ? sum_result(in) : in;
  if (op == red::Op::Sum && (in == SPMD_F16 || in == SPMD_BF16) && trial % 2) p.out = SPMD_F32;
  const size_t nd = static_cast<size_t>(r.below(5));
  for (size_t d = 0; d < nd; ++d)
    p.shape.push_back(r.below(r.below(5) == 0 ? 2 : (trial % 5 == 0 ? 300 : 9)));
  if (trial % 7 == 0)
    for (auto &s : p.shape) s = std::max<int64_t>(s, 1);
  if (red::is_arg(op)) {
    if (nd == 0) return false;
    p.reduced.assign(nd, false);
    p.reduced[static_cast<size_t>(r.below(static_cast<int64_t>(nd)))] = true;
  } else {
    for (size_t d = 0; d < nd; ++d) p.reduced.push_back(r.below(2) == 0);
  }
  // Bounded in outputs too: an empty input can have millions of them (a
  // (244, 235, 207, 0) reduced over its empty dimension), each of which
  // the body's model folds once per lane and split.
  return shape_elements(p.shape) <= 200000 && red::out_elements(p) <= 200000;
}

// Input for a reduction case. Sums of int64 stay clear of overflow: the CPU
// kernel adds its eight partial sums of a row with signed arithmetic
// (kernels/reduce_axes.cpp, fold), which UBSan stops on; with that made
// wrapping, full-range int64 can come back here.
inline Bytes reduction_input(const red::Params &p, Rng &r) {
  const auto n = static_cast<size_t>(shape_elements(p.shape));
  Bytes x = random_elements(p.in, n, r);
  if (p.op == red::Op::Sum && p.in == SPMD_I64)
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = dev::load_as<int64_t>(x.data() + i * 8);
      dev::store_as(x.data() + i * 8, v / (int64_t{1} << 24));
    }
  return x;
}

// Notes every output of `got` that may not stand for the CPU's `want`:
// bits equal, except a float sum in another order (within n roundings of
// the sum of magnitudes, and one rounding to a 16-bit result).
inline void compare_reduction(const red::Params &p, const Bytes &x, const Bytes &want,
                              const Bytes &got, const std::string &who, Mismatches &bad) {
  const dev::red::Plan plan = dev::red::make_plan(p);
  const int64_t outs = red::out_elements(p);
  const size_t os = dtype_size(p.out);
  const bool float_sum = p.op == red::Op::Sum && is_float(p.in);
  for (int64_t o = 0; o < outs; ++o) {
    const unsigned char *w = want.data() + o * static_cast<int64_t>(os);
    const unsigned char *g = got.data() + o * static_cast<int64_t>(os);
    if (!std::memcmp(w, g, os)) continue;
    if (float_sum) {
      const bool wn = nan_at(p.out, w), gn = nan_at(p.out, g);
      const double wv = value_of(p.out, w), gv = value_of(p.out, g);
      if (wn || gn) {
        if (wn && gn) continue;
      } else if (std::isinf(wv) || std::isinf(gv)) {
        if (wv == gv) continue;
      } else {
        double magnitude = 0;
        const int64_t base = dev::red::kept_offset(plan, o);
        const auto es = static_cast<int64_t>(dtype_size(p.in));
        for (int64_t q = 0; q < plan.reduced; ++q)
          magnitude += std::fabs(value_of(p.in, x.data() + (base + dev::red::red_offset(plan, q)) * es));
        const double eps = p.in == SPMD_F64 ? 0x1p-53 : 0x1p-24;
        const double tiny = p.in == SPMD_F64 ? std::numeric_limits<double>::min()
                                             : std::numeric_limits<float>::min();
        double allowed = 2.0 * static_cast<double>(plan.reduced) * eps * magnitude + 4 * tiny;
        if (p.out == SPMD_F16 || p.out == SPMD_BF16)
          allowed += ulp_of(p.out, std::max(std::fabs(wv), std::fabs(gv)));
        if (std::fabs(wv - gv) <= allowed) continue;
      }
    }
    bad.note(std::string(red::op_name(p.op)) + " of " + dtype_name(p.in) + " " +
             shape_text(p.shape) + " " + who + " output " + std::to_string(o) + ": cpu " +
             hex(w, os) + " got " + hex(g, os));
  }
}

}  // namespace kernel_checks
