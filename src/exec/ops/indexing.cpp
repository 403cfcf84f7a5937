#include "exec/ops/indexing.hpp"

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "exec/ops/elementwise.hpp"
#include "exec/ops/shape_ops.hpp"

namespace spmd::ops {

ArrayPtr one_hot(const ArrayPtr &x, int64_t num_classes, int64_t axis, spmd_dtype dtype,
                 const OpOptions &options) {
  if (num_classes < 0) invalid("num_classes: ", num_classes, " is negative");
  if (x->dtype() == SPMD_BOOL)
    invalid("x: bool indices (JAX raises TypeError: iota does not accept dtype bool)");
  const Shape &in = x->shape();
  const size_t a = checked_axis(axis, in.size() + 1, "axis");
  Shape expanded = in, classes(in.size() + 1, 1);
  expanded.insert(expanded.begin() + static_cast<int64_t>(a), 1);
  classes[a] = num_classes;
  Shape out_shape = in;
  out_shape.insert(out_shape.begin() + static_cast<int64_t>(a), num_classes);
  check_result("num_classes", out_shape, dtype);
  const MeshPtr mesh = x->sharding()->mesh();
  const ArrayPtr lhs = reshape(x, expanded, {});
  const ArrayPtr rhs = Array::arange(sharding_of(mesh, propagate::Dims(classes.size())), x->dtype(),
                                     classes, 0, 1);
  return astype(binary(ew::Op::Eq, lhs, rhs, {}), dtype, options);
}

}  // namespace spmd::ops
