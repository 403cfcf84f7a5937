/* libspmd: persistent collectives, planned once for a mesh, axes, dtype,
 * global shape and input sharding, then executed many times (the jitted
 * shard_map(lambda x: jax.lax.all_gather(x, ...)) of JAX). */
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

typedef struct spmd_collective spmd_collective;

/* Values are stable across releases. */
typedef enum spmd_collective_kind {
  SPMD_COLLECTIVE_PSUM = 1,         /* all-reduce (sum)                      */
  SPMD_COLLECTIVE_PMEAN = 2,        /* all-reduce (mean)                     */
  SPMD_COLLECTIVE_PMAX = 3,
  SPMD_COLLECTIVE_PMIN = 4,
  SPMD_COLLECTIVE_ALL_GATHER = 5,
  SPMD_COLLECTIVE_PSUM_SCATTER = 6, /* reduce-scatter                        */
  SPMD_COLLECTIVE_ALL_TO_ALL = 7,
  SPMD_COLLECTIVE_PPERMUTE = 8
} spmd_collective_kind;

/* The parameters of one collective. Zero means "default". */
typedef struct spmd_collective_options {
  size_t struct_size;
  /* all_gather: axis; psum_scatter: scatter_dimension; all_to_all:
   * split_axis. Negative counts from the end. */
  int64_t axis;
  int64_t concat_axis; /* all_to_all only                               */
  int tiled;           /* all_gather, psum_scatter, all_to_all          */
  size_t npairs;       /* ppermute: (source, dest) pairs, 2*npairs values */
  const int64_t *pairs;
  /* Rendezvous timeout, as spmd_shard_map_options.timeout_ms. */
  int64_t timeout_ms;
} spmd_collective_options;

#define SPMD_COLLECTIVE_OPTIONS_INIT \
  { sizeof(spmd_collective_options), 0, 0, 0, 0, NULL, 0 }

SPMD_API void spmd_collective_options_init(spmd_collective_options *options);

/* Plans `kind` over mesh axes `axes` ("x" or "(x, y)") of the mesh of
 * `input_sharding`, for arrays of `dtype` and global `shape` laid out by
 * it. The result is what shard_map(f, in_specs=spec, out_specs=S) gives,
 * S being the input's spec with `axes` dropped (the result is replicated
 * along them; ppermute keeps the input's spec), then for tiled psum_scatter and all_to_all `axes` appended
 * to the scattered/split dimension, and for non-tiled all_gather a None
 * inserted at `axis`. Non-tiled psum_scatter and all_to_all give results
 * that no spec can place, so they are SPMD_ERR_UNSUPPORTED here (use them
 * inside spmd_shard_map). Pairs are copied. The caller owns *out. */
SPMD_API spmd_status spmd_collective_create(
    const spmd_sharding *input_sharding, spmd_collective_kind kind,
    const char *axes, spmd_dtype dtype, size_t ndim, const int64_t *shape,
    const spmd_collective_options *options, spmd_collective **out);

/* NULL is accepted. Must not run concurrently with an execute. */
SPMD_API void spmd_collective_destroy(spmd_collective *collective);

/* The output's sharding (the caller owns *out), dtype, rank and shape. */
SPMD_API spmd_status spmd_collective_output_sharding(
    const spmd_collective *collective, spmd_sharding **out);
SPMD_API spmd_status spmd_collective_output_dtype(
    const spmd_collective *collective, spmd_dtype *out);
SPMD_API spmd_status spmd_collective_output_ndim(
    const spmd_collective *collective, size_t *out);
SPMD_API spmd_status spmd_collective_output_shape(
    const spmd_collective *collective, int64_t *shape);

/* Runs the collective on `input` (the planned dtype and shape; resharded
 * first when laid out otherwise) into a new array the caller owns. Waits
 * for the input's pending work. Executions of one handle run one at a time.
 * Errors: SPMD_ERR_INVALID_ARGUMENT (dtype or shape differ from the plan). */
SPMD_API spmd_status spmd_collective_execute(spmd_collective *collective,
                                             const spmd_array *input,
                                             spmd_array **out);

/* The same into an existing array of the output's sharding, dtype and
 * shape, reusing its buffers (no allocation per call). `output` must not be
 * `input`. */
SPMD_API spmd_status spmd_collective_execute_into(spmd_collective *collective,
                                                  const spmd_array *input,
                                                  spmd_array *output);

SPMD_EXTERN_C_END

#endif /* SPMD_COLLECTIVE_H */
