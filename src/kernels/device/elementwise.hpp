// The elementwise kernel's per-element body (kernels/elementwise.hpp): each
// operand converted to the type the op computes in, combined, and stored
// converted to the result's type, with the bits kernels/elementwise.cpp
// gives. Those run under DAZ and FTZ for float computations, and their
// transcendental functions are SLEEF's; here they are the C library's on
// the host and CUDA's on the device (a few ulps apart, see the test), and
// everything else is exact.
#pragma once

#include "kernels/device/cpu_float.hpp"
#include "kernels/elementwise.hpp"

namespace spmd::dev::ew {

using Op = spmd::ew::Op;

constexpr int kMaxDims = 16;  // as kernels/elementwise.cpp

// What a kernel needs to know, passed by value: the result's dimensions
// with neighbours every operand walks contiguously merged, each operand's
// strides over them, and the scalars.
struct Plan {
  Op op = Op::Copy;
  spmd_dtype out = SPMD_F32;
  spmd_dtype compute = SPMD_F32;
  int nin = 1;
  int nd = 1;
  int64_t count = 0;  // elements of the result
  int64_t dims[kMaxDims] = {};
  int64_t strides[3][kMaxDims] = {};  // elements; all 0 for scalars and absent operands
  spmd_dtype in[3] = {SPMD_F32, SPMD_F32, SPMD_F32};
  bool scalar[3] = {false, false, false};
  double value[3] = {0, 0, 0};
};

SPMD_HD bool comparison(Op op) { return op >= Op::Eq && op <= Op::Ge; }

// Whether a computation in `compute` takes the op (as kernels/elementwise.cpp:
// integers have no division or transcendental functions).
SPMD_HD bool takes(Op op, spmd_dtype compute) {
  if (compute == SPMD_F32 || compute == SPMD_F64) return true;
  switch (op) {
    case Op::Copy: case Op::Neg: case Op::Abs: case Op::Relu: case Op::Add: case Op::Sub:
    case Op::Mul: case Op::Max: case Op::Min: case Op::Pow: case Op::Select:
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return true;
    default:
      return false;
  }
}

// The plan of a descriptor, collapsed as kernels/elementwise.cpp collapses
// it (unit dimensions dropped, neighbours merged). Host only.
inline Plan make_plan(const spmd::ew::Params &p) {
  Plan l;
  l.op = p.op;
  l.out = p.out;
  l.compute = p.compute;
  l.nin = p.nin;
  l.count = 1;
  for (int64_t s : p.shape) l.count *= s;
  for (int i = 0; i < p.nin; ++i) {
    l.in[i] = p.in[i].dtype;
    l.scalar[i] = p.in[i].scalar;
    l.value[i] = p.in[i].value;
  }
  int nd = 0;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    if (p.shape[d] == 1) continue;
    const auto stride = [&](int i) { return p.in[i].scalar ? 0 : p.in[i].strides[d]; };
    bool merge = nd > 0;
    for (int i = 0; merge && i < p.nin; ++i)
      merge = l.strides[i][nd - 1] == stride(i) * p.shape[d];
    if (merge) {
      l.dims[nd - 1] *= p.shape[d];
      for (int i = 0; i < p.nin; ++i) l.strides[i][nd - 1] = stride(i);
      continue;
    }
    l.dims[nd] = p.shape[d];
    for (int i = 0; i < p.nin; ++i) l.strides[i][nd] = stride(i);
    ++nd;
  }
  if (nd == 0) {
    nd = 1;
    l.dims[0] = 1;
  }
  l.nd = nd;
  return l;
}

// Element offsets of the operands for row q of the result (its index over
// every dimension but the innermost), divisions in 32 bits where the
// result's size allows (several times faster on a GPU).
SPMD_HD void row_offsets(const Plan &p, int64_t q, int64_t off[3]) {
  off[0] = off[1] = off[2] = 0;
  const int inner = p.nd - 1;
  if (inner == 0) return;
  if (p.count <= 0xffffffffll) {
    auto u = static_cast<uint32_t>(q);
    for (int d = inner - 1; d > 0; --d) {
      const auto n = static_cast<uint32_t>(p.dims[d]);
      const uint32_t t = u / n;
      const int64_t r = u - t * n;
      SPMD_UNROLL
      for (int k = 0; k < 3; ++k) off[k] += r * p.strides[k][d];
      u = t;
    }
    q = u;
  } else {
    for (int d = inner - 1; d > 0; --d) {
      const int64_t t = q / p.dims[d];
      const int64_t r = q - t * p.dims[d];
      SPMD_UNROLL
      for (int k = 0; k < 3; ++k) off[k] += r * p.strides[k][d];
      q = t;
    }
  }
  SPMD_UNROLL
  for (int k = 0; k < 3; ++k) off[k] += q * p.strides[k][0];
}

// Element offsets of the operands for the result's element i.
SPMD_HD void offsets(const Plan &p, int64_t i, int64_t off[3]) {
  const int64_t n = p.dims[p.nd - 1];
  const int64_t q = i / n;
  row_offsets(p, q, off);
  SPMD_UNROLL
  for (int k = 0; k < 3; ++k) off[k] += (i - q * n) * p.strides[k][p.nd - 1];
}

// ---- conversions ----

// base/dtype.cpp's store_from_double, under DAZ and FTZ (`ftz`, as inside
// the float kernels) or not.
SPMD_HD void store_double(spmd_dtype d, double v, unsigned char *p, bool ftz) {
  switch (d) {
    case SPMD_F32: store_as(p, ftz ? narrow_ftz(v) : narrow(v)); return;
    case SPMD_F64: store_as(p, v); return;
    case SPMD_F16: store_as(p, f32_to_f16_bits(ftz ? narrow_ftz(v) : narrow(v))); return;
    case SPMD_BF16: store_as(p, f32_to_bf16_bits(ftz ? narrow_ftz(v) : narrow(v))); return;
    case SPMD_BOOL: break;
    default: store_int(d, to_integer(d, v), p); return;  // the integer types
  }
  *p = (ftz ? daz(v) : v) != 0.0;
}

// base/dtype.cpp's load_as_double (no DAZ).
SPMD_HD double load_double(spmd_dtype d, const unsigned char *p) {
  switch (d) {
    case SPMD_F32: return widen(load_as<float>(p));
    case SPMD_F64: return load_as<double>(p);
    case SPMD_F16: return widen(f16_bits_to_f32(load_as<uint16_t>(p)));
    case SPMD_BF16: return widen(bf16_bits_to_f32(load_as<uint16_t>(p)));
    case SPMD_BOOL: return static_cast<double>(*p);  // the byte, as base/dtype.cpp reads it
    default: return static_cast<double>(load_int(d, p));  // integers
  }
}

// One operand element as the compute type, as the CPU kernel's fetch
// converts it.
template <typename T>
SPMD_HD T from_memory(spmd_dtype d, const unsigned char *p) {
  if constexpr (sizeof(T) == 4) {  // float, under DAZ and FTZ
    switch (d) {
      case SPMD_F32: return load_as<float>(p);
      case SPMD_F64: return narrow_ftz(load_as<double>(p));
      case SPMD_F16: return f16_bits_to_f32(load_as<uint16_t>(p));
      case SPMD_BF16: return bf16_bits_to_f32(load_as<uint16_t>(p));
      default: return static_cast<float>(load_int(d, p));  // integers and bool
    }
  } else if constexpr (std::is_same_v<T, double>) {  // under DAZ and FTZ
    switch (d) {
      case SPMD_F32: return widen_daz(load_as<float>(p));
      case SPMD_F64: return load_as<double>(p);
      case SPMD_F16: return widen_daz(f16_bits_to_f32(load_as<uint16_t>(p)));
      case SPMD_BF16: return widen_daz(bf16_bits_to_f32(load_as<uint16_t>(p)));
      default: return static_cast<double>(load_int(d, p));  // integers and bool
    }
  } else {  // int64: floats truncated as x86 does
    switch (d) {
      case SPMD_F32: return truncate_x86(widen(load_as<float>(p)));
      case SPMD_F64: return truncate_x86(load_as<double>(p));
      case SPMD_F16: return truncate_x86(widen(f16_bits_to_f32(load_as<uint16_t>(p))));
      case SPMD_BF16: return truncate_x86(widen(bf16_bits_to_f32(load_as<uint16_t>(p))));
      default: return load_int(d, p);  // integers and bool
    }
  }
}

// A scalar operand (a double already rounded to its dtype) as the compute type.
template <typename T>
SPMD_HD T from_scalar(double v) {
  if constexpr (sizeof(T) == 4) return narrow_ftz(v);
  else if constexpr (std::is_same_v<T, double>) return v;
  else return truncate_x86(v);
}

// The result converted to the result's type, as the CPU kernel's store.
template <typename T>
SPMD_HD void to_memory(spmd_dtype d, T v, unsigned char *p) {
  if constexpr (sizeof(T) == 4) {
    switch (d) {
      case SPMD_F32: store_as(p, v); return;
      case SPMD_F16: store_as(p, f32_to_f16_bits(v)); return;
      case SPMD_BF16: store_as(p, f32_to_bf16_bits(v)); return;
      default: store_double(d, widen_daz(v), p, true); return;
    }
  } else if constexpr (std::is_same_v<T, double>) {
    store_double(d, v, p, true);
  } else {  // int64, wrapped to the result's width; no FTZ for integer computations
    if (integer_dtype(d) || d == SPMD_BOOL) store_int(d, v, p);
    else store_double(d, static_cast<double>(v), p, false);
  }
}

// ---- the ops ----

template <typename T>
SPMD_HD bool compare(Op op, T a, T b) {
  if constexpr (!std::is_same_v<T, int64_t>) {
    a = daz(a);
    b = daz(b);
  }
  switch (op) {
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    default: return a >= b;
  }
}

// jnp.maximum / jnp.minimum: the CPU loops' body (kernels/device/cpu_float.hpp).
template <typename T>
SPMD_HD T maximum(T a, T b) {
  return ieee_extremum<T, true>(a, b);
}
template <typename T>
SPMD_HD T minimum(T a, T b) {
  return ieee_extremum<T, false>(a, b);
}

// A function of the C library / CUDA on a DAZ operand, its result flushed.
template <typename T>
SPMD_HD T flushed_exp(T a) { return daz(m::exp(daz(a))); }

template <typename T>
SPMD_HD T apply(Op op, T a, T b, T c) {
  switch (op) {
    case Op::Copy: return a;
    case Op::Neg: return neg(a);
    case Op::Abs: return abs_of(a);
    case Op::Relu: return (is_nan(a) || daz(a) > T(0)) ? a : T(0);  // jnp.maximum(x, 0)
    case Op::Exp: return flushed_exp(a);
    case Op::Log: return daz(m::log(daz(a)));
    case Op::Sin: return daz(m::sin(daz(a)));
    case Op::Cos: return daz(m::cos(daz(a)));
    case Op::Tanh: return daz(m::tanh(daz(a)));
    case Op::Sqrt: return sqrt_of(a);
    case Op::Rsqrt: return div(T(1), sqrt_of(a));  // XLA's rsqrt: 1 / sqrt(x), two roundings
    case Op::Logistic: return div(T(1), add(T(1), flushed_exp(neg(a))));  // 1 / (1 + exp(-x))
    case Op::GeluTanh: {
      // x * (0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))), each step rounded in T
      const T x3 = mul(a, mul(a, a));
      const T u = mul(static_cast<T>(0.79788456080286535588), add(a, mul(static_cast<T>(0.044715), x3)));
      const T t = daz(m::tanh(daz(u)));
      return mul(a, mul(T(0.5), add(T(1), t)));
    }
    case Op::GeluExact: {  // 0.5 * x * erfc(-x * sqrt(1/2))
      const T u = mul(neg(a), static_cast<T>(0.70710678118654752440));
      return mul(mul(T(0.5), a), daz(m::erfc(daz(u))));
    }
    case Op::Add: return add(a, b);
    case Op::Sub: return sub(a, b);
    case Op::Mul: return mul(a, b);
    case Op::Div: return div(a, b);
    case Op::Max: return maximum(a, b);
    case Op::Min: return minimum(a, b);
    case Op::Pow: return daz(m::pow(daz(a), daz(b)));
    case Op::Select: return daz(a) != T(0) ? b : c;
    default: return a;  // comparisons are not applied
  }
}

// Integer pow as kernels/elementwise.cpp: by squaring, wrapping; negative
// exponents give 0 except for bases 1 and -1.
SPMD_HD int64_t ipow(int64_t base, int64_t e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, b = static_cast<uint64_t>(base);
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<int64_t>(r);
}

// Integers and bool in int64, wrapping.
SPMD_HD int64_t apply(Op op, int64_t a, int64_t b, int64_t c) {
  using U = uint64_t;
  switch (op) {
    case Op::Neg: return static_cast<int64_t>(U(0) - U(a));
    case Op::Abs: return a < 0 ? static_cast<int64_t>(U(0) - U(a)) : a;
    case Op::Relu: return a > 0 ? a : 0;
    case Op::Add: return static_cast<int64_t>(U(a) + U(b));
    case Op::Sub: return static_cast<int64_t>(U(a) - U(b));
    case Op::Mul: return static_cast<int64_t>(U(a) * U(b));
    case Op::Max: return a > b ? a : b;
    case Op::Min: return a < b ? a : b;
    case Op::Pow: return ipow(a, b);
    case Op::Select: return a != 0 ? b : c;
    default: return a;  // Copy; what integers do not take is refused before launch
  }
}

// One element of the result at `o`, the operands' elements at a, b, c
// (null for a scalar operand or one the op does not have). P: a Plan, or
// anything with its op, out, nin, in, scalar and value (a chain's step).
template <typename T, typename P>
SPMD_HD void compute(const P &p, unsigned char *o, const unsigned char *const at[3]) {
  T v[3] = {T(0), T(0), T(0)};
  SPMD_UNROLL
  for (int k = 0; k < 3; ++k)
    if (k < p.nin) v[k] = p.scalar[k] ? from_scalar<T>(p.value[k]) : from_memory<T>(p.in[k], at[k]);
  if (comparison(p.op)) {
    *o = compare(p.op, v[0], v[1]);
    return;
  }
  to_memory(p.out, apply(p.op, v[0], v[1], v[2]), o);
}

// ---- the loops a thread runs: `first` its index, `step` the thread count ----

// Any layout: each element's operand offsets from its index.
template <typename T>
SPMD_HD void run_strided(const Plan &p, unsigned char *out, const unsigned char *const in[3],
                         int64_t first, int64_t step) {
  const int os = dtype_bytes(p.out);
  int es[3];
  SPMD_UNROLL
  for (int k = 0; k < 3; ++k) es[k] = dtype_bytes(p.in[k]);
  if (p.count <= 0) return;
  // Element i's row q and column c, moved along by the step without a
  // division for the innermost dimension.
  const int inner = p.nd - 1;
  const int64_t n = p.dims[inner];
  const int64_t step_q = step / n, step_c = step - step_q * n;
  int64_t q = first / n, c = first - q * n;
  for (int64_t i = first; i < p.count; i += step) {
    int64_t off[3];
    row_offsets(p, q, off);
    const unsigned char *at[3] = {nullptr, nullptr, nullptr};
    SPMD_UNROLL
    for (int k = 0; k < 3; ++k)
      if (k < p.nin && !p.scalar[k]) at[k] = in[k] + (off[k] + c * p.strides[k][inner]) * es[k];
    compute<T>(p, out + i * os, at);
    q += step_q;
    c += step_c;
    if (c >= n) {
      c -= n;
      ++q;
    }
  }
}

// ---- the common case in 16-byte words ----

// The type a computation stores natively: f32, f64, int64.
SPMD_HD spmd_dtype native(spmd_dtype compute) {
  return compute == SPMD_F32 || compute == SPMD_F64 ? compute : SPMD_I64;
}

// Whether run_words takes the plan: one dimension; the result and every
// operand in memory of the computing type itself, read with stride 1 or 0
// (one element for all); not a comparison; every pointer the words touch
// aligned to 16 bytes. (f32 + f32 to f32, f64 functions, int64 arithmetic.)
inline bool wordable(const Plan &p, const void *out, const unsigned char *const in[3]) {
  const auto aligned = [](const void *q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  const spmd_dtype t = native(p.compute);
  if (p.nd != 1 || comparison(p.op) || p.out != t || !aligned(out)) return false;
  for (int k = 0; k < p.nin; ++k) {
    if (p.scalar[k]) continue;
    if (p.in[k] != t) return false;
    if (p.strides[k][0] != 0 && (p.strides[k][0] != 1 || !aligned(in[k]))) return false;
  }
  return true;
}

// A 16-byte word of T values (4 f32, 2 f64 or int64) at an aligned p.
template <typename T>
SPMD_HD void load_word(const unsigned char *p, T (&v)[16 / sizeof(T)]) {
#if defined(__CUDA_ARCH__)
  const uint4 w = *reinterpret_cast<const uint4 *>(p);
  const uint32_t u[4] = {w.x, w.y, w.z, w.w};
  if constexpr (sizeof(T) == 4) {
    for (int j = 0; j < 4; ++j) v[j] = __uint_as_float(u[j]);
  } else {
    for (int j = 0; j < 2; ++j) {
      const uint64_t b = (static_cast<uint64_t>(u[2 * j + 1]) << 32) | u[2 * j];
      if constexpr (std::is_same_v<T, double>) v[j] = f64_of(b);
      else v[j] = static_cast<int64_t>(b);
    }
  }
#else
  std::memcpy(v, p, 16);
#endif
}

template <typename T>
SPMD_HD void store_word(unsigned char *p, const T (&v)[16 / sizeof(T)]) {
#if defined(__CUDA_ARCH__)
  uint32_t u[4];
  if constexpr (sizeof(T) == 4) {
    for (int j = 0; j < 4; ++j) u[j] = __float_as_uint(v[j]);
  } else {
    for (int j = 0; j < 2; ++j) {
      uint64_t b;
      if constexpr (std::is_same_v<T, double>) b = bits_of(v[j]);
      else b = static_cast<uint64_t>(v[j]);
      u[2 * j] = static_cast<uint32_t>(b);
      u[2 * j + 1] = static_cast<uint32_t>(b >> 32);
    }
  }
  *reinterpret_cast<uint4 *>(p) = make_uint4(u[0], u[1], u[2], u[3]);
#else
  std::memcpy(p, v, 16);
#endif
}

// A wordable plan: a 16-byte word of every operand and of the result per
// turn, the op applied to each lane (what compute does for these types);
// the last count % (16 / sizeof(T)) elements one by one.
template <typename T>
SPMD_HD void run_words(const Plan &p, unsigned char *out, const unsigned char *const in[3],
                       int64_t first, int64_t step) {
  constexpr int W = 16 / sizeof(T);
  const int64_t words = p.count / W;
  for (int64_t w = first; w < words; w += step) {
    T v[3][W];
    SPMD_UNROLL
    for (int k = 0; k < 3; ++k) {
      if (k < p.nin && !p.scalar[k] && p.strides[k][0] != 0) {
        load_word(in[k] + w * 16, v[k]);
        continue;
      }
      const T one = k >= p.nin ? T(0) : p.scalar[k] ? from_scalar<T>(p.value[k]) : load_as<T>(in[k]);
      SPMD_UNROLL
      for (int j = 0; j < W; ++j) v[k][j] = one;
    }
    T r[W];
    SPMD_UNROLL
    for (int j = 0; j < W; ++j) r[j] = apply(p.op, v[0][j], v[1][j], v[2][j]);
    store_word(out + w * 16, r);
  }
  for (int64_t i = words * W + first; i < p.count; i += step) {
    const unsigned char *at[3] = {nullptr, nullptr, nullptr};
    SPMD_UNROLL
    for (int k = 0; k < 3; ++k)
      if (k < p.nin && !p.scalar[k]) at[k] = in[k] + i * p.strides[k][0] * static_cast<int64_t>(sizeof(T));
    compute<T>(p, out + i * static_cast<int64_t>(sizeof(T)), at);
  }
}

}  // namespace spmd::dev::ew
