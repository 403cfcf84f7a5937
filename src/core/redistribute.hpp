// The redistribution planner: which blocks move from which source device to
// which destination device to turn one layout of a global array into
// another. Each destination element comes from exactly one source replica:
// the destination device's own copy when it has one, otherwise the replica
// that has been asked for the fewest bytes so far (spreading the reads).
#pragma once

#include <vector>

#include "core/sharding.hpp"

namespace spmd {

struct BlockMove {
  size_t src;  // shard index (mesh position) in the source layout
  size_t dst;  // shard index in the destination layout
  Box box;     // global indices moved
};

std::vector<BlockMove> plan_redistribution(const std::vector<ShardLayout> &src,
                                           const std::vector<ShardLayout> &dst);

}  // namespace spmd
