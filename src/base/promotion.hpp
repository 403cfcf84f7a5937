// JAX's dtype promotion for the global ops: the type two operands meet in,
// the float type transcendental functions and true division compute in, and
// the type a Python-style scalar takes beside an array.
#pragma once

#include "spmd/dtype.h"

namespace spmd {

bool dtype_is_float(spmd_dtype dtype);    // f16, bf16, f32, f64
bool dtype_is_integer(spmd_dtype dtype);  // u8, i32, i64 (not bool)

// jnp.promote_types on JAX's lattice (bool < u8 < i32 < i64 < f16, bf16 <
// f32 < f64; f16 with bf16 meets in f32), with 64-bit types kept as JAX
// keeps them when jax_enable_x64 is on.
spmd_dtype promote_types(spmd_dtype a, spmd_dtype b);

// The dtype of sin(x), x / y and the like: floats keep their type, i64
// becomes f64, other integers and bool f32.
spmd_dtype float_result(spmd_dtype dtype);

// The dtype of `array op scalar` for a Python scalar (JAX's weak types): a
// float array keeps its type; an integer array keeps its type for an
// integral scalar and becomes float_result for a fractional one; bool
// becomes i32 for an integral scalar (bool + 1) and f32 for a fractional
// one. Throws INVALID_ARGUMENT naming `what` when an integral scalar does
// not fit the integer type (JAX's OverflowError).
spmd_dtype scalar_promotion(spmd_dtype array, double scalar, const char *what);

// The dtype sums of `dtype` accumulate in and return, as jnp.sum: bool and
// u8 sum in i32 (JAX: u32, which libspmd does not have), i32 and i64 in
// their own type, floats in their own type.
spmd_dtype sum_result(spmd_dtype dtype);

}  // namespace spmd
