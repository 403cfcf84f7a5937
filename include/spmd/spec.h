/* libspmd: partition specs, which mesh axes split each array dimension. */
#ifndef SPMD_SPEC_H
#define SPMD_SPEC_H

#include <stddef.h>

#include "spmd/export.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/* A partition spec: per array dimension, none or several mesh axes. It is a
 * plain value (no mesh attached); a sharding checks it against a mesh. */
typedef struct spmd_spec spmd_spec;

/* Parses a spec from text. Accepted forms, so specs can be pasted from
 * Python:
 *   short:  "data, None"   "(x, y), None"   "x"   ""   "None, x"
 *   JAX:    "P('data', None)"   "PartitionSpec(('x', 'y'),)"   "P()"
 * An entry is an axis name, None, or a parenthesised tuple of names (an empty
 * tuple () is None). On a syntax error, SPMD_ERR_INVALID_ARGUMENT with the
 * 1-based column in the message ("spec 'x,,y': column 3: expected an axis
 * name, None or '(' "). The caller owns *out. Thread-safe. */
SPMD_API spmd_status spmd_spec_parse(const char *text, spmd_spec **out);

/* Structured form, for bindings: an empty spec (P()), grown one dimension at
 * a time. */
SPMD_API spmd_status spmd_spec_create(spmd_spec **out);

/* Appends one dimension split over `naxes` axes (0 = None: replicated). */
SPMD_API spmd_status spmd_spec_append(spmd_spec *spec,
                                      const char *const *axes, size_t naxes);

SPMD_API void spmd_spec_destroy(spmd_spec *spec);

/* Number of dimensions the spec names (trailing omitted ones not counted). */
SPMD_API spmd_status spmd_spec_ndim(const spmd_spec *spec, size_t *out);

/* Number of mesh axes on dimension `dim` (0 for None). */
SPMD_API spmd_status spmd_spec_dim_size(const spmd_spec *spec, size_t dim,
                                        size_t *out);

/* The i-th axis name on dimension `dim`; lives as long as the spec. */
SPMD_API spmd_status spmd_spec_dim_axis(const spmd_spec *spec, size_t dim,
                                        size_t i, const char **out);

SPMD_API spmd_status spmd_spec_equal(const spmd_spec *a, const spmd_spec *b,
                                     int *out);

/* JAX's str: "PartitionSpec('x', None)", "PartitionSpec(('x', 'y'),)",
 * "PartitionSpec()". Caller frees with spmd_string_free. */
SPMD_API spmd_status spmd_spec_to_string(const spmd_spec *spec, char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_SPEC_H */
