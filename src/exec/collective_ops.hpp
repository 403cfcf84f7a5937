// One device's side of a jax.lax collective: the descriptor
// (core/collective.hpp) normalises and checks the call and says which
// dtypes it moves and returns; this meets the group, checks that every
// member called the same thing, hands the data movement to the backend and
// queues the dtype conversions JAX's promotions ask for as kernels.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/collective.hpp"
#include "runtime/buffer.hpp"
#include "runtime/rendezvous.hpp"
#include "spmd/dtype.h"

namespace spmd {

// A dense row-major block in a backend's memory.
struct LocalBlock {
  Place place;
  spmd_dtype dtype = SPMD_F32;
  Shape shape;
  size_t bytes() const;
};

// Memory of the caller's choosing for one collective (a shard_map
// context's, or a persistent plan's reused buffers), on the member's device.
struct OpMemory {
  // A buffer of `bytes` for the result; may be a preallocated one.
  std::function<Buffer &(size_t bytes)> output;
  // Scratch number `slot` (0: the promoted input, 1: the sum of a pmean
  // before its conversion to float), alive until the op's work is done.
  std::function<Buffer &(size_t bytes, int slot)> scratch;
};

// The result of one member's collective: its block, and the event of the
// last work queued for it (null when done).
struct OpResult {
  LocalBlock block;
  EventPtr done;
};

// The call of member `rank` (on `device`) of `op`, moving `dtype`; its
// out_shape, places and events are left to the caller.
CollectiveCall collective_call(const Collective &op, spmd_dtype dtype, int device, size_t rank);

// Runs one device's part of `op` inside `session` on an input whose
// readiness is `in_ready`. The result lives in memory from mem.output; the
// buffers it writes record their writes. Throws on bad parameters, a
// mismatch between members, a missing peer or a timeout.
OpResult run_collective_op(Session &session, size_t position, Backend &backend,
                           const Collective &op, const LocalBlock &in, const EventList &in_ready,
                           const OpMemory &mem);

}  // namespace spmd
