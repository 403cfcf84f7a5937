// The vocabulary every layer shares about collectives: how data moves
// between the members of a group (the transport a backend implements) and
// how values combine. The jax.lax collectives of core/collective.hpp are
// built from these.
#pragma once

namespace spmd {

enum class Transport { AllReduce, AllGather, ReduceScatter, AllToAll, Permute };
enum class ReduceOp { Sum, Max, Min };

}  // namespace spmd
