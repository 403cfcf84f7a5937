#include "base/promotion.hpp"

#include <cmath>

#include "base/dtype.hpp"
#include "base/error.hpp"

namespace spmd {

bool dtype_is_float(spmd_dtype d) {
  return d == SPMD_F16 || d == SPMD_BF16 || d == SPMD_F32 || d == SPMD_F64;
}

bool dtype_is_integer(spmd_dtype d) { return d == SPMD_U8 || d == SPMD_I32 || d == SPMD_I64; }

namespace {
// Rank on the chain bool < u8 < i32 < i64 < (f16 | bf16) < f32 < f64.
int rank(spmd_dtype d) {
  switch (d) {
    case SPMD_BOOL: return 0;
    case SPMD_U8: return 1;
    case SPMD_I32: return 2;
    case SPMD_I64: return 3;
    case SPMD_F16:
    case SPMD_BF16: return 4;
    case SPMD_F32: return 5;
    case SPMD_F64: return 6;
    default: return -1;
  }
}
}  // namespace

spmd_dtype promote_types(spmd_dtype a, spmd_dtype b) {
  if (a == b) return a;
  if ((a == SPMD_F16 && b == SPMD_BF16) || (a == SPMD_BF16 && b == SPMD_F16)) return SPMD_F32;
  return rank(a) >= rank(b) ? a : b;
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
  // [lo, hi_plus_one): int64's max is not a double, 2^63 is the bound.
  double lo = 0, hi_plus_one = 0;
  switch (array) {
    case SPMD_U8: lo = 0; hi_plus_one = 256.0; break;
    case SPMD_I32: lo = -2147483648.0; hi_plus_one = 2147483648.0; break;
    default: lo = -9223372036854775808.0; hi_plus_one = 9223372036854775808.0; break;
  }
  if (s < lo || s >= hi_plus_one)
    invalid(what, ": the scalar ", s, " does not fit ", dtype_name(array),
            ", the array's type (JAX raises OverflowError)");
  return array;
}

spmd_dtype sum_result(spmd_dtype d) {
  if (d == SPMD_BOOL || d == SPMD_U8) return SPMD_I32;
  return d;
}

}  // namespace spmd
