/**
 * @file
 * libspmd: sharded arrays, a global shape and dtype with one buffer per
 * device of their sharding.
 *
 * Arrays behave as JAX arrays: operations may complete asynchronously, and
 * spmd_array_block_until_ready or a copy to the host waits for them and
 * reports errors of that work. A handle may be used from several threads at
 * once for reading; writes to one shard must not race with other uses.
 */
#ifndef SPMD_ARRAY_H
#define SPMD_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/dtype.h"
#include "spmd/export.h"
#include "spmd/sharding.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * A sharded array (jax.Array): a global shape and dtype laid out by a
 * sharding, one buffer per device. Released with spmd_array_destroy.
 */
typedef struct spmd_array spmd_array;

/**
 * jax.device_put: copies a row-major host buffer onto the devices of
 * `sharding`, each device receiving its block.
 *
 * The caller owns *out and may reuse `data` at once.
 *
 * @param sharding The layout; not NULL.
 * @param dtype The element type.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param data The values, row-major; may be NULL when nbytes is 0.
 * @param nbytes Bytes at data: exactly prod(shape) * dtype size.
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for wrong nbytes, a bad shape
 *         (a negative size, more than SPMD_MAX_NDIM dimensions, more than
 *         2^62 elements or bytes, NULL with ndim > 0), a spec naming more
 *         dimensions than ndim, an invalid dtype, NULL data, or a NULL or
 *         destroyed sharding or a NULL out; SPMD_ERR_OUT_OF_MEMORY when
 *         device memory runs out.
 */
SPMD_API spmd_status spmd_array_from_host(const spmd_sharding *sharding,
                                          spmd_dtype dtype, size_t ndim,
                                          const int64_t *shape,
                                          const void *data, size_t nbytes,
                                          spmd_array **out);

/**
 * An array of zeros, made on the devices (no host buffer).
 *
 * @param sharding The layout; not NULL.
 * @param dtype The element type.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param out Receives the new array, which the caller owns; not NULL. Left
 *        untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad shape, a spec naming
 *         more dimensions than ndim, an invalid dtype, or a NULL or destroyed
 *         sharding or a NULL out (as spmd_array_from_host);
 *         SPMD_ERR_OUT_OF_MEMORY when device memory runs out.
 */
SPMD_API spmd_status spmd_array_zeros(const spmd_sharding *sharding,
                                      spmd_dtype dtype, size_t ndim,
                                      const int64_t *shape, spmd_array **out);

/**
 * An array every element of which is `value` converted to dtype (as
 * jnp.full; integer types truncate toward zero, bool is value != 0).
 *
 * @param sharding The layout; not NULL.
 * @param dtype The element type.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param value The fill value.
 * @param out Receives the new array, which the caller owns; not NULL. Left
 *        untouched on failure.
 * @return SPMD_OK, or the errors of spmd_array_zeros.
 */
SPMD_API spmd_status spmd_array_full(const spmd_sharding *sharding,
                                     spmd_dtype dtype, size_t ndim,
                                     const int64_t *shape, double value,
                                     spmd_array **out);

/**
 * jnp.arange(start, start + n*step, step).reshape(shape): element i in
 * row-major order is start + i * step, converted to dtype.
 *
 * @param sharding The layout; not NULL.
 * @param dtype The element type.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param start The first value.
 * @param step The difference between consecutive values.
 * @param out Receives the new array, which the caller owns; not NULL. Left
 *        untouched on failure.
 * @return SPMD_OK, or the errors of spmd_array_zeros.
 */
SPMD_API spmd_status spmd_array_arange(const spmd_sharding *sharding,
                                       spmd_dtype dtype, size_t ndim,
                                       const int64_t *shape, double start,
                                       double step, spmd_array **out);

/**
 * Releases the caller's array.
 *
 * @param array The array; NULL and already-destroyed handles are ignored.
 */
SPMD_API void spmd_array_destroy(spmd_array *array);

/**
 * The array's element type.
 *
 * @param array The array; not NULL.
 * @param out Receives the dtype; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array
 *         or a NULL out.
 */
SPMD_API spmd_status spmd_array_dtype(const spmd_array *array,
                                      spmd_dtype *out);

/**
 * The array's number of dimensions.
 *
 * @param array The array; not NULL.
 * @param out Receives ndim; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array
 *         or a NULL out.
 */
SPMD_API spmd_status spmd_array_ndim(const spmd_array *array, size_t *out);

/**
 * The array's global shape.
 *
 * Writes the array's ndim into *ndim (when ndim is not NULL) and, when
 * `capacity` holds them, its sizes into `shape`. NULL with a capacity of 0
 * asks for ndim alone.
 *
 * @param array The array; not NULL.
 * @param capacity Number of values `shape` can hold.
 * @param shape Receives one size per dimension; may be NULL when capacity
 *        is 0. Untouched on failure.
 * @param ndim Receives the array's ndim, also when capacity is too small;
 *        may be NULL.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE when capacity is smaller than ndim
 *         (shape untouched, *ndim says how many are needed);
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL shape with a non-zero
 *         capacity, or a NULL or destroyed array.
 */
SPMD_API spmd_status spmd_array_shape(const spmd_array *array, size_t capacity,
                                      int64_t *shape, size_t *ndim);

/**
 * Number of elements, prod(shape).
 *
 * @param array The array; not NULL.
 * @param out Receives the element count; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array
 *         or a NULL out.
 */
SPMD_API spmd_status spmd_array_size(const spmd_array *array, int64_t *out);

/**
 * Bytes of the global array, size * dtype size.
 *
 * @param array The array; not NULL.
 * @param out Receives the byte count; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array
 *         or a NULL out.
 */
SPMD_API spmd_status spmd_array_nbytes(const spmd_array *array, size_t *out);

/**
 * The array's sharding.
 *
 * @param array The array; not NULL.
 * @param out Receives a new sharding handle the caller owns; not NULL. Left
 *        untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array
 *         or a NULL out.
 */
SPMD_API spmd_status spmd_array_sharding(const spmd_array *array,
                                         spmd_sharding **out);

/**
 * a.device for a single-device array (or one whose sharding has one
 * device).
 *
 * @param array The array; not NULL.
 * @param out Receives the device's global id; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an array spread over
 *         several devices (ask for its sharding instead), or a NULL or
 *         destroyed array or a NULL out.
 */
SPMD_API spmd_status spmd_array_device(const spmd_array *array, int *out);

/**
 * Waits until every pending operation producing the array has finished.
 *
 * @param array The array; not NULL.
 * @return SPMD_OK; the error of a pending operation that failed;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array.
 */
SPMD_API spmd_status spmd_array_block_until_ready(spmd_array *array);

/**
 * Copies the global array into a row-major host buffer (np.asarray(a)).
 *
 * Waits for pending work.
 *
 * @param array The array; not NULL.
 * @param data The buffer; may be NULL when nbytes is 0.
 * @param nbytes Bytes at data: exactly the array's nbytes.
 * @return SPMD_OK; the error of pending work that failed;
 *         SPMD_ERR_INVALID_ARGUMENT for wrong nbytes, NULL data, or a NULL
 *         or destroyed array.
 */
SPMD_API spmd_status spmd_array_to_host(const spmd_array *array, void *data,
                                        size_t nbytes);

/**
 * Number of shards, one per device of the sharding (a.addressable_shards).
 *
 * @param array The array; not NULL.
 * @param out Receives the shard count; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array
 *         or a NULL out.
 */
SPMD_API spmd_status spmd_array_shard_count(const spmd_array *array,
                                            size_t *out);

/**
 * Device, index, replica id and local shape of shard `index`.
 *
 * @param array The array; not NULL.
 * @param index The shard, in mesh device order, below the shard count.
 * @param out Receives the shard; not NULL, with struct_size set by the
 *        caller (SPMD_SHARD_INFO_INIT). Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an index past the last shard;
 *         SPMD_ERR_INVALID_ARGUMENT for a struct_size too small to hold
 *         `device` or above 1024, or a NULL or destroyed array or a NULL
 *         out.
 */
SPMD_API spmd_status spmd_array_shard_info(const spmd_array *array,
                                           size_t index, spmd_shard_info *out);

/**
 * The same as spmd_array_shard_info for the shard on device `device_id`
 * (jax's addressable_shards looked up by device).
 *
 * @param array The array; not NULL.
 * @param device_id The device's global id.
 * @param out Receives the shard; not NULL, with struct_size set by the
 *        caller (SPMD_SHARD_INFO_INIT). Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT when no shard of the array is
 *         on that device, for a struct_size too small to hold `device` or
 *         above 1024, or for a NULL or destroyed array or a NULL out.
 */
SPMD_API spmd_status spmd_array_shard_info_of_device(const spmd_array *array,
                                                     int device_id,
                                                     spmd_shard_info *out);

/**
 * Copies shard `index` (row-major, local shape) to a host buffer.
 *
 * Waits for pending work on the shard.
 *
 * @param array The array; not NULL.
 * @param index The shard, below the shard count.
 * @param data The buffer; may be NULL when nbytes is 0.
 * @param nbytes Bytes at data: exactly the shard's byte size.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an index past the last shard;
 *         the error of pending work that failed; SPMD_ERR_INVALID_ARGUMENT
 *         for wrong nbytes, NULL data, or a NULL or destroyed array.
 */
SPMD_API spmd_status spmd_array_shard_read(const spmd_array *array,
                                           size_t index, void *data,
                                           size_t nbytes);

/**
 * Overwrites shard `index` from a host buffer.
 *
 * Only that device's copy changes: keeping replicas equal is the caller's
 * duty. The caller may reuse `data` at once. Must not run at the same time
 * as another thread reads or writes the array.
 *
 * @param array The array; not NULL.
 * @param index The shard, below the shard count.
 * @param data The values, row-major in the shard's local shape; may be NULL
 *        when nbytes is 0.
 * @param nbytes Bytes at data: exactly the shard's byte size.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an index past the last shard;
 *         SPMD_ERR_INVALID_ARGUMENT for wrong nbytes, NULL data, or a NULL
 *         or destroyed array.
 */
SPMD_API spmd_status spmd_array_shard_write(spmd_array *array, size_t index,
                                            const void *data, size_t nbytes);

/**
 * Returns a new array with the same values laid out by `sharding`.
 *
 * The sharding may be on the same mesh or another mesh over devices of the
 * same runtime. Only the overlapping blocks move, device to device, each
 * from one source replica; nothing goes through a full host copy.
 *
 * @param array The array; not NULL.
 * @param sharding The new layout; not NULL.
 * @param out Receives the new array, which the caller owns; not NULL. Left
 *        untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a sharding of another
 *         runtime, a spec naming more dimensions than the array has, or a
 *         NULL or destroyed array or sharding or a NULL out;
 *         SPMD_ERR_OUT_OF_MEMORY when device memory runs out.
 */
SPMD_API spmd_status spmd_array_reshard(const spmd_array *array,
                                        const spmd_sharding *sharding,
                                        spmd_array **out);

SPMD_EXTERN_C_END

#endif /* SPMD_ARRAY_H */
