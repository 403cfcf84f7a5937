#include "kernels/reduce_axes.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "kernels/device/common.hpp"
#include "kernels/device/cpu_float.hpp"
#include "kernels/device/scan.hpp"
#include "kernels/float_order.hpp"
#include "kernels/flush_subnormals.hpp"
#include "kernels/vector_math.hpp"


namespace spmd::red {

const char *op_name(Op op) {
  switch (op) {
    case Op::Sum: return "sum";
    case Op::Max: return "max";
    case Op::Min: return "min";
    case Op::ArgMax: return "argmax";
    case Op::ArgMin: return "argmin";
    case Op::CumSum: return "cumsum";
  }
  return "?";
}

int64_t out_elements(const Params &p) {
  if (p.op == Op::CumSum) return shape_elements(p.shape);
  int64_t n = 1;
  for (size_t d = 0; d < p.shape.size(); ++d)
    if (!p.reduced[d]) n *= p.shape[d];
  return n;
}

namespace {


template <typename A>
A load(spmd_dtype d, const char *p) {
  switch (d) {
    case SPMD_F32: return static_cast<A>(*reinterpret_cast<const float *>(p));
    case SPMD_F64: return static_cast<A>(*reinterpret_cast<const double *>(p));
    case SPMD_F16: return static_cast<A>(f16_bits_to_f32(*reinterpret_cast<const uint16_t *>(p)));
    case SPMD_BF16: return static_cast<A>(bf16_bits_to_f32(*reinterpret_cast<const uint16_t *>(p)));
    default:  // integers and bool
      return static_cast<A>(dev::load_int(d, reinterpret_cast<const unsigned char *>(p)));
  }
}

// A run of n values of the input as A (a view when it already is A).
template <typename A>
const A *row(spmd_dtype d, const char *p, size_t n, std::vector<A> &buf) {
  if ((std::is_same_v<A, float> && d == SPMD_F32) || (std::is_same_v<A, double> && d == SPMD_F64) ||
      (std::is_same_v<A, int64_t> && d == SPMD_I64))
    return reinterpret_cast<const A *>(p);
  buf.resize(n);
  const size_t es = dtype_size(d);
  for (size_t i = 0; i < n; ++i) buf[i] = load<A>(d, p + i * es);
  return buf.data();
}

// The identity in the result's type `out`: an empty block's max must lose
// to every int32 (int64's lowest would wrap to 0 when stored), and a bool's
// max of nothing is false.
template <typename A>
A identity(Op op, spmd_dtype out) {
  if (op == Op::Sum) return A(0);
  if constexpr (std::is_floating_point_v<A>)
    return op == Op::Max ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
  else
    return op == Op::Max ? dev::int_min(out) : dev::int_max(out);
}

// jnp.max / jnp.min of floats as XLA's CPU reduction computes them: a NaN
// wins (the last one); else IEEE maximum / minimum of the values read with
// subnormals flushed, so -0 is below +0 and the result does not depend on
// the order. (One value alone is copied unflushed: see reduce.)
template <typename A>
A combine(Op op, A acc, A v) {
  if (op == Op::Sum) {
    if constexpr (std::is_integral_v<A>)
      return static_cast<A>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
    else
      return acc + v;
  }
  if constexpr (std::is_floating_point_v<A>) {
    if (v != v) return v;
    if (acc != acc) return acc;
    return op == Op::Max ? dev::ieee_extremum<A, true>(acc, v) : dev::ieee_extremum<A, false>(acc, v);
  } else {
    if (op == Op::Max) return v > acc ? v : acc;
    return v < acc ? v : acc;
  }
}

using order::from_key;
using order::key;

// A float row's max or min folded into acc: by order keys, in the vector
// table's loop (vmath::KeyFold: an order of integers, so the lanes give
// the same result whichever took what); a row with a NaN (or a NaN acc)
// takes the scalar fold, where the last NaN wins.
template <typename A>
A fold_extreme(Op op, A acc, const A *v, size_t n) {
  static_assert(std::is_same_v<A, float> || std::is_same_v<A, double>);
  const bool max = op == Op::Max;
  bool nan = false;
  decltype(key(A{})) k;
  if constexpr (std::is_same_v<A, float>) k = vmath::f32_keys(max)(v, n, key(acc), &nan);
  else k = vmath::f64_keys(max)(v, n, key(acc), &nan);
  if (!nan && !dev::is_nan(acc)) return from_key<A>(k);
  for (size_t j = 0; j < n; ++j) acc = combine(op, acc, v[j]);
  return acc;
}

// acc[i] combined with v[i] for i < n: a max or min of floats by order
// keys (vectorised) unless a NaN is among them.
template <typename A>
void combine_each(Op op, A *acc, const A *v, size_t n) {
  if constexpr (std::is_floating_point_v<A>) {
    if (op == Op::Max || op == Op::Min) {
      bool nan = false;
      for (size_t i = 0; i < n; ++i) nan |= dev::is_nan(v[i]) || dev::is_nan(acc[i]);
      if (!nan) {
        const bool max = op == Op::Max;
        for (size_t i = 0; i < n; ++i) {
          const auto a = key(acc[i]), b = key(v[i]);
          acc[i] = from_key<A>(max ? std::max(a, b) : std::min(a, b));
        }
        return;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) acc[i] = combine(op, acc[i], v[i]);
}

template <typename A>
A fold(Op op, A acc, const A *v, size_t n) {
  if constexpr (std::is_floating_point_v<A>)
    if (op == Op::Max || op == Op::Min) return fold_extreme(op, acc, v, n);
  if (op == Op::Sum) {
    // Eight partial sums: vectorisable, and closer to XLA's order of
    // summation than one running total.
    A part[8] = {};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) part[k] = combine(op, part[k], v[i + k]);
    // Through combine: integer sums wrap, as XLA's do, never overflow.
    const A s01 = combine(op, part[0], part[1]), s23 = combine(op, part[2], part[3]);
    const A s45 = combine(op, part[4], part[5]), s67 = combine(op, part[6], part[7]);
    A s = combine(op, combine(op, s01, s23), combine(op, s45, s67));
    for (; i < n; ++i) s = combine(op, s, v[i]);
    return combine(op, acc, s);
  }
  for (size_t i = 0; i < n; ++i) acc = combine(op, acc, v[i]);
  return acc;
}

template <typename A>
void store(spmd_dtype d, const A *acc, char *out, size_t n) {
  const size_t es = dtype_size(d);
  for (size_t i = 0; i < n; ++i) {
    char *o = out + i * es;
    switch (d) {
      case SPMD_F32: *reinterpret_cast<float *>(o) = static_cast<float>(acc[i]); break;
      case SPMD_F64: *reinterpret_cast<double *>(o) = static_cast<double>(acc[i]); break;
      case SPMD_F16: *reinterpret_cast<uint16_t *>(o) = f32_to_f16_bits(static_cast<float>(acc[i])); break;
      case SPMD_BF16: *reinterpret_cast<uint16_t *>(o) = f32_to_bf16_bits(static_cast<float>(acc[i])); break;
      case SPMD_I32: *reinterpret_cast<int32_t *>(o) = static_cast<int32_t>(acc[i]); break;
      case SPMD_I64: *reinterpret_cast<int64_t *>(o) = static_cast<int64_t>(acc[i]); break;
      case SPMD_U8: *reinterpret_cast<uint8_t *>(o) = static_cast<uint8_t>(acc[i]); break;
      case SPMD_I8: case SPMD_I16: case SPMD_U16: case SPMD_U32:
        // Integer sums wrap to the width; a float is never stored as these.
        if constexpr (std::is_integral_v<A>)
          dev::store_int(d, static_cast<int64_t>(acc[i]), reinterpret_cast<unsigned char *>(o));
        else
          fail(SPMD_ERR_INTERNAL, "reduction kernel: a float accumulator stored as ", dtype_name(d));
        break;
      default: *o = acc[i] != A(0); break;
    }
  }
}

template <typename A>
void reduce(const Params &p, char *out, const char *in) {
  // Collapse: drop unit dimensions, merge neighbours of one kind.
  std::vector<int64_t> dims;
  std::vector<bool> red;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    if (p.shape[d] == 1) continue;
    if (!dims.empty() && red.back() == p.reduced[d]) {
      dims.back() *= p.shape[d];
      continue;
    }
    dims.push_back(p.shape[d]);
    red.push_back(p.reduced[d]);
  }
  const int64_t nout = out_elements(p);
  std::vector<A> acc(static_cast<size_t>(nout), identity<A>(p.op, p.out));
  int64_t count = 1;  // values reduced into each result
  for (size_t d = 0; d < p.shape.size(); ++d)
    if (p.reduced[d]) count *= p.shape[d];
  if (count == 1) {
    // XLA makes a copy of a reduction over one value: a subnormal stays
    // (jnp.max and jnp.sum of [1e-40] are 1e-40, of [1e-40, 0] are 0).
    const size_t es = dtype_size(p.in);
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = load<A>(p.in, in + i * es);
    store(p.out, acc.data(), out, acc.size());
    return;
  }
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total > 0 && !dims.empty()) {
    const size_t nd = dims.size();
    // Output strides of the kept dimensions (0 for reduced ones).
    std::vector<int64_t> ostride(nd, 0);
    int64_t s = 1;
    for (size_t d = nd; d-- > 0;)
      if (!red[d]) {
        ostride[d] = s;
        s *= dims[d];
      }
    const int64_t inner = dims[nd - 1];
    const bool inner_reduced = red[nd - 1];
    const size_t es = dtype_size(p.in);
    std::vector<int64_t> idx(nd, 0);
    std::vector<A> buf;
    int64_t obase = 0;
    for (int64_t r = 0; r < total / inner; ++r) {
      const A *v = row<A>(p.in, in + static_cast<size_t>(r * inner) * es, static_cast<size_t>(inner), buf);
      if (inner_reduced) {
        acc[static_cast<size_t>(obase)] = fold(p.op, acc[static_cast<size_t>(obase)], v, static_cast<size_t>(inner));
      } else {
        combine_each(p.op, acc.data() + obase, v, static_cast<size_t>(inner));
      }
      for (size_t d = nd - 1; d-- > 0;) {
        obase += ostride[d];
        if (++idx[d] < dims[d]) break;
        obase -= ostride[d] * dims[d];
        idx[d] = 0;
      }
    }
  } else if (total > 0) {  // every dimension of size 1: one element
    acc[0] = combine(p.op, acc[0], load<A>(p.in, in));
  }
  store(p.out, acc.data(), out, acc.size());
}

// jnp.argmax (jnp.argmin) over one dimension: the first index of the
// largest (smallest) value, the first NaN before any.
template <typename A>
void arg_best(const Params &p, char *out, const char *in) {
  const bool min = p.op == Op::ArgMin;
  int64_t outer = 1, len = 1, inner = 1;
  size_t axis = 0;
  for (size_t d = 0; d < p.shape.size(); ++d)
    if (p.reduced[d]) axis = d;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    if (d < axis) outer *= p.shape[d];
    else if (d == axis) len = p.shape[d];
    else inner *= p.shape[d];
  }
  const size_t es = dtype_size(p.in);
  auto *o = reinterpret_cast<int32_t *>(out);
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t c = 0; c < inner; ++c) {
      A best = A(0);
      int32_t at = 0;
      for (int64_t r = 0; r < len; ++r) {
        const A v = load<A>(p.in, in + static_cast<size_t>((a * len + r) * inner + c) * es);
        bool take = r == 0 || (min ? v < best : v > best);
        if constexpr (std::is_floating_point_v<A>) take = take || (v != v && best == best);
        if (take) {
          best = v;
          at = static_cast<int32_t>(r);
        }
      }
      o[a * inner + c] = at;
    }
}

// Integers sum in int64 with two's-complement wrapping (the store keeps
// the low bits, as XLA's int32 adds wrap).
struct WrapInt {
  int64_t v;
  explicit WrapInt(int64_t x = 0) : v(x) {}
  WrapInt operator+(WrapInt o) const {
    return WrapInt(static_cast<int64_t>(static_cast<uint64_t>(v) + static_cast<uint64_t>(o.v)));
  }
};

// jnp.cumsum along the one reduced dimension, every line scanned alone in
// XLA's order of additions (kernels/device/scan.hpp, whose LineScan the
// CUDA kernel runs too). `round` rounds a sum to the result's type (f16
// and bf16 sum in their own precision, as XLA's per-op arithmetic does);
// the additions run under the caller's DAZ and FTZ.
template <typename A, typename Round>
void cumsum(const Params &p, char *out, const char *in, Round round) {
  const dev::scan::Lines l = dev::scan::lines_of(p);
  const size_t ies = dtype_size(p.in), oes = dtype_size(p.out);
  const auto plus = [round](A a, A b) { return round(a + b); };
  for (int64_t line = 0; line < l.count(); ++line) {
    const int64_t a = line / l.inner, c = line - a * l.inner;
    dev::scan::LineScan<A, decltype(plus)> scan(plus);
    for (int64_t r = 0; r < l.len; ++r) {
      const auto at = static_cast<size_t>((a * l.len + r) * l.inner + c);
      if constexpr (std::is_same_v<A, WrapInt>) {
        const int64_t v = scan.next(WrapInt(load<int64_t>(p.in, in + at * ies))).v;
        store(p.out, &v, out + at * oes, 1);
      } else {
        const A x = load<A>(p.in, in + at * ies);
        const A v = l.copies_one() ? x : scan.next(x);
        store(p.out, &v, out + at * oes, 1);
      }
    }
  }
}

template <typename T>
void softmax_typed(const SoftmaxParams &p, T *out, const T *in) {
  const auto fn = [](vmath::Fn f) {
    if constexpr (std::is_same_v<T, double>) return vmath::f64(f);
    else return vmath::f32(f);
  };
  const auto fn2 = [](vmath::Fn2 f) {
    if constexpr (std::is_same_v<T, double>) return vmath::f64(f);
    else return vmath::f32(f);
  };
  const vmath::Unary<T> exp = fn(vmath::Fn::Exp), log = fn(vmath::Fn::Log);
  // The subtraction and division as the ops run them (the vector table's,
  // IEEE lane by lane), the row's max or sum broadcast along a row.
  const vmath::Binary<T> sub = fn2(vmath::Fn2::Sub), div = fn2(vmath::Fn2::Div);
  const auto n = static_cast<size_t>(p.cols);
  std::vector<T> e(n), broadcast(n);
  // log_softmax: every row's sum first, their logs in one call as the Log
  // op takes them, then x - max - log(sum).
  std::vector<T> sums(p.log ? static_cast<size_t>(p.rows) : 0);
  for (int64_t r = 0; r < p.rows; ++r) {
    const T *v = in + static_cast<size_t>(r) * n;
    T *o = out + static_cast<size_t>(r) * n;
    // As reduce: a reduction over one value copies it.
    const T m = n == 1 ? v[0] : fold(Op::Max, identity<T>(Op::Max, p.dtype), v, n);
    std::fill(broadcast.begin(), broadcast.end(), m);
    sub(v, broadcast.data(), e.data(), n);
    if (p.log) std::copy(e.begin(), e.end(), o);
    exp(e.data(), e.data(), n);
    const T s = n == 1 ? e[0] : fold(Op::Sum, T(0), e.data(), n);
    if (p.log) {
      sums[static_cast<size_t>(r)] = s;
      continue;
    }
    std::fill(broadcast.begin(), broadcast.end(), s);
    div(e.data(), broadcast.data(), o, n);
  }
  if (!p.log) return;
  log(sums.data(), sums.data(), sums.size());
  for (int64_t r = 0; r < p.rows; ++r) {
    T *o = out + static_cast<size_t>(r) * n;
    const T ls = sums[static_cast<size_t>(r)];
    for (size_t i = 0; i < n; ++i) o[i] = o[i] - ls;
  }
}

}  // namespace

void softmax_rows(const SoftmaxParams &p, void *out, const void *in) {
  if (p.rows == 0 || p.cols == 0) return;
  FlushSubnormals ftz;  // as the ops' kernels run
  if (p.dtype == SPMD_F64)
    return softmax_typed(p, static_cast<double *>(out), static_cast<const double *>(in));
  if (p.dtype == SPMD_F32)
    return softmax_typed(p, static_cast<float *>(out), static_cast<const float *>(in));
  fail(SPMD_ERR_INTERNAL, "softmax kernel: dtype ", static_cast<int>(p.dtype));
}

void run(const Params &p, void *out, const void *in) {
  auto *o = static_cast<char *>(out);
  const auto *i = static_cast<const char *>(in);
  const bool f64 = p.in == SPMD_F64;
  const bool flt = f64 || p.in == SPMD_F32 || p.in == SPMD_F16 || p.in == SPMD_BF16;
  FlushSubnormals ftz;
  if (p.op == Op::CumSum) {
    const auto same = [](auto v) { return v; };
    if (f64) return cumsum<double>(p, o, i, same);
    if (p.out == SPMD_F16)
      return cumsum<float>(p, o, i, [](float v) { return f16_bits_to_f32(f32_to_f16_bits(v)); });
    if (p.out == SPMD_BF16)
      return cumsum<float>(p, o, i, [](float v) { return bf16_bits_to_f32(f32_to_bf16_bits(v)); });
    if (flt) return cumsum<float>(p, o, i, same);
    return cumsum<WrapInt>(p, o, i, same);
  }
  if (is_arg(p.op)) {
    if (f64) return arg_best<double>(p, o, i);
    if (flt) return arg_best<float>(p, o, i);
    return arg_best<int64_t>(p, o, i);
  }
  if (f64) return reduce<double>(p, o, i);
  if (flt) return reduce<float>(p, o, i);
  return reduce<int64_t>(p, o, i);
}

}  // namespace spmd::red
