// Where a whole program's values live: jax.jit's placement of a program
// (Shardy's propagation, as JAX runs it), over partition specs alone, so it
// can be tested on its own and reused by any executor.
//
// A program is tensors and the ops between them, each op described by its
// factors: a factor is a loop of the op that runs over a dimension of some
// of its tensors (an elementwise op has one per result dimension; a
// contraction has its batch, free and contracting ones). A tensor is
// closed (an input, or a value a layout constraint fixes) or open (an op's
// result, which placement may split further). Placement only ever adds
// axes to an open tensor's dimensions, after those it has.
//
// Ops are visited by priority, each level until nothing changes, before
// the next allows more: (0) elementwise ops and transposes whose operands
// have one use, (1) those whatever their uses, (2) every op along the
// factors its operands and results share, a broadcast only backward (from
// its result to its operand), (3) every op along every factor (a
// contraction's contracting one too), (4) broadcasts forward. At each op, each factor takes the
// longest list of axes its tensors agree on (each a prefix of the next;
// any conflict stops it); factors of the largest tensor come first, then
// the most split; each open tensor then takes, per factor, those axes
// where its own are a prefix of them, stopping at an axis another of its
// dimensions holds or that would not divide the dimension.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/propagation.hpp"

namespace spmd::propagate {

struct ProgramTensor {
  Dims dims;              // per dimension, its axes (major first)
  Shape shape;
  bool closed = false;    // an input, or fixed by a layout constraint
  int uses = 0;           // ops and program outputs reading it
};

struct ProgramOp {
  // Broadcast: an elementwise op's operand brought to the result's shape
  // (jax.jit broadcasts it by an op of its own before the elementwise one).
  enum class Kind { Elementwise, Transpose, Reduction, Contraction, Broadcast };
  Kind kind = Kind::Elementwise;
  std::vector<int> operands, results;  // tensor ids
  // Per factor: its size, and whether it is summed over (a contraction's
  // contracting dimension, a reduction's reduced one): it reaches no result.
  std::vector<int64_t> factor_sizes;
  std::vector<bool> summed;
  // Per operand / result: the factor of each of its dimensions; -1 where
  // none (a dimension of size 1 broadcast).
  std::vector<std::vector<int>> operand_factors, result_factors;
};

struct ProgramGraph {
  std::map<std::string, int64_t> axis_sizes;
  std::vector<ProgramTensor> tensors;
  std::vector<ProgramOp> ops;  // in program order
};

// Places the open tensors of `g` (closed ones are left as they are).
void place_program(ProgramGraph &g);

}  // namespace spmd::propagate
