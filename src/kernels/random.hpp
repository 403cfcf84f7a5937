// Counter-based random numbers that reproduce jax.random with its default
// implementation (threefry2x32, jax_threefry_partitionable=True).
//
// Every element is a pure function of the key and of the element's row-major
// index in the global array: element i hashes the 64-bit counter i (as the
// pair hi = i >> 32, lo = i & 0xffffffff) with Threefry-2x32. So each device
// generates its own block without looking at any other, and the values do not
// depend on the sharding. From the pair of output words (b0, b1):
//   32-bit fields: b0 ^ b1;  8/16-bit fields: the low bits of b0 ^ b1;
//   64-bit fields: (b0 << 32) | b1.
// Uniform floats put the top mantissa-width bits of a field under the
// exponent of 1.0 and subtract 1; normals are sqrt(2) * erfinv(u) with u
// uniform in (-1, 1), erfinv being the polynomial approximation XLA uses
// (M. Giles, "Approximating the erfinv function", GPU Computing Gems).
// Truncated normals map the bounds through erf (XLA's float32 rational
// approximation, the C library's erf for float64), draw u uniform between
// them and clip sqrt(2) * erfinv(u) to the open interval, as
// jax.random.truncated_normal does.
#pragma once

#include <cstdint>
#include <utility>

#include "base/shape.hpp"
#include "spmd/dtype.h"

namespace spmd::rng {

// A threefry2x32 key: the two words of jax.random.PRNGKey's uint32[2] data.
struct Key {
  uint32_t w0 = 0;
  uint32_t w1 = 0;
};

// The Threefry-2x32 block cipher with 20 rounds: (x0, x1) encrypted by key.
std::pair<uint32_t, uint32_t> threefry2x32(Key key, uint32_t x0, uint32_t x1);

// jax.random.PRNGKey(seed) with 64-bit seeds (words: seed >> 32, seed low).
Key key_from_seed(uint64_t seed);

// Key `index` of jax.random.split(key, n) for any n > index.
Key split(Key key, uint64_t index);

// jax.random.fold_in(key, data).
Key fold_in(Key key, uint32_t data);

enum class Distribution { Bits, Uniform, Normal, TruncatedNormal };

// What to draw. For Bits, dtype gives the field width (U8: 8 bits, I32: 32,
// I64: 64, the unsigned bit pattern stored in the signed type). For the
// float distributions, dtype is F32, F64, F16 or BF16; minval/maxval are the
// range of Uniform and the bounds (lower, upper) of TruncatedNormal, converted
// to dtype first as JAX does, and unused by Normal.
struct Request {
  Distribution distribution = Distribution::Bits;
  Key key;
  spmd_dtype dtype = SPMD_DTYPE_INVALID;
  double minval = 0.0;
  double maxval = 1.0;
};

// Whether `dtype` is accepted for the distribution.
bool dtype_supported(Distribution distribution, spmd_dtype dtype);

// Writes the elements of `box` of a global array of shape `global`, row-major
// over the box, into `out` (box.elements() values of the request's dtype).
void generate_box(const Request &request, const Shape &global, const Box &box, void *out);

// Throws INVALID_ARGUMENT for a dtype the distribution does not take, and for
// TruncatedNormal bounds that are not lower < upper (NaN included), as given
// or once converted to dtype.
void validate(const Request &request);

// Scalar conversions, exposed for tests of the polynomial.
float erfinv_f32(float x);
double erfinv_f64(double x);
float erf_f32(float x);

}  // namespace spmd::rng
