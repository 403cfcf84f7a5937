#include "kernels/elementwise.hpp"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "base/promotion.hpp"
#include "kernels/flush_subnormals.hpp"
#include "kernels/vector_math.hpp"


namespace spmd::ew {

int arity(Op op) {
  switch (op) {
#define SPMD_EW_ARITY(o, name, n) case Op::o: return n;
    SPMD_EW_OPS(SPMD_EW_ARITY)
#undef SPMD_EW_ARITY
  }
  return 0;
}

bool is_comparison(Op op) { return op >= Op::Eq && op <= Op::Ge; }

const char *op_name(Op op) {
  switch (op) {
#define SPMD_EW_NAME(o, name, n) case Op::o: return name;
    SPMD_EW_OPS(SPMD_EW_NAME)
#undef SPMD_EW_NAME
  }
  return "?";
}

size_t input_elements(const Params &p, int i) {
  if (p.in[i].scalar) return 0;
  for (int64_t s : p.shape)
    if (s == 0) return 0;
  int64_t last = 0;
  for (size_t d = 0; d < p.shape.size(); ++d) last += (p.shape[d] - 1) * p.in[i].strides[d];
  return static_cast<size_t>(last + 1);
}

namespace {

constexpr size_t kChunk = 1024;
constexpr size_t kMaxDims = 16;


template <typename T, typename S>
void gather(const S *src, int64_t stride, T *dst, size_t m) {
  for (size_t k = 0; k < m; ++k) dst[k] = static_cast<T>(src[static_cast<int64_t>(k) * stride]);
}
template <typename T>
void gather_half(const uint16_t *src, int64_t stride, T *dst, size_t m, bool bf16) {
  for (size_t k = 0; k < m; ++k) {
    const uint16_t h = src[static_cast<int64_t>(k) * stride];
    dst[k] = static_cast<T>(bf16 ? bf16_bits_to_f32(h) : f16_bits_to_f32(h));
  }
}

template <typename T>
constexpr spmd_dtype native() {
  if constexpr (std::is_same_v<T, float>) return SPMD_F32;
  if constexpr (std::is_same_v<T, double>) return SPMD_F64;
  return SPMD_I64;
}

// m values of operand `o` (at p, already offset to the chunk) as T: the
// operand's own memory when it already is a dense run of T, else `buf`.
template <typename T>
const T *fetch(const Operand &o, int64_t stride, const char *p, size_t m, T *buf) {
  if (o.scalar) {
    for (size_t k = 0; k < m; ++k) buf[k] = static_cast<T>(o.value);
    return buf;
  }
  if (stride == 1 && o.dtype == native<T>()) return reinterpret_cast<const T *>(p);
  switch (o.dtype) {
    case SPMD_F32: gather(reinterpret_cast<const float *>(p), stride, buf, m); break;
    case SPMD_F64: gather(reinterpret_cast<const double *>(p), stride, buf, m); break;
    case SPMD_I32: gather(reinterpret_cast<const int32_t *>(p), stride, buf, m); break;
    case SPMD_I64: gather(reinterpret_cast<const int64_t *>(p), stride, buf, m); break;
    case SPMD_U8: gather(reinterpret_cast<const uint8_t *>(p), stride, buf, m); break;
    case SPMD_I8: gather(reinterpret_cast<const int8_t *>(p), stride, buf, m); break;
    case SPMD_I16: gather(reinterpret_cast<const int16_t *>(p), stride, buf, m); break;
    case SPMD_U16: gather(reinterpret_cast<const uint16_t *>(p), stride, buf, m); break;
    case SPMD_U32: gather(reinterpret_cast<const uint32_t *>(p), stride, buf, m); break;
    case SPMD_BOOL:
      for (size_t k = 0; k < m; ++k) buf[k] = p[static_cast<int64_t>(k) * stride] != 0;
      break;
    case SPMD_F16: gather_half(reinterpret_cast<const uint16_t *>(p), stride, buf, m, false); break;
    case SPMD_BF16: gather_half(reinterpret_cast<const uint16_t *>(p), stride, buf, m, true); break;
    default: fail(SPMD_ERR_INTERNAL, "elementwise kernel: operand dtype ", static_cast<int>(o.dtype));
  }
  return buf;
}

// int64 values wrapped to the integer type I, as XLA's integer arithmetic wraps.
template <typename I>
void narrow_ints(const int64_t *v, char *dst, size_t m) {
  for (size_t k = 0; k < m; ++k) {
    const I x = static_cast<I>(v[k]);
    std::memcpy(dst + k * sizeof(I), &x, sizeof(I));
  }
}

template <typename T>
void store(spmd_dtype d, const T *v, char *dst, size_t m) {
  switch (d) {
    case SPMD_F32:
      if constexpr (std::is_floating_point_v<T>) {
        for (size_t k = 0; k < m; ++k) reinterpret_cast<float *>(dst)[k] = static_cast<float>(v[k]);
        return;
      }
      break;
    case SPMD_F64:
      if constexpr (std::is_floating_point_v<T>) {
        for (size_t k = 0; k < m; ++k) reinterpret_cast<double *>(dst)[k] = static_cast<double>(v[k]);
        return;
      }
      break;
    case SPMD_F16:
    case SPMD_BF16:
      if constexpr (std::is_same_v<T, float>) {
        auto *h = reinterpret_cast<uint16_t *>(dst);
        if (d == SPMD_F16)
          for (size_t k = 0; k < m; ++k) h[k] = f32_to_f16_bits(v[k]);
        else
          for (size_t k = 0; k < m; ++k) h[k] = f32_to_bf16_bits(v[k]);
        return;
      }
      break;
    case SPMD_I8: case SPMD_I16: case SPMD_I32: case SPMD_I64:
    case SPMD_U8: case SPMD_U16: case SPMD_U32: case SPMD_BOOL:
      if constexpr (std::is_same_v<T, int64_t>) {
        switch (d) {
          case SPMD_I64: std::memcpy(dst, v, m * sizeof(int64_t)); return;
          case SPMD_I32: return narrow_ints<int32_t>(v, dst, m);
          case SPMD_I16: return narrow_ints<int16_t>(v, dst, m);
          case SPMD_I8: return narrow_ints<int8_t>(v, dst, m);
          case SPMD_U32: return narrow_ints<uint32_t>(v, dst, m);
          case SPMD_U16: return narrow_ints<uint16_t>(v, dst, m);
          case SPMD_U8: return narrow_ints<uint8_t>(v, dst, m);
          default: for (size_t k = 0; k < m; ++k) dst[k] = v[k] != 0; return;
        }
      }
      break;
    default:
      break;
  }
  // The rest (a float to an integer, f64 to a 16-bit float) as jnp.astype.
  const size_t es = dtype_size(d);
  for (size_t k = 0; k < m; ++k) store_from_double(d, static_cast<double>(v[k]), dst + k * es);
}

template <typename T>
void compare(Op op, const T *a, const T *b, char *o, size_t m) {
  switch (op) {
    case Op::Eq: for (size_t k = 0; k < m; ++k) o[k] = a[k] == b[k]; return;
    case Op::Ne: for (size_t k = 0; k < m; ++k) o[k] = a[k] != b[k]; return;
    case Op::Lt: for (size_t k = 0; k < m; ++k) o[k] = a[k] < b[k]; return;
    case Op::Le: for (size_t k = 0; k < m; ++k) o[k] = a[k] <= b[k]; return;
    case Op::Gt: for (size_t k = 0; k < m; ++k) o[k] = a[k] > b[k]; return;
    case Op::Ge: for (size_t k = 0; k < m; ++k) o[k] = a[k] >= b[k]; return;
    default: return;
  }
}

template <typename T>
void select(const T *c, const T *a, const T *b, T *o, size_t m) {
  for (size_t k = 0; k < m; ++k) o[k] = c[k] != 0 ? a[k] : b[k];
}

// One chunk of a float op: the vector tables for the functions, loops here
// for the rest.
template <typename T>
void apply_float(Op op, const T *a, const T *b, const T *c, T *o, size_t m) {
  auto table1 = [](vmath::Fn f) {
    if constexpr (std::is_same_v<T, float>) return vmath::f32(f);
    else return vmath::f64(f);
  };
  auto table2 = [](vmath::Fn2 f) {
    if constexpr (std::is_same_v<T, float>) return vmath::f32(f);
    else return vmath::f64(f);
  };
  switch (op) {
    case Op::Copy: if (o != a) std::memcpy(o, a, m * sizeof(T)); return;
    case Op::Neg: for (size_t k = 0; k < m; ++k) o[k] = -a[k]; return;
    case Op::Abs: for (size_t k = 0; k < m; ++k) o[k] = std::fabs(a[k]); return;
    case Op::Relu:  // jnp.maximum(x, 0)
      for (size_t k = 0; k < m; ++k) o[k] = (a[k] != a[k] || a[k] > T(0)) ? a[k] : T(0);
      return;
    case Op::Exp: return table1(vmath::Fn::Exp)(a, o, m);
    case Op::Log: return table1(vmath::Fn::Log)(a, o, m);
    case Op::Sin: return table1(vmath::Fn::Sin)(a, o, m);
    case Op::Cos: return table1(vmath::Fn::Cos)(a, o, m);
    case Op::Tanh: return table1(vmath::Fn::Tanh)(a, o, m);
    case Op::Sqrt: return table1(vmath::Fn::Sqrt)(a, o, m);
    case Op::Rsqrt: return table1(vmath::Fn::Rsqrt)(a, o, m);
    case Op::Logistic: return table1(vmath::Fn::Logistic)(a, o, m);
    case Op::GeluTanh: return table1(vmath::Fn::GeluTanh)(a, o, m);
    case Op::GeluExact: return table1(vmath::Fn::GeluExact)(a, o, m);
    case Op::Add: return table2(vmath::Fn2::Add)(a, b, o, m);
    case Op::Sub: return table2(vmath::Fn2::Sub)(a, b, o, m);
    case Op::Mul: return table2(vmath::Fn2::Mul)(a, b, o, m);
    case Op::Div: return table2(vmath::Fn2::Div)(a, b, o, m);
    case Op::Max: return table2(vmath::Fn2::Max)(a, b, o, m);
    case Op::Min: return table2(vmath::Fn2::Min)(a, b, o, m);
    case Op::Pow: return table2(vmath::Fn2::Pow)(a, b, o, m);
    case Op::Select: return select(a, b, c, o, m);
    default: fail(SPMD_ERR_INTERNAL, "elementwise kernel: ", op_name(op), " on floats");
  }
}

int64_t ipow(int64_t base, int64_t e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, b = static_cast<uint64_t>(base);
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<int64_t>(r);
}

// Integers and bool, computed in int64 with wrapping arithmetic; stores
// wrap them to the result's width as JAX's integer arithmetic does.
void apply_int(Op op, const int64_t *a, const int64_t *b, const int64_t *c, int64_t *o, size_t m) {
  using U = uint64_t;
  switch (op) {
    case Op::Copy: if (o != a) std::memcpy(o, a, m * sizeof(int64_t)); return;
    case Op::Neg: for (size_t k = 0; k < m; ++k) o[k] = static_cast<int64_t>(U(0) - U(a[k])); return;
    case Op::Abs:
      for (size_t k = 0; k < m; ++k) o[k] = a[k] < 0 ? static_cast<int64_t>(U(0) - U(a[k])) : a[k];
      return;
    case Op::Relu: for (size_t k = 0; k < m; ++k) o[k] = a[k] > 0 ? a[k] : 0; return;
    case Op::Add: for (size_t k = 0; k < m; ++k) o[k] = static_cast<int64_t>(U(a[k]) + U(b[k])); return;
    case Op::Sub: for (size_t k = 0; k < m; ++k) o[k] = static_cast<int64_t>(U(a[k]) - U(b[k])); return;
    case Op::Mul: for (size_t k = 0; k < m; ++k) o[k] = static_cast<int64_t>(U(a[k]) * U(b[k])); return;
    case Op::Max: for (size_t k = 0; k < m; ++k) o[k] = a[k] > b[k] ? a[k] : b[k]; return;
    case Op::Min: for (size_t k = 0; k < m; ++k) o[k] = a[k] < b[k] ? a[k] : b[k]; return;
    case Op::Pow: for (size_t k = 0; k < m; ++k) o[k] = ipow(a[k], b[k]); return;
    case Op::Select: return select(a, b, c, o, m);
    default: fail(SPMD_ERR_INTERNAL, "elementwise kernel: ", op_name(op), " on integers");
  }
}

struct Layout {
  size_t nd = 0;
  int64_t dims[kMaxDims];
  int64_t strides[3][kMaxDims];
};

// Drops unit dimensions and merges neighbours every operand walks
// contiguously, so the innermost loop is as long as it can be.
Layout collapse(const Params &p) {
  Layout l;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    if (p.shape[d] == 1) continue;
    bool merge = l.nd > 0;
    for (int i = 0; merge && i < p.nin; ++i)
      merge = l.strides[i][l.nd - 1] == p.in[i].strides[d] * p.shape[d];
    if (merge) {
      l.dims[l.nd - 1] *= p.shape[d];
      for (int i = 0; i < p.nin; ++i) l.strides[i][l.nd - 1] = p.in[i].strides[d];
      continue;
    }
    l.dims[l.nd] = p.shape[d];
    for (int i = 0; i < p.nin; ++i) l.strides[i][l.nd] = p.in[i].strides[d];
    ++l.nd;
  }
  if (l.nd == 0) {
    l.nd = 1;
    l.dims[0] = 1;
    for (int i = 0; i < 3; ++i) l.strides[i][0] = 0;
  }
  return l;
}

template <typename T>
void run_typed(const Params &p, char *out, const char *const in[3]) {
  const Layout l = collapse(p);
  const size_t os = dtype_size(p.out);
  size_t es[3] = {0, 0, 0};
  for (int i = 0; i < p.nin; ++i) es[i] = dtype_size(p.in[i].dtype);
  const int64_t inner = l.dims[l.nd - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < l.nd; ++d) rows *= l.dims[d];
  const bool cmp = is_comparison(p.op);
  const bool direct = !cmp && p.out == native<T>();
  T buf[3][kChunk];
  T obuf[kChunk];
  // A scalar operand's chunk is the same every time: filled once.
  for (int i = 0; i < p.nin; ++i)
    if (p.in[i].scalar) fetch<T>(p.in[i], 0, nullptr, static_cast<size_t>(std::min<int64_t>(kChunk, inner)), buf[i]);
  int64_t idx[kMaxDims] = {};  // only the outer dimensions' are used (not
                               // std::fill_n: a `rep stos`, slow to start)
  int64_t base[3] = {0, 0, 0};  // element offsets of the row in each operand
  for (int64_t r = 0; r < rows; ++r) {
    char *orow = out + static_cast<size_t>(r * inner) * os;
    for (int64_t j = 0; j < inner; j += static_cast<int64_t>(kChunk)) {
      const size_t m = static_cast<size_t>(std::min<int64_t>(kChunk, inner - j));
      const T *v[3] = {nullptr, nullptr, nullptr};
      for (int i = 0; i < p.nin; ++i) {
        if (p.in[i].scalar) {
          v[i] = buf[i];
          continue;
        }
        const int64_t st = l.strides[i][l.nd - 1];
        const char *at = in[i] + (base[i] + j * st) * static_cast<int64_t>(es[i]);
        v[i] = fetch<T>(p.in[i], st, at, m, buf[i]);
      }
      char *o = orow + static_cast<size_t>(j) * os;
      if (cmp) {
        compare(p.op, v[0], v[1], o, m);
        continue;
      }
      T *dst = direct ? reinterpret_cast<T *>(o) : obuf;
      if constexpr (std::is_same_v<T, int64_t>) apply_int(p.op, v[0], v[1], v[2], dst, m);
      else apply_float(p.op, v[0], v[1], v[2], dst, m);
      if (!direct) store(p.out, dst, o, m);
    }
    // Next row: the odometer over the outer dimensions.
    for (size_t d = l.nd - 1; d-- > 0;) {
      for (int i = 0; i < p.nin; ++i) base[i] += l.strides[i][d];
      if (++idx[d] < l.dims[d]) break;
      for (int i = 0; i < p.nin; ++i) base[i] -= l.strides[i][d] * l.dims[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
void gather_rows(const Layout &l, int64_t rows, T *out, const T *in) {
  const int64_t inner = l.dims[l.nd - 1], st = l.strides[0][l.nd - 1];
  int64_t idx[kMaxDims] = {};
  int64_t base = 0;
  for (int64_t r = 0; r < rows; ++r, out += inner) {
    const T *from = in + base;
    if (st == 1)
      std::memcpy(out, from, static_cast<size_t>(inner) * sizeof(T));
    else
      for (int64_t k = 0; k < inner; ++k) out[k] = from[k * st];
    for (size_t d = l.nd - 1; d-- > 0;) {
      base += l.strides[0][d];
      if (++idx[d] < l.dims[d]) break;
      base -= l.strides[0][d] * l.dims[d];
      idx[d] = 0;
    }
  }
}

// A copy into the operand's own type (a transpose, a slice, a reshape):
// the elements moved as they are, a row at a time, without the
// arithmetic's chunks, and with no rounding mode to set. The Layer's
// head transposes (rows of 64 floats): 50 us for four 256 KiB blocks on
// 2 cores through the general loop.
bool copied_as_is(const Params &p, char *out, const char *in) {
  // Only where the computing type holds every value exactly (not a
  // float64 copy computed in float32, which rounds), and not bool, whose
  // copy reads any nonzero byte as true.
  if (p.op != Op::Copy || p.nin != 1 || p.in[0].scalar || p.in[0].dtype != p.out || p.out == SPMD_BOOL)
    return false;
  const bool half = p.out == SPMD_F16 || p.out == SPMD_BF16;
  if (dtype_is_float(p.out) ? !(p.compute == p.out || (half && p.compute == SPMD_F32))
                            : dtype_is_float(p.compute))
    return false;
  const Layout l = collapse(p);
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < l.nd; ++d) rows *= l.dims[d];
  switch (dtype_size(p.out)) {
    case 1: gather_rows(l, rows, reinterpret_cast<uint8_t *>(out), reinterpret_cast<const uint8_t *>(in)); return true;
    case 2: gather_rows(l, rows, reinterpret_cast<uint16_t *>(out), reinterpret_cast<const uint16_t *>(in)); return true;
    case 4: gather_rows(l, rows, reinterpret_cast<uint32_t *>(out), reinterpret_cast<const uint32_t *>(in)); return true;
    case 8: gather_rows(l, rows, reinterpret_cast<uint64_t *>(out), reinterpret_cast<const uint64_t *>(in)); return true;
    default: return false;
  }
}

}  // namespace

void run(const Params &p, void *out, const void *const in[3]) {
  for (int64_t s : p.shape)
    if (s == 0) return;
  if (p.shape.size() > kMaxDims) fail(SPMD_ERR_INTERNAL, "elementwise kernel: too many dimensions");
  if (copied_as_is(p, static_cast<char *>(out), static_cast<const char *>(in[0]))) return;
  const char *ins[3] = {static_cast<const char *>(in[0]), static_cast<const char *>(in[1]),
                        static_cast<const char *>(in[2])};
  auto *o = static_cast<char *>(out);
  switch (p.compute) {
    case SPMD_F32: {
      FlushSubnormals ftz;
      return run_typed<float>(p, o, ins);
    }
    case SPMD_F64: {
      FlushSubnormals ftz;
      return run_typed<double>(p, o, ins);
    }
    default:
      return run_typed<int64_t>(p, o, ins);
  }
}

}  // namespace spmd::ew
