/**
 * @file
 * libspmd: the text picture of an array's sharding
 * (jax.debug.visualize_array_sharding).
 */
#ifndef SPMD_VISUALIZE_H
#define SPMD_VISUALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/array.h"
#include "spmd/export.h"
#include "spmd/sharding.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * Options of spmd_sharding_visualize and spmd_array_visualize. Zero in a
 * field means "default"; fields are only ever appended.
 */
typedef struct spmd_visualize_options {
  size_t struct_size; /**< sizeof(spmd_visualize_options) as the caller was compiled */
  int ascii;      /**< non-zero: +-| instead of box drawing characters    */
  int max_width;  /**< console width; 0 = 80, as JAX; at most 1000        */
  int min_width;  /**< narrowest block; 0 = 9, as JAX; at most 1000       */
  double scale;   /**< picture scale; 0 = 1.0, as JAX; at most 100        */
} spmd_visualize_options;

/** An initialiser of spmd_visualize_options: struct_size set, every option default. */
#define SPMD_VISUALIZE_OPTIONS_INIT \
  { sizeof(spmd_visualize_options), 0, 0, 0, 0.0 }

/**
 * Fills *options with the defaults, writing exactly `size` bytes.
 *
 * @param options The struct to fill; not NULL.
 * @param size sizeof *options as the caller was compiled.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL options or a size
 *         smaller than a size_t or above 1024 bytes (nothing written).
 */
SPMD_API spmd_status spmd_visualize_options_init(spmd_visualize_options *options, size_t size);

/**
 * The picture of how an array of global shape `shape` is laid out by
 * `sharding`.
 *
 * One box per distinct block, widths and heights in proportion, labelled
 * with the devices that hold it ("CPU 0,4"). The text is exactly what JAX
 * prints without colour, ending with a newline. Tables wider than
 * max_width shrink their columns and wrap or cut labels as JAX's (rich's)
 * do.
 *
 * @param sharding The sharding; not NULL.
 * @param ndim Number of dimensions: 1 or 2.
 * @param shape ndim sizes, each positive; not NULL.
 * @param options The options; NULL takes all defaults.
 * @param out Receives a new string the caller frees with spmd_string_free;
 *        not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a shape that is not 1 or 2
 *         dimensions or has no elements, a spec naming more dimensions than
 *         ndim, an option out of range (negative, a width above 1000, a
 *         scale above 100 or NaN) or a bad struct_size, or a NULL or
 *         destroyed sharding or a NULL shape or out.
 */
SPMD_API spmd_status spmd_sharding_visualize(
    const spmd_sharding *sharding, size_t ndim, const int64_t *shape,
    const spmd_visualize_options *options, char **out);

/**
 * The same as spmd_sharding_visualize for an array's own shape and
 * sharding.
 *
 * @param array The array; not NULL.
 * @param options The options; NULL takes all defaults.
 * @param out Receives a new string the caller frees with spmd_string_free;
 *        not NULL. Left untouched on failure.
 * @return SPMD_OK, or the errors of spmd_sharding_visualize (for a NULL or
 *         destroyed array instead of a sharding).
 */
SPMD_API spmd_status spmd_array_visualize(const spmd_array *array,
                                          const spmd_visualize_options *options,
                                          char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_VISUALIZE_H */
