// What every global op shares: checking that operands live on one mesh,
// bringing an operand to the layout its op reads it in, the output
// sharding a caller may ask for, and queuing one kernel per device that
// reads some arrays and writes another.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/propagation.hpp"
#include "runtime/array.hpp"

namespace spmd::ops {

// What a caller may ask of any op (spmd_op_options).
struct OpOptions {
  ShardingPtr out_sharding;  // null: the propagated one
  // Operands the op consumes (donate_argnums), as the caller holds them:
  // their buffers may become the result's (take_donated).
  ArraySlot *donate[3] = {nullptr, nullptr, nullptr};
  // The C function, which later users of a donated operand are told of.
  const char *function = "an op";
  // The op's name for people where the function serves several ops
  // ("sum" for spmd_reduce): a recorded program's text shows it.
  const char *label = nullptr;
};

struct Operand {
  ArrayPtr array;
  const char *name;  // the argument's name in messages: "x", "y"
};

// The mesh the operands share. Throws INVALID_ARGUMENT naming both
// arguments when two live on different meshes (or runtimes).
MeshPtr common_mesh(const std::vector<Operand> &operands);

// Checks a requested output sharding against the operands' devices (its
// mesh may be another over the same devices) and the result's rank;
// returns it, or null when none was asked for.
ShardingPtr requested_sharding(const OpOptions &options, const MeshPtr &mesh, size_t ndim);

// Whether a (requested) sharding is on `mesh` itself, so its spec can
// steer the op; one on another mesh is reached by a reshard afterwards.
bool on_mesh(const ShardingPtr &s, const MeshPtr &mesh);

// The array laid out by `dims` on `mesh`: itself when it already is,
// otherwise a reshard.
ArrayPtr laid_out(const ArrayPtr &a, const MeshPtr &mesh, const propagate::Dims &dims);

ShardingPtr sharding_of(const MeshPtr &mesh, const propagate::Dims &dims);
// The same, but `first`'s own sharding object when it has the result's
// rank and lays it out so: the name as_jit_returns would give it, without
// renaming the result afterwards (the elementwise ops' dispatch path).
ShardingPtr sharding_of(const MeshPtr &mesh, const propagate::Dims &dims, const Array &first);

// The layout of a result of `shape` whose rule gave `dims`, as jax.jit
// places it when no layout is asked for: axes that do not divide their
// dimension dropped (propagate::keep_dividing_axes).
ShardingPtr result_sharding(const MeshPtr &mesh, propagate::Dims dims, const Shape &shape);

// A result `propagated` becomes `requested` (when set) by a reshard.
ArrayPtr honour(const ArrayPtr &result, const ShardingPtr &requested);

// The op's result as jax.jit returns it: one with no elements comes back
// replicated, whatever its operands' layout (jit's rule for empty
// outputs), unless the caller asked for a layout. And named as jit names
// it: by the output sharding asked for, as given; else by the first
// operand's sharding, as given, when the result has its rank and is laid
// out alike; else by a spec without trailing Nones, as JAX reads a new
// sharding back from XLA (so `a @ a.T` of P('x', 'y') prints
// PartitionSpec('x',), and `2 * sin(x)` keeps x's spec as written).
ArrayPtr as_jit_returns(const ArrayPtr &result, const OpOptions &options, const Array *first_operand);

// Consumes donated operand k and says whether the result may take its
// buffers and write them in place: only when no other call holds it. A
// call that started before the donation (a copy to the host, a shard_map
// reading its memory) still reads it, so the result gets memory of its own
// rather than waiting for that call, as JAX computes without a donation
// it cannot use. Call it once every argument check has passed, just
// before taking the buffers: the operand is consumed from then on.
bool take_donated(const OpOptions &options, size_t k);

// One kernel per shard of `out` (index i writes out's buffer i), each
// reading the buffers of `inputs` it names: queued after their writes,
// recorded as their reads and as out's writes.
void launch_per_shard(Array &out, const std::vector<const Array *> &inputs,
                      std::vector<std::pair<size_t, Kernel>> kernels);
// The same for kernels already in one batch: batch[k] writes out's buffer
// shards[k]. The batch is only read (a program launches its own copy).
void launch_batch(Array &out, const std::vector<const Array *> &inputs,
                  std::span<const Kernel> batch, std::span<const size_t> shards);
// launch_batch, noted in the thread's work log when one is open (as
// launch_per_shard notes its launches): for a program's own batches.
void launch_batch_noted(Array &out, const std::vector<const Array *> &inputs,
                        std::span<const Kernel> batch, std::span<const size_t> shards);

// Refuses a result no array may have, before the op does anything: more
// than SPMD_MAX_NDIM dimensions, or a shape too large for its dtype
// (base/checked.hpp's rule). `what` names where the shape came from:
// "dims" (dot_general), "subscripts", "shape".
void check_result(const char *what, const Shape &shape, spmd_dtype dtype);

// An axis of an array of `ndim` dimensions, negative counting from the end;
// INVALID_ARGUMENT naming `what` when out of range.
size_t checked_axis(int64_t axis, size_t ndim, const char *what);

// "(3, 8)" and "float32" for messages.
std::string describe(const Array &a);

}  // namespace spmd::ops
