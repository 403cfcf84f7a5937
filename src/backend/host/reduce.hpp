// Elementwise reductions of n equally long host buffers into one, per dtype,
// computing what XLA's CPU collectives compute (measured against JAX, see
// docs/shard_map.md):
//
// - Sums start from +0 and add the sources in order 0..n-1, so -0 + -0 is +0,
//   also for n = 1. Integers wrap. f32 and f64 flush subnormals to zero of
//   their sign, in and out, as XLA's CPU code runs. bf16 adds in f32 (with
//   the same flushing) and rounds once; f16 rounds to f16 after every
//   addition (Eigen::half arithmetic) and keeps subnormals.
// - Max and min keep the earlier value when two compare equal (+0 and -0),
//   and flush subnormals for f32, f64 and bf16 as the sums do. A NaN wins:
//   the first NaN in source order is the result (XLA's CPU collectives skip
//   NaNs instead; docs/differences.md). Bool max and min are any and all.
//
// Every caller reducing the same inputs gets bit-identical results.
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
