// Where a whole program's values live: jax.jit's placement of a program
// (Shardy's propagation, as JAX runs it), over partition specs alone, so it
// can be tested on its own and reused by any executor.
//
// A program is tensors and the ops between them, each op described by its
// factors: a factor is a loop of the op that runs over a dimension of some
// of its tensors (an elementwise op has one per result dimension; a
// contraction has its batch, free and contracting ones). A reshape's
// dimension may run over several factors, major first (16 x 8 -> 128: the
// result's one dimension over both of the operand's): its axes are theirs
// in turn, each factor taking axes while they divide what is left of it,
// and the next only once it is full. A tensor is
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

// Per dimension of a tensor, the factors it runs over, major first; none
// for a dimension of size 1 that is broadcast.
using DimFactors = std::vector<std::vector<int>>;

// One factor per dimension, from a list of factor ids (-1: none).
DimFactors one_each(const std::vector<int> &factors);

struct ProgramOp {
  // Broadcast: an elementwise op's operand brought to the result's shape
  // (jax.jit broadcasts it by an op of its own before the elementwise one).
  // Slice, Concatenate: a factor per dimension, sliced (or joined) or not
  // (jax.jit propagates along such a dimension too). Softmax: recorded as
  // one op, along its summed factor, and placed as the reductions,
  // broadcasts and elementwise ops jax.jit makes of it (place_program never
  // sees one). Gather: jnp.take's, as Shardy's rule has it: the operand's
  // other dimensions and the indices' run over the result's, the indexed
  // dimension is summed (the operand's alone); and a scatter's (the
  // operand's dimensions are the result's, the updates' index dimensions
  // summed with the indices').
  enum class Kind {
    Elementwise,
    Transpose,
    Reduction,
    Contraction,
    Broadcast,
    Reshape,
    Slice,
    Concatenate,
    Softmax,
    Gather
  };
  Kind kind = Kind::Elementwise;
  std::vector<int> operands, results;  // tensor ids
  // Per factor: its size, and whether it is summed over (a contraction's
  // contracting dimension, a reduction's reduced one): it reaches no result.
  std::vector<int64_t> factor_sizes;
  std::vector<bool> summed;
  // Per factor (or empty: none): a concatenation's own dimension, whose
  // elements move between devices (Shardy's permutation factors): passed
  // along only at the last levels, with the summed ones.
  std::vector<bool> permuted;
  // Per operand / result: the factors of each of its dimensions.
  std::vector<DimFactors> operand_factors, result_factors;
};

// A reshape of `in` to `out` (equal numbers of elements, none zero) as
// jax.jit's placement sees it: each dimension split into the factors the
// two shapes share (greatest common divisors), those of size 1 on their
// own.
ProgramOp reshape_op(const Shape &in, const Shape &out, int operand, int result);

struct ProgramGraph {
  std::map<std::string, int64_t> axis_sizes;
  std::vector<ProgramTensor> tensors;
  std::vector<ProgramOp> ops;  // in program order
};

// Places the open tensors of `g` (closed ones are left as they are). A
// reshape may leave part of an axis on a dimension ("x:(1)2": x's first
// two of its four devices' digits, as Shardy writes it); no layout names
// one, so jax.jit reports such a dimension up to its first part.
void place_program(ProgramGraph &g);

// `dims` with each dimension cut at its first part of an axis: the layout
// jax.jit reports.
Dims without_parts(const Dims &dims);

}  // namespace spmd::propagate
