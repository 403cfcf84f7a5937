// Element types: sizes, names and conversions to and from double, including
// the 16-bit float formats stored as raw bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/raw_enum.hpp"
#include "spmd/dtype.h"

namespace spmd {

// The last enumerator: valid dtypes are SPMD_F32 ... kLastDtype.
constexpr int kLastDtype = SPMD_U32;

bool dtype_valid(const spmd_dtype &dtype);

// Throws INVALID_ARGUMENT naming `what` if dtype is not a known type. Both
// take a reference: an out-of-range value is only ever read as an integer.
void check_dtype(const char *what, const spmd_dtype &dtype);

// A dtype dtype_valid accepted, as a value (read as an integer first).
spmd_dtype valid_dtype(const spmd_dtype &dtype);

// Bytes per element, 0 for an unknown dtype. Inline: every launch asks it
// of every kernel's operands.
inline size_t dtype_size(spmd_dtype dtype) {
  switch (raw_enum(dtype)) {
    case SPMD_F64: case SPMD_I64: return 8;
    case SPMD_F32: case SPMD_I32: case SPMD_U32: return 4;
    case SPMD_F16: case SPMD_BF16: case SPMD_I16: case SPMD_U16: return 2;
    case SPMD_U8: case SPMD_I8: case SPMD_BOOL: return 1;
    default: return 0;
  }
}
const char *dtype_name(spmd_dtype dtype);

// The range [lo, hi_plus_one) of an integer type (not bool), as doubles
// (exact: powers of two); false, with nothing written, for other types.
bool integer_range(spmd_dtype dtype, double *lo, double *hi_plus_one);

uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);  // round to nearest even, NaN kept
float bf16_bits_to_f32(uint16_t b);

// Stores `value` converted to dtype at `dst` (as jnp.asarray(value, dtype)).
void store_from_double(spmd_dtype dtype, double value, void *dst);

// Reads one element at `src` as a double.
double load_as_double(spmd_dtype dtype, const void *src);

}  // namespace spmd
