/* libspmd: device meshes, n-dimensional grids of devices with named axes. */
#ifndef SPMD_MESH_H
#define SPMD_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/export.h"
#include "spmd/runtime.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

typedef struct spmd_mesh spmd_mesh;

/* Creates a mesh of `ndim` axes with sizes `shape` and names `axis_names`
 * (distinct identifiers). `device_ids` lists prod(shape) distinct devices of
 * the runtime in row-major order over the mesh; NULL takes devices 0, 1, ...
 * in order, as jax.make_mesh does. The caller owns *out. Errors:
 * SPMD_ERR_INVALID_ARGUMENT for a zero/negative size, an empty, repeated or
 * malformed axis name, a device count that is not prod(shape), a duplicate
 * or unknown device id. Thread-safe. */
SPMD_API spmd_status spmd_mesh_create(spmd_runtime *runtime, size_t ndim,
                                      const int64_t *shape,
                                      const char *const *axis_names,
                                      const int *device_ids, spmd_mesh **out);

/* Releases the caller's reference; shardings that use the mesh keep it alive.
 * NULL is accepted. */
SPMD_API void spmd_mesh_destroy(spmd_mesh *mesh);

SPMD_API spmd_status spmd_mesh_ndim(const spmd_mesh *mesh, size_t *out);

/* Number of devices in the mesh, prod(shape). */
SPMD_API spmd_status spmd_mesh_size(const spmd_mesh *mesh, size_t *out);

/* Name of axis `axis`. The string lives as long as the mesh. */
SPMD_API spmd_status spmd_mesh_axis_name(const spmd_mesh *mesh, size_t axis,
                                         const char **out);

SPMD_API spmd_status spmd_mesh_axis_size(const spmd_mesh *mesh, size_t axis,
                                         int64_t *out);

/* Index of the axis called `name`; SPMD_ERR_INVALID_ARGUMENT if none. */
SPMD_API spmd_status spmd_mesh_axis_index(const spmd_mesh *mesh,
                                          const char *name, size_t *out);

/* The device at mesh coordinates `coords` (ndim values). */
SPMD_API spmd_status spmd_mesh_device_at(const spmd_mesh *mesh,
                                         const int64_t *coords, int *out);

/* Mesh coordinates of device `device_id` into `coords` (ndim values).
 * SPMD_ERR_INVALID_ARGUMENT if the device is not in the mesh. */
SPMD_API spmd_status spmd_mesh_device_coords(const spmd_mesh *mesh,
                                             int device_id, int64_t *coords);

/* The i-th device in row-major mesh order (mesh.devices.flat[i]). */
SPMD_API spmd_status spmd_mesh_device(const spmd_mesh *mesh, size_t index,
                                      int *out);

/* True (1) when both meshes have the same axis names, sizes and devices. */
SPMD_API spmd_status spmd_mesh_equal(const spmd_mesh *a, const spmd_mesh *b,
                                     int *out);

/* JAX's str(mesh): "Mesh('x': 2, 'y': 4)". Caller frees with
 * spmd_string_free. */
SPMD_API spmd_status spmd_mesh_to_string(const spmd_mesh *mesh, char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_MESH_H */
