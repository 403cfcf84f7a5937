// Meshes: an n-dimensional grid of devices with named axes, devices laid
// out row-major over the mesh shape (jax.sharding.Mesh).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/shape.hpp"
#include "core/device_set.hpp"
#include "core/shard_layout.hpp"

namespace spmd {

class Mesh {
 public:
  // Validates and builds a mesh; device_ids empty means 0..prod(shape)-1.
  Mesh(DeviceSetPtr devices, Shape shape, std::vector<std::string> axis_names,
       std::vector<int> device_ids);

  // A mesh of no axes holding one device: the mesh of a single-device sharding.
  static std::shared_ptr<Mesh> single(DeviceSetPtr devices, int device);

  // The devices (in practice, the runtime) the mesh names.
  const DeviceSetPtr &device_set() const { return device_set_; }
  size_t ndim() const { return shape_.size(); }
  const Shape &shape() const { return shape_; }
  const std::vector<std::string> &axis_names() const { return names_; }
  const std::vector<int> &devices() const { return devices_; }
  size_t size() const { return devices_.size(); }

  // Index of axis `name`, or -1.
  int axis_index(const std::string &name) const;
  std::string axes_list() const;  // "x, y" for messages

  int device_at(const Shape &coords) const;
  Shape coords_of_position(size_t position) const;  // row-major position
  // Position of a device in mesh order, or -1 if absent.
  int position_of(int device) const;

  bool operator==(const Mesh &other) const;
  std::string to_string() const;  // "Mesh('x': 2, 'y': 4)"

  // The layouts of shardings over this mesh, kept by the axes that split
  // each dimension and the global shape (Sharding::shared_layout): every op
  // makes a new sharding for its result, most often laid out as an earlier
  // one. The newest last; the oldest goes when it is full.
  struct LayoutMemo {
    static constexpr size_t kLayouts = 64;
    std::mutex mu;
    struct Entry {
      std::vector<std::vector<int>> dim_axes;
      Shape shape;
      std::shared_ptr<const std::vector<ShardLayout>> layout;
    };
    std::vector<Entry> entries;
  };
  LayoutMemo &layout_memo() const { return *layout_memo_; }

 private:
  DeviceSetPtr device_set_;
  Shape shape_;
  std::vector<std::string> names_;
  std::vector<int> devices_;
  std::unordered_map<int, int> position_;
  std::shared_ptr<LayoutMemo> layout_memo_;
};

using MeshPtr = std::shared_ptr<const Mesh>;

// Axis names are identifiers ([A-Za-z_][A-Za-z0-9_]*), never "None".
bool valid_axis_name(const std::string &name);

}  // namespace spmd
