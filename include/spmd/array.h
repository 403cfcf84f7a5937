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
 * jax.make_array_from_process_local_data: an array of global `shape` laid
 * out by `sharding` from the part of it this process holds. That part is
 * the smallest box covering the blocks of this process's devices (all of
 * the array in a runtime of one process, or where the sharding replicates
 * it across processes), row-major; its blocks must fill it. Each process
 * calls it with its own part; nothing crosses processes. (Since 1.4.)
 *
 * @param sharding The layout; not NULL.
 * @param dtype The element type.
 * @param ndim Number of dimensions of the global array.
 * @param shape The global array's ndim sizes.
 * @param data This process's part, row-major; may be NULL when nbytes is 0.
 * @param nbytes Bytes at data: exactly the part's element count times the
 *        dtype's size (spmd_array_process_local_shape gives its shape).
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return As spmd_array_from_host, nbytes measured against this process's
 *         part; SPMD_ERR_INVALID_ARGUMENT also when this process's blocks
 *         do not fill a box (its devices' blocks are not contiguous).
 */
SPMD_API spmd_status spmd_array_from_process_local_data(const spmd_sharding *sharding,
                                                        spmd_dtype dtype, size_t ndim,
                                                        const int64_t *shape,
                                                        const void *data, size_t nbytes,
                                                        spmd_array **out);

/**
 * jax.make_array_from_single_device_arrays: an array of global `shape`
 * laid out by `sharding` whose blocks on this process's devices are the
 * given arrays, one per such device, each on that one device (a single
 * device sharding, or any array spmd_array_device accepts) and of its
 * block's shape and the dtype. They are copied; the caller keeps them.
 * Each process gives its own devices' blocks; nothing crosses processes.
 * (Since 1.4.)
 *
 * @param sharding The layout; not NULL.
 * @param dtype The element type, every given array's.
 * @param ndim Number of dimensions of the global array.
 * @param shape The global array's ndim sizes.
 * @param count How many arrays: the number of devices of the sharding's
 *        mesh that are this process's.
 * @param arrays count arrays, in any order; not NULL when count > 0.
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad shape or sharding
 *         (as spmd_array_zeros), a wrong count, a NULL, destroyed or
 *         donated array, one on several devices, on another runtime, on a
 *         device that is not this process's in the mesh or given twice, or
 *         whose dtype or shape is not its block's (naming its index), or a
 *         NULL out.
 */
SPMD_API spmd_status spmd_array_from_single_device_arrays(const spmd_sharding *sharding,
                                                          spmd_dtype dtype, size_t ndim,
                                                          const int64_t *shape, size_t count,
                                                          const spmd_array *const *arrays,
                                                          spmd_array **out);

/**
 * The shape of this process's part of an array of global `shape` laid out
 * by `sharding` (what spmd_array_from_process_local_data takes): the
 * smallest box covering the blocks of this process's devices. (Since 1.4.)
 *
 * @param sharding The layout; not NULL.
 * @param ndim Number of dimensions of the global array.
 * @param shape The global array's ndim sizes.
 * @param out Receives ndim sizes; not NULL when ndim > 0.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad shape or sharding
 *         (as spmd_array_zeros), blocks that do not fill a box, a mesh
 *         without a device of this process, or a NULL out.
 */
SPMD_API spmd_status spmd_array_process_local_shape(const spmd_sharding *sharding, size_t ndim,
                                                    const int64_t *shape, int64_t *out);

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
 * Over several processes (spmd_runtime_process_count) this process must
 * hold every block itself, as JAX requires: a replicated array, or one whose
 * mesh lies in this process; spmd_array_process_allgather gathers the rest.
 *
 * @return SPMD_OK; the error of pending work that failed;
 *         SPMD_ERR_INVALID_ARGUMENT for wrong nbytes, NULL data, or a NULL
 *         or destroyed array; SPMD_ERR_UNSUPPORTED for a block that only
 *         other processes hold, naming it and them.
 */
SPMD_API spmd_status spmd_array_to_host(const spmd_array *array, void *data,
                                        size_t nbytes);

/**
 * Copies the global array into a row-major host buffer in every process
 * (jax.experimental.multihost_utils.process_allgather(a, tiled=True)):
 * each block travels from a process holding it to all others. Every
 * process of the runtime must call it, in the same order as its other
 * calls across processes. In a runtime of one process it is
 * spmd_array_to_host. (Since 1.4.)
 *
 * @param array The array; not NULL.
 * @param data The buffer; may be NULL when nbytes is 0.
 * @param nbytes Bytes at data: exactly the array's nbytes.
 * @return As spmd_array_to_host, never refusing a block held elsewhere;
 *         SPMD_ERR_TIMEOUT when a process does not take part within the
 *         collective timeout ($SPMD_COLLECTIVE_TIMEOUT_MS), naming it.
 */
SPMD_API spmd_status spmd_array_process_allgather(const spmd_array *array, void *data,
                                                  size_t nbytes);

/**
 * Saves the array to `directory` (Orbax's checkpointing of a jax.Array):
 * each process writes the blocks of its devices, one file per block, and
 * process 0 an index of them (docs/distributed.md gives the layout), so
 * that spmd_array_load restores it into any sharding, on any mesh and
 * number of processes. The directory is made if missing; it must not hold
 * a checkpoint already. Every process of the runtime calls it, with the
 * same directory (on a file system they share); it returns once the whole
 * checkpoint is written. Waits for pending work. (Since 1.4.)
 *
 * @param array The array; not NULL.
 * @param directory Where to write; not NULL or empty.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array,
 *         a NULL or empty directory, one that already holds a checkpoint,
 *         or a file that cannot be made or written (with the system's
 *         reason and the path); the error of pending work that failed;
 *         SPMD_ERR_TIMEOUT when a process does not take part within the
 *         collective timeout.
 */
SPMD_API spmd_status spmd_array_save(const spmd_array *array, const char *directory);

/**
 * Restores the array saved in `directory` by spmd_array_save, laid out by
 * `sharding`: its dtype and shape are the saved ones; each process reads
 * the parts of the saved blocks its own devices need. (Since 1.4.)
 *
 * @param sharding The layout; not NULL; its spec must suit the saved rank.
 * @param directory Where the checkpoint is; not NULL or empty.
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding, a NULL out, a directory without a checkpoint, a damaged
 *         index or block file (naming it and what is wrong), or a sharding
 *         of another rank; SPMD_ERR_OUT_OF_MEMORY when memory runs out.
 */
SPMD_API spmd_status spmd_array_load(const spmd_sharding *sharding, const char *directory,
                                     spmd_array **out);

/**
 * Whether this process holds every shard of the array
 * (jax.Array.is_fully_addressable): always in a runtime of one process.
 * Shards of other processes' devices are described (spmd_array_shard_info)
 * but cannot be read or written here. (Since 1.4.)
 *
 * @param array The array; not NULL.
 * @param out Receives 1 or 0; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array
 *         or a NULL out.
 */
SPMD_API spmd_status spmd_array_is_fully_addressable(const spmd_array *array, int *out);

/**
 * Number of shards, one per device of the sharding (a.addressable_shards;
 * over several processes a.global_shards: the shards of other processes'
 * devices are described but not readable here).
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
 *         for wrong nbytes, NULL data, or a NULL or destroyed array;
 *         SPMD_ERR_UNSUPPORTED for a shard of another process's device.
 */
SPMD_API spmd_status spmd_array_shard_read(const spmd_array *array,
                                           size_t index, void *data,
                                           size_t nbytes);

/**
 * Overwrites shard `index` from a host buffer.
 *
 * Only that device's copy changes: keeping replicas equal is the caller's
 * duty. Where another array shares the shard's memory (a reshape or
 * reshard that moved nothing), the shard gets memory of its own first, so
 * that array keeps its values. The caller may reuse `data` at once. Must
 * not run at the same time as another thread reads or writes the array.
 *
 * @param array The array; not NULL.
 * @param index The shard, below the shard count.
 * @param data The values, row-major in the shard's local shape; may be NULL
 *        when nbytes is 0.
 * @param nbytes Bytes at data: exactly the shard's byte size.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an index past the last shard;
 *         SPMD_ERR_INVALID_ARGUMENT for wrong nbytes, NULL data, or a NULL
 *         or destroyed array; SPMD_ERR_UNSUPPORTED for a shard of another
 *         process's device.
 */
SPMD_API spmd_status spmd_array_shard_write(spmd_array *array, size_t index,
                                            const void *data, size_t nbytes);

/**
 * Returns a new array with the same values laid out by `sharding`.
 *
 * The sharding may be on the same mesh or another mesh over devices of the
 * same runtime. Only the overlapping blocks move, device to device, each
 * from one source replica; nothing goes through a full host copy. A
 * sharding that lays the array out as it already is (however it is named)
 * moves nothing: the new array shares the array's memory, as
 * jax.device_put returns the same buffers (each keeps its values all the
 * same: nothing writes memory two arrays share in place).
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
