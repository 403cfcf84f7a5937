/**
 * @file
 * libspmd: element types of arrays.
 */
#ifndef SPMD_DTYPE_H
#define SPMD_DTYPE_H

#include <stddef.h>

#include "spmd/export.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * Element types.
 *
 * Values are stable across releases (part of the ABI); 0 is never a valid
 * type. Naming: enumerators are SPMD_<GROUP>_<NAME> (SPMD_PLATFORM_CPU,
 * SPMD_COLLECTIVE_PSUM); dtypes, named in almost every call, are SPMD_<TYPE>
 * after NumPy's short names (SPMD_F32, SPMD_BF16), and SPMD_DTYPE_INVALID,
 * which names no type, carries the group.
 *
 * The types are JAX's with jax_enable_x64 on, but for uint64: every pair
 * of them promotes to one of them (jnp.promote_types), since only uint64
 * itself promotes to uint64.
 */
typedef enum spmd_dtype {
  SPMD_DTYPE_INVALID = 0, /**< no type; never valid in a call        */
  SPMD_F32 = 1,  /**< float32                                   */
  SPMD_F64 = 2,  /**< float64                                   */
  SPMD_F16 = 3,  /**< IEEE binary16, stored as uint16_t bits    */
  SPMD_BF16 = 4, /**< bfloat16, stored as uint16_t bits          */
  SPMD_I32 = 5,  /**< int32                                     */
  SPMD_I64 = 6,  /**< int64                                     */
  SPMD_U8 = 7,   /**< uint8                                     */
  SPMD_BOOL = 8, /**< bool, one byte holding 0 or 1             */
  SPMD_I8 = 9,   /**< int8                                      */
  SPMD_I16 = 10, /**< int16                                     */
  SPMD_U16 = 11, /**< uint16                                    */
  SPMD_U32 = 12  /**< uint32                                    */
} spmd_dtype;

/**
 * Bytes per element of a type.
 *
 * Thread-safe.
 *
 * @param dtype The type; any value is accepted.
 * @return The element size in bytes, or 0 for an invalid type.
 */
SPMD_API size_t spmd_dtype_size(spmd_dtype dtype);

/**
 * The JAX/NumPy name of a type ("float32", "bfloat16", "bool").
 *
 * Thread-safe.
 *
 * @param dtype The type; any value is accepted.
 * @return A static string, or NULL for an invalid type.
 */
SPMD_API const char *spmd_dtype_name(spmd_dtype dtype);

/**
 * The type whose JAX/NumPy name is `name`, the inverse of spmd_dtype_name.
 *
 * Thread-safe.
 *
 * @param name The name, exactly as spmd_dtype_name gives it ("float32",
 *        "int32", "bool", ...); not NULL.
 * @param out Receives the type; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL argument or a name
 *         of no type (the message lists the names).
 */
SPMD_API spmd_status spmd_dtype_from_name(const char *name, spmd_dtype *out);

SPMD_EXTERN_C_END

#endif /* SPMD_DTYPE_H */
