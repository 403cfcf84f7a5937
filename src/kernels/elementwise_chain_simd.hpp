// The float32 chains of kernels/elementwise_chain_lanes.hpp over vectors of
// one instruction set (kernels/simd_lanes.hpp), included by the file of
// each (elementwise_chain_avx2.cpp, elementwise_chain_avx512.cpp, compiled
// with its flags and -ffp-contract=off, as the vector tables are). Each op
// below is the vector form of its kernel in kernels/elementwise.cpp and
// kernels/vector_math_isa.inc: the same operations in the same order, and
// the same SLEEF functions as that instruction set's table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/elementwise_chain_lanes.hpp"
#include "kernels/flush_subnormals.hpp"
#include "kernels/simd_lanes.hpp"
#include "kernels/trig_lanes.hpp"

namespace spmd::ew::lanes {
namespace {

constexpr size_t kMaxSteps = 16;
// Elements per block: each step's block of results stays in the first-level
// cache (16 steps of 1 KiB) while the next step reads it.
constexpr size_t kBlock = 256;

enum class From : uint8_t { Input, Step, Scalar };

struct Arg {
  From from = From::Scalar;
  uint8_t index = 0;  // the chain's input or the earlier step
};

template <class V>
struct alignas(64) Step {
  typename V::F scalar[2];  // operand k's value, where it is a scalar
  Op op = Op::Copy;
  uint8_t nin = 1;
  Arg arg[2];
};

// Ops with a vector form here.
inline bool lanes_evaluate(Op op) {
  switch (op) {
    case Op::Copy: case Op::Neg: case Op::Abs: case Op::Relu: case Op::Sin: case Op::Cos:
    case Op::Sqrt: case Op::Rsqrt: case Op::Add: case Op::Sub: case Op::Mul: case Op::Div:
    case Op::Max: case Op::Min: case Op::Exp: case Op::Log: case Op::Tanh: case Op::Logistic:
    case Op::GeluTanh: case Op::GeluExact: case Op::Pow:
      return true;
    default:
      return false;
  }
}

// The chain as steps of this path, or false where a step has no form here.
template <class V>
bool lower(const Chain &chain, Step<V> *steps) {
  if (chain.steps.empty() || chain.steps.size() > kMaxSteps) return false;
  for (int k = 0; k < chain.nin; ++k)
    if (chain.in_dtype[k] != SPMD_F32) return false;
  for (size_t s = 0; s < chain.steps.size(); ++s) {
    const ChainStep &c = chain.steps[s];
    const Params &p = c.params;
    if (p.compute != SPMD_F32 || p.out != SPMD_F32 || p.nin > 2 || !lanes_evaluate(p.op)) return false;
    Step<V> &st = steps[s];
    st.op = p.op;
    st.nin = static_cast<uint8_t>(p.nin);
    for (int k = 0; k < p.nin; ++k) {
      const Operand &o = p.in[k];
      if (o.scalar) {
        st.arg[k].from = From::Scalar;
        st.scalar[k] = V::set1(static_cast<float>(o.value));
        continue;
      }
      if (o.dtype != SPMD_F32) return false;
      const int f = c.from[k];
      st.arg[k].from = f >= 0 ? From::Input : From::Step;
      st.arg[k].index = static_cast<uint8_t>(f >= 0 ? f : -f - 1);
    }
  }
  return true;
}

// jnp.maximum / jnp.minimum as kernels/device/cpu_float.hpp's body gives them:
// IEEE maximum / minimum (a NaN first, then b's; -0 below +0) of the
// values with subnormals read as zeros of their sign.
template <class V>
typename V::F flushed(typename V::F a) {
  return V::select(V::exponent_zero(a), a, V::bit_and(a, V::set1(-0.0f)));
}
template <class V, bool Max>
typename V::F extremum(typename V::F a_in, typename V::F b_in) {
  using F = typename V::F;
  const F a = flushed<V>(a_in), b = flushed<V>(b_in);
  F r = V::select(V::template cmp<Max ? _CMP_GT_OQ : _CMP_LT_OQ>(a, b), b, a);
  r = V::select(V::template cmp<_CMP_EQ_OQ>(a, b), r, Max ? V::bit_and(a, b) : V::bit_or(a, b));
  r = V::select(V::template cmp<_CMP_UNORD_Q>(b, b), r, b);
  return V::select(V::template cmp<_CMP_UNORD_Q>(a, a), r, a);
}

template <class V>
typename V::F apply(Op op, typename V::F a, typename V::F b) {
  using F = typename V::F;
  const F one = V::set1(1.0f);
  const F half = V::set1(0.5f);
  const F minus_zero = V::set1(-0.0f);
  switch (op) {
    case Op::Neg: return V::bit_xor(a, minus_zero);
    case Op::Abs: return V::and_not(minus_zero, a);
    case Op::Relu: return extremum<V, true>(a, V::zero());
    case Op::Sin: return simd::sin<V>(a);
    case Op::Cos: return simd::cos<V>(a);
    case Op::Sqrt: return V::sqrt(a);
    case Op::Rsqrt: return V::div(one, V::sqrt(a));
    case Op::Exp: return V::exp(a);
    case Op::Log: return V::log(a);
    case Op::Tanh: return V::tanh(a);
    case Op::Logistic:  // 1 / (1 + exp(-x))
      return V::div(one, V::add(one, V::exp(V::bit_xor(a, minus_zero))));
    case Op::GeluTanh: {  // x * (0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))))
      const F x3 = V::mul(a, V::mul(a, a));
      const F t = V::mul(V::set1(static_cast<float>(0.79788456080286535588)),
                         V::add(a, V::mul(V::set1(static_cast<float>(0.044715)), x3)));
      return V::mul(a, V::mul(half, V::add(one, V::tanh(t))));
    }
    case Op::GeluExact: {  // 0.5 * x * erfc(-x * sqrt(1/2))
      const F h = V::set1(static_cast<float>(0.70710678118654752440));
      const F t = V::mul(V::bit_xor(a, minus_zero), h);
      return V::mul(V::mul(half, a), V::erfc(t));
    }
    case Op::Add: return V::add(a, b);
    case Op::Sub: return V::sub(a, b);
    case Op::Mul: return V::mul(a, b);
    case Op::Div: return V::div(a, b);
    case Op::Max: return extremum<V, true>(a, b);
    case Op::Min: return extremum<V, false>(a, b);
    case Op::Pow: return V::pow(a, b);
    default: return a;  // Copy
  }
}

// One operand of a step over a block: a run of floats or a scalar.
template <class V>
struct Source {
  const float *at = nullptr;  // null for a scalar
  typename V::F value;
};

// o[0, n) = f(a) or f(a, b), a vector at a time (n a multiple of the lanes).
template <class V, typename Fn>
void map(size_t n, const Source<V> &a, float *o, Fn f) {
  constexpr size_t w = V::kLanes;
  if (a.at == nullptr) {
    const typename V::F r = f(a.value);
    for (size_t i = 0; i < n; i += w) V::store(o + i, r);
    return;
  }
  for (size_t i = 0; i < n; i += w) V::store(o + i, f(V::load(a.at + i)));
}
template <class V, typename Fn>
void map(size_t n, const Source<V> &a, const Source<V> &b, float *o, Fn f) {
  constexpr size_t w = V::kLanes;
  if (a.at != nullptr && b.at != nullptr) {
    for (size_t i = 0; i < n; i += w) V::store(o + i, f(V::load(a.at + i), V::load(b.at + i)));
  } else if (a.at != nullptr) {
    for (size_t i = 0; i < n; i += w) V::store(o + i, f(V::load(a.at + i), b.value));
  } else if (b.at != nullptr) {
    for (size_t i = 0; i < n; i += w) V::store(o + i, f(a.value, V::load(b.at + i)));
  } else {
    const typename V::F r = f(a.value, b.value);
    for (size_t i = 0; i < n; i += w) V::store(o + i, r);
  }
}

// One step over n elements of a block, its op chosen once for the block.
template <class V>
void run_step(Op op, size_t n, const Source<V> &a, const Source<V> &b, float *o) {
  using F = typename V::F;
#define SPMD_LANES_UNARY(OP) \
  case Op::OP: return map<V>(n, a, o, [](F x) { return apply<V>(Op::OP, x, x); });
#define SPMD_LANES_BINARY(OP) \
  case Op::OP: return map<V>(n, a, b, o, [](F x, F y) { return apply<V>(Op::OP, x, y); });
  switch (op) {
    SPMD_LANES_UNARY(Copy) SPMD_LANES_UNARY(Neg) SPMD_LANES_UNARY(Abs) SPMD_LANES_UNARY(Relu)
    SPMD_LANES_UNARY(Sin) SPMD_LANES_UNARY(Cos) SPMD_LANES_UNARY(Sqrt) SPMD_LANES_UNARY(Rsqrt)
    SPMD_LANES_UNARY(Exp) SPMD_LANES_UNARY(Log) SPMD_LANES_UNARY(Tanh) SPMD_LANES_UNARY(Logistic)
    SPMD_LANES_UNARY(GeluTanh) SPMD_LANES_UNARY(GeluExact)
    SPMD_LANES_BINARY(Add) SPMD_LANES_BINARY(Sub) SPMD_LANES_BINARY(Mul) SPMD_LANES_BINARY(Div)
    SPMD_LANES_BINARY(Max) SPMD_LANES_BINARY(Min) SPMD_LANES_BINARY(Pow)
    default: return;
  }
#undef SPMD_LANES_UNARY
#undef SPMD_LANES_BINARY
}

// The chain over n elements of each input (a multiple of the lanes, at
// most kBlock); the last step writes `out`.
template <class V>
void run_block(const Step<V> *steps, size_t nsteps, size_t n, const float *const in[3], float *tiles,
               float *out) {
  for (size_t s = 0; s < nsteps; ++s) {
    const Step<V> &st = steps[s];
    Source<V> src[2];
    for (int k = 0; k < st.nin; ++k) {
      switch (st.arg[k].from) {
        case From::Input: src[k].at = in[st.arg[k].index]; break;
        case From::Step: src[k].at = tiles + st.arg[k].index * kBlock; break;
        default: src[k].value = st.scalar[k]; break;
      }
    }
    run_step<V>(st.op, n, src[0], st.nin > 1 ? src[1] : src[0], s + 1 == nsteps ? out : tiles + s * kBlock);
  }
}

// Runs the chain, or returns false where lower() does.
template <class V>
bool run_chain(const Chain &chain, size_t count, void *out, const void *const in[3]) {
  constexpr size_t w = V::kLanes;
  Step<V> steps[kMaxSteps];
  if (!lower<V>(chain, steps)) return false;
  FlushSubnormals ftz;  // as XLA's CPU code and the tiled path run
  const size_t nsteps = chain.steps.size();
  alignas(64) float tiles[kMaxSteps * kBlock];
  const auto *ins = reinterpret_cast<const float *const *>(in);
  float *o = static_cast<float *>(out);
  // Blocks of kBlock, then the rest's whole vectors, then its last part,
  // zero-padded to a vector as the tables pad it.
  size_t i = 0;
  while (count - i >= w) {
    const size_t n = std::min(kBlock, (count - i) / w * w);
    const float *at[3] = {nullptr, nullptr, nullptr};
    for (int k = 0; k < chain.nin; ++k) at[k] = ins[k] + i;
    run_block<V>(steps, nsteps, n, at, tiles, o + i);
    i += n;
  }
  if (i < count) {
    const size_t part = count - i;
    alignas(64) float pad[3][w] = {};
    alignas(64) float result[w];
    const float *at[3] = {pad[0], pad[1], pad[2]};
    for (int k = 0; k < chain.nin; ++k) std::memcpy(pad[k], ins[k] + i, part * sizeof(float));
    run_block<V>(steps, nsteps, w, at, tiles, result);
    std::memcpy(o + i, result, part * sizeof(float));
  }
  return true;
}

}  // namespace
}  // namespace spmd::ew::lanes
