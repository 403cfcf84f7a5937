#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "spmd/mesh.h"

using namespace spmd;
using namespace spmd::capi;

namespace {
size_t checked_axis(const Mesh &m, size_t axis) {
  if (axis >= m.ndim())
    fail(SPMD_ERR_OUT_OF_RANGE, "axis: ", axis, " is not an axis of ", m.to_string(), " (it has ",
         m.ndim(), ")");
  return axis;
}
}  // namespace

extern "C" {

spmd_status spmd_mesh_create(spmd_runtime *runtime, size_t ndim, const int64_t *shape,
                             const char *const *axis_names, const int *device_ids,
                             spmd_mesh **out) {
  return guard(__func__, [&] {
    auto &rt = use(runtime, "runtime");
    out_arg(out);
    if (ndim == 0) invalid("ndim: a mesh needs at least one axis");
    if (shape == nullptr) invalid("shape: NULL");
    if (axis_names == nullptr) invalid("axis_names: NULL");
    const Shape s = checked_shape("mesh shape", ndim, shape);
    std::vector<std::string> names;
    for (size_t i = 0; i < ndim; ++i) {
      if (axis_names[i] == nullptr) invalid("axis_names[", i, "]: NULL");
      names.emplace_back(axis_names[i]);
    }
    std::vector<int> devices;
    if (device_ids != nullptr) {
      int64_t total = shape_elements(s);
      if (total > rt.impl->device_count())
        invalid("mesh shape ", shape_to_string(s), " needs ", total,
                " devices but the runtime has ", rt.impl->device_count());
      devices.assign(device_ids, device_ids + total);
    }
    *out = new_handle<spmd_mesh>(
        std::make_shared<const Mesh>(rt.impl, s, std::move(names), std::move(devices)));
  });
}

void spmd_mesh_destroy(spmd_mesh *mesh) { destroy_handle(mesh); }

spmd_status spmd_mesh_ndim(const spmd_mesh *mesh, size_t *out) {
  return guard(__func__, [&] { produce(out, [&] { return use(mesh, "mesh").impl->ndim(); }); });
}

spmd_status spmd_mesh_size(const spmd_mesh *mesh, size_t *out) {
  return guard(__func__, [&] { produce(out, [&] { return use(mesh, "mesh").impl->size(); }); });
}

spmd_status spmd_mesh_axis_name(const spmd_mesh *mesh, size_t axis, const char **out) {
  return guard(__func__, [&] {
    const Mesh &m = *use(mesh, "mesh").impl;
    out_arg(out);
    *out = m.axis_names()[checked_axis(m, axis)].c_str();
  });
}

spmd_status spmd_mesh_axis_size(const spmd_mesh *mesh, size_t axis, int64_t *out) {
  return guard(__func__, [&] {
    const Mesh &m = *use(mesh, "mesh").impl;
    out_arg(out);
    *out = m.shape()[checked_axis(m, axis)];
  });
}

spmd_status spmd_mesh_axis_index(const spmd_mesh *mesh, const char *name, size_t *out) {
  return guard(__func__, [&] {
    const Mesh &m = *use(mesh, "mesh").impl;
    out_arg(out);
    if (name == nullptr) invalid("name: NULL");
    const int a = m.axis_index(name);
    if (a < 0) invalid("name: mesh has no axis '", name, "' (axes: ", m.axes_list(), ")");
    *out = static_cast<size_t>(a);
  });
}

spmd_status spmd_mesh_device_at(const spmd_mesh *mesh, size_t ndim, const int64_t *coords,
                                int *out) {
  return guard(__func__, [&] {
    const Mesh &m = *use(mesh, "mesh").impl;
    out_arg(out);
    if (ndim != m.ndim())
      invalid("ndim: ", ndim, " coordinates given, but ", m.to_string(), " has ", m.ndim(),
              " axes");
    if (ndim > 0 && coords == nullptr) invalid("coords: NULL");
    *out = m.device_at(Shape(coords, coords + ndim));
  });
}

spmd_status spmd_mesh_device_coords(const spmd_mesh *mesh, int device_id, size_t capacity,
                                    int64_t *coords, size_t *ndim) {
  return guard(__func__, [&] {
    const Mesh &m = *use(mesh, "mesh").impl;
    const int pos = m.position_of(device_id);
    if (pos < 0) invalid("device_id: device ", device_id, " is not in ", m.to_string());
    write_values(m.coords_of_position(static_cast<size_t>(pos)), capacity, coords, ndim,
                 "mesh");
  });
}

spmd_status spmd_mesh_device(const spmd_mesh *mesh, size_t index, int *out) {
  return guard(__func__, [&] {
    const Mesh &m = *use(mesh, "mesh").impl;
    out_arg(out);
    if (index >= m.size())
      fail(SPMD_ERR_OUT_OF_RANGE, "index: ", index, " is past the mesh's ", m.size(), " devices");
    *out = m.devices()[index];
  });
}

spmd_status spmd_mesh_equal(const spmd_mesh *a, const spmd_mesh *b, int *out) {
  return guard(__func__, [&] {
    const Mesh &ma = *use(a, "a").impl;
    const Mesh &mb = *use(b, "b").impl;
    produce(out, [&] { return ma == mb; });
  });
}

spmd_status spmd_mesh_to_string(const spmd_mesh *mesh, char **out) {
  return guard(__func__, [&] {
    const Mesh &m = *use(mesh, "mesh").impl;
    produce(out, [&] { return to_c_string(m.to_string()); });
  });
}

}  // extern "C"
