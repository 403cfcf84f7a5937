#include "core/sharding.hpp"

#include <algorithm>
#include <mutex>

#include "base/error.hpp"

namespace spmd {

Sharding::Sharding(Kind kind, std::shared_ptr<const Mesh> mesh, PartitionSpec spec)
    : kind_(kind), mesh_(std::move(mesh)), spec_(std::move(spec)) {
  for (size_t d = 0; d < spec_.ndim(); ++d) {
    std::vector<int> axes;
    for (const auto &name : spec_.dims()[d]) {
      const int a = mesh_->axis_index(name);
      if (a < 0)
        invalid("spec '", spec_.short_string(), "': mesh has no axis '", name,
                "' (axes: ", mesh_->axes_list(), ")");
      axes.push_back(a);
    }
    dim_axes_.push_back(std::move(axes));
  }
}

std::shared_ptr<const Sharding> Sharding::named(std::shared_ptr<const Mesh> mesh,
                                                PartitionSpec spec) {
  return std::shared_ptr<const Sharding>(new Sharding(Kind::Named, std::move(mesh), std::move(spec)));
}

std::shared_ptr<const Sharding> Sharding::single_device(DeviceSetPtr devices,
                                                        int device) {
  devices->check_device("device_id", device);
  return std::shared_ptr<const Sharding>(
      new Sharding(Kind::SingleDevice, Mesh::single(std::move(devices), device), PartitionSpec()));
}

int64_t Sharding::splits(size_t dim) const {
  if (dim >= dim_axes_.size()) return 1;
  int64_t n = 1;
  for (int a : dim_axes_[dim]) n *= mesh_->shape()[static_cast<size_t>(a)];
  return n;
}

void Sharding::check_rank(const Shape &global) const {
  if (spec_.ndim() > global.size())
    invalid("sharding spec '", spec_.short_string(), "' names ", spec_.ndim(),
            " dimensions but the array has ", global.size(), " (shape ", shape_to_string(global),
            ")");
}

std::shared_ptr<const std::vector<ShardLayout>> Sharding::shared_layout(const Shape &global) const {
  // Kept by the mesh for every sharding over it with the same axes (a
  // single-device sharding has a mesh of its own), the newest last.
  Mesh::LayoutMemo &memo = mesh_->layout_memo();
  {
    std::lock_guard<std::mutex> lock(memo.mu);
    for (size_t i = memo.entries.size(); i-- > 0;) {
      const auto &e = memo.entries[i];
      if (e.shape == global && e.dim_axes == dim_axes_) return e.layout;
    }
  }
  auto made = std::make_shared<const std::vector<ShardLayout>>(layout(global));
  std::lock_guard<std::mutex> lock(memo.mu);
  if (memo.entries.size() == Mesh::LayoutMemo::kLayouts) memo.entries.erase(memo.entries.begin());
  memo.entries.push_back({dim_axes_, global, made});
  return made;
}

std::vector<ShardLayout> Sharding::layout(const Shape &global) const {
  check_rank(global);
  const Mesh &m = *mesh_;
  // The mesh axes that split the array. An axis splitting only dimensions
  // of size 0 does not: its blocks are all the same empty block, which JAX
  // (counting the devices that hold each distinct index) numbers as replicas.
  std::vector<bool> used(m.ndim(), false);
  for (size_t d = 0; d < dim_axes_.size(); ++d)
    if (global[d] != 0)
      for (int a : dim_axes_[d]) used[static_cast<size_t>(a)] = true;

  std::vector<ShardLayout> out(m.size());
  for (size_t p = 0; p < m.size(); ++p) {
    const Shape coords = m.coords_of_position(p);
    ShardLayout &s = out[p];
    s.device = m.devices()[p];
    s.block.assign(global.size(), 0);
    s.box.start.assign(global.size(), 0);
    s.box.stop = global;
    for (size_t d = 0; d < dim_axes_.size(); ++d) {
      int64_t index = 0, n = 1;
      for (int a : dim_axes_[d]) {
        const int64_t size = m.shape()[static_cast<size_t>(a)];
        index = index * size + coords[static_cast<size_t>(a)];
        n *= size;
      }
      const int64_t chunk = chunk_size(global[d], n);
      s.block[d] = index;
      s.box.start[d] = std::min(index * chunk, global[d]);
      s.box.stop[d] = std::min(s.box.start[d] + chunk, global[d]);
    }
    // Replica id: row-major over the coordinates of the other mesh axes.
    int64_t replica = 0;
    for (size_t a = 0; a < m.ndim(); ++a)
      if (!used[a]) replica = replica * m.shape()[a] + coords[a];
    s.replica_id = static_cast<int>(replica);
  }
  return out;
}

bool Sharding::fully_replicated() const {
  for (size_t d = 0; d < dim_axes_.size(); ++d)
    if (splits(d) > 1) return false;
  return true;
}

bool Sharding::equivalent(const Sharding &o) const {
  if (kind_ != o.kind_) {
    // A one-device named sharding places arrays exactly as a single-device
    // one; JAX still calls them different types, and so do we.
    return false;
  }
  return (mesh_ == o.mesh_ || *mesh_ == *o.mesh_) && spec_.same_layout(o.spec_);
}

std::string Sharding::to_string() const {
  if (kind_ == Kind::SingleDevice)
    return cat("SingleDeviceSharding(device=", device_set()->device_repr(mesh_->devices()[0]),
               ", memory_kind=device)");
  return cat("NamedSharding(mesh=", mesh_->to_string(), ", spec=", spec_.to_string(),
             ", memory_kind=device)");
}

}  // namespace spmd
