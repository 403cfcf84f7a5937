// One descriptor per jax.lax collective: its name, how it moves data, how
// its parameters are normalised and checked, the dtypes it sums in and
// returns, the block shape each member gets (uneven blocks included), what
// every member of a group must agree on, and where its result lives. Written
// once; shard_map's per-device collectives, persistent collectives and the C
// API all use it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/collective_kinds.hpp"
#include "base/shape.hpp"
#include "core/mesh.hpp"
#include "core/partition_spec.hpp"
#include "spmd/dtype.h"

namespace spmd {

enum class CollectiveKind { Psum, Pmean, Pmax, Pmin, AllGather, PsumScatter, AllToAll, Ppermute };

// The fixed facts of one kind: one row per collective (core/collective.cpp).
struct CollectiveTraits {
  CollectiveKind kind;
  const char *name;        // the jax.lax name: "psum", "all_gather", ...
  Transport transport;     // how the backend moves the data
  ReduceOp reduce;         // how values combine (reducing kinds)
  bool mean;               // divide by the group size after summing
  const char *axis_param;  // jax's name of `axis`: "axis", "scatter_dimension", "split_axis"
};

// The row of `kind`; over_no_axes: its row over the empty tuple of axes
// (every device a group of one, nothing moved: a copy of the own block).
const CollectiveTraits &collective_traits(CollectiveKind kind, bool over_no_axes = false);

// What the caller asked for, before any checking.
struct CollectiveParams {
  int64_t axis = 0;         // all_gather axis, psum_scatter scatter_dimension, all_to_all split_axis
  int64_t concat_axis = 0;  // all_to_all
  bool tiled = false;
  std::vector<std::pair<int64_t, int64_t>> pairs;  // ppermute (source, dest) ranks
};

class Collective {
 public:
  Collective(CollectiveKind kind, std::vector<int> axes, CollectiveParams params);

  const CollectiveTraits &traits() const { return *traits_; }
  CollectiveKind kind() const { return traits_->kind; }
  const char *name() const { return traits_->name; }
  Transport transport() const { return traits_->transport; }
  const std::vector<int> &axes() const { return axes_; }  // mesh axis indices
  const CollectiveParams &params() const { return params_; }

  // "psum over 'x'", the prefix of every message about this call.
  std::string label(const Mesh &mesh) const;

  // A copy with its axes normalised (negative counts from the end) and its
  // parameters checked against the input's dtype, its block rank and the
  // group size. `shape_desc` says what the rank was read from ("a block of
  // shape (2, 3)"), `param_prefix` how the caller names the parameters
  // ("" or "options->"). Throws INVALID_ARGUMENT prefixed by `what`.
  Collective normalized(spmd_dtype dtype, const Shape &shape, size_t group_size,
                        const std::string &what, const std::string &shape_desc,
                        const std::string &param_prefix = "") const;

  // JAX's promotions. The dtype the data moves and sums in: the input's,
  // except bool sums (psum, pmean) in int32. The dtype of the result: pmean
  // of integers and bool is a float (int64 gives float64). Over () nothing
  // is summed: psum keeps bool, and pmean converts to float before the copy.
  spmd_dtype transport_dtype(spmd_dtype input) const;
  spmd_dtype output_dtype(spmd_dtype input) const;

  // The one block dimension in which members' inputs may differ (the tiled
  // gather axis, the tiled all_to_all concat axis), or -1. Normalised only.
  int64_t free_dimension() const;
  // What every member of a group must call alike: name, dtype, the block
  // shape with the free dimension masked, and the parameters.
  // "all_gather(float32[*,3], axis=0, tiled=True)". Normalised only.
  std::string signature(spmd_dtype dtype, const Shape &block) const;

  // The block member `rank` receives, given every member's input block in
  // rank order. Normalised only.
  Shape output_block(const std::vector<Shape> &inputs, size_t rank) const;
  // ppermute: the rank member `rank` receives from, or -1 (it gets zeros).
  int64_t source_of(size_t rank) const;

  // Throws UNSUPPORTED when the result differs along the axes but has no
  // dimension a spec could split (untiled psum_scatter and all_to_all), so
  // it cannot be an array of its own (persistent collectives).
  void check_spec_describable(const std::string &what) const;

  // The spec of the result over the mesh, for an input laid out by `in`
  // with `ndim` dimensions (persistent collectives): the collective's axes
  // drop out where the result is the same along them and appear where the
  // collective splits. Normalised only.
  PartitionSpec output_spec(const PartitionSpec &in, size_t ndim, const Mesh &mesh,
                            const std::string &what) const;

 private:
  const CollectiveTraits *traits_;
  std::vector<int> axes_;
  CollectiveParams params_;
};

// The start and length of chunk `index` of a dimension of `size` cut into
// `n` chunks of ceil(size / n) (the last ones shorter or empty).
std::pair<int64_t, int64_t> chunk_of(int64_t size, int64_t n, int64_t index);

}  // namespace spmd
