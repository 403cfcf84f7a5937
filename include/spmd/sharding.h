/* libspmd: shardings, how an array's elements are laid out over devices. */
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

/* Most dimensions an array may have. */
#define SPMD_MAX_NDIM 8

typedef struct spmd_sharding spmd_sharding;

/* NamedSharding(mesh, spec). The spec may name fewer dimensions than the
 * array has (the rest are replicated). Errors: SPMD_ERR_INVALID_ARGUMENT for
 * an axis the mesh lacks or an axis used twice, with the spec and the axis
 * in the message. The caller owns *out; it keeps the mesh alive. */
SPMD_API spmd_status spmd_sharding_named(const spmd_mesh *mesh,
                                         const spmd_spec *spec,
                                         spmd_sharding **out);

/* The same with the spec given as text (see spmd_spec_parse). */
SPMD_API spmd_status spmd_sharding_named_text(const spmd_mesh *mesh,
                                              const char *spec,
                                              spmd_sharding **out);

/* NamedSharding(mesh, P()): every device holds the whole array. */
SPMD_API spmd_status spmd_sharding_replicated(const spmd_mesh *mesh,
                                              spmd_sharding **out);

/* SingleDeviceSharding(device): the whole array on one device. */
SPMD_API spmd_status spmd_sharding_single_device(spmd_runtime *runtime,
                                                 int device_id,
                                                 spmd_sharding **out);

SPMD_API void spmd_sharding_destroy(spmd_sharding *sharding);

typedef enum spmd_sharding_kind {
  SPMD_SHARDING_NAMED = 1,
  SPMD_SHARDING_SINGLE_DEVICE = 2
} spmd_sharding_kind;

SPMD_API spmd_status spmd_sharding_get_kind(const spmd_sharding *sharding,
                                            spmd_sharding_kind *out);

/* The mesh of the sharding (a one-device mesh for a single-device sharding).
 * The caller owns *out. */
SPMD_API spmd_status spmd_sharding_mesh(const spmd_sharding *sharding,
                                        spmd_mesh **out);

/* A copy of the spec (P() for a single-device sharding). Caller owns *out. */
SPMD_API spmd_status spmd_sharding_spec(const spmd_sharding *sharding,
                                        spmd_spec **out);

/* Number of devices that hold a shard: the mesh size. */
SPMD_API spmd_status spmd_sharding_device_count(const spmd_sharding *sharding,
                                                size_t *out);

/* True (1) when both place every element of every array on the same devices
 * (JAX's ==): same mesh, and specs equal once trailing Nones are dropped. */
SPMD_API spmd_status spmd_sharding_equal(const spmd_sharding *a,
                                         const spmd_sharding *b, int *out);

/* True (1) when every device holds the whole array. */
SPMD_API spmd_status spmd_sharding_is_fully_replicated(
    const spmd_sharding *sharding, int *out);

/* JAX's str: "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec('x',),
 * memory_kind=device)" or "SingleDeviceSharding(device=CpuDevice(id=0),
 * memory_kind=device)". Caller frees with spmd_string_free. */
SPMD_API spmd_status spmd_sharding_to_string(const spmd_sharding *sharding,
                                             char **out);

/* Where one shard of a global array lives. Indices are [start, stop) per
 * dimension, as Python slices; local_shape[d] = stop[d] - start[d]. For an
 * uneven dimension the shards are ceil(D/n) long and the last ones are
 * shorter or empty. replica_id counts the devices holding the same block,
 * 0 for the first in mesh order (jax's Shard.replica_id). */
typedef struct spmd_shard_info {
  size_t struct_size;
  int device;
  int replica_id;
  size_t ndim;
  int64_t start[SPMD_MAX_NDIM];
  int64_t stop[SPMD_MAX_NDIM];
  int64_t local_shape[SPMD_MAX_NDIM];
} spmd_shard_info;

/* Shard `index` (0 <= index < device count, in mesh device order) of an
 * array of global shape `shape` under this sharding. out->struct_size must be
 * set. Errors: SPMD_ERR_INVALID_ARGUMENT when the spec names more dimensions
 * than `ndim` or a size is negative; SPMD_ERR_OUT_OF_RANGE for the index. */
SPMD_API spmd_status spmd_sharding_shard_info(const spmd_sharding *sharding,
                                              size_t ndim, const int64_t *shape,
                                              size_t index,
                                              spmd_shard_info *out);

SPMD_EXTERN_C_END

#endif /* SPMD_SHARDING_H */
