#include "base/promotion.hpp"

#include <cmath>

#include "base/dtype.hpp"
#include "base/error.hpp"

namespace spmd {

bool dtype_is_float(spmd_dtype d) {
  return d == SPMD_F16 || d == SPMD_BF16 || d == SPMD_F32 || d == SPMD_F64;
}

bool dtype_is_integer(spmd_dtype d) {
  double lo, hi;
  return integer_range(d, &lo, &hi);
}

namespace {
// Width in bits of an integer type; bool counts as the narrowest of all.
int int_bits(spmd_dtype d) {
  if (d == SPMD_BOOL) return 1;
  return static_cast<int>(dtype_size(d)) * 8;
}
bool is_unsigned(spmd_dtype d) { return d == SPMD_U8 || d == SPMD_U16 || d == SPMD_U32; }

spmd_dtype signed_of_bits(int bits) {
  switch (bits) {
    case 8: return SPMD_I8;
    case 16: return SPMD_I16;
    case 32: return SPMD_I32;
    default: return SPMD_I64;
  }
}

// Rank of the floats: (f16 | bf16) < f32 < f64.
int float_rank(spmd_dtype d) { return d == SPMD_F64 ? 2 : d == SPMD_F32 ? 1 : 0; }
}  // namespace

spmd_dtype promote_types(spmd_dtype a, spmd_dtype b) {
  if (a == b) return a;
  const bool fa = dtype_is_float(a), fb = dtype_is_float(b);
  if (fa && fb) {
    if (float_rank(a) == 0 && float_rank(b) == 0) return SPMD_F32;  // f16 with bf16
    return float_rank(a) >= float_rank(b) ? a : b;
  }
  if (fa) return a;  // every integer and bool promotes to every float
  if (fb) return b;
  if (a == SPMD_BOOL) return b;
  if (b == SPMD_BOOL) return a;
  // Two integers: of one signedness the wider; an unsigned one meets a
  // signed one in the signed type, when wider, else in the signed type
  // twice the unsigned one's width (u8 with i8 is i16, u32 with i32 is
  // i64; only uint64 would go on to a float).
  if (is_unsigned(a) == is_unsigned(b)) return int_bits(a) >= int_bits(b) ? a : b;
  const spmd_dtype s = is_unsigned(a) ? b : a, u = is_unsigned(a) ? a : b;
  if (int_bits(s) > int_bits(u)) return s;
  return signed_of_bits(2 * int_bits(u));
}

spmd_dtype float_result(spmd_dtype d) {
  if (dtype_is_float(d)) return d;
  return d == SPMD_I64 ? SPMD_F64 : SPMD_F32;
}

spmd_dtype scalar_promotion(spmd_dtype array, double s, const char *what) {
  if (dtype_is_float(array)) return array;
  const bool integral = std::isfinite(s) && std::trunc(s) == s;
  if (!integral) return float_result(array);
  if (array == SPMD_BOOL) array = SPMD_I32;
  // JAX converts a Python integer to the array's type, wrapping as int8(300)
  // is 44, and raises OverflowError only for one outside its default
  // integer type: int32, or int64 beside an int64 array (which exists with
  // jax_enable_x64 only, where the default is int64).
  const spmd_dtype bound = array == SPMD_I64 ? SPMD_I64 : SPMD_I32;
  double lo = 0, hi_plus_one = 0;
  integer_range(bound, &lo, &hi_plus_one);
  if (s < lo || s >= hi_plus_one)
    invalid(what, ": the scalar ", s, " is outside ", dtype_name(bound),
            ", the Python integers JAX takes beside an array of ", dtype_name(array),
            " (it raises OverflowError)");
  return array;
}

spmd_dtype sum_result(spmd_dtype d) {
  switch (d) {
    case SPMD_BOOL:
    case SPMD_I8:
    case SPMD_I16: return SPMD_I32;
    case SPMD_U8:
    case SPMD_U16: return SPMD_U32;
    default: return d;
  }
}

}  // namespace spmd
