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

}  // namespace spmd
