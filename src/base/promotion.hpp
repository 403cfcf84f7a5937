// JAX's dtype promotion for the global ops: the type two operands meet in,
// the float type transcendental functions and true division compute in, and
// the type a Python-style scalar takes beside an array.
#pragma once

#include "spmd/dtype.h"

namespace spmd {

bool dtype_is_float(spmd_dtype dtype);    // f16, bf16, f32, f64
bool dtype_is_integer(spmd_dtype dtype);  // i8, i16, i32, i64, u8, u16, u32 (not bool)

// jnp.promote_types on JAX's lattice with jax_enable_x64 on: bool below
// every integer; u8 < u16 < u32 and i8 < i16 < i32 < i64, each unsigned
// type below the signed type twice as wide (u8 with i8 is i16, u32 with
// i32 is i64); every integer below f16 and bf16, which meet in f32 < f64.
// Without uint64 the lattice closes: only uint64 promotes to uint64.
spmd_dtype promote_types(spmd_dtype a, spmd_dtype b);

// The dtype of sin(x), x / y and the like: floats keep their type, i64
// becomes f64, the other integers and bool f32.
spmd_dtype float_result(spmd_dtype dtype);

// The dtype of `array op scalar` for a Python scalar (JAX's weak types): a
// float array keeps its type; an integer array keeps its type for an
// integral scalar and becomes float_result for a fractional one; bool
// becomes i32 for an integral scalar (bool + 1) and f32 for a fractional
// one. An integral scalar is then converted to the integer type wrapping,
// as JAX converts it (int8 and 300 meet as int8 44); INVALID_ARGUMENT
// naming `what` for one outside int32 (int64 beside int64): JAX's
// OverflowError.
spmd_dtype scalar_promotion(spmd_dtype array, double scalar, const char *what);

// The dtype sums of `dtype` accumulate in and return, as jnp.sum: bool,
// i8 and i16 sum in i32, u8 and u16 in u32; i32, u32, i64 and the floats
// in their own type.
spmd_dtype sum_result(spmd_dtype dtype);

}  // namespace spmd
