// Where one device's part of a global array lies (core/sharding.hpp lays
// them out).
#pragma once

#include "base/shape.hpp"

namespace spmd {

// One device's part of a global array under a sharding.
struct ShardLayout {
  int device = 0;
  int replica_id = 0;
  Shape block;  // shard number per dimension (which chunk of each dimension)
  Box box;      // the global indices held, [start, stop) per dimension
};

}  // namespace spmd
