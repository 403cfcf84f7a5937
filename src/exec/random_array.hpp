// Random arrays: jax.random's draws as sharded arrays, each device
// generating only its own block (the generator is kernels/random.hpp).
#pragma once

#include "kernels/random.hpp"
#include "runtime/array.hpp"

namespace spmd {

// A new array of global shape `shape` laid out by `sharding`, drawn as
// `request` says. Throws INVALID_ARGUMENT for what rng::validate refuses.
ArrayPtr random_array(ShardingPtr sharding, const rng::Request &request, Shape shape);

}  // namespace spmd
