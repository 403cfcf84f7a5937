// Moves of blocks between the shards of two arrays (reshard, slice,
// concatenate, pad): the one place where data crosses processes outside
// collectives. Moves whose two ends are this process's devices are queued
// as one batch of box copies, as in a runtime of one process; a move with
// one end here and the other in another process is a send or a receive of
// host staging through the runtime's transport (docs/distributed.md).
#pragma once

#include <cstddef>
#include <vector>

#include "base/shape.hpp"
#include "runtime/array.hpp"

namespace spmd {

// The block of `extent` at `src_offset` in src's shard `src` going to
// `dst_offset` in dst's shard `dst`.
struct ShardMove {
  size_t src = 0;
  size_t dst = 0;
  Shape src_offset;
  Shape dst_offset;
  Shape extent;
};

// Queues `moves` from src's shards into dst's and records them: reads of
// src's addressable shards, a write of every addressable shard of dst.
// Every process of the runtime calls it with the same moves (a
// multi-controller program does); the moves of each process's own devices
// are its part. With moves across processes it returns once they have
// arrived (their copies into dst still queued), or throws TIMEOUT after the
// collective timeout ($SPMD_COLLECTIVE_TIMEOUT_MS), naming the process that
// did not send or receive; `what` names the call for messages.
void move_shards(const Array &src, Array &dst, const std::vector<ShardMove> &moves,
                 const char *what);

}  // namespace spmd
