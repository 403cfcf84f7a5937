/**
 * @file
 * libspmd: partition specs, which mesh axes split each array dimension.
 */
#ifndef SPMD_SPEC_H
#define SPMD_SPEC_H

#include <stddef.h>

#include "spmd/export.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * A partition spec (jax.sharding.PartitionSpec): per array dimension, none
 * or several mesh axes, at most SPMD_MAX_NDIM dimensions and each axis at
 * most once. It is a plain value (no mesh attached); a sharding checks it
 * against a mesh. Released with spmd_spec_destroy.
 */
typedef struct spmd_spec spmd_spec;

/**
 * Parses a spec from text.
 *
 * Accepted forms, so specs can be pasted from Python:
 * - short: "data, None", "(x, y), None", "x", "", "None, x"
 * - JAX: "P('data', None)", "PartitionSpec(('x', 'y'),)", "P()"
 *
 * An entry is an axis name, None, or a parenthesised tuple of names (an
 * empty tuple () is None). The caller owns *out. Thread-safe.
 *
 * @param text The spec; not NULL.
 * @param out Receives the new spec; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a syntax error, with the
 *         1-based column in the message ("spec 'x,,y': column 3: expected
 *         an axis name, None or '(' "), an axis used twice, more than
 *         SPMD_MAX_NDIM dimensions, or a NULL text or out.
 */
SPMD_API spmd_status spmd_spec_parse(const char *text, spmd_spec **out);

/**
 * Creates an empty spec (P()), the structured form for bindings, grown one
 * dimension at a time with spmd_spec_append.
 *
 * @param out Receives the new spec, which the caller owns; not NULL. Left
 *        untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL out.
 */
SPMD_API spmd_status spmd_spec_create(spmd_spec **out);

/**
 * Appends one dimension split over `naxes` axes (0 = None: replicated).
 *
 * This changes the spec: unlike other calls, it must not run at the same
 * time as any other use of the same spec.
 *
 * @param spec The spec to grow; not NULL.
 * @param axes naxes axis names, in order; may be NULL when naxes is 0.
 * @param naxes Number of axes splitting the new dimension.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT (the spec unchanged) for a
 *         malformed axis name, an axis the spec already uses, a spec that
 *         already has SPMD_MAX_NDIM dimensions, a NULL or destroyed spec, or
 *         a NULL axes or axis name.
 */
SPMD_API spmd_status spmd_spec_append(spmd_spec *spec,
                                      const char *const *axes, size_t naxes);

/**
 * Releases a spec.
 *
 * @param spec The spec; NULL and already-destroyed handles are ignored.
 */
SPMD_API void spmd_spec_destroy(spmd_spec *spec);

/**
 * Number of dimensions the spec names (trailing omitted ones not counted;
 * trailing Nones written out are).
 *
 * @param spec The spec; not NULL.
 * @param out Receives the number of dimensions; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed spec or
 *         a NULL out.
 */
SPMD_API spmd_status spmd_spec_ndim(const spmd_spec *spec, size_t *out);

/**
 * Number of mesh axes on dimension `dim` (0 for None).
 *
 * @param spec The spec; not NULL.
 * @param dim The dimension, 0 to ndim - 1.
 * @param out Receives the number of axes; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for a dim past the last;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed spec or a NULL
 *         out.
 */
SPMD_API spmd_status spmd_spec_dim_size(const spmd_spec *spec, size_t dim,
                                        size_t *out);

/**
 * The i-th axis name on dimension `dim`.
 *
 * @param spec The spec; not NULL.
 * @param dim The dimension, 0 to ndim - 1.
 * @param i The axis within the dimension, 0 to its axis count - 1.
 * @param out Receives the name, borrowed: it lives as long as the spec and
 *        is not freed by the caller. Not NULL; left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for a dim or i past the last;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed spec or a NULL
 *         out.
 */
SPMD_API spmd_status spmd_spec_dim_axis(const spmd_spec *spec, size_t dim,
                                        size_t i, const char **out);

/**
 * Whether two specs are equal once trailing Nones are dropped (P('x') equals
 * P('x', None)).
 *
 * @param a The first spec; not NULL.
 * @param b The second spec; not NULL.
 * @param out Receives 1 when equal, else 0; not NULL. Left untouched on
 *        failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed spec or
 *         a NULL out.
 */
SPMD_API spmd_status spmd_spec_equal(const spmd_spec *a, const spmd_spec *b,
                                     int *out);

/**
 * JAX's str of a spec: "PartitionSpec('x', None)",
 * "PartitionSpec(('x', 'y'),)", "PartitionSpec()".
 *
 * @param spec The spec; not NULL.
 * @param out Receives a new string the caller frees with spmd_string_free;
 *        not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed spec or
 *         a NULL out.
 */
SPMD_API spmd_status spmd_spec_to_string(const spmd_spec *spec, char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_SPEC_H */
