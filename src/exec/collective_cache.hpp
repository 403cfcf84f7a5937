// The persistent collectives a program's op keeps from one run to the
// next, so that a replayed reduction or contraction over a sharded
// dimension plans its psum once (exec/program/run.cpp). While a program
// replays an op it installs that op's cache on the thread
// (CollectiveCacheScope); the ops get their collectives from
// persistent_collective(), which plans anew only where there is none
// (eager calls) or where what they ask for differs from what the cache
// holds.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "exec/persistent.hpp"

namespace spmd {

class CollectiveCache {
 public:
  // The collective of the op's `turn`-th call (they come in the same order
  // every run), made now if the cache holds none of these parameters.
  std::shared_ptr<PersistentCollective> get(size_t turn, const ShardingPtr &input_sharding,
                                            const Collective &op, spmd_dtype dtype,
                                            const Shape &global, std::chrono::milliseconds timeout);

 private:
  struct Entry {
    ShardingPtr sharding;
    Collective op;
    spmd_dtype dtype;
    Shape global;
    std::shared_ptr<PersistentCollective> collective;
  };
  std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;  // by turn
};

// Installs a cache on the calling thread for its lifetime, counting the
// calls made under it.
class CollectiveCacheScope {
 public:
  explicit CollectiveCacheScope(CollectiveCache &cache);
  ~CollectiveCacheScope();
  CollectiveCacheScope(const CollectiveCacheScope &) = delete;
  CollectiveCacheScope &operator=(const CollectiveCacheScope &) = delete;

  CollectiveCache &cache() const { return cache_; }
  size_t next_turn() { return turns_++; }

 private:
  CollectiveCache &cache_;
  CollectiveCacheScope *outer_;
  size_t turns_ = 0;
};

// A persistent collective for one call: from the thread's cache where a
// program replays, else planned for this call alone.
std::shared_ptr<PersistentCollective> persistent_collective(const ShardingPtr &input_sharding,
                                                            const Collective &op, spmd_dtype dtype,
                                                            const Shape &global,
                                                            std::chrono::milliseconds timeout);

}  // namespace spmd
