// jnp.take along one axis of one device's blocks: the operand block is
// pre x len x post with the axis whole (len), the indices a block of
// `count`, and the result pre x count x post. An index below 0 counts
// from the end; one still outside [0, len) gives JAX's fill value (NaN for
// floats, the lowest signed integer, the largest unsigned, true).
#pragma once

#include <cstdint>

#include "spmd/dtype.h"

namespace spmd::take {

struct Params {
  spmd_dtype dtype = SPMD_F32;        // of the operand and the result
  spmd_dtype index_dtype = SPMD_I32;  // any integer type
  int64_t pre = 0, len = 0, post = 0;
  int64_t count = 0;
};

int64_t out_elements(const Params &p);

void run(const Params &p, void *out, const void *a, const void *indices);

}  // namespace spmd::take
