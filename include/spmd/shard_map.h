/**
 * @file
 * libspmd: shard_map, a per-device callback run on every device of a mesh at
 * once, seeing only its local blocks, with explicit collectives
 * (jax.experimental.shard_map.shard_map and jax.lax.psum & co).
 */
#ifndef SPMD_SHARD_MAP_H
#define SPMD_SHARD_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/array.h"
#include "spmd/dtype.h"
#include "spmd/export.h"
#include "spmd/mesh.h"
#include "spmd/runtime.h"
#include "spmd/sharding.h"
#include "spmd/spec.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * The per-device view handed to a shard_map callback. Borrowed: valid only
 * inside the callback that received it, and only on that callback's thread.
 */
typedef struct spmd_ctx spmd_ctx;

/**
 * A dense row-major local block on one device.
 *
 * `data` points into device memory the context owns (inputs: read-only;
 * blocks from spmd_ctx_alloc and collectives: writable) and lives until the
 * shard_map returns. A block a function fills needs struct_size at least
 * sizeof(spmd_block) (SPMD_BLOCK_INIT).
 */
typedef struct spmd_block {
  size_t struct_size;           /**< sizeof(spmd_block), set by the caller      */
  void *data;                   /**< the elements, row-major                    */
  spmd_dtype dtype;             /**< the element type                           */
  size_t ndim;                  /**< number of dimensions, at most SPMD_MAX_NDIM */
  int64_t shape[SPMD_MAX_NDIM]; /**< the local shape; entries past ndim are 0   */
  /** Where `data` lies (spmd_memory_kind), written by the library for the
   * blocks it hands out: SPMD_MEMORY_HOST (cpu) and SPMD_MEMORY_HOST_MAPPED
   * (sim; cuda when asked) are memory host code may read and write;
   * SPMD_MEMORY_DEVICE (cuda) is device memory host code must not touch
   * (queue kernels on spmd_ctx_stream). A block passed in is read as the
   * callback's own memory kind whatever this says. (Since 1.3; older
   * callers' shorter blocks lack it.) */
  spmd_memory_kind memory_kind;
} spmd_block;

/** An initialiser of spmd_block: struct_size set, an empty block. */
#define SPMD_BLOCK_INIT \
  { sizeof(spmd_block), NULL, SPMD_DTYPE_INVALID, 0, {0, 0, 0, 0, 0, 0, 0, 0}, SPMD_MEMORY_DEFAULT }

/**
 * Fills *block with an empty block, for bindings that cannot use the macro.
 *
 * Writes exactly `size` bytes, as SPMD_BLOCK_INIT would.
 *
 * @param block The struct to fill; not NULL.
 * @param size sizeof *block as the caller was compiled.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL block or a size
 *         smaller than a size_t or above 1024 bytes (nothing written).
 */
SPMD_API spmd_status spmd_block_init(spmd_block *block, size_t size);

/**
 * The user's per-device function.
 *
 * Runs once per mesh device, concurrently, each on its own thread. Return
 * SPMD_OK, or an error (ideally through spmd_ctx_error, which records a
 * message); the shard_map then fails.
 *
 * @param ctx The device's context, borrowed for the duration of the call.
 * @param user_data The pointer given to spmd_shard_map.
 * @return SPMD_OK, or the status the shard_map fails with; a value that is
 *         not a spmd_status counts as SPMD_ERR_CALLBACK.
 */
typedef spmd_status (*spmd_shard_fn)(spmd_ctx *ctx, void *user_data);

/**
 * Receives the text of spmd_ctx_print, tagged with the device that printed.
 *
 * Called from device threads, one call at a time.
 *
 * @param device The global id of the device that printed.
 * @param text The text, valid only during the call.
 * @param user_data spmd_shard_map_options.print_user_data.
 */
typedef void (*spmd_print_fn)(int device, const char *text, void *user_data);

/**
 * Options of spmd_shard_map. Zero in a field means "default"; fields are
 * only ever appended.
 */
typedef struct spmd_shard_map_options {
  size_t struct_size; /**< sizeof(spmd_shard_map_options) as the caller was compiled */
  /** Like check_rep: 1 verifies that outputs are equal along every mesh axis
   * their out_spec leaves out, failing with the devices and the first index
   * that differs. 0 (default) trusts the callback. */
  int check_rep;
  /** How long a collective waits for its peers before every waiting device
   * fails with SPMD_ERR_TIMEOUT. 0 = $SPMD_COLLECTIVE_TIMEOUT_MS if set,
   * else 60000 ms; SPMD_TIMEOUT_FOREVER (or any time too long for the
   * clock) waits without end. Negative values are refused. */
  int64_t timeout_ms;
  /** Where spmd_ctx_print goes. NULL = stdout, one line per call, the text
   * alone as jax.debug.print writes it. */
  spmd_print_fn print_fn;
  void *print_user_data; /**< passed to print_fn as user_data */
} spmd_shard_map_options;

/** A timeout that never ends (shard_map and collective options). */
#define SPMD_TIMEOUT_FOREVER INT64_MAX

/** An initialiser of spmd_shard_map_options: struct_size set, every option default. */
#define SPMD_SHARD_MAP_OPTIONS_INIT \
  { sizeof(spmd_shard_map_options), 0, 0, NULL, NULL }

/**
 * Fills *options with the defaults, writing exactly `size` bytes.
 *
 * @param options The struct to fill; not NULL.
 * @param size sizeof *options as the caller was compiled.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL options or a size
 *         smaller than a size_t or above 1024 bytes (nothing written).
 */
SPMD_API spmd_status spmd_shard_map_options_init(spmd_shard_map_options *options, size_t size);

/**
 * shard_map(fn, mesh, in_specs, out_specs)(*inputs).
 *
 * Each input is resharded to NamedSharding(mesh, in_specs[i]) when it is
 * laid out otherwise; `fn` then runs on every device of the mesh at once
 * (one reusable thread per device) and must set each of the n_out outputs
 * with spmd_ctx_set_output. Outputs are assembled by out_specs: a dimension
 * split over axes A is the concatenation of the blocks along A (every device
 * must give the same local shape, as in JAX); a mesh axis the spec leaves
 * out means the blocks along it are equal (checked when options->check_rep).
 * Not reentrant from inside a callback; calls on one runtime from several
 * threads run one after another.
 *
 * Given values of a program being recorded (spmd/experimental/program.h),
 * the shard_map records itself as one step of that program: fn runs once
 * now, on zeros of the values' types and layouts, to learn the outputs'
 * types (as jax.jit traces a body once), and again at every run of the
 * program, on that run's values; the outputs are the step's values. fn and
 * user_data must then stay valid while the program can run; the mesh
 * handle need not (the program keeps its own). At least one output is
 * needed, and each run must give outputs of the recorded types.
 *
 * @param mesh The mesh; not NULL.
 * @param fn The per-device function; not NULL.
 * @param user_data Passed to every call of fn; may be NULL.
 * @param n_in Number of inputs.
 * @param inputs n_in arrays of the mesh's runtime; may be NULL when n_in is 0.
 * @param in_specs n_in specs, one per input; may be NULL when n_in is 0.
 * @param n_out Number of outputs.
 * @param out_specs n_out specs, one per output; may be NULL when n_out is 0.
 * @param options The options; NULL takes all defaults.
 * @param outputs Receives n_out new arrays the caller owns; may be NULL
 *        when n_out is 0. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT (bad argument, a missing or
 *         mismatched output, a collective used wrongly); SPMD_ERR_TIMEOUT
 *         (a device never reached a collective); or the status a callback
 *         returned or a collective failed with (even one the callback
 *         ignored), with its device named.
 */
SPMD_API spmd_status spmd_shard_map(const spmd_mesh *mesh, spmd_shard_fn fn,
                                    void *user_data, size_t n_in,
                                    spmd_array *const *inputs,
                                    const spmd_spec *const *in_specs,
                                    size_t n_out,
                                    const spmd_spec *const *out_specs,
                                    const spmd_shard_map_options *options,
                                    spmd_array **outputs);

/**
 * spmd_shard_map with specs given as text (see spmd_spec_parse).
 *
 * @param mesh The mesh; not NULL.
 * @param fn The per-device function; not NULL.
 * @param user_data Passed to every call of fn; may be NULL.
 * @param n_in Number of inputs.
 * @param inputs n_in arrays of the mesh's runtime; may be NULL when n_in is 0.
 * @param in_specs n_in spec strings; may be NULL when n_in is 0.
 * @param n_out Number of outputs.
 * @param out_specs n_out spec strings; may be NULL when n_out is 0.
 * @param options The options; NULL takes all defaults.
 * @param outputs Receives n_out new arrays the caller owns; may be NULL
 *        when n_out is 0. Left untouched on failure.
 * @return SPMD_OK, or the errors of spmd_shard_map;
 *         SPMD_ERR_INVALID_ARGUMENT also for a NULL or malformed spec
 *         string.
 */
SPMD_API spmd_status spmd_shard_map_text(const spmd_mesh *mesh,
                                         spmd_shard_fn fn, void *user_data,
                                         size_t n_in, spmd_array *const *inputs,
                                         const char *const *in_specs,
                                         size_t n_out,
                                         const char *const *out_specs,
                                         const spmd_shard_map_options *options,
                                         spmd_array **outputs);

/* ---- Inside a callback. All take the borrowed ctx; none may be called
 * after the callback returns, nor from another thread, and all return
 * SPMD_ERR_INVALID_ARGUMENT for a ctx that is NULL, finished or used off its
 * callback's thread. `axes` names one mesh axis or a tuple of axes, written
 * as Python spells it: "x", "x,y", "(x, y)", "('x', 'y')" or "(x,)" (the
 * order of a tuple matters, as in JAX), or the empty tuple "()": a group of
 * the device alone (axis_index 0, axis_size 1, and each collective gives
 * what JAX gives over ()). Other text is refused. ---- */

/**
 * The global id of the device this callback runs on.
 *
 * @param ctx The callback's context.
 * @param out Receives the device id; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad ctx or a NULL out.
 */
SPMD_API spmd_status spmd_ctx_device_id(const spmd_ctx *ctx, int *out);

/**
 * The mesh the shard_map runs over.
 *
 * @param ctx The callback's context.
 * @param out Receives the mesh handle passed to spmd_shard_map, borrowed:
 *        not to be destroyed by the callback. Not NULL; left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad ctx or a NULL out.
 */
SPMD_API spmd_status spmd_ctx_mesh(const spmd_ctx *ctx, const spmd_mesh **out);

/**
 * The queue this device's work goes to, for the callback's own kernels: on
 * the cuda platform the device's cudaStream_t. Work the callback queues on
 * it is ordered with the library's own: after the inputs are ready, and
 * before any use of the blocks it writes (collectives, outputs). NULL on
 * platforms whose work is not queued (cpu, sim). (Since 1.3.)
 *
 * @param ctx The callback's context.
 * @param out Receives the stream (a cudaStream_t on cuda) or NULL; not
 *        NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad ctx or a NULL out.
 */
SPMD_API spmd_status spmd_ctx_stream(const spmd_ctx *ctx, void **out);

/**
 * jax.lax.axis_index(axes): this device's row-major index over the
 * coordinates of `axes`.
 *
 * @param ctx The callback's context.
 * @param axes One mesh axis or a tuple of axes; not NULL.
 * @param out Receives the index; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT naming an axis the mesh lacks,
 *         for malformed axes, a bad ctx or a NULL out.
 */
SPMD_API spmd_status spmd_ctx_axis_index(const spmd_ctx *ctx,
                                         const char *axes, int64_t *out);

/**
 * jax.lax.axis_size(axes): the product of the sizes of `axes`.
 *
 * @param ctx The callback's context.
 * @param axes One mesh axis or a tuple of axes; not NULL.
 * @param out Receives the size; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT naming an axis the mesh lacks,
 *         for malformed axes, a bad ctx or a NULL out.
 */
SPMD_API spmd_status spmd_ctx_axis_size(const spmd_ctx *ctx, const char *axes,
                                        int64_t *out);

/**
 * Number of inputs of the shard_map.
 *
 * @param ctx The callback's context.
 * @param out Receives n_in; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad ctx or a NULL out.
 */
SPMD_API spmd_status spmd_ctx_input_count(const spmd_ctx *ctx, size_t *out);

/**
 * The local block of input `index` (read-only data).
 *
 * @param ctx The callback's context.
 * @param index The input, below the input count.
 * @param out Receives the block; not NULL, with struct_size set
 *        (SPMD_BLOCK_INIT). Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an index past the last input;
 *         SPMD_ERR_INVALID_ARGUMENT for a bad ctx, a NULL out or a
 *         struct_size below sizeof(spmd_block).
 */
SPMD_API spmd_status spmd_ctx_input(const spmd_ctx *ctx, size_t index,
                                    spmd_block *out);

/**
 * The block as an array on this device alone (a single-device sharding),
 * so that every op of spmd/ops.h applies to it and runs this device's own
 * kernels, as jnp's ops apply to the blocks of a shard_map body in JAX:
 * spmd_ctx_array, then the ops, then spmd_ctx_block for a block to set as
 * an output or hand to a collective. The array is an ordinary array the
 * caller destroys (inside or after the callback); an input's block is
 * shared with it (inputs are never written), any other block copied, so
 * the callback may change or reuse its block afterwards. Since ABI 1.7.
 *
 * @param ctx The callback's context.
 * @param block The block (an input, a context block, or the callback's own
 *        memory of its memory kind); not NULL, with struct_size set.
 * @param out Receives the array; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad ctx or block (as
 *         spmd_ctx_set_output) or a NULL out; SPMD_ERR_OUT_OF_MEMORY.
 */
SPMD_API spmd_status spmd_ctx_array(spmd_ctx *ctx, const spmd_block *block, spmd_array **out);

/**
 * An array on this device alone (made by spmd_ctx_array, or by ops on such
 * arrays) as a block of the context, ready to read: for spmd_ctx_set_output
 * (taken over without a copy), a collective, or reading on the host. Where
 * callbacks see device memory the block shares the array's memory (writing
 * it changes the array); else, and for an array made from an input's
 * block, it is a copy. Valid until the shard_map returns. Since ABI 1.7.
 *
 * @param ctx The callback's context.
 * @param array The array; not NULL.
 * @param out Receives the block; not NULL, with struct_size set
 *        (SPMD_BLOCK_INIT). Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad ctx, a NULL,
 *         destroyed or donated array, an array not on this callback's device
 *         alone (its sharding and the device in the message), or a NULL out
 *         or a struct_size below sizeof(spmd_block).
 */
SPMD_API spmd_status spmd_ctx_block(spmd_ctx *ctx, const spmd_array *array, spmd_block *out);

/**
 * A new zero-filled block on this device, owned by the context (freed when
 * the shard_map returns, or passed on by spmd_ctx_set_output).
 *
 * @param ctx The callback's context.
 * @param dtype The element type.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param out Receives the block; not NULL, with struct_size set
 *        (SPMD_BLOCK_INIT). Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an invalid dtype, a bad
 *         shape, a bad ctx, a NULL out or a struct_size below
 *         sizeof(spmd_block); SPMD_ERR_OUT_OF_MEMORY when device memory
 *         runs out.
 */
SPMD_API spmd_status spmd_ctx_alloc(spmd_ctx *ctx, spmd_dtype dtype,
                                    size_t ndim, const int64_t *shape,
                                    spmd_block *out);

/**
 * Sets this device's block of output `index`.
 *
 * A block from spmd_ctx_alloc or a collective is taken over without a copy;
 * any other memory is copied (and may be reused at once). Setting an output
 * twice replaces it. Whether the blocks of all devices fit the out_spec is
 * checked when the shard_map assembles its outputs.
 *
 * @param ctx The callback's context.
 * @param index The output, below n_out.
 * @param block The block; not NULL, with struct_size set.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an index past the last output;
 *         SPMD_ERR_INVALID_ARGUMENT for a bad block (struct_size, dtype or
 *         shape, NULL data for a non-empty block) or a bad ctx.
 */
SPMD_API spmd_status spmd_ctx_set_output(spmd_ctx *ctx, size_t index,
                                         const spmd_block *block);

/**
 * jax.debug.print: hands `text` to the print sink with this device's id.
 *
 * @param ctx The callback's context.
 * @param text The text; not NULL.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad ctx or a NULL text.
 */
SPMD_API spmd_status spmd_ctx_print(spmd_ctx *ctx, const char *text);

/**
 * printf-style spmd_ctx_print.
 *
 * @param ctx The callback's context.
 * @param format The printf format; not NULL.
 * @param ... The values the format converts.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a bad ctx or a NULL format.
 */
SPMD_API spmd_status spmd_ctx_printf(spmd_ctx *ctx, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/**
 * Records why the callback fails and returns `status`, so a callback can
 * end with `return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "why");`.
 *
 * The message reaches the caller of spmd_shard_map, tagged with the device.
 * SPMD_OK records nothing.
 *
 * @param ctx The callback's context.
 * @param status The status to fail with.
 * @param message Why; may be NULL (no message).
 * @return `status`; SPMD_ERR_CALLBACK (the value named in the message) for
 *         a value that is not a spmd_status. A bad ctx is reported through
 *         spmd_last_error() and the status still returned.
 */
SPMD_API spmd_status spmd_ctx_error(spmd_ctx *ctx, spmd_status status,
                                    const char *message);

/* ---- Collectives. Every device of each group over `axes` must call the
 * same collective with the same dtype and compatible shapes, in the same
 * order; each call blocks until its group has arrived. The result is a new
 * block owned by the context. A peer that never arrives fails every waiting
 * device with SPMD_ERR_TIMEOUT (after the timeout, or at once when the peer
 * has already returned) or with the peer's own error; mismatched calls fail
 * every participant with SPMD_ERR_INVALID_ARGUMENT. A collective that fails
 * fails the shard_map, even if the callback ignores its status. Sums start
 * from +0 and add the members in group order, as XLA's CPU code does:
 * integers wrap, float16 rounds after every addition, bfloat16 adds in
 * float32 and rounds once, and float32/float64/bfloat16 flush subnormals.
 * The input x is usually a block of the context (an input, an
 * spmd_ctx_alloc block, a collective's result, or a view into one); a block
 * over the callback's own host memory is accepted too and copied into the
 * context's memory first, since peers may still read an input after its
 * owner has left the call. For the same reason a block passed to a
 * collective must not be written again before the shard_map returns. ---- */

/**
 * jax.lax.psum: the sum of x over each group of `axes`.
 *
 * bool sums to int32, as in JAX. Blocks until the group has arrived.
 *
 * @param ctx The callback's context.
 * @param x The input block; not NULL, with struct_size set.
 * @param axes The mesh axis or tuple of axes whose groups take part; not
 *        NULL.
 * @param out Receives the result, a new block owned by the context; not
 *        NULL, with struct_size set. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_TIMEOUT when a peer never arrives, or the
 *         peer's own error; SPMD_ERR_INVALID_ARGUMENT for calls that do not
 *         match across the group, bad axes, a bad x (struct_size, dtype,
 *         shape, NULL data), a bad ctx, or a NULL out or one whose
 *         struct_size is below sizeof(spmd_block).
 */
SPMD_API spmd_status spmd_ctx_psum(spmd_ctx *ctx, const spmd_block *x,
                                   const char *axes, spmd_block *out);

/**
 * jax.lax.pmean: psum times the reciprocal of axis_size.
 *
 * Multiplies by 1/axis_size rounded to the dtype, as XLA's CPU lowering
 * does. Integer and bool inputs sum in their own type, then give float32
 * (int64 gives float64). Blocks until the group has arrived.
 *
 * @param ctx The callback's context.
 * @param x The input block; not NULL, with struct_size set.
 * @param axes The mesh axis or tuple of axes whose groups take part; not
 *        NULL.
 * @param out Receives the result, a new block owned by the context; not
 *        NULL, with struct_size set. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_TIMEOUT when a peer never arrives, or the
 *         peer's own error; SPMD_ERR_INVALID_ARGUMENT for calls that do not
 *         match across the group, bad axes, a bad x (struct_size, dtype,
 *         shape, NULL data), a bad ctx, or a NULL out or one whose
 *         struct_size is below sizeof(spmd_block).
 */
SPMD_API spmd_status spmd_ctx_pmean(spmd_ctx *ctx, const spmd_block *x,
                                    const char *axes, spmd_block *out);

/**
 * jax.lax.pmax: the elementwise maximum over each group (bool: any).
 *
 * Blocks until the group has arrived.
 *
 * @param ctx The callback's context.
 * @param x The input block; not NULL, with struct_size set.
 * @param axes The mesh axis or tuple of axes whose groups take part; not
 *        NULL.
 * @param out Receives the result, a new block owned by the context; not
 *        NULL, with struct_size set. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_TIMEOUT when a peer never arrives, or the
 *         peer's own error; SPMD_ERR_INVALID_ARGUMENT for calls that do not
 *         match across the group, bad axes, a bad x (struct_size, dtype,
 *         shape, NULL data), a bad ctx, or a NULL out or one whose
 *         struct_size is below sizeof(spmd_block).
 */
SPMD_API spmd_status spmd_ctx_pmax(spmd_ctx *ctx, const spmd_block *x,
                                   const char *axes, spmd_block *out);

/**
 * jax.lax.pmin: the elementwise minimum over each group (bool: all).
 *
 * Blocks until the group has arrived.
 *
 * @param ctx The callback's context.
 * @param x The input block; not NULL, with struct_size set.
 * @param axes The mesh axis or tuple of axes whose groups take part; not
 *        NULL.
 * @param out Receives the result, a new block owned by the context; not
 *        NULL, with struct_size set. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_TIMEOUT when a peer never arrives, or the
 *         peer's own error; SPMD_ERR_INVALID_ARGUMENT for calls that do not
 *         match across the group, bad axes, a bad x (struct_size, dtype,
 *         shape, NULL data), a bad ctx, or a NULL out or one whose
 *         struct_size is below sizeof(spmd_block).
 */
SPMD_API spmd_status spmd_ctx_pmin(spmd_ctx *ctx, const spmd_block *x,
                                   const char *axes, spmd_block *out);

/**
 * jax.lax.all_gather(x, axes, axis=axis, tiled=tiled).
 *
 * Not tiled: a new dimension of size axis_size at `axis` (0..ndim). Tiled:
 * the blocks are concatenated along `axis`; they may differ in length along
 * it (uneven shards), never in other dimensions. Over "()", as in JAX, the
 * block comes back as it is, tiled or not. Blocks until the group has
 * arrived.
 *
 * @param ctx The callback's context.
 * @param x The input block; not NULL, with struct_size set.
 * @param axes The mesh axis or tuple of axes whose groups take part; not
 *        NULL.
 * @param axis Where the gathered dimension goes; negative counts from the
 *        end.
 * @param tiled Non-zero to concatenate instead of stacking.
 * @param out Receives the result, a new block owned by the context; not
 *        NULL, with struct_size set. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_TIMEOUT when a peer never arrives, or the
 *         peer's own error; SPMD_ERR_INVALID_ARGUMENT for calls that do not
 *         match across the group, bad axes, a bad x (struct_size, dtype,
 *         shape, NULL data), a bad ctx, or a NULL out or one whose
 *         struct_size is below sizeof(spmd_block), or an axis out of range.
 */
SPMD_API spmd_status spmd_ctx_all_gather(spmd_ctx *ctx, const spmd_block *x,
                                         const char *axes, int64_t axis,
                                         int tiled, spmd_block *out);

/**
 * jax.lax.psum_scatter(x, axes, scatter_dimension=dim, tiled=tiled).
 *
 * Not tiled: shape[dim] must equal axis_size and the dimension is removed.
 * Tiled: device i gets the i-th chunk of the sum along dim, chunks being
 * ceil(shape[dim] / axis_size) long (the last ones shorter when uneven).
 * bool is refused (as in JAX). Blocks until the group has arrived.
 *
 * @param ctx The callback's context.
 * @param x The input block; not NULL, with struct_size set.
 * @param axes The mesh axis or tuple of axes whose groups take part; not
 *        NULL.
 * @param scatter_dimension The dimension summed and scattered; negative
 *        counts from the end.
 * @param tiled Non-zero to keep the dimension, cut into chunks.
 * @param out Receives the result, a new block owned by the context; not
 *        NULL, with struct_size set. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_TIMEOUT when a peer never arrives, or the
 *         peer's own error; SPMD_ERR_INVALID_ARGUMENT for calls that do not
 *         match across the group, bad axes, a bad x (struct_size, dtype,
 *         shape, NULL data), a bad ctx, or a NULL out or one whose
 *         struct_size is below sizeof(spmd_block), a bool x, a dimension
 *         out of range, or (not tiled) a size other than axis_size.
 */
SPMD_API spmd_status spmd_ctx_psum_scatter(spmd_ctx *ctx, const spmd_block *x,
                                           const char *axes,
                                           int64_t scatter_dimension,
                                           int tiled, spmd_block *out);

/**
 * jax.lax.all_to_all(x, axes, split_axis, concat_axis, tiled=tiled).
 *
 * Tiled: split_axis is cut into axis_size chunks (ceil-sized when uneven),
 * chunk j goes to peer j, and the received chunks are concatenated along
 * concat_axis in peer order. Not tiled: shape[split_axis] must equal
 * axis_size; the result has split_axis removed and a new dimension of size
 * axis_size inserted at concat_axis (jax's shape rule). Blocks until the
 * group has arrived.
 *
 * @param ctx The callback's context.
 * @param x The input block; not NULL, with struct_size set.
 * @param axes The mesh axis or tuple of axes whose groups take part; not
 *        NULL.
 * @param split_axis The dimension cut into chunks; negative counts from the
 *        end.
 * @param concat_axis The dimension the received chunks are joined along;
 *        negative counts from the end.
 * @param tiled Non-zero for the tiled form.
 * @param out Receives the result, a new block owned by the context; not
 *        NULL, with struct_size set. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_TIMEOUT when a peer never arrives, or the
 *         peer's own error; SPMD_ERR_INVALID_ARGUMENT for calls that do not
 *         match across the group, bad axes, a bad x (struct_size, dtype,
 *         shape, NULL data), a bad ctx, or a NULL out or one whose
 *         struct_size is below sizeof(spmd_block), an axis out of range,
 *         or (not tiled) a split_axis size other than axis_size.
 */
SPMD_API spmd_status spmd_ctx_all_to_all(spmd_ctx *ctx, const spmd_block *x,
                                         const char *axes, int64_t split_axis,
                                         int64_t concat_axis, int tiled,
                                         spmd_block *out);

/**
 * jax.lax.ppermute(x, axes, perm): sends each device's block to another
 * device of its group.
 *
 * Each index appears at most once as a source and once as a destination.
 * Devices no pair sends to receive zeros. Blocks until the group has
 * arrived.
 *
 * @param ctx The callback's context.
 * @param x The input block; not NULL, with struct_size set.
 * @param axes The mesh axis or tuple of axes whose groups take part; not
 *        NULL.
 * @param npairs Number of (source, dest) pairs.
 * @param pairs npairs (source, dest) axis indices, 2*npairs values; may be
 *        NULL when npairs is 0.
 * @param out Receives the result, a new block owned by the context; not
 *        NULL, with struct_size set. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_TIMEOUT when a peer never arrives, or the
 *         peer's own error; SPMD_ERR_INVALID_ARGUMENT for calls that do not
 *         match across the group, bad axes, a bad x (struct_size, dtype,
 *         shape, NULL data), a bad ctx, or a NULL out or one whose
 *         struct_size is below sizeof(spmd_block), or pairs naming an
 *         index outside the group or a source or destination twice.
 */
SPMD_API spmd_status spmd_ctx_ppermute(spmd_ctx *ctx, const spmd_block *x,
                                       const char *axes, size_t npairs,
                                       const int64_t *pairs, spmd_block *out);

SPMD_EXTERN_C_END

#endif /* SPMD_SHARD_MAP_H */
