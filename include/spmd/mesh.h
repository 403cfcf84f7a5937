/**
 * @file
 * libspmd: device meshes, n-dimensional grids of devices with named axes.
 */
#ifndef SPMD_MESH_H
#define SPMD_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/export.h"
#include "spmd/runtime.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * A device mesh (jax.sharding.Mesh): devices of one runtime arranged in a
 * grid with named axes. Made by spmd_mesh_create, released with
 * spmd_mesh_destroy.
 */
typedef struct spmd_mesh spmd_mesh;

/**
 * Creates a mesh of `ndim` axes with sizes `shape` and names `axis_names`.
 *
 * The caller owns *out and releases it with spmd_mesh_destroy; the mesh
 * keeps the runtime alive.
 *
 * @param runtime The runtime whose devices the mesh uses; not NULL.
 * @param ndim Number of axes, 1 to SPMD_MAX_NDIM.
 * @param shape ndim axis sizes, each positive; not NULL.
 * @param axis_names ndim distinct axis names (letters, digits and '_', not
 *        starting with a digit, not "None"); not NULL.
 * @param device_ids prod(shape) distinct device ids of the runtime in
 *        row-major order over the mesh; NULL takes devices 0, 1, ... in
 *        order, as jax.make_mesh does.
 * @param out Receives the new mesh; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         runtime, a NULL array or out, ndim 0 or above SPMD_MAX_NDIM, a
 *         zero or negative size, an empty, repeated or malformed axis name,
 *         more devices than the runtime has, or a duplicate or unknown
 *         device id.
 */
SPMD_API spmd_status spmd_mesh_create(spmd_runtime *runtime, size_t ndim,
                                      const int64_t *shape,
                                      const char *const *axis_names,
                                      const int *device_ids, spmd_mesh **out);

/**
 * Releases the caller's reference to a mesh; shardings that use the mesh
 * keep it alive.
 *
 * @param mesh The mesh; NULL and already-destroyed handles are ignored.
 */
SPMD_API void spmd_mesh_destroy(spmd_mesh *mesh);

/**
 * Number of axes of the mesh.
 *
 * @param mesh The mesh; not NULL.
 * @param out Receives the number of axes; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed mesh or
 *         a NULL out.
 */
SPMD_API spmd_status spmd_mesh_ndim(const spmd_mesh *mesh, size_t *out);

/**
 * Number of devices in the mesh, prod(shape).
 *
 * @param mesh The mesh; not NULL.
 * @param out Receives the device count; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed mesh or
 *         a NULL out.
 */
SPMD_API spmd_status spmd_mesh_size(const spmd_mesh *mesh, size_t *out);

/**
 * Name of axis `axis`.
 *
 * @param mesh The mesh; not NULL.
 * @param axis The axis, 0 to ndim - 1.
 * @param out Receives the name, borrowed: the string lives as long as the
 *        mesh and is not freed by the caller. Not NULL; left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an axis past the last;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed mesh or a NULL
 *         out.
 */
SPMD_API spmd_status spmd_mesh_axis_name(const spmd_mesh *mesh, size_t axis,
                                         const char **out);

/**
 * Size of axis `axis`.
 *
 * @param mesh The mesh; not NULL.
 * @param axis The axis, 0 to ndim - 1.
 * @param out Receives the size; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an axis past the last;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed mesh or a NULL
 *         out.
 */
SPMD_API spmd_status spmd_mesh_axis_size(const spmd_mesh *mesh, size_t axis,
                                         int64_t *out);

/**
 * Index of the axis called `name`.
 *
 * @param mesh The mesh; not NULL.
 * @param name The axis name; not NULL.
 * @param out Receives the axis index; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT if the mesh has no such axis,
 *         or for a NULL or destroyed mesh or a NULL name or out.
 */
SPMD_API spmd_status spmd_mesh_axis_index(const spmd_mesh *mesh,
                                          const char *name, size_t *out);

/**
 * The device at mesh coordinates `coords`.
 *
 * @param mesh The mesh; not NULL.
 * @param ndim Number of coordinates; must be the mesh's ndim.
 * @param coords ndim coordinates, one per axis; not NULL.
 * @param out Receives the device's global id; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for a coordinate outside its axis;
 *         SPMD_ERR_INVALID_ARGUMENT when ndim is not the mesh's, or for a
 *         NULL or destroyed mesh or a NULL coords or out.
 */
SPMD_API spmd_status spmd_mesh_device_at(const spmd_mesh *mesh, size_t ndim,
                                         const int64_t *coords, int *out);

/**
 * Mesh coordinates of device `device_id`.
 *
 * Writes the mesh's ndim into *ndim (when ndim is not NULL) and, when
 * `capacity` holds them, the coordinates into `coords`. NULL coords with a
 * capacity of 0 asks for ndim alone.
 *
 * @param mesh The mesh; not NULL.
 * @param device_id The device's global id.
 * @param capacity Number of values `coords` can hold.
 * @param coords Receives one coordinate per axis; may be NULL when capacity
 *        is 0. Untouched on failure.
 * @param ndim Receives the mesh's ndim, also when capacity is too small;
 *        may be NULL.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE when capacity is smaller than the
 *         mesh's ndim (coords untouched, *ndim says how many are needed);
 *         SPMD_ERR_INVALID_ARGUMENT if the device is not in the mesh, for
 *         a NULL coords with a non-zero capacity, or for a NULL or
 *         destroyed mesh.
 */
SPMD_API spmd_status spmd_mesh_device_coords(const spmd_mesh *mesh,
                                             int device_id, size_t capacity,
                                             int64_t *coords, size_t *ndim);

/**
 * The i-th device in row-major mesh order (mesh.devices.flat[i]).
 *
 * @param mesh The mesh; not NULL.
 * @param index The position, 0 to the mesh size - 1.
 * @param out Receives the device's global id; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an index past the last device;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed mesh or a NULL
 *         out.
 */
SPMD_API spmd_status spmd_mesh_device(const spmd_mesh *mesh, size_t index,
                                      int *out);

/**
 * Whether two meshes are equal: the same runtime, axis names, sizes and
 * devices.
 *
 * @param a The first mesh; not NULL.
 * @param b The second mesh; not NULL.
 * @param out Receives 1 when equal, else 0; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed mesh or
 *         a NULL out.
 */
SPMD_API spmd_status spmd_mesh_equal(const spmd_mesh *a, const spmd_mesh *b,
                                     int *out);

/**
 * JAX's str(mesh): "Mesh('x': 2, 'y': 4)".
 *
 * @param mesh The mesh; not NULL.
 * @param out Receives a new string the caller frees with spmd_string_free;
 *        not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed mesh or
 *         a NULL out.
 */
SPMD_API spmd_status spmd_mesh_to_string(const spmd_mesh *mesh, char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_MESH_H */
