/**
 * @file
 * libspmd: keys as arrays, so that programs draw random numbers (JAX's key
 * data under jax.jit).
 *
 * Experimental (spmd/experimental/experimental.h): define SPMD_EXPERIMENTAL
 * before including, and expect the functions to change in any release.
 *
 * The draws of spmd/random.h take a key as a host value (spmd_key), read
 * when called: recorded into a program (spmd/experimental/program.h), such
 * a draw would give the same numbers at every run. Here a key is an array,
 * jax.random.key_data's uint32[2]: a program takes it as an input, and each
 * run draws from the key it is given, as a function under jax.jit draws
 * from the key it is passed. Outside programs the draws below are those of
 * spmd/random.h, bit for bit: the same key gives the same array; and
 * spmd_x_random_fold_in_from and spmd_x_random_split_from derive key data
 * from key data, as spmd_random_fold_in and spmd_random_split derive keys,
 * so a program can derive a step's keys from the one it is given.
 *
 * @code
 *   spmd_key k;
 *   spmd_array *key, *x, *noise;
 *   spmd_x_program_input(p, replicated, SPMD_U32, 1, (int64_t[]){2}, &key);
 *   spmd_x_random_normal_from(sharding, key, SPMD_F32, 2, shape, &noise);
 *   ...                                  // record the rest, compile
 *   spmd_random_fold_in(&base, step, &k);  // a new key each step
 *   spmd_x_random_key_data(replicated, &k, &inputs[0]);
 *   spmd_x_program_run(p, n, inputs, m, outputs);
 * @endcode
 */
#ifndef SPMD_EXPERIMENTAL_RANDOM_H
#define SPMD_EXPERIMENTAL_RANDOM_H

#include "spmd/experimental/experimental.h"
#include "spmd/random.h"

SPMD_EXTERN_C_BEGIN

/**
 * jax.random.key_data(key): the key's two words as a uint32[2] array laid
 * out by `sharding` (a replicated one, normally).
 *
 * @param sharding The layout of the key data; not NULL, its spec at most
 *        one dimension long.
 * @param key The key; not NULL.
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding, a NULL key or out, or a spec of more than one
 *         dimension.
 */
SPMD_API spmd_status spmd_x_random_key_data(const spmd_sharding *sharding,
                                            const spmd_key *key, spmd_array **out);

/**
 * spmd_random_bits with the key read from `key`, a uint32[2] array of key
 * data (spmd_x_random_key_data; any layout). Given a value of a program
 * being recorded, records the draw there: each run reads the key it is
 * given. The caller owns *out.
 *
 * @param sharding The result's layout; not NULL.
 * @param key The key data; not NULL, uint32 of shape (2), on sharding's
 *        runtime, in any layout, or a value of a program being recorded.
 * @param dtype The element type, as spmd_random_bits takes it.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param out Receives the new array (or the program's new value); not
 *        NULL. Left untouched on failure.
 * @return SPMD_OK, or the errors of spmd_random_bits, and
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or released key, one of
 *         another dtype or shape, or one on another runtime than sharding.
 */
SPMD_API spmd_status spmd_x_random_bits_from(const spmd_sharding *sharding,
                                             const spmd_array *key, spmd_dtype dtype,
                                             size_t ndim, const int64_t *shape,
                                             spmd_array **out);

/**
 * spmd_random_uniform with the key read from `key`, as
 * spmd_x_random_bits_from does.
 *
 * @param sharding The result's layout; not NULL.
 * @param key The key data; not NULL, uint32 of shape (2), on sharding's
 *        runtime, in any layout, or a value of a program being recorded.
 * @param dtype The element type: a float.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param minval The lower bound, included.
 * @param maxval The upper bound, excluded.
 * @param out Receives the new array (or the program's new value); not
 *        NULL. Left untouched on failure.
 * @return SPMD_OK, or the errors of spmd_random_uniform and of
 *         spmd_x_random_bits_from's key.
 */
SPMD_API spmd_status spmd_x_random_uniform_from(const spmd_sharding *sharding,
                                                const spmd_array *key, spmd_dtype dtype,
                                                size_t ndim, const int64_t *shape,
                                                double minval, double maxval,
                                                spmd_array **out);

/**
 * spmd_random_normal with the key read from `key`, as
 * spmd_x_random_bits_from does.
 *
 * @param sharding The result's layout; not NULL.
 * @param key The key data; not NULL, uint32 of shape (2), on sharding's
 *        runtime, in any layout, or a value of a program being recorded.
 * @param dtype The element type: a float.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param out Receives the new array (or the program's new value); not
 *        NULL. Left untouched on failure.
 * @return SPMD_OK, or the errors of spmd_random_normal and of
 *         spmd_x_random_bits_from's key.
 */
SPMD_API spmd_status spmd_x_random_normal_from(const spmd_sharding *sharding,
                                               const spmd_array *key, spmd_dtype dtype,
                                               size_t ndim, const int64_t *shape,
                                               spmd_array **out);

/**
 * spmd_random_truncated_normal with the key read from `key`, as
 * spmd_x_random_bits_from does.
 *
 * @param sharding The result's layout; not NULL.
 * @param key The key data; not NULL, uint32 of shape (2), on sharding's
 *        runtime, in any layout, or a value of a program being recorded.
 * @param dtype The element type: a float.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param lower The lower bound, below upper in dtype (may be -INFINITY).
 * @param upper The upper bound (may be INFINITY).
 * @param out Receives the new array (or the program's new value); not
 *        NULL. Left untouched on failure.
 * @return SPMD_OK, or the errors of spmd_random_truncated_normal and of
 *         spmd_x_random_bits_from's key.
 */
SPMD_API spmd_status spmd_x_random_truncated_normal_from(const spmd_sharding *sharding,
                                                         const spmd_array *key,
                                                         spmd_dtype dtype, size_t ndim,
                                                         const int64_t *shape, double lower,
                                                         double upper, spmd_array **out);

/**
 * jax.random.fold_in on key data: the key data of spmd_random_fold_in(key,
 * data), laid out as `key`. Given a value of a program being recorded,
 * records itself: a program derives a key from the one each run is given.
 *
 * @param key The key data; not NULL, uint32 of shape (2).
 * @param data The value folded in.
 * @param out Receives the new key data (or the program's new value); not
 *        NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or released key,
 *         one of another dtype or shape, or a NULL out.
 */
SPMD_API spmd_status spmd_x_random_fold_in_from(const spmd_array *key, uint32_t data,
                                                spmd_array **out);

/**
 * jax.random.split on key data: out[i] is the key data of
 * spmd_random_split(key, n)'s key i, laid out as `key` (JAX's split gives
 * one (n, 2) array; here each key is an array of its own, ready for a
 * draw). Given a value of a program being recorded, records itself as one
 * step of n results.
 *
 * @param key The key data; not NULL, uint32 of shape (2).
 * @param n The number of keys; 0 makes none.
 * @param out Receives n new arrays the caller destroys; not NULL when n >
 *        0. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or released key,
 *         one of another dtype or shape, or a NULL out.
 */
SPMD_API spmd_status spmd_x_random_split_from(const spmd_array *key, size_t n,
                                              spmd_array **out);

SPMD_EXTERN_C_END

#endif /* SPMD_EXPERIMENTAL_RANDOM_H */
