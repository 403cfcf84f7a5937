/**
 * @file
 * Shards shared with other libraries through DLPack, without copies: a
 * shard's memory handed to cuDNN, CuPy, PyTorch or NumPy as a
 * DLManagedTensor, and their tensors adopted as an array's blocks
 * (jax.dlpack). Not included by spmd/spmd.h, since it includes
 * <dlpack/dlpack.h> (Debian's libdlpack-dev; DLPack 0.6 and later).
 * (Since 1.5.)
 *
 * Element types as DLPack names them (lanes 1): float32, float64 and
 * float16 as kDLFloat of 32, 64 and 16 bits, bfloat16 as kDLBfloat 16,
 * int8, int16, int32 and int64 as kDLInt, uint8, uint16 and uint32 as
 * kDLUInt, bool as type code 6 (DLPack 0.8's kDLBool) of 8 bits. Devices: kDLCPU on the cpu platform, kDLCUDA
 * with the GPU's ordinal on cuda (several logical devices of one GPU share
 * it). The sim platform's memory cannot be shared.
 */
#ifndef SPMD_DLPACK_H
#define SPMD_DLPACK_H

#ifdef SWIG
/** DLPack's tensor, opaque to the bindings made from this header. */
typedef struct DLManagedTensor DLManagedTensor;
#else
#include <dlpack/dlpack.h>
#endif
#include <stddef.h>
#include <stdint.h>

#include "spmd/array.h"
#include "spmd/export.h"
#include "spmd/sharding.h"
#include "spmd/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Shard `index` of `array` as a DLPack tensor viewing its memory: no copy.
 * Waits for the shard's pending writes first, so the consumer may read it
 * at once. The tensor is compact row-major (strides NULL) of the shard's
 * local shape.
 *
 * The tensor holds the memory until its deleter is called, even after the
 * array is destroyed; call it exactly once. Read it only: libspmd writes
 * that memory only when asked to write this very array
 * (spmd_array_shard_write, a persistent collective's output), and an op
 * that consumes the array by donation gives its result memory of its own
 * while the tensor lives.
 *
 * @param array The array; not NULL.
 * @param index The shard, in mesh device order, below the shard count.
 * @param out Receives the tensor; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an index past the last shard;
 *         SPMD_ERR_UNSUPPORTED for a shard of another process's device or
 *         on the sim platform; the error of pending work that failed;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL, destroyed or donated array
 *         or a NULL out.
 */
SPMD_API spmd_status spmd_array_shard_to_dlpack(const spmd_array *array, size_t index,
                                                DLManagedTensor **out);

/**
 * An array of global `shape` laid out by `sharding` whose blocks on this
 * process's devices are other libraries' memory, adopted without a copy:
 * tensors[k] becomes the block of device devices[k]. One tensor per device
 * of this process in the sharding's mesh (replicas each have their own).
 * Each must be on that device (kDLCPU on the cpu platform, kDLCUDA with the
 * device's GPU ordinal on cuda), of `dtype`, of that device's block shape,
 * compact row-major (strides NULL or those of a compact layout), with data
 * + byte_offset aligned to the element size, and its values ready: work
 * the producer queued on it must have finished.
 *
 * On SPMD_OK the array owns the tensors: each one's deleter (when not
 * NULL) is called once, when its block is no longer used (the array and
 * every array sharing the block destroyed, their work finished). Until
 * then the producer must not free or write the memory. On failure the
 * caller keeps every tensor.
 *
 * @param sharding The layout; not NULL.
 * @param dtype The element type, every tensor's.
 * @param ndim Number of dimensions of the global array.
 * @param shape The global array's ndim sizes.
 * @param count How many tensors: the number of devices of the sharding's
 *        mesh that are this process's.
 * @param devices count global device ids, one per tensor, each once; not
 *        NULL when count > 0.
 * @param tensors count tensors, each a different one; not NULL when
 *        count > 0.
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad shape or sharding
 *         (as spmd_array_zeros), a wrong count, a device that is not this
 *         process's in the mesh or given twice, a NULL tensor or one given
 *         twice, one on another device or of another type or shape than
 *         its block, strided or misaligned (naming its index), or a NULL
 *         out; SPMD_ERR_UNSUPPORTED on the sim platform.
 */
SPMD_API spmd_status spmd_array_from_dlpack(const spmd_sharding *sharding, spmd_dtype dtype,
                                            size_t ndim, const int64_t *shape, size_t count,
                                            const int *devices, DLManagedTensor *const *tensors,
                                            spmd_array **out);

#ifdef __cplusplus
}
#endif

#endif /* SPMD_DLPACK_H */
