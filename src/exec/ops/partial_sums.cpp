#include "exec/ops/partial_sums.hpp"

#include "base/error.hpp"
#include "exec/collective_cache.hpp"
#include "runtime/rendezvous.hpp"
#include "spmd/sharding.h"

namespace spmd::ops {

namespace {
int64_t shards_of(const propagate::Dim &d, const Mesh &mesh) {
  int64_t n = 1;
  for (const auto &a : d) n *= mesh.shape()[static_cast<size_t>(mesh.axis_index(a))];
  return n;
}

std::vector<int> axis_indices(const Mesh &mesh, const std::vector<std::string> &axes) {
  std::vector<int> idx;
  for (const auto &a : axes) idx.push_back(mesh.axis_index(a));
  return idx;
}
}  // namespace

int64_t scatter_dimension(const propagate::Dims &natural, const propagate::Dims &requested,
                          const std::vector<std::string> &axes, const Shape &shape,
                          const Mesh &mesh) {
  if (axes.empty()) return -1;
  for (size_t d = 0; d < natural.size(); ++d) {
    propagate::Dim want = natural[d];
    want.insert(want.end(), axes.begin(), axes.end());
    if (requested[d] != want) continue;
    if (shape[d] % shards_of(want, mesh) != 0) return -1;  // uneven: psum, then reshard
    return static_cast<int64_t>(d);
  }
  return -1;
}

namespace {

// Two neighbouring dimensions d, d + 1 that can be one for the collective:
// every device's block is the same run of elements either way. Or -1.
int64_t mergeable_pair(const Shape &shape, const propagate::Dims &dims, const Mesh &mesh) {
  for (size_t d = 0; d + 1 < shape.size(); ++d) {
    const bool next_whole = dims[d + 1].empty();
    // Whole after a dimension split evenly (or whole too): blocks of whole rows.
    if (next_whole && shape[d] % shards_of(dims[d], mesh) == 0) return static_cast<int64_t>(d);
    // A whole dimension of size 1 before a split one adds nothing.
    if (dims[d].empty() && shape[d] == 1) return static_cast<int64_t>(d);
  }
  return -1;
}

}  // namespace

ArrayPtr combine_partials(const MeshPtr &mesh, const ArrayPtr &partials, const Shape &shape,
                          const propagate::Dims &dims, const std::vector<std::string> &axes,
                          Combine how, int64_t scatter) {
  if (axes.empty()) return partials;
  // The partials are stacked along a new leading dimension below, which a
  // result of SPMD_MAX_NDIM dimensions has no room for: two of its
  // dimensions are combined as one (the same buffers), then split again.
  if (shape.size() >= SPMD_MAX_NDIM) {
    const int64_t d = mergeable_pair(shape, dims, *mesh);
    if (d < 0)
      invalid("x: a result of ", shape.size(), " dimensions ", shape_to_string(shape),
              " whose neighbouring dimensions are all split cannot be combined across devices; "
              "reshard an operand so that two neighbours are whole first");
    const auto k = static_cast<size_t>(d);
    Shape merged_shape = shape;
    merged_shape[k] *= shape[k + 1];
    merged_shape.erase(merged_shape.begin() + d + 1);
    propagate::Dims merged_dims = dims;
    if (merged_dims[k].empty()) merged_dims[k] = dims[k + 1];
    merged_dims.erase(merged_dims.begin() + d + 1);
    std::vector<BufferPtr> buffers;
    for (size_t i = 0; i < partials->shard_count(); ++i) buffers.push_back(partials->buffer_ptr(i));
    const ArrayPtr merged = Array::from_buffers(sharding_of(mesh, merged_dims), partials->dtype(),
                                                merged_shape, std::move(buffers));
    // A scatter into one of the two merged dimensions is left to a reshard.
    const int64_t merged_scatter = scatter < 0 || scatter == d || scatter == d + 1 ? -1
                                   : scatter > d ? scatter - 1 : scatter;
    const ArrayPtr out = combine_partials(mesh, merged, merged_shape, merged_dims, axes, how,
                                          merged_scatter);
    propagate::Dims out_dims = dims;
    if (merged_scatter >= 0) {
      auto &sd = out_dims[static_cast<size_t>(scatter)];
      sd.insert(sd.end(), axes.begin(), axes.end());
    }
    std::vector<BufferPtr> back;
    for (size_t i = 0; i < out->shard_count(); ++i) back.push_back(out->buffer_ptr(i));
    return Array::from_buffers(sharding_of(mesh, out_dims), out->dtype(), shape, std::move(back));
  }
  // The partials as one array with a leading dimension of one block per
  // member of each group, split over the axes: shard_map's view of them.
  const Mesh &m = *mesh;
  propagate::Dims stacked_dims{propagate::Dim(axes.begin(), axes.end())};
  stacked_dims.insert(stacked_dims.end(), dims.begin(), dims.end());
  Shape stacked_shape{shards_of(stacked_dims[0], m)};
  stacked_shape.insert(stacked_shape.end(), shape.begin(), shape.end());
  std::vector<BufferPtr> buffers;
  for (size_t i = 0; i < partials->shard_count(); ++i) buffers.push_back(partials->buffer_ptr(i));
  ArrayPtr stacked = Array::from_buffers(sharding_of(mesh, stacked_dims), partials->dtype(),
                                         stacked_shape, std::move(buffers));
  const CollectiveKind kind = how == Combine::Sum   ? CollectiveKind::Psum
                              : how == Combine::Max ? CollectiveKind::Pmax
                                                    : CollectiveKind::Pmin;
  // A sum asked to scatter over `scatter` leaves it split over the axes.
  const bool scatters = scatter >= 0 && how == Combine::Sum;
  CollectiveParams params;
  if (scatters) {
    params.axis = scatter + 1;
    params.tiled = true;
  }
  const Collective collective(scatters ? CollectiveKind::PsumScatter : kind, axis_indices(m, axes),
                              params);
  propagate::Dims out_dims = dims;
  if (scatters) {
    auto &d = out_dims[static_cast<size_t>(scatter)];
    d.insert(d.end(), axes.begin(), axes.end());
  }
  if (stacked->abstract()) {
    // Recorded: the collective and a ring's bytes for the program's text
    // (each of the n devices sends (g - 1) / g of its block to
    // reduce-scatter, and as much again to gather back for a psum), and the
    // result's layout.
    const int64_t g = stacked_shape[0];
    const int64_t block = partials->shard(0).box.elements() * static_cast<int64_t>(partials->elem_size());
    const int64_t n = static_cast<int64_t>(partials->shard_count());
    current_recording()->note_transfer(collective.label(m), n * (scatters ? 1 : 2) * (g - 1) * block / g);
    return std::make_shared<Array>(sharding_of(mesh, out_dims), partials->dtype(), shape);
  }
  // Planned once per op of a program (its runs replay the call), else now.
  const auto op = persistent_collective(stacked->sharding(), collective, stacked->dtype(),
                                        stacked_shape, collective_timeout(0, "timeout"));
  const ArrayPtr summed = op->execute(stacked);
  // Drop the leading dimension (now of size 1): the same buffers.
  std::vector<BufferPtr> out_buffers;
  for (size_t i = 0; i < summed->shard_count(); ++i) out_buffers.push_back(summed->buffer_ptr(i));
  return Array::from_buffers(sharding_of(mesh, out_dims), summed->dtype(), shape,
                             std::move(out_buffers));
}

}  // namespace spmd::ops
