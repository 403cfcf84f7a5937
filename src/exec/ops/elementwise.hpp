// Elementwise global ops: NumPy broadcasting, JAX's dtype promotion, the
// result laid out by propagate::elementwise (or as the caller asks), every
// operand brought to that layout, then one kernel per device.
#pragma once

#include "exec/ops/op_support.hpp"
#include "kernels/elementwise.hpp"

namespace spmd::ops {

ArrayPtr unary(ew::Op op, const ArrayPtr &x, const OpOptions &options);
ArrayPtr astype(const ArrayPtr &x, spmd_dtype dtype, const OpOptions &options);
// x converted to dtype as an op converts its operand `arg` first (JAX's
// promotion): a conversion that fails names `arg`, not the conversion's
// own x; an empty x whose converted shape would pass the shape bound comes
// back unconverted (none of its elements is read).
ArrayPtr converted(const ArrayPtr &x, spmd_dtype dtype, const char *arg);
ArrayPtr binary(ew::Op op, const ArrayPtr &x, const ArrayPtr &y, const OpOptions &options);
// x op s, or s op x when scalar_first; s is a Python scalar (weakly typed).
ArrayPtr binary_scalar(ew::Op op, const ArrayPtr &x, double s, bool scalar_first,
                       const OpOptions &options);
ArrayPtr where(const ArrayPtr &cond, const ArrayPtr &x, const ArrayPtr &y,
               const OpOptions &options);
ArrayPtr broadcast_to(const ArrayPtr &x, const Shape &shape, const OpOptions &options);

// The shape NumPy broadcasting gives, or INVALID_ARGUMENT naming both
// arguments and shapes.
Shape broadcast_shapes(const Shape &a, const char *a_name, const Shape &b, const char *b_name);

// The type an op computes in: f32 for the 16-bit floats, f64, or int64
// for integers and bool.
spmd_dtype compute_type(spmd_dtype dtype);

}  // namespace spmd::ops
