// Float32 chains run in blocks of vectors (kernels/elementwise_chain_lanes.hpp)
// against the same steps run one by one by the elementwise kernel, bit for
// bit: every op with a vector form, operands from the chain's inputs,
// earlier steps and scalars on either side, special values, and lengths
// that leave a partial block and a partial vector. Chains the path does
// not take (another type, an op without a vector form) fall back to the
// tiled path with the same bits.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/elementwise.hpp"
#include "kernels/elementwise_chain.hpp"
#include "kernels/elementwise_chain_lanes.hpp"
#include "kernels/vector_math.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

namespace {

using spmd::ew::Chain;
using spmd::ew::ChainStep;
using spmd::ew::Op;
using spmd::ew::Operand;
using spmd::ew::Params;

// Elements per array: three blocks of 256, 235 more (29 vectors and part
// of one); short_arrays tries others.
size_t kCount = 1003;

// An operand: the chain's input k (k >= 0), the result of step -k - 1, or
// a scalar.
struct Ref {
  int from;
  bool scalar = false;
  double value = 0;
};
Ref input(int k) { return {k}; }
Ref step(int s) { return {-s - 1}; }
Ref scalar(double v) { return {0, true, v}; }

ChainStep make_step(Op op, std::initializer_list<Ref> refs, spmd_dtype type = SPMD_F32) {
  ChainStep st;
  Params &p = st.params;
  p.op = op;
  p.out = type;
  p.compute = type;
  p.nin = static_cast<int>(refs.size());
  int k = 0;
  for (const Ref &r : refs) {
    Operand &o = p.in[k];
    o.dtype = type;
    o.scalar = r.scalar;
    o.value = r.value;
    st.from[k] = r.from;
    ++k;
  }
  return st;
}

// Inputs with every kind of float the kernels meet, then ordinary values.
std::vector<float> values(int seed) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-40f, -1e-40f,
                          1e30f, -1e30f, 0x1p17f, 1.5f, -2.25f, 3.14159274f, 1e-3f};
  uint32_t s = 0x9e3779b9u * static_cast<uint32_t>(seed + 1);
  while (v.size() < kCount) {
    s = s * 1664525u + 1013904223u;
    const float u = static_cast<float>(s >> 8) / static_cast<float>(1u << 24);  // [0, 1)
    v.push_back((u - 0.5f) * static_cast<float>(1 << (seed % 5 * 3)));
  }
  return v;
}

bool same_bits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y || (std::isnan(a) && std::isnan(b));
}

// The chain's steps one at a time through the elementwise kernel, each
// result a whole array: what the program would compute unfused.
std::vector<float> step_by_step(const Chain &chain, const std::vector<std::vector<float>> &in) {
  std::vector<std::vector<float>> results;
  for (const ChainStep &st : chain.steps) {
    Params p = st.params;
    p.shape.assign(1, static_cast<int64_t>(kCount));
    const void *args[3] = {nullptr, nullptr, nullptr};
    for (int k = 0; k < p.nin; ++k) {
      p.in[k].strides.assign(1, p.in[k].scalar ? 0 : 1);
      if (p.in[k].scalar) continue;
      const int f = st.from[k];
      args[k] = f >= 0 ? in[static_cast<size_t>(f)].data() : results[static_cast<size_t>(-f - 1)].data();
    }
    results.emplace_back(kCount);
    spmd::ew::run(p, results.back().data(), args);
  }
  return results.back();
}

// Runs the chain fused and step by step; true where the vector path took
// it. Fails at the first element whose bits differ.
bool check(const Chain &chain, int seed) {
  std::vector<std::vector<float>> in;
  for (int k = 0; k < chain.nin; ++k) in.push_back(values(seed + k));
  const void *args[3] = {nullptr, nullptr, nullptr};
  for (int k = 0; k < chain.nin; ++k) args[k] = in[static_cast<size_t>(k)].data();
  std::vector<float> lanes(kCount, -7.0f), fused(kCount, -7.0f);
  const bool took = spmd::ew::lanes::run_chain_f32(chain, kCount, lanes.data(), args);
  spmd::ew::run_chain(chain, kCount, fused.data(), args);
  const std::vector<float> want = step_by_step(chain, in);
  for (size_t i = 0; i < kCount; ++i) {
    if (!same_bits(fused[i], want[i]) || (took && !same_bits(lanes[i], want[i]))) {
      std::printf("step %s, element %zu (%a): fused %a, vector path %a, step by step %a\n",
                  spmd::ew::op_name(chain.steps.front().params.op), i, static_cast<double>(in[0][i]),
                  static_cast<double>(fused[i]), static_cast<double>(lanes[i]), static_cast<double>(want[i]));
      fail();
    }
  }
  return took;
}

bool vector_table() {
  const char *isa = spmd::vmath::table().isa;
  return std::strcmp(isa, "avx2") == 0 || std::strcmp(isa, "avx512") == 0;
}

// 2 * sin(x) + 1, the scalars on each side.
void sine_chain(void **) {
  Chain c;
  c.nin = 1;
  c.in_dtype[0] = SPMD_F32;
  c.steps = {make_step(Op::Sin, {input(0)}), make_step(Op::Mul, {scalar(2.0), step(0)}),
             make_step(Op::Add, {step(1), scalar(1.0)})};
  assert_true(check(c, 0) == vector_table());
}

// u(x0) b x1, then scalar b that, then that b u(x0).
Chain unary_then_binary(Op u, Op b) {
  Chain c;
  c.nin = 2;
  c.in_dtype[0] = c.in_dtype[1] = SPMD_F32;
  c.steps = {make_step(u, {input(0)}), make_step(b, {step(0), input(1)}),
             make_step(b, {scalar(-0.75), step(1)}), make_step(b, {step(2), step(0)})};
  return c;
}

// Every unary op, then every binary op with the other input and with a
// scalar: u(x0) b x1, then scalar b that.
void every_op(void **) {
  const Op unary[] = {Op::Copy, Op::Neg, Op::Abs, Op::Relu, Op::Sin, Op::Cos, Op::Sqrt, Op::Rsqrt,
                      Op::Exp, Op::Log, Op::Tanh, Op::Logistic, Op::GeluTanh, Op::GeluExact};
  const Op binary[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min, Op::Pow};
  int seed = 1;
  for (Op u : unary)
    for (Op b : binary) check(unary_then_binary(u, b), seed++);
}

// Three inputs read by several steps, a step read twice.
void three_inputs(void **) {
  Chain c;
  c.nin = 3;
  c.in_dtype[0] = c.in_dtype[1] = c.in_dtype[2] = SPMD_F32;
  c.steps = {make_step(Op::Mul, {input(0), input(1)}), make_step(Op::Add, {step(0), input(2)}),
             make_step(Op::Tanh, {step(1)}), make_step(Op::Mul, {step(2), step(2)}),
             make_step(Op::Sub, {input(0), step(3)})};
  assert_true(check(c, 11) == vector_table());
}

// Arrays shorter than a block, or than a vector, and lengths either side
// of a block's.
void short_arrays(void **) {
  for (size_t n : {1, 3, 7, 8, 9, 16, 255, 256, 257, 520}) {
    kCount = n;
    Chain c;
    c.nin = 2;
    c.in_dtype[0] = c.in_dtype[1] = SPMD_F32;
    c.steps = {make_step(Op::Cos, {input(0)}), make_step(Op::Max, {step(0), input(1)}),
               make_step(Op::Div, {step(1), scalar(3.0)})};
    assert_true(check(c, static_cast<int>(n)) == vector_table());
  }
  kCount = 1003;
}

// jnp.maximum / jnp.minimum of zeros and subnormals as jax.jit gives them
// (JAX 0.10.2 on CPU, printed by hand): IEEE maximum/minimum, -0 below +0,
// of subnormals read as zeros of their sign; both paths alike.
void extremes_of_zeros_as_jax(void **) {
  const float a[5] = {1e-40f, -1e-40f, 1e-40f, 0.0f, -0.75f};
  const float b[5] = {-1e-40f, 1e-40f, 0.0f, 1e-40f, -1e-40f};
  const float jax_max[5] = {0.0f, 0.0f, 0.0f, 0.0f, -0.0f};
  const float jax_min[5] = {-0.0f, -0.0f, 0.0f, 0.0f, -0.75f};
  for (Op op : {Op::Max, Op::Min}) {
    Chain c;
    c.nin = 2;
    c.in_dtype[0] = c.in_dtype[1] = SPMD_F32;
    c.steps = {make_step(op, {input(0), input(1)})};
    float fused[5], one[5];
    const void *args[3] = {a, b, nullptr};
    spmd::ew::run_chain(c, 5, fused, args);
    Params p = c.steps[0].params;
    p.shape.assign(1, 5);
    p.in[0].strides.assign(1, 1);
    p.in[1].strides.assign(1, 1);
    spmd::ew::run(p, one, args);
    for (int i = 0; i < 5; ++i) {
      const float want = op == Op::Max ? jax_max[i] : jax_min[i];
      assert_true(same_bits(fused[i], want));
      assert_true(same_bits(one[i], want));
    }
  }
}

// Chains the vector path leaves to the tiled one: a float64 step, a
// comparison, a select, a chain longer than its sixteen registers' worth.
void others_fall_back(void **) {
  Chain f64;
  f64.nin = 1;
  f64.in_dtype[0] = SPMD_F32;
  f64.steps = {make_step(Op::Sin, {input(0)})};
  f64.steps[0].params.compute = SPMD_F64;
  f64.steps[0].params.out = SPMD_F64;
  std::vector<float> x = values(3);
  std::vector<double> out(kCount);
  const void *args[3] = {x.data(), nullptr, nullptr};
  assert_false(spmd::ew::lanes::run_chain_f32(f64, kCount, out.data(), args));

  Chain cmp;
  cmp.nin = 2;
  cmp.in_dtype[0] = cmp.in_dtype[1] = SPMD_F32;
  cmp.steps = {make_step(Op::Lt, {input(0), input(1)})};
  cmp.steps[0].params.out = SPMD_BOOL;
  std::vector<unsigned char> flags(kCount);
  assert_false(spmd::ew::lanes::run_chain_f32(cmp, kCount, flags.data(), args));

  Chain longer;
  longer.nin = 1;
  longer.in_dtype[0] = SPMD_F32;
  longer.steps.push_back(make_step(Op::Sin, {input(0)}));
  for (int s = 0; s < 17; ++s) longer.steps.push_back(make_step(Op::Add, {step(s), scalar(0.5)}));
  assert_false(check(longer, 5));
}

// Sixteen lanes give the bits of eight for every op that calls no SLEEF
// function (SLEEF's are the table's of each width): a chain of each such op
// on either width where this CPU has AVX-512, nothing to compare where not.
void same_bits_in_either_width(void **) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) {
    std::printf("  no AVX-512 on this CPU: nothing to compare\n");
    return;
  }
  const Op unary[] = {Op::Copy, Op::Neg, Op::Abs, Op::Relu, Op::Sin, Op::Cos, Op::Sqrt, Op::Rsqrt};
  const Op binary[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min};
  int seed = 40;
  for (Op u : unary)
    for (Op b : binary) {
      const Chain c = unary_then_binary(u, b);
      const std::vector<float> x = values(seed), y = values(seed + 1);
      ++seed;
      const void *args[3] = {x.data(), y.data(), nullptr};
      std::vector<float> narrow(kCount, -7.0f), wide(kCount, 7.0f);
      assert_true(spmd::ew::lanes::run_chain_f32_avx2(c, kCount, narrow.data(), args));
      assert_true(spmd::ew::lanes::run_chain_f32_avx512(c, kCount, wide.data(), args));
      for (size_t i = 0; i < kCount; ++i)
        if (!same_bits(narrow[i], wide[i])) {
          std::printf("%s then %s, element %zu (%a, %a): AVX2 %a, AVX-512 %a\n", spmd::ew::op_name(u),
                      spmd::ew::op_name(b), i, static_cast<double>(x[i]), static_cast<double>(y[i]),
                      static_cast<double>(narrow[i]), static_cast<double>(wide[i]));
          fail();
        }
    }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sine_chain),
      cmocka_unit_test(every_op),
      cmocka_unit_test(three_inputs),
      cmocka_unit_test(short_arrays),
      cmocka_unit_test(extremes_of_zeros_as_jax),
      cmocka_unit_test(others_fall_back),
      cmocka_unit_test(same_bits_in_either_width),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
