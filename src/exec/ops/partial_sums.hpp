// Per-device partial results combined across mesh axes: what a reduction
// or contraction over a sharded dimension needs after every device has
// reduced its own block. Done by the persistent collectives (psum, pmax,
// pmin, psum_scatter), so the data moves as theirs does.
#pragma once

#include <string>
#include <vector>

#include "exec/ops/op_support.hpp"

namespace spmd::ops {

enum class Combine { Sum, Max, Min };

// `partials` holds every device's block (mesh order) of a result of
// `shape` laid out by `dims`, not yet combined over `axes`. Returns the
// combined result, laid out by `dims`, or, when `scatter` names a result
// dimension, by `dims` with the axes appended to that dimension (a
// psum_scatter instead of a psum and a slice).
ArrayPtr combine_partials(const MeshPtr &mesh, const ArrayPtr &partials, const Shape &shape,
                          const propagate::Dims &dims, const std::vector<std::string> &axes,
                          Combine how, int64_t scatter = -1);

// The result dimension a requested layout wants the summed axes appended
// to (the cheapest way to reach it), or -1.
int64_t scatter_dimension(const propagate::Dims &natural, const propagate::Dims &requested,
                          const std::vector<std::string> &axes, const Shape &shape,
                          const Mesh &mesh);

}  // namespace spmd::ops
