// Shardings (NamedSharding, SingleDeviceSharding) and the index math that
// places each block of a global array on its devices.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/mesh.hpp"
#include "core/partition_spec.hpp"
#include "core/shard_layout.hpp"
#include "base/shape.hpp"

namespace spmd {

class Sharding {
 public:
  enum class Kind { Named, SingleDevice };

  // Checks every spec axis exists in the mesh.
  static std::shared_ptr<const Sharding> named(std::shared_ptr<const Mesh> mesh,
                                               PartitionSpec spec);
  static std::shared_ptr<const Sharding> single_device(DeviceSetPtr devices,
                                                       int device);

  Kind kind() const { return kind_; }
  const std::shared_ptr<const Mesh> &mesh() const { return mesh_; }
  const PartitionSpec &spec() const { return spec_; }
  const DeviceSetPtr &device_set() const { return mesh_->device_set(); }
  size_t device_count() const { return mesh_->size(); }

  // Number of shards dimension `dim` is split into (1 when not split).
  int64_t splits(size_t dim) const;

  // The layout of every device (mesh order) for a global shape. Throws
  // INVALID_ARGUMENT when the spec names more dimensions than the shape has.
  std::vector<ShardLayout> layout(const Shape &global) const;
  // The same, shared: kept in the mesh's memo (Mesh::layout_memo) by axes
  // and shape, so arrays made again and again of one layout (each op's
  // result, each run of a program) compute it once.
  std::shared_ptr<const std::vector<ShardLayout>> shared_layout(const Shape &global) const;
  void check_rank(const Shape &global) const;

  bool fully_replicated() const;
  bool equivalent(const Sharding &other) const;  // JAX's ==
  std::string to_string() const;

 private:
  Sharding(Kind kind, std::shared_ptr<const Mesh> mesh, PartitionSpec spec);

  Kind kind_;
  std::shared_ptr<const Mesh> mesh_;
  PartitionSpec spec_;
  std::vector<std::vector<int>> dim_axes_;  // mesh axis indices per spec dim
};

using ShardingPtr = std::shared_ptr<const Sharding>;

// Length of each shard of a dimension of size `size` split `n` ways, as
// DTensor and GSPMD: ceil(size / n); the last shards are shorter or empty.
inline int64_t chunk_size(int64_t size, int64_t n) { return (size + n - 1) / n; }

}  // namespace spmd
