// One device's side of a jax.lax collective: checks and normalises the
// parameters, converts dtypes the way JAX does (psum of bool sums int32,
// pmean of integers is a float mean), meets its group, checks that every
// member called the same thing, and hands the data movement to the backend.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "backend/collectives.hpp"
#include "runtime/rendezvous.hpp"
#include "spmd/dtype.h"

namespace spmd {

struct OpSpec {
  const char *name = "psum";  // jax.lax name, for messages
  CollKind kind = CollKind::AllReduce;
  ReduceOp op = ReduceOp::Sum;
  bool mean = false;
  int64_t axis = 0;
  int64_t concat_axis = 0;
  bool tiled = false;
  std::vector<std::pair<int64_t, int64_t>> pairs;  // ppermute (source, dest)
  std::vector<int> axes;                           // mesh axis indices
};

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

// The dtype of the result of `op` on an input of `dtype`.
spmd_dtype op_output_dtype(const OpSpec &op, spmd_dtype dtype);
// The dtype the data moves and sums in: the input's, except bool sums
// (psum and pmean) in int32, as JAX does. pmean of integers sums in their
// own wrapping arithmetic, then converts to float and divides.
spmd_dtype op_transport_dtype(const OpSpec &op, spmd_dtype dtype);

// The result shape of `op` for a uniform input shape over `n` devices, or
// throws INVALID_ARGUMENT saying why the input does not fit.
Shape op_output_shape(const OpSpec &op, const Shape &in, size_t n, size_t rank, const char *what);

// Converts `count` elements between dtypes (values as jnp.astype).
void convert_elements(const void *src, spmd_dtype from, void *dst, spmd_dtype to, size_t count);
// Divides `count` floating-point elements by n in place (pmean).
void divide_elements(void *data, spmd_dtype dtype, size_t count, double n);

// Runs one device's part of `op` inside `session`. Returns the result block
// (memory from mem.output). Throws on bad parameters, a mismatch between
// members, a missing peer or a timeout.
LocalBlock run_collective_op(Session &session, size_t position, Backend &backend,
                             const OpSpec &op, const LocalBlock &in, const OpMemory &mem);

}  // namespace spmd
