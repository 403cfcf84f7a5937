#include "exec/collective_cache.hpp"

namespace spmd {

namespace {

thread_local CollectiveCacheScope *t_scope = nullptr;

bool same_call(const Collective &a, const Collective &b) {
  const CollectiveParams &p = a.params(), &q = b.params();
  return a.kind() == b.kind() && a.axes() == b.axes() && p.axis == q.axis &&
         p.concat_axis == q.concat_axis && p.tiled == q.tiled && p.pairs == q.pairs;
}

}  // namespace

std::shared_ptr<PersistentCollective> CollectiveCache::get(size_t turn,
                                                           const ShardingPtr &input_sharding,
                                                           const Collective &op, spmd_dtype dtype,
                                                           const Shape &global,
                                                           std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (turn < entries_.size() && entries_[turn]) {
      const Entry &e = *entries_[turn];
      if (e.dtype == dtype && e.global == global && same_call(e.op, op) &&
          (e.sharding == input_sharding ||
           (e.sharding->equivalent(*input_sharding) && *e.sharding->mesh() == *input_sharding->mesh())))
        return e.collective;
    }
  }
  // Planned outside the lock: planning checks the call and may throw.
  auto made = std::make_shared<PersistentCollective>(input_sharding, op, dtype, global, timeout);
  auto entry = std::make_unique<Entry>(Entry{input_sharding, op, dtype, global, made});
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() <= turn) entries_.resize(turn + 1);
  entries_[turn] = std::move(entry);
  return made;
}

CollectiveCacheScope::CollectiveCacheScope(CollectiveCache &cache) : cache_(cache), outer_(t_scope) {
  t_scope = this;
}

CollectiveCacheScope::~CollectiveCacheScope() { t_scope = outer_; }

std::shared_ptr<PersistentCollective> persistent_collective(const ShardingPtr &input_sharding,
                                                            const Collective &op, spmd_dtype dtype,
                                                            const Shape &global,
                                                            std::chrono::milliseconds timeout) {
  if (CollectiveCacheScope *scope = t_scope)
    return scope->cache().get(scope->next_turn(), input_sharding, op, dtype, global, timeout);
  return std::make_shared<PersistentCollective>(input_sharding, op, dtype, global, timeout);
}

}  // namespace spmd
