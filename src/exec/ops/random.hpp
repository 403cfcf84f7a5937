// Random arrays as global ops: jax.random's draws as sharded arrays laid
// out by the sharding the caller gives (as jax.random under jit with an
// out_shardings), each device generating only its own block, so the values
// do not depend on the layout (the generator is kernels/random.hpp).
#pragma once

#include "kernels/random.hpp"
#include "runtime/array.hpp"

namespace spmd {

// A new array of global shape `shape` laid out by `sharding`, drawn as
// `request` says. Throws INVALID_ARGUMENT for what rng::validate refuses.
ArrayPtr random_array(ShardingPtr sharding, const rng::Request &request, Shape shape);

// jax.random.key_data(key): the key's words as a uint32[2] array laid out
// by `sharding`.
ArrayPtr key_data_array(ShardingPtr sharding, rng::Key key);

// random_array with request.key read from `key`, uint32[2] key data in
// any layout. Given an abstract key (a value of a program being recorded),
// the abstract result, for the program to replay with each run's key.
// Throws INVALID_ARGUMENT, naming the argument `key`, for another type.
ArrayPtr random_array_from(ShardingPtr sharding, rng::Request request, Shape shape, const Array &key);

// jax.random.fold_in and jax.random.split on key data: new key data laid
// out as `key` (abstract for an abstract key), checked as random_array_from
// checks it.
ArrayPtr fold_in_key_data(const Array &key, uint32_t data);
std::vector<ArrayPtr> split_key_data(const Array &key, size_t n);

}  // namespace spmd
