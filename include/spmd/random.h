/**
 * @file
 * libspmd: random numbers identical to jax.random with its default generator
 * (threefry2x32, jax_threefry_partitionable=True), generated sharded: each
 * device computes only its own block, and the values do not depend on the
 * sharding.
 */
#ifndef SPMD_RANDOM_H
#define SPMD_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/array.h"
#include "spmd/dtype.h"
#include "spmd/export.h"
#include "spmd/sharding.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * A PRNG key: the two words of JAX's legacy uint32[2] key data, in order
 * (np.asarray(jax.random.PRNGKey(s)) == {words[0], words[1]}). A plain
 * value: copy it freely; nothing to release.
 */
typedef struct spmd_key {
  uint32_t words[2]; /**< the key data, in JAX's order */
} spmd_key;

/**
 * jax.random.PRNGKey(seed): words = {seed >> 32, seed & 0xffffffff}.
 *
 * Seeds below 2^32 give JAX's key in either precision mode; a negative
 * int64 seed cast to uint64_t gives JAX's key under jax_enable_x64 (without
 * x64, JAX keeps only the low 32 bits: pass (uint32_t)seed for that).
 * Thread-safe.
 *
 * @param seed The seed.
 * @param out Receives the key; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL out.
 */
SPMD_API spmd_status spmd_random_key(uint64_t seed, spmd_key *out);

/**
 * jax.random.split(key, n): n new keys.
 *
 * Key i is the same for every n > i. Thread-safe.
 *
 * @param key The key to split; not NULL.
 * @param n Number of keys to make; 0 writes nothing.
 * @param out Receives the keys in out[0..n-1]; may be NULL when n is 0.
 *        Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL key, or a NULL out
 *         with n > 0.
 */
SPMD_API spmd_status spmd_random_split(const spmd_key *key, size_t n,
                                       spmd_key *out);

/**
 * jax.random.fold_in(key, data): a new key from a key and a 32-bit value.
 *
 * JAX converts data to uint32 first: pass (uint32_t)data for a negative
 * int.
 *
 * @param key The key; not NULL.
 * @param data The value to fold in.
 * @param out Receives the new key; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL key or out.
 */
SPMD_API spmd_status spmd_random_fold_in(const spmd_key *key, uint32_t data,
                                         spmd_key *out);

/**
 * jax.random.bits(key, shape, dtype): uniform random bits laid out by
 * `sharding`.
 *
 * The field width comes from dtype: SPMD_U8 (uint8), SPMD_U16 (uint16),
 * SPMD_U32 (uint32); SPMD_I32 and SPMD_I64 store the unsigned bit pattern
 * of uint32 and of uint64 (as JAX gives under x64; libspmd has no uint64).
 * Bit-exact with JAX. The caller owns *out.
 *
 * @param sharding The layout; not NULL.
 * @param key The key; not NULL.
 * @param dtype SPMD_U8, SPMD_U16, SPMD_U32, SPMD_I32 or SPMD_I64.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         sharding, a NULL key or out, another dtype, a bad shape (negative
 *         size, more than SPMD_MAX_NDIM dimensions, NULL with ndim > 0) or a
 *         spec naming more dimensions than ndim; SPMD_ERR_OUT_OF_MEMORY when
 *         device memory runs out.
 */
SPMD_API spmd_status spmd_random_bits(const spmd_sharding *sharding,
                                      const spmd_key *key, spmd_dtype dtype,
                                      size_t ndim, const int64_t *shape,
                                      spmd_array **out);

/**
 * jax.random.uniform(key, shape, dtype, minval, maxval): floats in
 * [minval, maxval).
 *
 * minval and maxval are first converted to dtype, as JAX does. Bit-exact
 * with JAX on its CPU platform. The caller owns *out.
 *
 * @param sharding The layout; not NULL.
 * @param key The key; not NULL.
 * @param dtype SPMD_F32, SPMD_F64, SPMD_F16 or SPMD_BF16.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param minval The lower bound, included.
 * @param maxval The upper bound, excluded.
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return SPMD_OK, or the errors of spmd_random_bits (dtype must be a
 *         float).
 */
SPMD_API spmd_status spmd_random_uniform(const spmd_sharding *sharding,
                                         const spmd_key *key, spmd_dtype dtype,
                                         size_t ndim, const int64_t *shape,
                                         double minval, double maxval,
                                         spmd_array **out);

/**
 * jax.random.normal(key, shape, dtype): standard normal floats.
 *
 * Computed as JAX does (sqrt(2) * erfinv(u), u uniform on (-1, 1), with
 * XLA's erfinv and log1p); docs/random.md states how closely it agrees with
 * JAX. The caller owns *out.
 *
 * @param sharding The layout; not NULL.
 * @param key The key; not NULL.
 * @param dtype As spmd_random_uniform: SPMD_F32, SPMD_F64, SPMD_F16 or
 *        SPMD_BF16.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return SPMD_OK, or the errors of spmd_random_uniform.
 */
SPMD_API spmd_status spmd_random_normal(const spmd_sharding *sharding,
                                        const spmd_key *key, spmd_dtype dtype,
                                        size_t ndim, const int64_t *shape,
                                        spmd_array **out);

/**
 * jax.random.truncated_normal(key, lower, upper, shape, dtype): standard
 * normal floats truncated to (lower, upper).
 *
 * Computed as JAX does: u uniform on [erf(lower/sqrt2), erf(upper/sqrt2)),
 * sqrt(2) * erfinv(u), clipped to the open interval; lower and upper are
 * first converted to dtype. Infinite bounds are allowed. docs/random.md
 * states how closely it agrees with JAX. The caller owns *out.
 *
 * @param sharding The layout; not NULL.
 * @param key The key; not NULL.
 * @param dtype As spmd_random_uniform: SPMD_F32, SPMD_F64, SPMD_F16 or
 *        SPMD_BF16.
 * @param ndim Number of dimensions, at most SPMD_MAX_NDIM.
 * @param shape ndim sizes, none negative; may be NULL when ndim is 0.
 * @param lower The lower bound, excluded; may be -infinity.
 * @param upper The upper bound, excluded; may be +infinity.
 * @param out Receives the new array; not NULL. Left untouched on failure.
 * @return SPMD_OK; the errors of spmd_random_uniform;
 *         SPMD_ERR_INVALID_ARGUMENT unless lower < upper, as given and once
 *         converted to dtype (NaN bounds included).
 */
SPMD_API spmd_status spmd_random_truncated_normal(const spmd_sharding *sharding,
                                                  const spmd_key *key, spmd_dtype dtype,
                                                  size_t ndim, const int64_t *shape,
                                                  double lower, double upper,
                                                  spmd_array **out);

SPMD_EXTERN_C_END

#endif /* SPMD_RANDOM_H */
