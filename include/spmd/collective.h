/**
 * @file
 * libspmd: persistent collectives, planned once for a mesh, axes, dtype,
 * global shape and input sharding, then executed many times (the jitted
 * shard_map(lambda x: jax.lax.all_gather(x, ...)) of JAX).
 */
#ifndef SPMD_COLLECTIVE_H
#define SPMD_COLLECTIVE_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/array.h"
#include "spmd/dtype.h"
#include "spmd/export.h"
#include "spmd/sharding.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * A planned collective, made by spmd_collective_create and released with
 * spmd_collective_destroy. Its executions run one after another.
 */
typedef struct spmd_collective spmd_collective;

/** The collectives that can be planned. Values are stable across releases. */
typedef enum spmd_collective_kind {
  SPMD_COLLECTIVE_PSUM = 1,         /**< all-reduce (sum)                      */
  SPMD_COLLECTIVE_PMEAN = 2,        /**< all-reduce (mean)                     */
  SPMD_COLLECTIVE_PMAX = 3,         /**< all-reduce (max)                      */
  SPMD_COLLECTIVE_PMIN = 4,         /**< all-reduce (min)                      */
  SPMD_COLLECTIVE_ALL_GATHER = 5,   /**< all-gather                            */
  SPMD_COLLECTIVE_PSUM_SCATTER = 6, /**< reduce-scatter                        */
  SPMD_COLLECTIVE_ALL_TO_ALL = 7,   /**< all-to-all                            */
  SPMD_COLLECTIVE_PPERMUTE = 8      /**< collective permute                    */
} spmd_collective_kind;

/**
 * The parameters of one collective. Zero means "default"; fields are only
 * ever appended.
 */
typedef struct spmd_collective_options {
  size_t struct_size; /**< sizeof(spmd_collective_options) as the caller was compiled */
  /** all_gather: axis; psum_scatter: scatter_dimension; all_to_all:
   * split_axis. Negative counts from the end. */
  int64_t axis;
  int64_t concat_axis; /**< all_to_all only                               */
  int tiled;           /**< all_gather, psum_scatter, all_to_all          */
  size_t npairs;       /**< ppermute: (source, dest) pairs, 2*npairs values */
  const int64_t *pairs; /**< ppermute: the pairs, copied at planning      */
  /** Rendezvous timeout, as spmd_shard_map_options.timeout_ms. */
  int64_t timeout_ms;
} spmd_collective_options;

/** An initialiser of spmd_collective_options: struct_size set, every parameter default. */
#define SPMD_COLLECTIVE_OPTIONS_INIT \
  { sizeof(spmd_collective_options), 0, 0, 0, 0, NULL, 0 }

/**
 * Fills *options with the defaults, writing exactly `size` bytes.
 *
 * @param options The struct to fill; not NULL.
 * @param size sizeof *options as the caller was compiled.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL options or a size
 *         smaller than a size_t or above 1024 bytes (nothing written).
 */
SPMD_API spmd_status spmd_collective_options_init(spmd_collective_options *options, size_t size);

/**
 * Plans `kind` over mesh axes `axes` of the mesh of `input_sharding`, for
 * arrays of `dtype` and global `shape` laid out by it.
 *
 * The result is what shard_map(f, in_specs=spec, out_specs=S) gives, S
 * being the input's spec with `axes` dropped (the result is replicated
 * along them; ppermute keeps the input's spec), then for tiled psum_scatter
 * and all_to_all `axes` appended to the scattered/split dimension, and for
 * non-tiled all_gather a None inserted at `axis`. Non-tiled psum_scatter
 * and all_to_all give results that no spec can place, so they are
 * SPMD_ERR_UNSUPPORTED here (use them inside spmd_shard_map). Pairs are
 * copied. The caller owns *out.
 *
 * @param input_sharding The inputs' layout; not NULL.
 * @param kind The collective.
 * @param axes The mesh axes, "x" or "(x, y)", or "()" for none (every
 *        device a group of its own); not NULL.
 * @param dtype The inputs' element type.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim global sizes, none negative; may be NULL when ndim is 0.
 * @param options The parameters; NULL takes all defaults.
 * @param out Receives the new collective; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_UNSUPPORTED for a non-tiled psum_scatter or
 *         all_to_all whose result no spec can place;
 *         SPMD_ERR_INVALID_ARGUMENT for an unknown kind or dtype, a bad
 *         shape, axes or options (struct_size, negative timeout, NULL
 *         pairs), parameters that do not fit the kind and shape, input
 *         blocks of one group differing in shape other than along the
 *         gathered or concatenated dimension, or a NULL or destroyed
 *         sharding or a NULL out.
 */
SPMD_API spmd_status spmd_collective_create(
    const spmd_sharding *input_sharding, spmd_collective_kind kind,
    const char *axes, spmd_dtype dtype, size_t ndim, const int64_t *shape,
    const spmd_collective_options *options, spmd_collective **out);

/**
 * Releases a collective. Must not run concurrently with an execute.
 *
 * @param collective The collective; NULL and already-destroyed handles are
 *        ignored.
 */
SPMD_API void spmd_collective_destroy(spmd_collective *collective);

/**
 * The output's sharding.
 *
 * @param collective The collective; not NULL.
 * @param out Receives a new sharding handle the caller owns; not NULL. Left
 *        untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         collective or a NULL out.
 */
SPMD_API spmd_status spmd_collective_output_sharding(
    const spmd_collective *collective, spmd_sharding **out);

/**
 * The output's element type (pmean of integers gives a float type, psum of
 * bool int32).
 *
 * @param collective The collective; not NULL.
 * @param out Receives the dtype; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         collective or a NULL out.
 */
SPMD_API spmd_status spmd_collective_output_dtype(
    const spmd_collective *collective, spmd_dtype *out);

/**
 * The output's number of dimensions.
 *
 * @param collective The collective; not NULL.
 * @param out Receives ndim; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         collective or a NULL out.
 */
SPMD_API spmd_status spmd_collective_output_ndim(
    const spmd_collective *collective, size_t *out);

/**
 * The output's global shape.
 *
 * Writes the output's ndim into *ndim (when not NULL) and, when `capacity`
 * holds them, its sizes into `shape`. NULL with a capacity of 0 asks for
 * ndim alone.
 *
 * @param collective The collective; not NULL.
 * @param capacity Number of values `shape` can hold.
 * @param shape Receives one size per dimension; may be NULL when capacity
 *        is 0. Untouched on failure.
 * @param ndim Receives the output's ndim, also when capacity is too small;
 *        may be NULL.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE (shape untouched) when capacity is
 *         smaller than ndim; SPMD_ERR_INVALID_ARGUMENT for a NULL shape with
 *         a non-zero capacity, or a NULL or destroyed collective.
 */
SPMD_API spmd_status spmd_collective_output_shape(
    const spmd_collective *collective, size_t capacity, int64_t *shape,
    size_t *ndim);

/**
 * Runs the collective on `input` into a new array the caller owns.
 *
 * The input has the planned dtype and shape; it is resharded first when
 * laid out otherwise. Waits for the input's pending work. Executions of one
 * handle run one at a time.
 *
 * @param collective The collective; not NULL.
 * @param input The input array; not NULL.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT when the input's dtype or shape
 *         differ from the plan, for an input of another runtime, or a NULL or
 *         destroyed handle or a NULL out; SPMD_ERR_TIMEOUT past the
 *         rendezvous timeout; SPMD_ERR_OUT_OF_MEMORY when device memory runs
 *         out.
 */
SPMD_API spmd_status spmd_collective_execute(spmd_collective *collective,
                                             const spmd_array *input,
                                             spmd_array **out);

/**
 * The same as spmd_collective_execute into an existing array, reusing its
 * buffers (no allocation per call).
 *
 * Writes `output`: no other thread may read or write it meanwhile.
 *
 * @param collective The collective; not NULL.
 * @param input The input array; not NULL.
 * @param output An array of the output's sharding, dtype and shape; not
 *        NULL, and not `input`.
 * @return SPMD_OK, or the errors of spmd_collective_execute;
 *         SPMD_ERR_INVALID_ARGUMENT also when output's sharding, dtype or
 *         shape differ from the output's, or output is input.
 */
SPMD_API spmd_status spmd_collective_execute_into(spmd_collective *collective,
                                                  const spmd_array *input,
                                                  spmd_array *output);

SPMD_EXTERN_C_END

#endif /* SPMD_COLLECTIVE_H */
