/* libspmd: sharded arrays, a global shape and dtype with one buffer per
 * device of their sharding. */
#ifndef SPMD_ARRAY_H
#define SPMD_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/dtype.h"
#include "spmd/export.h"
#include "spmd/sharding.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

typedef struct spmd_array spmd_array;

/* Arrays behave as JAX arrays: operations may complete asynchronously, and
 * spmd_array_block_until_ready or a copy to the host waits for them and
 * reports errors of that work. A handle may be used from several threads at
 * once for reading; writes to one shard must not race with other uses. */

/* jax.device_put: copies a row-major host buffer of global shape `shape` and
 * type `dtype` (exactly nbytes = prod(shape) * dtype size) onto the devices
 * of `sharding`, each device receiving its block. The caller owns *out and
 * may reuse `data` at once. Errors: SPMD_ERR_INVALID_ARGUMENT (wrong nbytes,
 * bad shape, spec rank above ndim, invalid dtype). */
SPMD_API spmd_status spmd_array_from_host(const spmd_sharding *sharding,
                                          spmd_dtype dtype, size_t ndim,
                                          const int64_t *shape,
                                          const void *data, size_t nbytes,
                                          spmd_array **out);

/* An array of zeros, made on the devices (no host buffer). */
SPMD_API spmd_status spmd_array_zeros(const spmd_sharding *sharding,
                                      spmd_dtype dtype, size_t ndim,
                                      const int64_t *shape, spmd_array **out);

/* An array every element of which is `value` converted to dtype (as
 * jnp.full; integer types truncate toward zero, bool is value != 0). */
SPMD_API spmd_status spmd_array_full(const spmd_sharding *sharding,
                                     spmd_dtype dtype, size_t ndim,
                                     const int64_t *shape, double value,
                                     spmd_array **out);

/* jnp.arange(start, start + n*step, step).reshape(shape): element i in
 * row-major order is start + i * step, converted to dtype. */
SPMD_API spmd_status spmd_array_arange(const spmd_sharding *sharding,
                                       spmd_dtype dtype, size_t ndim,
                                       const int64_t *shape, double start,
                                       double step, spmd_array **out);

SPMD_API void spmd_array_destroy(spmd_array *array);

SPMD_API spmd_status spmd_array_dtype(const spmd_array *array,
                                      spmd_dtype *out);

SPMD_API spmd_status spmd_array_ndim(const spmd_array *array, size_t *out);

/* Writes ndim sizes into `shape`. */
SPMD_API spmd_status spmd_array_shape(const spmd_array *array, int64_t *shape);

/* Number of elements, prod(shape). */
SPMD_API spmd_status spmd_array_size(const spmd_array *array, int64_t *out);

/* Bytes of the global array, size * dtype size. */
SPMD_API spmd_status spmd_array_nbytes(const spmd_array *array, size_t *out);

/* The array's sharding; the caller owns *out. */
SPMD_API spmd_status spmd_array_sharding(const spmd_array *array,
                                         spmd_sharding **out);

/* a.device for a single-device array (or one whose sharding has one device).
 * SPMD_ERR_INVALID_ARGUMENT for an array spread over several devices: ask
 * for its sharding instead. */
SPMD_API spmd_status spmd_array_device(const spmd_array *array, int *out);

/* Waits until every pending operation producing the array has finished, and
 * returns its error if one failed. */
SPMD_API spmd_status spmd_array_block_until_ready(spmd_array *array);

/* Copies the global array into a row-major host buffer of exactly nbytes
 * bytes (np.asarray(a)). Waits for pending work. */
SPMD_API spmd_status spmd_array_to_host(const spmd_array *array, void *data,
                                        size_t nbytes);

/* Number of shards, one per device of the sharding (a.addressable_shards). */
SPMD_API spmd_status spmd_array_shard_count(const spmd_array *array,
                                            size_t *out);

/* Device, index, replica id and local shape of shard `index` (mesh device
 * order). out->struct_size must be set. */
SPMD_API spmd_status spmd_array_shard_info(const spmd_array *array,
                                           size_t index, spmd_shard_info *out);

/* Copies shard `index` (row-major, local shape) to a host buffer of exactly
 * its byte size. */
SPMD_API spmd_status spmd_array_shard_read(const spmd_array *array,
                                           size_t index, void *data,
                                           size_t nbytes);

/* Overwrites shard `index` from a host buffer of exactly its byte size. Only
 * that device's copy changes: keeping replicas equal is the caller's duty. */
SPMD_API spmd_status spmd_array_shard_write(spmd_array *array, size_t index,
                                            const void *data, size_t nbytes);

/* Returns a new array with the same values laid out by `sharding`, which may
 * be on the same mesh or another mesh over devices of the same runtime. Only
 * the overlapping blocks move, device to device, each from one source
 * replica; nothing goes through a full host copy. The caller owns *out. */
SPMD_API spmd_status spmd_array_reshard(const spmd_array *array,
                                        const spmd_sharding *sharding,
                                        spmd_array **out);

SPMD_EXTERN_C_END

#endif /* SPMD_ARRAY_H */
