// One device's side of a jax.lax collective: the descriptor
// (core/collective.hpp) normalises and checks the call and says which
// dtypes it moves and returns; this meets the group, checks that every
// member called the same thing, and hands the data movement to the backend.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "backend/collectives.hpp"
#include "core/collective.hpp"
#include "runtime/rendezvous.hpp"
#include "spmd/dtype.h"

namespace spmd {

struct LocalBlock {
  void *data = nullptr;
  spmd_dtype dtype = SPMD_F32;
  Shape shape;
};

// Device memory of the caller's choosing (a shard_map context's, or a
// persistent plan's reused buffers).
struct OpMemory {
  // Returns a buffer of `bytes` for the result; may return a preallocated one.
  std::function<void *(size_t bytes)> output;
  // Returns scratch number `slot` (0: the promoted input, 1: the sum of a
  // pmean before its conversion to float), alive until the op has returned.
  std::function<void *(size_t bytes, int slot)> scratch;
};

// Converts `count` elements between dtypes (values as jnp.astype).
void convert_elements(const void *src, spmd_dtype from, void *dst, spmd_dtype to, size_t count);
// Divides `count` floating-point elements by n in place (pmean).
void divide_elements(void *data, spmd_dtype dtype, size_t count, double n);

// Runs one device's part of `op` inside `session`. Returns the result block
// (memory from mem.output). Throws on bad parameters, a mismatch between
// members, a missing peer or a timeout.
LocalBlock run_collective_op(Session &session, size_t position, Backend &backend,
                             const Collective &op, const LocalBlock &in, const OpMemory &mem);

}  // namespace spmd
