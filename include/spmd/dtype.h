/* libspmd: element types of arrays. */
#ifndef SPMD_DTYPE_H
#define SPMD_DTYPE_H

#include <stddef.h>

#include "spmd/export.h"

SPMD_EXTERN_C_BEGIN

/* Element types. Values are stable across releases (part of the ABI);
 * 0 is never a valid type. */
typedef enum spmd_dtype {
  SPMD_DTYPE_INVALID = 0,
  SPMD_F32 = 1,  /* float32                                   */
  SPMD_F64 = 2,  /* float64                                   */
  SPMD_F16 = 3,  /* IEEE binary16, stored as uint16_t bits    */
  SPMD_BF16 = 4, /* bfloat16, stored as uint16_t bits          */
  SPMD_I32 = 5,  /* int32                                     */
  SPMD_I64 = 6,  /* int64                                     */
  SPMD_U8 = 7,   /* uint8                                     */
  SPMD_BOOL = 8  /* bool, one byte holding 0 or 1             */
} spmd_dtype;

/* Bytes per element, or 0 for an invalid type. Thread-safe. */
SPMD_API size_t spmd_dtype_size(spmd_dtype dtype);

/* JAX/NumPy name of the type ("float32", "bfloat16", "bool"), or NULL for an
 * invalid type. Thread-safe. */
SPMD_API const char *spmd_dtype_name(spmd_dtype dtype);

SPMD_EXTERN_C_END

#endif /* SPMD_DTYPE_H */
