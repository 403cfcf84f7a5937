// Elementwise reductions of n equally long host buffers into one, per dtype.
// Sums use the dtype's own arithmetic (integers wrap), f16/bf16 accumulate in
// f32 and round once; max/min propagate NaN as XLA does; bool max/min are
// any/all. Sources are combined in order 0..n-1, so every caller reducing the
// same inputs gets bit-identical results.
#pragma once

#include <cstddef>

#include "base/collective_kinds.hpp"
#include "spmd/dtype.h"

namespace spmd::host {

// out[i] = srcs[0][i] op srcs[1][i] op ... for i in [0, count). `out` may
// alias none of the sources.
void reduce_buffers(spmd_dtype dtype, ReduceOp op, void *out, const void *const *srcs, size_t n,
                    size_t count);

}  // namespace spmd::host
