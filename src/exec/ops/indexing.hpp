// Ops that turn integer indices into values: one_hot, take and scatter_add.
#pragma once

#include "exec/ops/op_support.hpp"

namespace spmd::ops {

// jax.nn.one_hot(x, num_classes, dtype=dtype, axis=axis): x == c along a
// new dimension `axis` of num_classes values c, as `dtype`. Written with
// the ops as JAX writes it (x expanded at axis == an iota in x's dtype),
// so the result keeps x's split and the new dimension is whole.
ArrayPtr one_hot(const ArrayPtr &x, int64_t num_classes, int64_t axis, spmd_dtype dtype,
                 const OpOptions &options);

// jnp.take(a, indices, axis) (mode "fill"): the result's dimensions are
// a's before axis, the indices', then a's after (propagate::take places
// them); a's axis is gathered, then every device picks its elements.
ArrayPtr take(const ArrayPtr &a, const ArrayPtr &indices, int64_t axis, const OpOptions &options);

// x.at[(slice(None),) * axis + (indices,)].add(updates), out-of-range
// indices dropped: laid out by propagate::scatter_add; every device adds,
// in update order, the updates that land in its block of x.
ArrayPtr scatter_add(const ArrayPtr &x, const ArrayPtr &indices, const ArrayPtr &updates,
                     int64_t axis, const OpOptions &options);

}  // namespace spmd::ops
