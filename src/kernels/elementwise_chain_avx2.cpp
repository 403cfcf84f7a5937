// kernels/elementwise_chain_lanes.hpp on AVX2 with FMA (compiled with
// -mavx2 -mfma -ffp-contract=off, as the vector tables are). Each op below
// is the vector form of its kernel in kernels/elementwise.cpp and
// kernels/vector_math_isa.inc: the same operations in the same order.
#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/elementwise_chain_lanes.hpp"
#include "kernels/flush_subnormals.hpp"
#include "kernels/trig_avx2.hpp"
#include "kernels/vector_math.hpp"

namespace spmd::ew::lanes {
namespace {

constexpr size_t kMaxSteps = 16;
constexpr size_t kLanes = 8;
// Elements per block: each step's block of results stays in the first-level
// cache (16 steps of 1 KiB) while the next step reads it.
constexpr size_t kBlock = 256;

enum class From : uint8_t { Input, Step, Scalar };

struct Arg {
  From from = From::Scalar;
  uint8_t index = 0;  // the chain's input or the earlier step
};

struct alignas(32) Step {
  __m256 scalar[2];  // operand k's value, where it is a scalar
  Op op = Op::Copy;
  uint8_t nin = 1;
  Arg arg[2];
};

// Ops whose vector form here gives the bits of the tiled path on any CPU
// this runs on, and those that call SLEEF, whose eight-lane functions are
// the table's only where the table is AVX2's (AVX-512's calls the
// sixteen-lane ones).
bool lanes_evaluate(Op op, bool sleef_lanes_are_the_tables) {
  switch (op) {
    case Op::Copy: case Op::Neg: case Op::Abs: case Op::Relu: case Op::Sin: case Op::Cos:
    case Op::Sqrt: case Op::Rsqrt: case Op::Add: case Op::Sub: case Op::Mul: case Op::Div:
    case Op::Max: case Op::Min:
      return true;
    case Op::Exp: case Op::Log: case Op::Tanh: case Op::Logistic: case Op::GeluTanh:
    case Op::GeluExact: case Op::Pow:
      return sleef_lanes_are_the_tables;
    default:
      return false;
  }
}

// The chain as steps of this path, or false where a step has no form here.
bool lower(const Chain &chain, Step *steps) {
  // The table is chosen once per process: so is whether this path serves.
  static const bool avx2 = std::strcmp(vmath::table().isa, "avx2") == 0;
  static const bool vector = avx2 || std::strcmp(vmath::table().isa, "avx512") == 0;
  if (!vector) return false;
  if (chain.steps.empty() || chain.steps.size() > kMaxSteps) return false;
  for (int k = 0; k < chain.nin; ++k)
    if (chain.in_dtype[k] != SPMD_F32) return false;
  for (size_t s = 0; s < chain.steps.size(); ++s) {
    const ChainStep &c = chain.steps[s];
    const Params &p = c.params;
    if (p.compute != SPMD_F32 || p.out != SPMD_F32 || p.nin > 2 || !lanes_evaluate(p.op, avx2))
      return false;
    Step &st = steps[s];
    st.op = p.op;
    st.nin = static_cast<uint8_t>(p.nin);
    for (int k = 0; k < p.nin; ++k) {
      const Operand &o = p.in[k];
      if (o.scalar) {
        st.arg[k].from = From::Scalar;
        st.scalar[k] = _mm256_set1_ps(static_cast<float>(o.value));
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

inline __m256 abs8(__m256 a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }

// jnp.maximum / jnp.minimum as kernels/device/cpu_float.hpp's body gives them:
// IEEE maximum / minimum (a NaN first, then b's; -0 below +0) of the
// values with subnormals read as zeros of their sign.
inline __m256 flushed8(__m256 a) {
  const __m256i exponent = _mm256_and_si256(_mm256_castps_si256(a), _mm256_set1_epi32(0x7f800000));
  const __m256 zero_exponent = _mm256_castsi256_ps(_mm256_cmpeq_epi32(exponent, _mm256_setzero_si256()));
  return _mm256_blendv_ps(a, _mm256_and_ps(a, _mm256_set1_ps(-0.0f)), zero_exponent);
}
template <bool Max>
inline __m256 extremum8(__m256 a_in, __m256 b_in) {
  const __m256 a = flushed8(a_in), b = flushed8(b_in);
  __m256 r = _mm256_blendv_ps(b, a, _mm256_cmp_ps(a, b, Max ? _CMP_GT_OQ : _CMP_LT_OQ));
  r = _mm256_blendv_ps(r, Max ? _mm256_and_ps(a, b) : _mm256_or_ps(a, b), _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
  r = _mm256_blendv_ps(r, b, _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
  return _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}
inline __m256 max8(__m256 a, __m256 b) { return extremum8<true>(a, b); }
inline __m256 min8(__m256 a, __m256 b) { return extremum8<false>(a, b); }

inline __m256 apply(Op op, __m256 a, __m256 b) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 half = _mm256_set1_ps(0.5f);
  switch (op) {
    case Op::Neg: return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f));
    case Op::Abs: return abs8(a);
    case Op::Relu: return max8(a, _mm256_setzero_ps());
    case Op::Sin: return vmath::avx2::sin8(a);
    case Op::Cos: return vmath::avx2::cos8(a);
    case Op::Sqrt: return _mm256_sqrt_ps(a);
    case Op::Rsqrt: return _mm256_div_ps(one, _mm256_sqrt_ps(a));
    case Op::Exp: return Sleef_expf8_u10(a);
    case Op::Log: return Sleef_logf8_u10(a);
    case Op::Tanh: return Sleef_tanhf8_u10(a);
    case Op::Logistic:  // 1 / (1 + exp(-x))
      return _mm256_div_ps(one, _mm256_add_ps(one, Sleef_expf8_u10(_mm256_xor_ps(a, _mm256_set1_ps(-0.0f)))));
    case Op::GeluTanh: {  // x * (0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))))
      const __m256 x3 = _mm256_mul_ps(a, _mm256_mul_ps(a, a));
      const __m256 t = _mm256_mul_ps(_mm256_set1_ps(static_cast<float>(0.79788456080286535588)),
                                     _mm256_add_ps(a, _mm256_mul_ps(_mm256_set1_ps(static_cast<float>(0.044715)), x3)));
      return _mm256_mul_ps(a, _mm256_mul_ps(half, _mm256_add_ps(one, Sleef_tanhf8_u10(t))));
    }
    case Op::GeluExact: {  // 0.5 * x * erfc(-x * sqrt(1/2))
      const __m256 h = _mm256_set1_ps(static_cast<float>(0.70710678118654752440));
      const __m256 t = _mm256_mul_ps(_mm256_xor_ps(a, _mm256_set1_ps(-0.0f)), h);
      return _mm256_mul_ps(_mm256_mul_ps(half, a), Sleef_erfcf8_u15(t));
    }
    case Op::Add: return _mm256_add_ps(a, b);
    case Op::Sub: return _mm256_sub_ps(a, b);
    case Op::Mul: return _mm256_mul_ps(a, b);
    case Op::Div: return _mm256_div_ps(a, b);
    case Op::Max: return max8(a, b);
    case Op::Min: return min8(a, b);
    case Op::Pow: return Sleef_powf8_u10(a, b);
    default: return a;  // Copy
  }
}

// One operand of a step over a block: a run of floats or a scalar.
struct Source {
  const float *at = nullptr;  // null for a scalar
  __m256 value;
};

// o[0, n) = f(a) or f(a, b), a vector at a time (n a multiple of 8).
template <typename F>
inline void map(size_t n, const Source &a, float *o, F f) {
  if (a.at == nullptr) {
    const __m256 r = f(a.value);
    for (size_t i = 0; i < n; i += kLanes) _mm256_storeu_ps(o + i, r);
    return;
  }
  for (size_t i = 0; i < n; i += kLanes) _mm256_storeu_ps(o + i, f(_mm256_loadu_ps(a.at + i)));
}
template <typename F>
inline void map(size_t n, const Source &a, const Source &b, float *o, F f) {
  if (a.at != nullptr && b.at != nullptr) {
    for (size_t i = 0; i < n; i += kLanes)
      _mm256_storeu_ps(o + i, f(_mm256_loadu_ps(a.at + i), _mm256_loadu_ps(b.at + i)));
  } else if (a.at != nullptr) {
    for (size_t i = 0; i < n; i += kLanes) _mm256_storeu_ps(o + i, f(_mm256_loadu_ps(a.at + i), b.value));
  } else if (b.at != nullptr) {
    for (size_t i = 0; i < n; i += kLanes) _mm256_storeu_ps(o + i, f(a.value, _mm256_loadu_ps(b.at + i)));
  } else {
    const __m256 r = f(a.value, b.value);
    for (size_t i = 0; i < n; i += kLanes) _mm256_storeu_ps(o + i, r);
  }
}

// One step over n elements of a block, its op chosen once for the block.
void run_step(Op op, size_t n, const Source &a, const Source &b, float *o) {
#define SPMD_LANES_UNARY(OP) \
  case Op::OP: return map(n, a, o, [](__m256 x) { return apply(Op::OP, x, x); });
#define SPMD_LANES_BINARY(OP) \
  case Op::OP: return map(n, a, b, o, [](__m256 x, __m256 y) { return apply(Op::OP, x, y); });
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

// The chain over n elements of each input (a multiple of 8, at most
// kBlock); the last step writes `out`.
void run_block(const Step *steps, size_t nsteps, size_t n, const float *const in[3], float *tiles,
               float *out) {
  for (size_t s = 0; s < nsteps; ++s) {
    const Step &st = steps[s];
    Source src[2];
    for (int k = 0; k < st.nin; ++k) {
      switch (st.arg[k].from) {
        case From::Input: src[k].at = in[st.arg[k].index]; break;
        case From::Step: src[k].at = tiles + st.arg[k].index * kBlock; break;
        default: src[k].value = st.scalar[k]; break;
      }
    }
    run_step(st.op, n, src[0], st.nin > 1 ? src[1] : src[0], s + 1 == nsteps ? out : tiles + s * kBlock);
  }
}

}  // namespace

bool run_chain_f32(const Chain &chain, size_t count, void *out, const void *const in[3]) {
  Step steps[kMaxSteps];
  if (!lower(chain, steps)) return false;
  FlushSubnormals ftz;  // as XLA's CPU code and the tiled path run
  const size_t nsteps = chain.steps.size();
  alignas(32) float tiles[kMaxSteps * kBlock];
  const auto *ins = reinterpret_cast<const float *const *>(in);
  float *o = static_cast<float *>(out);
  // Blocks of kBlock, then the rest's whole vectors, then its last part,
  // zero-padded to a vector as the tables pad it.
  size_t i = 0;
  while (count - i >= kLanes) {
    const size_t n = std::min(kBlock, (count - i) / kLanes * kLanes);
    const float *at[3] = {nullptr, nullptr, nullptr};
    for (int k = 0; k < chain.nin; ++k) at[k] = ins[k] + i;
    run_block(steps, nsteps, n, at, tiles, o + i);
    i += n;
  }
  if (i < count) {
    const size_t part = count - i;
    alignas(32) float pad[3][kLanes] = {};
    alignas(32) float result[kLanes];
    const float *at[3] = {pad[0], pad[1], pad[2]};
    for (int k = 0; k < chain.nin; ++k) std::memcpy(pad[k], ins[k] + i, part * sizeof(float));
    run_block(steps, nsteps, kLanes, at, tiles, result);
    std::memcpy(o + i, result, part * sizeof(float));
  }
  return true;
}

}  // namespace spmd::ew::lanes
