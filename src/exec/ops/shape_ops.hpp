// Ops that move elements without computing on them: transpose and reshape
// (one local copy per device after bringing the input to a layout the
// propagation rule can carry), slice and concatenate (box copies between
// devices, as a reshard does).
#pragma once

#include <vector>

#include "exec/ops/op_support.hpp"

namespace spmd::ops {

// perm empty: reversed dimensions, as jnp.transpose.
ArrayPtr transpose(const ArrayPtr &x, std::vector<int64_t> perm, const OpOptions &options);
// One -1 in `shape` is inferred.
ArrayPtr reshape(const ArrayPtr &x, Shape shape, const OpOptions &options);

// x[start:stop] (unit steps); the result keeps x's spec, each device
// copying the blocks it needs from whichever device holds them (its own
// first).
ArrayPtr slice(const ArrayPtr &x, const Shape &start, const Shape &stop, const OpOptions &options);
// lax.slice with strides: every strides[d]-th element of x[start:stop];
// placed as slice places its result.
ArrayPtr slice_strided(const ArrayPtr &x, const Shape &start, const Shape &stop, const Shape &strides,
                       const OpOptions &options);
// lax.dynamic_slice: a window of `sizes` at `start` (negative counts from
// the end; moved back inside x where it would pass an edge), placed as
// slice places its result.
ArrayPtr dynamic_slice(const ArrayPtr &x, const Shape &start, const Shape &sizes, const OpOptions &options);
// jnp.concatenate along `axis`, in the operands' promoted dtype; the result
// keeps the first operand's spec.
ArrayPtr concatenate(const std::vector<ArrayPtr> &xs, int64_t axis, const OpOptions &options);

}  // namespace spmd::ops
