// x.at[indices].add(updates) along one axis of one device's blocks: the
// result block (laid out as x's) is pre x len x post, positions
// [start, start + len) of an axis of `axis_size`; the indices are all of
// them (`count`), the updates block pre x count x post. An index below 0
// counts from the end; one outside the block is dropped (JAX's
// FILL_OR_DROP). Every operand is of `dtype`; floats add as XLA's CPU code
// does (DAZ, FTZ, 16-bit floats through f32 rounded at each step),
// integers wrap. Each result element adds its updates in increasing update
// order, as XLA's CPU scatter applies them one at a time.
#pragma once

#include <cstdint>

#include "spmd/dtype.h"

namespace spmd::scatter_add {

struct Params {
  spmd_dtype dtype = SPMD_F32;        // of x, the updates and the result; not bool
  spmd_dtype index_dtype = SPMD_I32;  // any integer type
  int64_t pre = 0, len = 0, post = 0;
  int64_t count = 0;
  int64_t axis_size = 0, start = 0;
};

int64_t out_elements(const Params &p);

// The updates one after another into a copy of x.
void run(const Params &p, void *out, const void *x, const void *indices, const void *updates);

}  // namespace spmd::scatter_add
