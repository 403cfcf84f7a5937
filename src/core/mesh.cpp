#include "core/mesh.hpp"

#include <cctype>

#include "base/error.hpp"

namespace spmd {

bool valid_axis_name(const std::string &name) {
  if (name.empty() || name == "None") return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

Mesh::Mesh(DeviceSetPtr devices, Shape shape, std::vector<std::string> names,
           std::vector<int> device_ids)
    : device_set_(std::move(devices)), shape_(std::move(shape)), names_(std::move(names)),
      layout_memo_(std::make_shared<LayoutMemo>()) {
  int64_t total = 1;
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] <= 0)
      invalid("mesh shape ", shape_to_string(shape_), ": axis ", i, " has size ", shape_[i],
              ", sizes must be positive");
    total *= shape_[i];  // callers bound the product (checked_shape)
  }
  for (size_t i = 0; i < names_.size(); ++i) {
    if (!valid_axis_name(names_[i]))
      invalid("axis_names[", i, "]: '", names_[i],
              "' is not a valid axis name (letters, digits and '_', not starting with a digit, "
              "not 'None')");
    for (size_t j = 0; j < i; ++j)
      if (names_[j] == names_[i])
        invalid("axis_names: '", names_[i], "' is used for axes ", j, " and ", i);
  }
  if (device_ids.empty()) {
    if (total > device_set_->device_count())
      invalid("mesh shape ", shape_to_string(shape_), " needs ", total,
              " devices but the runtime has ", device_set_->device_count());
    for (int64_t d = 0; d < total; ++d) device_ids.push_back(static_cast<int>(d));
  } else if (static_cast<int64_t>(device_ids.size()) != total) {
    invalid("device_ids: ", device_ids.size(), " devices given for mesh shape ",
            shape_to_string(shape_), " of ", total, " devices");
  }
  devices_ = std::move(device_ids);
  for (size_t i = 0; i < devices_.size(); ++i) {
    const int d = devices_[i];
    if (d < 0 || d >= device_set_->device_count())
      invalid("device_ids[", i, "]: device ", d, " does not exist (the runtime has ",
              device_set_->device_count(), " devices)");
    auto [it, fresh] = position_.emplace(d, static_cast<int>(i));
    if (!fresh)
      invalid("device_ids: device ", d, " appears twice (positions ", it->second, " and ", i, ")");
  }
}

std::shared_ptr<Mesh> Mesh::single(DeviceSetPtr devices, int device) {
  return std::make_shared<Mesh>(std::move(devices), Shape{}, std::vector<std::string>{},
                                std::vector<int>{device});
}

int Mesh::axis_index(const std::string &name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return -1;
}

std::string Mesh::axes_list() const {
  std::string s;
  for (size_t i = 0; i < names_.size(); ++i) s += (i ? ", " : "") + names_[i];
  return s.empty() ? "none" : s;
}

int Mesh::device_at(const Shape &coords) const {
  int64_t pos = 0;
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (coords[i] < 0 || coords[i] >= shape_[i])
      fail(SPMD_ERR_OUT_OF_RANGE, "coords[", i, "]: ", coords[i], " is outside axis '",
           names_[i], "' of size ", shape_[i]);
    pos = pos * shape_[i] + coords[i];
  }
  return devices_[static_cast<size_t>(pos)];
}

Shape Mesh::coords_of_position(size_t position) const {
  Shape c(shape_.size());
  for (size_t i = shape_.size(); i-- > 0;) {
    c[i] = static_cast<int64_t>(position) % shape_[i];
    position /= static_cast<size_t>(shape_[i]);
  }
  return c;
}

int Mesh::position_of(int device) const {
  auto it = position_.find(device);
  return it == position_.end() ? -1 : it->second;
}

bool Mesh::operator==(const Mesh &o) const {
  return device_set_ == o.device_set_ && shape_ == o.shape_ && names_ == o.names_ &&
         devices_ == o.devices_;
}

std::string Mesh::to_string() const {
  std::string s = "Mesh(";
  for (size_t i = 0; i < names_.size(); ++i)
    s += cat(i ? ", " : "", "'", names_[i], "': ", shape_[i]);
  return s + ")";
}

}  // namespace spmd
