/**
 * @file
 * libspmd: global ops on sharded arrays, as jax.numpy under jax.jit.
 *
 * Each op takes arrays laid out on one mesh and returns a new array whose
 * sharding follows from its operands' (GSPMD's propagation rules, listed in
 * docs/compute.md) or is the one options->out_sharding asks for
 * (jax.lax.with_sharding_constraint). Operands are resharded as the rule
 * needs, and partial results of reductions and contractions over split
 * dimensions are combined across the mesh (psum, or psum_scatter where the
 * requested sharding splits the result along those axes). Ops return once
 * their work is queued; errors of that work surface at
 * spmd_array_block_until_ready or a copy to the host.
 *
 * Dtypes follow JAX's promotion (jnp.promote_types): f16 and bf16 compute
 * in f32 and round once per op; transcendental functions and true division
 * of integers give f32 (f64 for i64). Values agree with JAX's within the
 * bounds in docs/compute.md. The caller owns every array an op returns.
 */
#ifndef SPMD_OPS_H
#define SPMD_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/array.h"
#include "spmd/dtype.h"
#include "spmd/export.h"
#include "spmd/sharding.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/** Elementwise functions of one array. */
typedef enum spmd_unary_op {
  SPMD_UNARY_NEG = 1,        /**< -x                                        */
  SPMD_UNARY_ABS = 2,        /**< |x|                                       */
  SPMD_UNARY_EXP = 3,        /**< e^x                                       */
  SPMD_UNARY_LOG = 4,        /**< natural logarithm                         */
  SPMD_UNARY_SIN = 5,        /**< sine                                      */
  SPMD_UNARY_COS = 6,        /**< cosine                                    */
  SPMD_UNARY_TANH = 7,       /**< hyperbolic tangent                        */
  SPMD_UNARY_SQRT = 8,       /**< square root                               */
  SPMD_UNARY_RSQRT = 9,      /**< 1 / sqrt(x)                               */
  SPMD_UNARY_RELU = 10,      /**< jax.nn.relu: max(x, 0)                    */
  SPMD_UNARY_LOGISTIC = 11,  /**< jax.nn.sigmoid: 1 / (1 + e^-x)            */
  SPMD_UNARY_GELU_TANH = 12, /**< jax.nn.gelu(approximate=True)             */
  SPMD_UNARY_GELU_EXACT = 13 /**< jax.nn.gelu(approximate=False)            */
} spmd_unary_op;

/** jax.nn.sigmoid is lax.logistic. */
#define SPMD_UNARY_SIGMOID SPMD_UNARY_LOGISTIC

/** Elementwise functions of two arrays (or an array and a scalar). */
typedef enum spmd_binary_op {
  SPMD_BINARY_ADD = 1, /**< x + y (bool: or)                              */
  SPMD_BINARY_SUB = 2, /**< x - y (not for bool)                          */
  SPMD_BINARY_MUL = 3, /**< x * y (bool: and)                             */
  SPMD_BINARY_DIV = 4, /**< true division: integers give floats           */
  SPMD_BINARY_MAX = 5, /**< jnp.maximum (NaN wins)                        */
  SPMD_BINARY_MIN = 6, /**< jnp.minimum (NaN wins)                        */
  SPMD_BINARY_POW = 7, /**< x ** y                                        */
  SPMD_BINARY_EQ = 8,  /**< x == y, a bool array                          */
  SPMD_BINARY_NE = 9,  /**< x != y                                        */
  SPMD_BINARY_LT = 10, /**< x < y                                         */
  SPMD_BINARY_LE = 11, /**< x <= y                                        */
  SPMD_BINARY_GT = 12, /**< x > y                                         */
  SPMD_BINARY_GE = 13  /**< x >= y                                        */
} spmd_binary_op;

/** Reductions over axes. */
typedef enum spmd_reduce_op {
  SPMD_REDUCE_SUM = 1,  /**< jnp.sum (bool, i8, i16 in i32; u8, u16 in u32) */
  SPMD_REDUCE_MEAN = 2, /**< jnp.mean (integers give floats)              */
  SPMD_REDUCE_MAX = 3,  /**< jnp.max (NaN wins)                           */
  SPMD_REDUCE_MIN = 4   /**< jnp.min (NaN wins)                           */
} spmd_reduce_op;

/**
 * What a caller may ask of any op. Zero means "default"; fields are only
 * ever appended.
 */
typedef struct spmd_op_options {
  size_t struct_size; /**< sizeof(spmd_op_options) as the caller was compiled */
  /** The result's sharding (with_sharding_constraint / out_shardings), on
   * the operands' mesh or another mesh over the same devices in the same
   * row-major order (as jax.jit requires); NULL: the propagated one. */
  const spmd_sharding *out_sharding;
  /** Bit i set: operand i is donated (donate_argnums). The op consumes it:
   * the result may reuse its buffers, and every later use of its handle
   * but spmd_array_destroy fails with SPMD_ERR_INVALID_ARGUMENT. A call
   * refused before the op runs (bad arguments) leaves it usable; once the
   * op has run it is consumed, even if the result's handle then cannot be
   * made (SPMD_ERR_OUT_OF_MEMORY). Other threads may use the array
   * meanwhile: calls that started before the op finish with its old
   * values (the result then gets memory of its own), later ones fail. */
  unsigned donate;
} spmd_op_options;

/** An initialiser of spmd_op_options: struct_size set, every field default. */
#define SPMD_OP_OPTIONS_INIT { sizeof(spmd_op_options), NULL, 0 }

/**
 * Fills *options with the defaults, writing exactly `size` bytes.
 *
 * @param options The struct to fill; not NULL.
 * @param size sizeof *options as the caller was compiled.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL options or a size
 *         smaller than a size_t or above 1024 bytes (nothing written).
 */
SPMD_API spmd_status spmd_op_options_init(spmd_op_options *options, size_t size);

/**
 * An elementwise function of x; the result keeps x's sharding.
 *
 * @param op The function.
 * @param x The operand; not NULL.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an unknown op, an op JAX
 *         refuses for x's dtype (neg of bool, rsqrt and logistic of
 *         anything but a float; abs of bool is bool and relu of bool
 *         int32, as in JAX), bad options (an output
 *         sharding on another mesh or of too many dimensions), or a NULL,
 *         destroyed or donated x or a NULL out.
 */
SPMD_API spmd_status spmd_unary(spmd_unary_op op, const spmd_array *x,
                                const spmd_op_options *options, spmd_array **out);

/**
 * jnp.astype: x converted to `dtype`, keeping its sharding.
 *
 * @param x The operand; not NULL.
 * @param dtype The result's type.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an unknown dtype, bad
 *         options, or a NULL, destroyed or donated x or a NULL out.
 */
SPMD_API spmd_status spmd_astype(const spmd_array *x, spmd_dtype dtype,
                                 const spmd_op_options *options, spmd_array **out);

/**
 * x op y with NumPy broadcasting, in JAX's promoted dtype (comparisons give
 * bool). Both operands must live on one mesh.
 *
 * @param op The function.
 * @param x The first operand (operand 0 for options->donate); not NULL.
 * @param y The second operand (operand 1); not NULL.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for shapes that do not
 *         broadcast (both shapes in the message), operands on different
 *         meshes, an op JAX refuses for the dtypes (sub of bools), an unknown
 *         op, bad options, or a NULL, destroyed or donated operand or a NULL
 *         out.
 */
SPMD_API spmd_status spmd_binary(spmd_binary_op op, const spmd_array *x, const spmd_array *y,
                                 const spmd_op_options *options, spmd_array **out);

/**
 * x op s for a Python-style scalar s (a weak type: a float array keeps its
 * dtype, an integer array keeps it for an integral s, which is converted to
 * it wrapping as JAX converts it: int8 + 300 adds 44).
 *
 * @param op The function.
 * @param x The array operand (operand 0); not NULL.
 * @param s The scalar.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an integral s outside
 *         int32 beside an integer or bool x (int64 beside int64; JAX's
 *         OverflowError), or as spmd_binary.
 */
SPMD_API spmd_status spmd_binary_scalar(spmd_binary_op op, const spmd_array *x, double s,
                                        const spmd_op_options *options, spmd_array **out);

/**
 * s op x for a Python-style scalar s (as spmd_binary_scalar, the scalar on
 * the left: 1 - x, 2 / x).
 *
 * @param op The function.
 * @param s The scalar.
 * @param x The array operand (operand 0); not NULL.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return As spmd_binary_scalar.
 */
SPMD_API spmd_status spmd_scalar_binary(spmd_binary_op op, double s, const spmd_array *x,
                                        const spmd_op_options *options, spmd_array **out);

/**
 * jnp.where(cond, x, y) with broadcasting: x where cond is nonzero, else y.
 *
 * @param cond The condition (operand 0); not NULL.
 * @param x Values where cond holds (operand 1); not NULL.
 * @param y Values elsewhere (operand 2); not NULL.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT as spmd_binary.
 */
SPMD_API spmd_status spmd_where(const spmd_array *cond, const spmd_array *x, const spmd_array *y,
                                const spmd_op_options *options, spmd_array **out);

/**
 * A reduction over `axes` (jnp.sum(x, axis=axes, keepdims=keepdims)).
 * Unreduced dimensions keep their sharding; a reduced dimension split over
 * mesh axes ends in a psum over them (a psum_scatter when
 * options->out_sharding splits a result dimension by those axes).
 *
 * @param op The reduction.
 * @param x The operand; not NULL.
 * @param naxes Number of axes; 0 with axes NULL reduces every dimension.
 * @param axes The dimensions, negative counting from the end, each once.
 * @param keepdims Nonzero keeps reduced dimensions with size 1.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an axis out of range or
 *         repeated, a max or min over an empty dimension, an unknown op,
 *         bad options, or a NULL, destroyed or donated x or a NULL out.
 */
SPMD_API spmd_status spmd_reduce(spmd_reduce_op op, const spmd_array *x, size_t naxes,
                                 const int64_t *axes, int keepdims,
                                 const spmd_op_options *options, spmd_array **out);

/**
 * jnp.argmax(x, axis): int32 indices of the first largest value (a NaN is
 * the largest).
 *
 * @param x The operand; not NULL.
 * @param axis The dimension, negative counting from the end.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an axis out of range or
 *         of size 0, bad options, or a NULL, destroyed or donated x or a
 *         NULL out.
 */
SPMD_API spmd_status spmd_argmax(const spmd_array *x, int64_t axis, const spmd_op_options *options,
                                 spmd_array **out);

/**
 * jnp.argmin(x, axis): int32 indices of the first smallest value (a NaN is
 * the smallest). Since ABI 1.6.
 *
 * @param x The operand; not NULL.
 * @param axis The dimension, negative counting from the end.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an axis out of range or
 *         of size 0, bad options, or a NULL, destroyed or donated x or a
 *         NULL out.
 */
SPMD_API spmd_status spmd_argmin(const spmd_array *x, int64_t axis, const spmd_op_options *options,
                                 spmd_array **out);

/**
 * jnp.cumsum(x, axis): the running sum along `axis`, of x's dtype (bool
 * sums as int32; integers wrap). Floats are summed in the order XLA sums
 * them on CPU (lines of up to 16 in order, longer ones in blocks of 16),
 * so results are JAX's bit for bit there. The result keeps x's sharding;
 * a split axis is gathered first. Not on the cuda platform yet
 * (SPMD_ERR_UNSUPPORTED). Since ABI 1.6.
 *
 * @param x The operand; not NULL.
 * @param axis The dimension, negative counting from the end.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an axis out of range, bad
 *         options, or a NULL, destroyed or donated x or a NULL out;
 *         SPMD_ERR_UNSUPPORTED on the cuda platform.
 */
SPMD_API spmd_status spmd_cumsum(const spmd_array *x, int64_t axis, const spmd_op_options *options,
                                 spmd_array **out);

/**
 * jnp.take(a, indices, axis=axis): the elements of `a` at `indices` along
 * `axis`, the result of shape a.shape[:axis] + indices.shape +
 * a.shape[axis+1:] and a's dtype. An index below 0 counts from the end;
 * one still out of range gives JAX's fill value (mode "fill": NaN for
 * floats, the lowest value of a signed integer type, the largest of an
 * unsigned one, true for bool). a's other dimensions keep their split and the index
 * dimensions keep the indices' (less the axes a's dimensions use); a's
 * split of `axis` is gathered first. Since ABI 1.6.
 *
 * @param a The operand; not NULL.
 * @param indices Indices of an integer type on a's mesh; not NULL.
 * @param axis The dimension of `a` to index, negative counting from the end.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an axis out of range,
 *         indices of another dtype or on another mesh, bad options, or a
 *         NULL, destroyed or donated operand or a NULL out.
 */
SPMD_API spmd_status spmd_take(const spmd_array *a, const spmd_array *indices, int64_t axis,
                               const spmd_op_options *options, spmd_array **out);

/**
 * x.at[(slice(None),) * axis + (indices,)].add(updates): x with each
 * update added at its index along `axis`, of x's shape and dtype. An
 * index below 0 counts from the end; one still out of range is dropped
 * (JAX's FILL_OR_DROP); repeated indices accumulate. x and updates are
 * added in their promoted type (JAX's promotion) and the sum converted to
 * x's dtype, as JAX does; integers wrap. Each element adds its updates in
 * the order they come in `updates`, as XLA's CPU scatter does, so float
 * sums are JAX's bit for bit where jax.jit keeps the updates' index
 * dimensions whole (where it splits them it sums partial results, in
 * another order). The result is laid out as jax.jit places it: x's
 * split of each dimension, refined by the updates' (or cut to the two
 * splits' common prefix where they part ways); x's split of `axis` is
 * kept. Since ABI 1.7.
 *
 * @param x The operand; not NULL.
 * @param indices Indices of an integer type on x's mesh; not NULL.
 * @param updates Of shape x.shape[:axis] + indices.shape +
 *        x.shape[axis+1:] (broadcast it first otherwise), any dtype but
 *        bool when x is bool, on x's mesh; not NULL.
 * @param axis The dimension of `x` to index, negative counting from the end.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an axis out of range,
 *         indices of another dtype or on another mesh, updates of another
 *         shape, on another mesh or bool with a bool x, bad options, or a
 *         NULL, destroyed or donated operand or a NULL out.
 */
SPMD_API spmd_status spmd_scatter_add(const spmd_array *x, const spmd_array *indices,
                                      const spmd_array *updates, int64_t axis,
                                      const spmd_op_options *options, spmd_array **out);

/**
 * jax.nn.one_hot(x, num_classes, dtype=dtype, axis=axis): 1 where x equals
 * c and 0 elsewhere, along a new dimension `axis` of the classes
 * c = 0 .. num_classes-1 (an index out of range, or a float that is not a
 * whole number, gives a row of zeros). The result keeps x's split; the new
 * dimension is whole on every device. Since ABI 1.6.
 *
 * @param x The indices, of any dtype but bool; not NULL.
 * @param num_classes The length of the new dimension, 0 or more.
 * @param axis Where the new dimension goes in the result, negative counting
 *        from the end (-1: last, as JAX's default).
 * @param dtype The result's dtype (JAX's default is SPMD_F32).
 * @param options NULL for the defaults; options->donate must be 0.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a negative num_classes,
 *         an axis out of range, an invalid dtype, a bool x (JAX raises
 *         TypeError), a donation, bad options, or a NULL, destroyed or
 *         donated x or a NULL out.
 */
SPMD_API spmd_status spmd_one_hot(const spmd_array *x, int64_t num_classes, int64_t axis,
                                  spmd_dtype dtype, const spmd_op_options *options,
                                  spmd_array **out);

/**
 * jax.nn.softmax(x, axis) (log_softmax when `log` is nonzero): a float
 * result; integers subtract their max in their own type first, as JAX's;
 * over an axis of size 0 the result is as empty as x.
 *
 * @param x The operand; not NULL.
 * @param axis The dimension, negative counting from the end.
 * @param log Nonzero for log_softmax.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an axis out of range, a
 *         bool x (JAX raises TypeError), bad options, or a NULL, destroyed
 *         or donated x or a NULL out.
 */
SPMD_API spmd_status spmd_softmax(const spmd_array *x, int64_t axis, int log,
                                  const spmd_op_options *options, spmd_array **out);

/**
 * lax.dot_general's dimension numbers. Zero-initialise, set struct_size,
 * and point at the caller's arrays (read during the call only).
 */
typedef struct spmd_dot_dims {
  size_t struct_size;           /**< sizeof(spmd_dot_dims) as the caller was compiled */
  size_t nbatch;                /**< batch dimension pairs                */
  const int64_t *lhs_batch;     /**< nbatch lhs dimensions                */
  const int64_t *rhs_batch;     /**< nbatch rhs dimensions                */
  size_t ncontract;             /**< contracting dimension pairs          */
  const int64_t *lhs_contract;  /**< ncontract lhs dimensions             */
  const int64_t *rhs_contract;  /**< ncontract rhs dimensions             */
} spmd_dot_dims;

/** An initialiser of spmd_dot_dims: struct_size set, no dimensions. */
#define SPMD_DOT_DIMS_INIT { sizeof(spmd_dot_dims), 0, NULL, NULL, 0, NULL, NULL }

/**
 * Fills *dims with no dimensions, writing exactly `size` bytes.
 *
 * @param dims The struct to fill; not NULL.
 * @param size sizeof *dims as the caller was compiled.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL dims or a size
 *         smaller than a size_t or above 1024 bytes (nothing written).
 */
SPMD_API spmd_status spmd_dot_dims_init(spmd_dot_dims *dims, size_t size);

/**
 * lax.dot_general: the result's dimensions are the batch ones, then lhs's
 * free ones, then rhs's. Contracting dimensions split alike on both sides
 * multiply locally and are summed across their mesh axes.
 *
 * @param lhs The left operand; not NULL.
 * @param rhs The right operand; not NULL.
 * @param dims The dimension numbers; not NULL.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for dimensions out of range,
 *         named twice or of different sizes (both shapes in the message),
 *         operands on different meshes, bad options, or a NULL, destroyed
 *         or donated operand or a NULL dims or out.
 */
SPMD_API spmd_status spmd_dot_general(const spmd_array *lhs, const spmd_array *rhs,
                                      const spmd_dot_dims *dims, const spmd_op_options *options,
                                      spmd_array **out);

/**
 * jnp.matmul for operands of one or two dimensions, or of equal batch
 * dimensions, or a batched a with a two-dimensional b.
 *
 * @param a The left operand; not NULL.
 * @param b The right operand; not NULL.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for inner dimensions that
 *         differ (both shapes in the message), or as spmd_dot_general.
 */
SPMD_API spmd_status spmd_matmul(const spmd_array *a, const spmd_array *b,
                                 const spmd_op_options *options, spmd_array **out);

/**
 * jnp.einsum of two operands with an explicit output ("bhqd,bhkd->bhqk"):
 * letters in both operands and the output are batch dimensions, in both
 * but not the output are contracted, in one operand only are kept (or
 * summed first when the output lacks them).
 *
 * @param subscripts The equation; not NULL.
 * @param a The first operand; not NULL.
 * @param b The second operand; not NULL.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an equation that is not
 *         of that form or does not fit the operands, or as
 *         spmd_dot_general.
 */
SPMD_API spmd_status spmd_einsum(const char *subscripts, const spmd_array *a, const spmd_array *b,
                                 const spmd_op_options *options, spmd_array **out);

/**
 * jnp.einsum of one to four operands with an explicit output
 * ("ij,jk,kl->il"). Three or four operands are contracted a pair at a time
 * in the order jnp.einsum chooses (opt_einsum's optimal path: the fewest
 * flops), each pair as spmd_einsum computes it, so sums round as JAX's do;
 * every operand is first converted to the operands' promoted dtype. Two
 * operands: spmd_einsum; one: the letters the output lacks are summed and
 * the rest transposed ("ij->ji", "ij->i"). Since ABI 1.7.
 *
 * @param subscripts The equation, one comma-separated term per operand; not
 *        NULL.
 * @param n The number of operands, 1 to 4.
 * @param xs The operands, all on one mesh; not NULL.
 * @param options NULL for the defaults. Donation is not offered
 *        (options->donate must be 0).
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for n of 0 or past 4 (the
 *         message says to contract in steps), an equation whose terms do
 *         not fit the operands or whose letters disagree in size, a
 *         donation, or as spmd_einsum.
 */
SPMD_API spmd_status spmd_einsum_n(const char *subscripts, size_t n, const spmd_array *const *xs,
                                   const spmd_op_options *options, spmd_array **out);

/**
 * jnp.transpose(x, perm); the sharding moves with the dimensions.
 *
 * @param x The operand; not NULL.
 * @param naxes 0 (reverse the dimensions) or x's number of dimensions.
 * @param perm The permutation; may be NULL when naxes is 0.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a perm that is not a
 *         permutation of x's dimensions, bad options, or a NULL, destroyed
 *         or donated x or a NULL out.
 */
SPMD_API spmd_status spmd_transpose(const spmd_array *x, size_t naxes, const int64_t *perm,
                                    const spmd_op_options *options, spmd_array **out);

/**
 * jnp.reshape(x, shape) (one -1 is inferred). The sharding of the first
 * dimension of each merged or split group carries over when its shard
 * count divides both sizes; other dimensions of the group are gathered.
 * Where each device's block holds the same elements on both sides, the
 * result shares x's memory instead of copying it (each keeps its values
 * all the same: nothing writes memory two arrays share in place).
 *
 * @param x The operand; not NULL.
 * @param ndim Number of dimensions of the result, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes; may be NULL when ndim is 0.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a shape of another number
 *         of elements (both shapes in the message), two -1s, bad options,
 *         or a NULL, destroyed or donated x or a NULL out.
 */
SPMD_API spmd_status spmd_reshape(const spmd_array *x, size_t ndim, const int64_t *shape,
                                  const spmd_op_options *options, spmd_array **out);

/**
 * jnp.broadcast_to(x, shape): new leading dimensions and dimensions
 * broadcast from size 1 are replicated; the others keep x's sharding.
 *
 * @param x The operand; not NULL.
 * @param ndim Number of dimensions of the result, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes; may be NULL when ndim is 0.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a shape x does not
 *         broadcast to, bad options, or a NULL, destroyed or donated x or a
 *         NULL out.
 */
SPMD_API spmd_status spmd_broadcast_to(const spmd_array *x, size_t ndim, const int64_t *shape,
                                       const spmd_op_options *options, spmd_array **out);

/**
 * x[start:stop] with unit steps (lax.slice); the result keeps x's spec.
 *
 * @param x The operand; not NULL.
 * @param ndim x's number of dimensions.
 * @param start ndim first indices, 0 <= start <= size.
 * @param stop ndim ends, start <= stop <= size.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an ndim other than x's,
 *         NULL start or stop, indices out of range (the dimension and its
 *         size in the message), bad options, or a NULL, destroyed or donated
 *         x or a NULL out.
 */
SPMD_API spmd_status spmd_slice(const spmd_array *x, size_t ndim, const int64_t *start,
                                const int64_t *stop, const spmd_op_options *options,
                                spmd_array **out);

/**
 * lax.slice(x, start, stop, strides): along each dimension d the elements
 * start[d], start[d] + strides[d], ... below stop[d] (x[a:b:s] in NumPy's
 * words); the result has ceil((stop - start) / stride) elements there and
 * keeps x's spec where its dimensions divide, as spmd_slice. Since ABI 1.7.
 *
 * @param x The operand; not NULL.
 * @param ndim x's number of dimensions.
 * @param start ndim first indices, 0 <= start <= size.
 * @param stop ndim ends, start <= stop <= size.
 * @param strides ndim steps, each at least 1.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an ndim other than x's,
 *         NULL start, stop or strides, indices out of range (the dimension
 *         and its size in the message), a step below 1, bad options, or a
 *         NULL, destroyed or donated x or a NULL out.
 */
SPMD_API spmd_status spmd_slice_strided(const spmd_array *x, size_t ndim, const int64_t *start,
                                        const int64_t *stop, const int64_t *strides,
                                        const spmd_op_options *options, spmd_array **out);

/**
 * lax.dynamic_slice(x, start, sizes): the window of `sizes` elements that
 * begins at `start`. As in JAX, a negative start counts from the end, and a
 * window that would pass an edge is moved back inside x (the start clamped
 * to 0 .. size - sizes) rather than refused. The start is read when the
 * call runs, so the result is placed as jax.jit places a dynamic_slice of
 * constant starts, as spmd_slice does: x's spec, less the axes that do not
 * divide the window (a start that jax.jit traces gives the window's cut
 * dimensions whole instead). Since ABI 1.7.
 *
 * @param x The operand; not NULL.
 * @param ndim x's number of dimensions.
 * @param start ndim first indices, any value (see above).
 * @param sizes ndim window sizes, 0 <= sizes <= size.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for an ndim other than x's,
 *         NULL start or sizes, a size that does not fit its dimension (the
 *         dimension and its size in the message), bad options, or a NULL,
 *         destroyed or donated x or a NULL out.
 */
SPMD_API spmd_status spmd_dynamic_slice(const spmd_array *x, size_t ndim, const int64_t *start,
                                        const int64_t *sizes, const spmd_op_options *options,
                                        spmd_array **out);

/**
 * jnp.concatenate(xs, axis) in the operands' promoted dtype; the result
 * keeps the first operand's spec. Donation is not offered
 * (options->donate must be 0).
 *
 * @param n Number of arrays, at least 1.
 * @param xs The arrays, all on one mesh, of one rank and equal sizes
 *        outside `axis`; not NULL.
 * @param axis The dimension to join along, negative counting from the end.
 * @param options NULL for the defaults.
 * @param out Receives the result; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for n = 0, shapes that
 *         differ outside the axis (both shapes in the message), an axis out
 *         of range, arrays on different meshes, a donation, bad options, or
 *         a NULL, destroyed or donated array or a NULL xs or out.
 */
SPMD_API spmd_status spmd_concatenate(size_t n, const spmd_array *const *xs, int64_t axis,
                                      const spmd_op_options *options, spmd_array **out);

SPMD_EXTERN_C_END

#endif /* SPMD_OPS_H */
