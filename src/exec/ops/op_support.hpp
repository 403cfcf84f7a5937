// What every global op shares: checking that operands live on one mesh,
// bringing an operand to the layout its op reads it in, the output
// sharding a caller may ask for, and queuing one kernel per device that
// reads some arrays and writes another.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/propagation.hpp"
#include "runtime/array.hpp"

namespace spmd::ops {

// What a caller may ask of any op (spmd_op_options).
struct OpOptions {
  ShardingPtr out_sharding;  // null: the propagated one
  // Operands whose arrays the op may consume (donate_argnums): their
  // buffers may become the result's.
  bool donate[3] = {false, false, false};
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

// A result `propagated` becomes `requested` (when set) by a reshard.
ArrayPtr honour(const ArrayPtr &result, const ShardingPtr &requested);

// One kernel per shard of `out` (index i writes out's buffer i), each
// reading the buffers of `inputs` it names: queued after their writes,
// recorded as their reads and as out's writes.
void launch_per_shard(Array &out, const std::vector<const Array *> &inputs,
                      std::vector<std::pair<size_t, Kernel>> kernels);

// An axis of an array of `ndim` dimensions, negative counting from the end;
// INVALID_ARGUMENT naming `what` when out of range.
size_t checked_axis(int64_t axis, size_t ndim, const char *what);

// "(3, 8)" and "float32" for messages.
std::string describe(const Array &a);

}  // namespace spmd::ops
