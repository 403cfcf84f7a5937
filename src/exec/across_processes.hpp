// Collectives whose groups span processes (docs/distributed.md). Inside a
// process the devices meet as they always do; then one thread per process
// exchanges, through the runtime's transport, the blocks of its members
// with every other process of their groups, so that each member can work
// out its result from every member's block with the same host algorithms
// the CPU platform runs (backend/host/collective_phases.hpp): data
// movement is bit-identical to one process, and so is a reduction, each
// member summing its group's blocks in rank order.
//
// The exchange with one process is two messages each way: a fixed-size
// header per block (shape and a hash of the call's signature, so that a
// process calling something else is caught without sending its text), then
// the blocks. Every process sends before it waits, so none waits on
// another's receive.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/collectives.hpp"
#include "core/collective.hpp"
#include "runtime/buffer.hpp"
#include "runtime/runtime.hpp"

namespace spmd::across {

// A member of this process in a collective, its block ready to read.
struct LocalMember {
  const GroupIdentity *group = nullptr;  // every member, across processes
  size_t rank = 0;                       // in group
  Place in;
  Shape shape;
  const std::string *signature = nullptr;  // what it calls (dtype, shape, axes...)
};

// An all-reduce's combination, for exchanging partial results: each
// process reduces its members' blocks of a group (in rank order) and sends
// one block; the process reduces the partials (in process order) once, and
// the group's table lists that one result. The sum is ordered by process,
// then by rank: within the summation bound of one process's order, not bit
// for bit (spmd_runtime_options.exact_reductions keeps that order).
struct Combine {
  ReduceOp op = ReduceOp::Sum;
  spmd_dtype dtype = SPMD_F32;
};

// Exchanges the blocks of `locals` (every device of this process in the
// collective, whose mesh's devices belong to `processes`) with the other
// processes of their groups, and lays every
// group's blocks out in host memory from `storage` (called once with the
// size it needs). Returns that memory. Throws TIMEOUT at `deadline` naming
// the processes that did not come, INVALID_ARGUMENT when a member elsewhere
// calls something else (naming it); `what` names the collective. With
// `combine`, partial results travel instead (see Combine).
void *exchange(Runtime &runtime, const std::vector<int> &processes,
               const std::vector<LocalMember> &locals, size_t elem_size,
               std::chrono::steady_clock::time_point deadline, const std::string &what,
               const std::function<void *(size_t)> &storage, const Combine *combine = nullptr);

// Whether exchange() reads this process's blocks where they lie (the CPU
// platform, whose device memory is host memory): then, except
// for a combined all-reduce, the table points at the devices' own blocks,
// and each device must keep its block until every device of the process
// has read the table (the caller meets once more after computing).
bool reads_in_place(const Runtime &runtime);

// A member's block as exchange() laid it out.
struct Block {
  const void *data;
  Shape shape;
};

// The blocks of the group of local member `index` (its place in `locals`),
// in rank order.
std::vector<Block> group_blocks(const void *storage, size_t index);

// Member `rank`'s result of `call` (out_shape set) from its group's
// blocks, into host memory `out`.
void compute(const CollectiveCall &call, const std::vector<Block> &blocks, size_t rank, void *out);

// Member `rank`'s result of `call` into `out`, a buffer of its out_shape:
// computed where it stays on the CPU platform, else through host memory.
// Returns once it is written, having recorded the write.
void write_result(Runtime &runtime, const CollectiveCall &call, const std::vector<Block> &blocks,
                  size_t rank, Buffer &out);

}  // namespace spmd::across
