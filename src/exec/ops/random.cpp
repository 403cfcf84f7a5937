#include "exec/ops/random.hpp"

namespace spmd {

ArrayPtr random_array(ShardingPtr sharding, const rng::Request &request, Shape shape) {
  rng::validate(request);
  sharding->check_rank(shape);
  auto a = std::make_shared<Array>(std::move(sharding), request.dtype, std::move(shape));
  // Each device draws its own block; every element depends only on the key
  // and its global index.
  std::vector<std::pair<size_t, Kernel>> writes;
  writes.reserve(a->shard_count());
  for (size_t i = 0; i < a->shard_count(); ++i) {
    if (!a->addressable(i)) continue;
    const Buffer &b = a->buffer(i);
    if (b.bytes()) writes.emplace_back(i, Kernel::draw(b.place(), request, a->shape(), a->shard(i).box));
  }
  a->write_shards(std::move(writes));
  return a;
}

}  // namespace spmd
