// Where the result of a global op lives: the sharding rules of GSPMD as
// JAX applies them under jax.jit, over partition specs alone (no arrays, no
// devices), so they can be tested one by one and reused by any executor.
// Each rule returns the result's spec and the specs the operands must be
// brought to before every device computes its block alone; reductions and
// contractions also name the mesh axes whose partial results are summed
// (docs/compute.md has the table).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/shape.hpp"
#include "core/partition_spec.hpp"

namespace spmd::propagate {

using Dim = PartitionSpec::Dim;
using Dims = std::vector<Dim>;

// The spec's dimensions padded with None to `ndim`.
Dims padded(const PartitionSpec &spec, size_t ndim);

// Two shardings of one dimension met in an op: equal ones, or one a
// refinement of the other (('x',) and ('x', 'y')) give the finer; a None
// gives the other; anything else gives None (the dimension is gathered).
Dim meet(const Dim &a, const Dim &b);

// Clears every dimension that names an axis an earlier dimension already
// uses (a spec names each mesh axis once).
void drop_repeated_axes(Dims &dims);

// concatenate along `axis` (every operand of the same rank): each result
// dimension merges the operands' splits of it (an unsplit operand does not
// vote; one split a refinement of another gives the finer; splits that
// part ways keep their common prefix, and none at all is final). Axes are
// then handed out by claim: an axis goes to the dimension of the earliest
// operand that splits by it there (dimensions in order among one
// operand's), each dimension keeping the prefix of its merged split it
// could take whole; the concatenated dimension comes last. This is
// jax.jit's placement on every case of the conformance family.
Dims concatenate(const std::vector<Dims> &operands, size_t axis);

// jnp.take(a, indices, axis): the result's dimensions are a's before
// `axis`, then the indices', then a's after. a's dimensions keep their
// split (they claim their axes first); each index dimension keeps the
// longest prefix of its axes that no earlier claim took; a's split of
// `axis` itself is gathered. jax.jit's placement on every case of the
// conformance family.
Dims take(const Dims &a, size_t axis, const Dims &indices);

// x.at[(slice(None),) * axis + (indices,)].add(updates): the result is
// laid out as x is, except where the updates split a dimension of x's
// (`updates` has x's dimensions with x's `axis` replaced by
// `index_dims` index dimensions). Each dimension other than `axis` takes
// the finer of x's and the updates' splits when one refines the other,
// else their common prefix; `axis` keeps x's split. The dimensions whose
// split came from the larger operand (the updates when
// `updates_larger`, x on a tie) claim their axes first, then the others,
// each keeping the longest prefix of axes no earlier claim took.
// jax.jit's (Shardy's) placement on every case of the conformance family.
Dims scatter_add(const Dims &x, size_t axis, const Dims &updates, size_t index_dims,
                 bool updates_larger);

// A result's dimensions as jax.jit lays them out when the caller asks for
// no layout: each keeps the longest prefix of its axes whose sizes'
// product divides the dimension (('x', 'y') over 2 x 4 on a dimension of
// 6 keeps ('x',); ('y', 'x') keeps nothing). Uneven layouts stay for
// results the caller asks for. axis_size(name) is the mesh axis's size.
template <typename AxisSize>
void keep_dividing_axes(Dims &dims, const Shape &shape, AxisSize &&axis_size) {
  for (size_t d = 0; d < dims.size() && d < shape.size(); ++d) {
    int64_t product = 1;
    size_t keep = 0;
    while (keep < dims[d].size()) {
      product *= axis_size(dims[d][keep]);
      if (product <= 0 || shape[d] % product != 0) break;
      ++keep;
    }
    dims[d].resize(keep);
  }
}

// Elementwise ops with NumPy broadcasting: operands are right-aligned to
// `out`; an operand dimension of size 1 against a larger one, or one not
// split, does not vote. The operands with the result's element count
// decide first (all of them when none has it): each dimension takes the
// finest of their splits when they agree (one a prefix of the other), else
// it is gathered. An axis several dimensions name stays with one:
// dimensions split over more axes first, then the one an earlier operand
// splits whole, then the earlier, each taking its axes in order and
// stopping at one given out. The smaller operands (broadcast before the
// op) then only refine: each split, cut at the first axis the result gives
// another dimension, extends a dimension whose deciding split it agrees
// with, unless the deciding operands conflicted there or the smaller ones
// disagree among themselves; the new axes are handed out the same way.
// jax.jit's placement on every case of the conformance family (add and
// where) and on 1,600 more tried.
Dims elementwise(const std::vector<Dims> &operands, const std::vector<Shape> &shapes,
                 const Shape &out);

// The spec an operand of `shape` must have to be read, block by block,
// under a result of spec `out` and shape `out_shape`: the result's
// dimensions right-aligned, None where the operand broadcasts.
Dims operand_layout(const Dims &out, const Shape &shape, const Shape &out_shape);

// A reduction over the dimensions marked in `reduced`: the kept dimensions
// keep their sharding; the reduced ones' axes are summed over (in order).
struct Reduction {
  Dims out;                        // with keepdims: None at reduced dimensions
  std::vector<std::string> summed;
};
Reduction reduce(const Dims &in, const std::vector<bool> &reduced, bool keepdims);

Dims transpose(const Dims &in, const std::vector<int64_t> &perm);

// lax.dot_general. Result dimensions: batch, lhs free, rhs free.
struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contract, rhs_contract;
};
struct Contraction {
  Dims lhs, rhs;  // the layouts the operands are brought to
  Dims out;
  std::vector<std::string> summed;  // axes of the contracting dimensions
};
// Batch dimensions meet; free dimensions keep their operand's sharding.
// An axis two result dimensions name goes by claims: each position of a
// split is claimed by the operands whose split reaches it, weighing as the
// larger (by element count: lhs_elements, rhs_elements) and owned by the
// first; heavier claims first, then the lhs's, then the earlier dimension,
// a dimension stopping at an axis already given out (jax.jit's placement
// on every case of the conformance family, and 500 more tried). Contracting dimensions sharded
// alike multiply locally and are summed over their axes; sharded on one
// side only, the other side is split alike (free to do: every device holds
// what it needs) unless the axes are taken by the result; sharded
// differently, or by an axis the result uses, they are gathered.
Contraction dot_general(const Dims &lhs, const Dims &rhs, const DotDims &dims,
                        int64_t lhs_elements = 1, int64_t rhs_elements = 1);

// An operand's free dimensions (neither batch nor contracting), in order.
std::vector<int64_t> free_dims(size_t rank, const std::vector<int64_t> &batch,
                               const std::vector<int64_t> &contract);

// jnp.reshape, placed as jax.jit places it. The input is read as a stream
// of factors, each dimension's axes (major first) and then its unsplit
// rest; each output dimension takes factors from the stream in order. An
// axis stays on the output dimension that takes its whole factor before any
// unsplit factor larger than 1; an axis whose factor would straddle two
// output dimensions, or follow unsplit data within one, becomes unsplit
// data itself. That is `result`, jax.jit's layout (every case of the
// conformance family). Each device's block is the same run of elements on
// both sides when the kept axes of every input dimension come before the
// dropped ones: then the input is brought to `in` (the kept axes) and
// reshaped in place to `out` == `result`. Otherwise (an axis kept after a
// dropped one, minor within its factor) `in` and `out` are the older rule's
// (a run's first dimension's split carries over when it divides both
// sides; the rest of the run is gathered) and the result is resharded to
// `result` afterwards. Shard counts come from the mesh's axis sizes.
struct Reshape {
  Dims in;   // the layout the input is brought to
  Dims out;  // the layout the local reshape gives
  Dims result;  // jax.jit's layout of the result
};
Reshape reshape(const Dims &in, const Shape &in_shape, const Shape &out_shape,
                const std::vector<std::string> &axis_names, const Shape &axis_sizes);

}  // namespace spmd::propagate
