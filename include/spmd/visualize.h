/* libspmd: the text picture of an array's sharding
 * (jax.debug.visualize_array_sharding). */
#ifndef SPMD_VISUALIZE_H
#define SPMD_VISUALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/array.h"
#include "spmd/export.h"
#include "spmd/sharding.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

typedef struct spmd_visualize_options {
  size_t struct_size;
  int ascii;      /* non-zero: +-| instead of box drawing characters    */
  int max_width;  /* console width; 0 = 80, as JAX                      */
  int min_width;  /* narrowest block; 0 = 9, as JAX                     */
  double scale;   /* picture scale; 0 = 1.0, as JAX                     */
} spmd_visualize_options;

#define SPMD_VISUALIZE_OPTIONS_INIT \
  { sizeof(spmd_visualize_options), 0, 0, 0, 0.0 }

SPMD_API void spmd_visualize_options_init(spmd_visualize_options *options);

/* The picture of how an array of global shape `shape` (1 or 2 dimensions)
 * is laid out by `sharding`: one box per distinct block, widths and heights
 * in proportion, labelled with the devices that hold it ("CPU 0,4"). The
 * text is exactly what JAX prints without colour, ending with a newline.
 * Tables wider than max_width shrink their columns and wrap or cut labels
 * as JAX's (rich's) do. options may be NULL. Caller frees *out with
 * spmd_string_free. */
SPMD_API spmd_status spmd_sharding_visualize(
    const spmd_sharding *sharding, size_t ndim, const int64_t *shape,
    const spmd_visualize_options *options, char **out);

/* The same for an array's own shape and sharding. */
SPMD_API spmd_status spmd_array_visualize(const spmd_array *array,
                                          const spmd_visualize_options *options,
                                          char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_VISUALIZE_H */
