#include "exec/ops/random.hpp"

#include <vector>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "runtime/runtime.hpp"

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

ArrayPtr key_data_array(ShardingPtr sharding, rng::Key key) {
  const uint32_t words[2] = {key.w0, key.w1};
  return Array::from_host(std::move(sharding), SPMD_U32, Shape{2}, words, sizeof words);
}

namespace {

// Throws, naming `key`, unless it is uint32[2] key data.
void check_key_data(const Array &key) {
  if (key.dtype() == SPMD_U32 && key.shape() == Shape{2}) return;
  invalid("key: ", type_text(key), " where key data is uint32[2] (spmd_x_random_key_data)");
}

// The key key data holds (it has values).
rng::Key read_key_data(const Array &key) {
  uint32_t words[2];
  key.to_host(words, sizeof words);
  return {words[0], words[1]};
}

}  // namespace

ArrayPtr random_array_from(ShardingPtr sharding, rng::Request request, Shape shape, const Array &key) {
  check_key_data(key);
  if (&Runtime::of(*key.sharding()) != &Runtime::of(*sharding))
    invalid("key: on another runtime than sharding");
  if (key.abstract()) {
    // What random_array checks, and a result without values.
    rng::validate(request);
    sharding->check_rank(shape);
    return std::make_shared<Array>(std::move(sharding), request.dtype, std::move(shape));
  }
  request.key = read_key_data(key);
  return random_array(std::move(sharding), request, std::move(shape));
}

ArrayPtr fold_in_key_data(const Array &key, uint32_t data) {
  check_key_data(key);
  if (key.abstract()) return std::make_shared<Array>(key.sharding(), SPMD_U32, Shape{2});
  return key_data_array(key.sharding(), rng::fold_in(read_key_data(key), data));
}

std::vector<ArrayPtr> split_key_data(const Array &key, size_t n) {
  check_key_data(key);
  std::vector<ArrayPtr> keys;
  if (key.abstract()) {
    for (size_t i = 0; i < n; ++i) keys.push_back(std::make_shared<Array>(key.sharding(), SPMD_U32, Shape{2}));
    return keys;
  }
  const rng::Key k = read_key_data(key);
  for (size_t i = 0; i < n; ++i) keys.push_back(key_data_array(key.sharding(), rng::split(k, i)));
  return keys;
}

}  // namespace spmd
