// Whole-program placement (core/program_placement.hpp) on the programs
// whose layouts docs/programs.md tabulates, as JAX 0.10 answered for
//   y = sin(x); z = with_sharding_constraint(y * 2, C); return y, z
// on a (4, 2) mesh ('x', 'y'): y's layout from x's (I) and C. Then the
// priority of single-use ops, closed tensors, and divisibility.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "core/program_placement.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

namespace {

using spmd::propagate::Dims;
using spmd::propagate::ProgramGraph;
using spmd::propagate::ProgramOp;
using spmd::propagate::ProgramTensor;

ProgramTensor tensor(Dims dims, bool closed, int uses, spmd::Shape shape = {8, 8}) {
  ProgramTensor t;
  dims.resize(shape.size());
  t.dims = std::move(dims);
  t.shape = std::move(shape);
  t.closed = closed;
  t.uses = uses;
  if (!closed) t.dims.assign(t.shape.size(), {});
  return t;
}

ProgramOp elementwise(int in, int out, size_t nd = 2) {
  ProgramOp op;
  op.operands = {in};
  op.results = {out};
  op.factor_sizes.assign(nd, 8);
  op.summed.assign(nd, false);
  std::vector<int> f;
  for (size_t d = 0; d < nd; ++d) f.push_back(static_cast<int>(d));
  op.operand_factors = {spmd::propagate::one_each(f)};
  op.result_factors = {spmd::propagate::one_each(f)};
  return op;
}

std::string text(const Dims &dims) {
  std::string s = "P(";
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d) s += ",";
    if (dims[d].empty()) s += "None";
    for (size_t k = 0; k < dims[d].size(); ++k) s += (k ? "+" : "") + dims[d][k];
  }
  return s + ")";
}

// x (I, closed) -> sin -> y (open; returned too) -> * 2 -> w (fixed to C
// by the constraint that reads it): y's layout.
Dims sin_then_constraint(const Dims &i, const Dims &c) {
  ProgramGraph g;
  g.axis_sizes = {{"x", 4}, {"y", 2}};
  g.tensors = {tensor(i, true, 1), tensor({}, false, 2), tensor(c, true, 1)};
  g.ops = {elementwise(0, 1), elementwise(1, 2)};
  spmd::propagate::place_program(g);
  return g.tensors[1].dims;
}

void check(const Dims &i, const Dims &c, const Dims &want) {
  const Dims got = sin_then_constraint(i, c);
  Dims w = want;
  w.resize(2);
  if (got != w) {
    std::printf("I=%s C=%s: y %s, JAX %s\n", text(i).c_str(), text(c).c_str(), text(got).c_str(),
                text(w).c_str());
    fail();
  }
}

void constraint_after_an_op_reaches_back_as_jax_measured(void **) {
  check({{"x"}}, {{}, {"y"}}, {{"x"}, {"y"}});
  check({{"x"}}, {{"y"}}, {{"x"}});
  check({{"x"}}, {{}, {"x"}}, {{"x"}});
  check({}, {{}, {"y"}}, {{}, {"y"}});
  check({{"x"}}, {{"x", "y"}}, {{"x", "y"}});
  check({{}, {"x"}}, {{"y"}}, {{"y"}, {"x"}});
  check({{"x"}}, {{"y", "x"}}, {{"x"}});
}

// Single-use operands first: x -> a -> b with b fixed; a has one reader
// and no output, so the level that needs one use already reaches it.
void closed_tensors_never_change_and_open_ones_only_grow(void **) {
  ProgramGraph g;
  g.axis_sizes = {{"x", 4}, {"y", 2}};
  g.tensors = {tensor({{"x"}}, true, 1), tensor({}, false, 1), tensor({{"y"}}, true, 1)};
  g.ops = {elementwise(0, 1), elementwise(1, 2)};
  spmd::propagate::place_program(g);
  assert_true(g.tensors[0].dims == (Dims{{"x"}, {}}));
  assert_true(g.tensors[2].dims == (Dims{{"y"}, {}}));
  // a took x's layout first (forward and backward at once, the largest
  // tensor's factors first, x before b): the conflicting 'y' stays out.
  assert_true(g.tensors[1].dims == (Dims{{"x"}, {}}));
}

// An axis is added only where the dimension's split still divides it.
void axes_that_would_not_divide_are_not_added(void **) {
  ProgramGraph g;
  g.axis_sizes = {{"x", 4}, {"y", 2}};
  g.tensors = {tensor({{"x"}}, true, 1, {4, 6}), tensor({}, false, 1, {4, 6}),
               tensor({{"x", "y"}, {"y"}}, true, 1, {4, 6})};
  ProgramOp a = elementwise(0, 1), b = elementwise(1, 2);
  a.factor_sizes = b.factor_sizes = {4, 6};
  g.ops = {a, b};
  spmd::propagate::place_program(g);
  assert_true(g.tensors[1].dims[0] == (std::vector<std::string>{"x"}));  // 4 / (4 * 2) does not divide
  assert_true(g.tensors[1].dims[1] == (std::vector<std::string>{"y"}));  // 6 / 2 does
}

// A contraction: the weight's split of the contracting dimension reaches
// the open lhs only at the last level; its free dimension passes earlier.
void a_contraction_passes_free_dimensions_before_contracting_ones(void **) {
  ProgramGraph g;
  g.axis_sizes = {{"x", 4}, {"y", 2}};
  // h (open) = sin(x); out = h @ w, with w split ('y', None) and out fixed.
  g.tensors = {tensor({}, true, 1), tensor({}, false, 1), tensor({{"y"}}, true, 1),
               tensor({{"x"}}, true, 1)};
  ProgramOp dot;
  dot.kind = ProgramOp::Kind::Contraction;
  dot.operands = {1, 2};
  dot.results = {3};
  dot.factor_sizes = {8, 8, 8};  // m, n, k
  dot.summed = {false, false, true};
  dot.operand_factors = {spmd::propagate::one_each({0, 2}), spmd::propagate::one_each({2, 1})};
  dot.result_factors = {spmd::propagate::one_each({0, 1})};
  g.ops = {elementwise(0, 1), dot};
  spmd::propagate::place_program(g);
  assert_true(g.tensors[1].dims == (Dims{{"x"}, {"y"}}));
}

// A reshape's factors: the greatest divisors the two shapes share, each
// side's own where they part (6 x 4 -> 4 x 6 shares only the first 2).
void a_reshape_splits_dimensions_into_shared_factors(void **) {
  using spmd::propagate::DimFactors;
  const ProgramOp merge = spmd::propagate::reshape_op({16, 8}, {128}, 0, 1);
  assert_true(merge.factor_sizes == (std::vector<int64_t>{16, 8}));
  assert_true(merge.operand_factors[0] == (DimFactors{{0}, {1}}));
  assert_true(merge.result_factors[0] == (DimFactors{{0, 1}}));
  const ProgramOp split = spmd::propagate::reshape_op({8, 1, 8}, {2, 4, 8}, 0, 1);
  assert_true(split.factor_sizes == (std::vector<int64_t>{2, 4, 8}));
  assert_true(split.operand_factors[0] == (DimFactors{{0, 1}, {}, {2}}));
  assert_true(split.result_factors[0] == (DimFactors{{0}, {1}, {2}}));
  const ProgramOp apart = spmd::propagate::reshape_op({6, 4}, {4, 6}, 0, 1);
  assert_true(apart.factor_sizes == (std::vector<int64_t>{2, 3, 2, 6, 4}));
  assert_true(apart.operand_factors[0] == (DimFactors{{0, 1}, {4}}));
  assert_true(apart.result_factors[0] == (DimFactors{{0, 2}, {3}}));
}

// As JAX 0.10 answered on a (4, 2) mesh: x (8, 8) laid out (None, 'x'),
// reshaped to (8, 2, 4) and back. 'x' splits between the factors 2 and 4
// ("x:(1)2", "x:(2)2"), which no layout names: the middle value is
// reported replicated; reshaped back, the parts join into 'x' again.
void a_reshape_splits_an_axis_into_parts_and_joins_them(void **) {
  ProgramGraph g;
  g.axis_sizes = {{"x", 4}, {"y", 2}};
  g.tensors = {tensor({{}, {"x"}}, true, 1), tensor({}, false, 1, {8, 2, 4}), tensor({}, false, 1)};
  g.ops = {spmd::propagate::reshape_op({8, 8}, {8, 2, 4}, 0, 1),
           spmd::propagate::reshape_op({8, 2, 4}, {8, 8}, 1, 2)};
  spmd::propagate::place_program(g);
  assert_true(g.tensors[1].dims == (Dims{{}, {"x:(1)2"}, {"x:(2)2"}}));
  assert_true(spmd::propagate::without_parts(g.tensors[1].dims) == (Dims{{}, {}, {}}));
  assert_true(g.tensors[2].dims == (Dims{{}, {"x"}}));
  // y then part of x: reported up to the part, ('y', None, None) as JAX.
  g.tensors = {tensor({{}, {"y", "x"}}, true, 1, {8, 16}), tensor({}, false, 1, {8, 4, 4})};
  g.ops = {spmd::propagate::reshape_op({8, 16}, {8, 4, 4}, 0, 1)};
  spmd::propagate::place_program(g);
  assert_true(g.tensors[1].dims == (Dims{{}, {"y", "x:(1)2"}, {"x:(2)2"}}));
  assert_true(spmd::propagate::without_parts(g.tensors[1].dims) == (Dims{{}, {"y"}, {}}));
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(constraint_after_an_op_reaches_back_as_jax_measured),
      cmocka_unit_test(closed_tensors_never_change_and_open_ones_only_grow),
      cmocka_unit_test(axes_that_would_not_divide_are_not_added),
      cmocka_unit_test(a_reshape_splits_dimensions_into_shared_factors),
      cmocka_unit_test(a_reshape_splits_an_axis_into_parts_and_joins_them),
      cmocka_unit_test(a_contraction_passes_free_dimensions_before_contracting_ones),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
