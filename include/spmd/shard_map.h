/* libspmd: shard_map, a per-device callback run on every device of a mesh at
 * once, seeing only its local blocks, with explicit collectives
 * (jax.experimental.shard_map.shard_map and jax.lax.psum & co). */
#ifndef SPMD_SHARD_MAP_H
#define SPMD_SHARD_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/array.h"
#include "spmd/dtype.h"
#include "spmd/export.h"
#include "spmd/mesh.h"
#include "spmd/sharding.h"
#include "spmd/spec.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/* The per-device view handed to a shard_map callback. Borrowed: valid only
 * inside the callback that received it, and only on that callback's thread. */
typedef struct spmd_ctx spmd_ctx;

/* A dense row-major local block on one device. `data` points into device
 * memory the context owns (inputs: read-only; blocks from spmd_ctx_alloc
 * and collectives: writable) and lives until the shard_map returns. */
typedef struct spmd_block {
  size_t struct_size;
  void *data;
  spmd_dtype dtype;
  size_t ndim;
  int64_t shape[SPMD_MAX_NDIM];
} spmd_block;

#define SPMD_BLOCK_INIT \
  { sizeof(spmd_block), NULL, SPMD_DTYPE_INVALID, 0, {0, 0, 0, 0, 0, 0, 0, 0} }

/* Fills *block with an empty block (for bindings that cannot use the macro). */
SPMD_API void spmd_block_init(spmd_block *block);

/* The user's per-device function. Runs once per mesh device, concurrently,
 * each on its own thread. Return SPMD_OK, or an error (ideally through
 * spmd_ctx_error, which records a message); the shard_map then fails. */
typedef spmd_status (*spmd_shard_fn)(spmd_ctx *ctx, void *user_data);

/* Receives the text of spmd_ctx_print, tagged with the device that printed.
 * Called from device threads, one call at a time. */
typedef void (*spmd_print_fn)(int device, const char *text, void *user_data);

/* Options of spmd_shard_map. Zero in a field means "default". */
typedef struct spmd_shard_map_options {
  size_t struct_size;
  /* Like check_rep: 1 verifies that outputs are equal along every mesh axis
   * their out_spec leaves out, failing with the devices and the first index
   * that differs. 0 (default) trusts the callback. */
  int check_rep;
  /* How long a collective waits for its peers before every waiting device
   * fails with SPMD_ERR_TIMEOUT. 0 = $SPMD_COLLECTIVE_TIMEOUT_MS if set,
   * else 60000 ms; SPMD_TIMEOUT_FOREVER (or any time too long for the
   * clock) waits without end. */
  int64_t timeout_ms;
  /* Where spmd_ctx_print goes. NULL = stdout, one line per call, the text
   * alone as jax.debug.print writes it. */
  spmd_print_fn print_fn;
  void *print_user_data;
} spmd_shard_map_options;

/* A timeout that never ends (shard_map and collective options). */
#define SPMD_TIMEOUT_FOREVER INT64_MAX

#define SPMD_SHARD_MAP_OPTIONS_INIT \
  { sizeof(spmd_shard_map_options), 0, 0, NULL, NULL }

/* Fills *options with the defaults. */
SPMD_API void spmd_shard_map_options_init(spmd_shard_map_options *options);

/* shard_map(fn, mesh, in_specs, out_specs)(*inputs). Each input is resharded
 * to NamedSharding(mesh, in_specs[i]) when it is laid out otherwise; `fn`
 * then runs on every device of the mesh at once (one reusable thread per
 * device) and must set each of the n_out outputs with spmd_ctx_set_output.
 * Outputs are assembled by out_specs: a dimension split over axes A is the
 * concatenation of the blocks along A (every device must give the same local
 * shape, as in JAX); a mesh axis the spec leaves out means the blocks along
 * it are equal (checked when options->check_rep). On success the caller owns
 * outputs[0..n_out). Not reentrant from inside a callback; calls on one
 * runtime from several threads run one after another. Errors:
 * SPMD_ERR_INVALID_ARGUMENT (bad argument, a missing or mismatched output,
 * a collective used wrongly), SPMD_ERR_TIMEOUT (a device never reached a
 * collective), or the status a callback returned, with its device named. */
SPMD_API spmd_status spmd_shard_map(const spmd_mesh *mesh, spmd_shard_fn fn,
                                    void *user_data, size_t n_in,
                                    spmd_array *const *inputs,
                                    const spmd_spec *const *in_specs,
                                    size_t n_out,
                                    const spmd_spec *const *out_specs,
                                    const spmd_shard_map_options *options,
                                    spmd_array **outputs);

/* The same with specs given as text (see spmd_spec_parse); in_specs and
 * out_specs are arrays of n_in and n_out strings. */
SPMD_API spmd_status spmd_shard_map_text(const spmd_mesh *mesh,
                                         spmd_shard_fn fn, void *user_data,
                                         size_t n_in, spmd_array *const *inputs,
                                         const char *const *in_specs,
                                         size_t n_out,
                                         const char *const *out_specs,
                                         const spmd_shard_map_options *options,
                                         spmd_array **outputs);

/* ---- Inside a callback. All take the borrowed ctx; none may be called
 * after the callback returns. `axes` names one mesh axis or a tuple of axes,
 * written "x", "x,y" or "(x, y)" (the order of a tuple matters, as in
 * JAX). ---- */

/* The global id of the device this callback runs on. */
SPMD_API spmd_status spmd_ctx_device_id(const spmd_ctx *ctx, int *out);

/* The mesh the shard_map runs over; borrowed, owned by the shard_map. */
SPMD_API spmd_status spmd_ctx_mesh(const spmd_ctx *ctx, const spmd_mesh **out);

/* jax.lax.axis_index(axes): this device's row-major index over the
 * coordinates of `axes`. Errors: SPMD_ERR_INVALID_ARGUMENT naming an axis
 * the mesh lacks. */
SPMD_API spmd_status spmd_ctx_axis_index(const spmd_ctx *ctx,
                                         const char *axes, int64_t *out);

/* jax.lax.axis_size(axes): the product of the sizes of `axes`. */
SPMD_API spmd_status spmd_ctx_axis_size(const spmd_ctx *ctx, const char *axes,
                                        int64_t *out);

SPMD_API spmd_status spmd_ctx_input_count(const spmd_ctx *ctx, size_t *out);

/* The local block of input `index` (read-only data). */
SPMD_API spmd_status spmd_ctx_input(const spmd_ctx *ctx, size_t index,
                                    spmd_block *out);

/* A new zero-filled block on this device, owned by the context (freed when
 * the shard_map returns, or passed on by spmd_ctx_set_output). */
SPMD_API spmd_status spmd_ctx_alloc(spmd_ctx *ctx, spmd_dtype dtype,
                                    size_t ndim, const int64_t *shape,
                                    spmd_block *out);

/* Sets this device's block of output `index`. A block from spmd_ctx_alloc
 * or a collective is taken over without a copy; any other memory is copied
 * (and may be reused at once). Setting an output twice replaces it. */
SPMD_API spmd_status spmd_ctx_set_output(spmd_ctx *ctx, size_t index,
                                         const spmd_block *block);

/* jax.debug.print: hands `text` to the print sink with this device's id. */
SPMD_API spmd_status spmd_ctx_print(spmd_ctx *ctx, const char *text);

/* printf-style spmd_ctx_print. */
SPMD_API spmd_status spmd_ctx_printf(spmd_ctx *ctx, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Records why the callback fails and returns `status`, so a callback can end
 * with `return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "why");`. The message
 * reaches the caller of spmd_shard_map, tagged with the device. */
SPMD_API spmd_status spmd_ctx_error(spmd_ctx *ctx, spmd_status status,
                                    const char *message);

/* ---- Collectives. Every device of each group over `axes` must call the
 * same collective with the same dtype and compatible shapes, in the same
 * order; each call blocks until its group has arrived. The result is a new
 * block owned by the context. A peer that never arrives fails every waiting
 * device with SPMD_ERR_TIMEOUT (after the timeout, or at once when the peer
 * has already returned) or with the peer's own error; mismatched calls fail
 * every participant with SPMD_ERR_INVALID_ARGUMENT. Sums use the dtype's
 * own arithmetic (integers wrap); f16/bf16 accumulate in f32. The input x
 * is usually a block of the context (an input, an spmd_ctx_alloc block, a
 * collective's result, or a view into one); a block over the callback's own
 * host memory is accepted too and copied into the context's memory first,
 * since peers may still read an input after its owner has left the call. ---- */

/* jax.lax.psum. bool sums to int32, as in JAX. */
SPMD_API spmd_status spmd_ctx_psum(spmd_ctx *ctx, const spmd_block *x,
                                   const char *axes, spmd_block *out);

/* jax.lax.pmean: psum / axis_size. Integer and bool inputs give float32
 * (int64 gives float64), as JAX's true division does. */
SPMD_API spmd_status spmd_ctx_pmean(spmd_ctx *ctx, const spmd_block *x,
                                    const char *axes, spmd_block *out);

/* jax.lax.pmax / pmin (bool: any / all). */
SPMD_API spmd_status spmd_ctx_pmax(spmd_ctx *ctx, const spmd_block *x,
                                   const char *axes, spmd_block *out);
SPMD_API spmd_status spmd_ctx_pmin(spmd_ctx *ctx, const spmd_block *x,
                                   const char *axes, spmd_block *out);

/* jax.lax.all_gather(x, axes, axis=axis, tiled=tiled). Not tiled: a new
 * dimension of size axis_size at `axis` (0..ndim). Tiled: the blocks are
 * concatenated along `axis`; they may differ in length along it (uneven
 * shards), never in other dimensions. Negative axes count from the end. */
SPMD_API spmd_status spmd_ctx_all_gather(spmd_ctx *ctx, const spmd_block *x,
                                         const char *axes, int64_t axis,
                                         int tiled, spmd_block *out);

/* jax.lax.psum_scatter(x, axes, scatter_dimension=dim, tiled=tiled). Not
 * tiled: shape[dim] must equal axis_size and the dimension is removed.
 * Tiled: device i gets the i-th chunk of the sum along dim, chunks being
 * ceil(shape[dim] / axis_size) long (the last ones shorter when uneven).
 * bool is refused (as in JAX). */
SPMD_API spmd_status spmd_ctx_psum_scatter(spmd_ctx *ctx, const spmd_block *x,
                                           const char *axes,
                                           int64_t scatter_dimension,
                                           int tiled, spmd_block *out);

/* jax.lax.all_to_all(x, axes, split_axis, concat_axis, tiled=tiled). Tiled:
 * split_axis is cut into axis_size chunks (ceil-sized when uneven), chunk j
 * goes to peer j, and the received chunks are concatenated along
 * concat_axis in peer order. Not tiled: shape[split_axis] must equal
 * axis_size; the result has split_axis removed and a new dimension of size
 * axis_size inserted at concat_axis (jax's shape rule). */
SPMD_API spmd_status spmd_ctx_all_to_all(spmd_ctx *ctx, const spmd_block *x,
                                         const char *axes, int64_t split_axis,
                                         int64_t concat_axis, int tiled,
                                         spmd_block *out);

/* jax.lax.ppermute(x, axes, perm): `pairs` holds npairs (source, dest) axis
 * indices, 2*npairs values; each index at most once as a source and once as
 * a destination. Devices no pair sends to receive zeros. */
SPMD_API spmd_status spmd_ctx_ppermute(spmd_ctx *ctx, const spmd_block *x,
                                       const char *axes, size_t npairs,
                                       const int64_t *pairs, spmd_block *out);

SPMD_EXTERN_C_END

#endif /* SPMD_SHARD_MAP_H */
