/**
 * @file
 * libspmd: shardings, how an array's elements are laid out over devices.
 */
#ifndef SPMD_SHARDING_H
#define SPMD_SHARDING_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/export.h"
#include "spmd/mesh.h"
#include "spmd/runtime.h"
#include "spmd/spec.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/** Most dimensions an array (and a spec or a mesh) may have. */
#define SPMD_MAX_NDIM 8

/**
 * A sharding: NamedSharding(mesh, spec) or SingleDeviceSharding(device).
 * Released with spmd_sharding_destroy.
 */
typedef struct spmd_sharding spmd_sharding;

/**
 * NamedSharding(mesh, spec).
 *
 * The spec may name fewer dimensions than the array has (the rest are
 * replicated). The caller owns *out; it keeps the mesh alive.
 *
 * @param mesh The mesh; not NULL.
 * @param spec The spec, copied; not NULL.
 * @param out Receives the new sharding; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an axis the mesh lacks,
 *         with the spec and the axis in the message, or for a NULL or
 *         destroyed mesh or spec or a NULL out.
 */
SPMD_API spmd_status spmd_sharding_named(const spmd_mesh *mesh,
                                         const spmd_spec *spec,
                                         spmd_sharding **out);

/**
 * NamedSharding(mesh, spec) with the spec given as text (see
 * spmd_spec_parse).
 *
 * @param mesh The mesh; not NULL.
 * @param spec The spec's text; not NULL.
 * @param out Receives the new sharding, which the caller owns; not NULL.
 *        Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a spec that does not parse,
 *         uses an axis twice or names an axis the mesh lacks, or for a NULL
 *         or destroyed mesh or a NULL spec or out.
 */
SPMD_API spmd_status spmd_sharding_named_text(const spmd_mesh *mesh,
                                              const char *spec,
                                              spmd_sharding **out);

/**
 * NamedSharding(mesh, P()): every device holds the whole array.
 *
 * @param mesh The mesh; not NULL.
 * @param out Receives the new sharding, which the caller owns; not NULL.
 *        Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed mesh or
 *         a NULL out.
 */
SPMD_API spmd_status spmd_sharding_replicated(const spmd_mesh *mesh,
                                              spmd_sharding **out);

/**
 * SingleDeviceSharding(device): the whole array on one device.
 *
 * @param runtime The runtime the device belongs to; not NULL.
 * @param device_id The device's global id.
 * @param out Receives the new sharding, which the caller owns; not NULL.
 *        Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an unknown device id;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed runtime or a
 *         NULL out.
 */
SPMD_API spmd_status spmd_sharding_single_device(spmd_runtime *runtime,
                                                 int device_id,
                                                 spmd_sharding **out);

/**
 * Releases a sharding; arrays laid out by it keep it alive.
 *
 * @param sharding The sharding; NULL and already-destroyed handles are
 *        ignored.
 */
SPMD_API void spmd_sharding_destroy(spmd_sharding *sharding);

/** The kinds of sharding. Values are stable across releases. */
typedef enum spmd_sharding_kind {
  SPMD_SHARDING_NAMED = 1,        /**< NamedSharding(mesh, spec)    */
  SPMD_SHARDING_SINGLE_DEVICE = 2 /**< SingleDeviceSharding(device) */
} spmd_sharding_kind;

/**
 * The kind of a sharding.
 *
 * @param sharding The sharding; not NULL.
 * @param out Receives the kind; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding or a NULL out.
 */
SPMD_API spmd_status spmd_sharding_get_kind(const spmd_sharding *sharding,
                                            spmd_sharding_kind *out);

/**
 * The mesh of the sharding (a one-device mesh for a single-device
 * sharding).
 *
 * @param sharding The sharding; not NULL.
 * @param out Receives a new mesh handle the caller owns; not NULL. Left
 *        untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding or a NULL out.
 */
SPMD_API spmd_status spmd_sharding_mesh(const spmd_sharding *sharding,
                                        spmd_mesh **out);

/**
 * A copy of the spec (P() for a single-device sharding).
 *
 * @param sharding The sharding; not NULL.
 * @param out Receives a new spec the caller owns; not NULL. Left untouched
 *        on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding or a NULL out.
 */
SPMD_API spmd_status spmd_sharding_spec(const spmd_sharding *sharding,
                                        spmd_spec **out);

/**
 * Number of devices that hold a shard: the mesh size.
 *
 * @param sharding The sharding; not NULL.
 * @param out Receives the device count; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding or a NULL out.
 */
SPMD_API spmd_status spmd_sharding_device_count(const spmd_sharding *sharding,
                                                size_t *out);

/**
 * Whether two shardings place every element of every array on the same
 * devices (JAX's ==): same kind, same mesh, and specs equal once trailing
 * Nones are dropped.
 *
 * @param a The first sharding; not NULL.
 * @param b The second sharding; not NULL.
 * @param out Receives 1 when equal, else 0; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding or a NULL out.
 */
SPMD_API spmd_status spmd_sharding_equal(const spmd_sharding *a,
                                         const spmd_sharding *b, int *out);

/**
 * Whether every device holds the whole array.
 *
 * @param sharding The sharding; not NULL.
 * @param out Receives 1 when fully replicated, else 0; not NULL. Left
 *        untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding or a NULL out.
 */
SPMD_API spmd_status spmd_sharding_is_fully_replicated(
    const spmd_sharding *sharding, int *out);

/**
 * JAX's str of a sharding.
 *
 * "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec('x',),
 * memory_kind=device)" or "SingleDeviceSharding(device=CpuDevice(id=0),
 * memory_kind=device)".
 *
 * @param sharding The sharding; not NULL.
 * @param out Receives a new string the caller frees with spmd_string_free;
 *        not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding or a NULL out.
 */
SPMD_API spmd_status spmd_sharding_to_string(const spmd_sharding *sharding,
                                             char **out);

/**
 * Where one shard of a global array lives (jax's Shard).
 *
 * Indices are [start, stop) per dimension, as Python slices;
 * local_shape[d] = stop[d] - start[d]. For an uneven dimension the shards
 * are ceil(D/n) long and the last ones are shorter or empty. Entries past
 * ndim are 0. The functions that fill it write only the fields that fit in
 * the caller's struct_size (docs/abi.md) and leave struct_size as set.
 */
typedef struct spmd_shard_info {
  size_t struct_size;  /**< sizeof(spmd_shard_info), set by the caller   */
  int device;          /**< global id of the device holding the shard    */
  /** Counts the devices holding the same block, 0 for the first in mesh
   * order (jax's Shard.replica_id). */
  int replica_id;
  size_t ndim;                        /**< dimensions of the array          */
  int64_t start[SPMD_MAX_NDIM];       /**< first index per dimension        */
  int64_t stop[SPMD_MAX_NDIM];        /**< one past the last index          */
  int64_t local_shape[SPMD_MAX_NDIM]; /**< stop - start per dimension       */
} spmd_shard_info;

/** An initialiser of spmd_shard_info: struct_size set, every field zero. */
#define SPMD_SHARD_INFO_INIT                                                 \
  {                                                                          \
    sizeof(spmd_shard_info), 0, 0, 0, {0, 0, 0, 0, 0, 0, 0, 0},             \
        {0, 0, 0, 0, 0, 0, 0, 0}, { 0, 0, 0, 0, 0, 0, 0, 0 }                 \
  }

/**
 * Fills *info as SPMD_SHARD_INFO_INIT does, writing exactly `size` bytes.
 *
 * @param info The struct to fill; not NULL.
 * @param size sizeof *info as the caller was compiled.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL info or a size
 *         smaller than a size_t or above 1024 bytes (nothing written).
 */
SPMD_API spmd_status spmd_shard_info_init(spmd_shard_info *info, size_t size);

/**
 * Shard `index` of an array of global shape `shape` under this sharding.
 *
 * @param sharding The sharding; not NULL.
 * @param ndim Number of dimensions of the array, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param index The shard, 0 <= index < device count, in mesh device order.
 * @param out Receives the shard; not NULL, with struct_size set by the
 *        caller (SPMD_SHARD_INFO_INIT). Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for the index;
 *         SPMD_ERR_INVALID_ARGUMENT when the spec names more dimensions than
 *         `ndim`, for a bad shape (a negative size, too many dimensions or
 *         elements), a struct_size too small to hold `device` or above
 *         1024, or a NULL or destroyed sharding or a NULL out.
 */
SPMD_API spmd_status spmd_sharding_shard_info(const spmd_sharding *sharding,
                                              size_t ndim, const int64_t *shape,
                                              size_t index,
                                              spmd_shard_info *out);

/**
 * The same as spmd_sharding_shard_info for the shard on device `device_id`.
 *
 * @param sharding The sharding; not NULL.
 * @param ndim Number of dimensions of the array, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param device_id The device's global id.
 * @param out Receives the shard; not NULL, with struct_size set by the
 *        caller (SPMD_SHARD_INFO_INIT). Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT when the sharding places
 *         nothing on the device, and for the errors of
 *         spmd_sharding_shard_info but the index.
 */
SPMD_API spmd_status spmd_sharding_shard_info_of_device(
    const spmd_sharding *sharding, size_t ndim, const int64_t *shape,
    int device_id, spmd_shard_info *out);

SPMD_EXTERN_C_END

#endif /* SPMD_SHARDING_H */
