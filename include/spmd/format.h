/**
 * @file
 * libspmd: printing arrays as JAX prints them.
 */
#ifndef SPMD_FORMAT_H
#define SPMD_FORMAT_H

#include "spmd/array.h"
#include "spmd/export.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * JAX's repr(a): "Array([ 1.      ,  2.682942], dtype=float32)",
 * "Array(276., dtype=float32)".
 *
 * The values follow numpy's default print options: the shortest digits that
 * identify each value in its dtype, at most 8 after the point, one width for
 * all elements, scientific notation when magnitudes call for it, lines
 * wrapped at 75 columns, arrays of more than 1000 elements summarised with
 * "...". bfloat16 elements print as their scalars do ("%g").
 * Copies the array to the host (waits for pending work). Thread-safe, as
 * any read of the array.
 *
 * @param array The array; not NULL.
 * @param out Receives a new string the caller frees with spmd_string_free;
 *        not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed array
 *         or a NULL out; the errors of spmd_array_to_host.
 */
SPMD_API spmd_status spmd_array_repr(const spmd_array *array, char **out);

/**
 * str(a), what print(a) shows: numpy's "[[0. 1.]\n [2. 3.]]", a
 * 0-dimensional array as its scalar ("276.0", "True").
 *
 * Copies the array to the host (waits for pending work). Thread-safety as
 * spmd_array_repr.
 *
 * @param array The array; not NULL.
 * @param out Receives a new string the caller frees with spmd_string_free;
 *        not NULL. Left untouched on failure.
 * @return SPMD_OK, or the errors of spmd_array_repr.
 */
SPMD_API spmd_status spmd_array_str(const spmd_array *array, char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_FORMAT_H */
