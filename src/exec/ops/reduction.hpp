// Reductions as global ops: each device reduces its own block, then the
// partial results are combined across the mesh axes that split a reduced
// dimension (exec/ops/partial_sums.hpp). argmax and argmin gather their axis first
// when it is split; softmax is written with the ops and keeps x's sharding.
#pragma once

#include <vector>

#include "exec/ops/op_support.hpp"

namespace spmd::ops {

enum class ReduceKind { Sum, Mean, Max, Min };

// Dimensions to reduce: `axes` (negative counts from the end), all of
// them when `all` is set.
ArrayPtr reduce(ReduceKind kind, const ArrayPtr &x, const std::vector<int64_t> &axes, bool all,
                bool keepdims, const OpOptions &options);
ArrayPtr argmax(const ArrayPtr &x, int64_t axis, const OpOptions &options);
ArrayPtr argmin(const ArrayPtr &x, int64_t axis, const OpOptions &options);
// jnp.cumsum(x, axis): bool sums as int32, every other dtype in its own
// (integers wrap), floats in XLA's order of additions.
ArrayPtr cumsum(const ArrayPtr &x, int64_t axis, const OpOptions &options);
ArrayPtr softmax(const ArrayPtr &x, int64_t axis, bool log, const OpOptions &options);

}  // namespace spmd::ops
