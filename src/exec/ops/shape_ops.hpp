// Ops that move elements without computing on them: transpose and reshape
// (one local copy per device after bringing the input to a layout the
// propagation rule can carry).
#pragma once

#include <vector>

#include "exec/ops/op_support.hpp"

namespace spmd::ops {

// perm empty: reversed dimensions, as jnp.transpose.
ArrayPtr transpose(const ArrayPtr &x, std::vector<int64_t> perm, const OpOptions &options);
// One -1 in `shape` is inferred.
ArrayPtr reshape(const ArrayPtr &x, Shape shape, const OpOptions &options);

}  // namespace spmd::ops
