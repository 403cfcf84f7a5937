#include "exec/random_array.hpp"

namespace spmd {

ArrayPtr random_array(ShardingPtr sharding, const rng::Request &request, Shape shape) {
  rng::validate(request);
  sharding->check_rank(shape);
  auto a = std::make_shared<Array>(std::move(sharding), request.dtype, std::move(shape));
  Runtime &rt = a->runtime();
  rt.pool().parallel_for(a->shard_count(), [&](size_t i) {
    const Buffer &b = a->buffer(i);
    if (b.bytes())
      rt.backend().fill_random(b.device(), b.data(), request, a->shape(), a->shard(i).box);
  });
  return a;
}

}  // namespace spmd
