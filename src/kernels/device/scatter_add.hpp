// The body of scatter_add (kernels/scatter_add.hpp) for one element of the
// result, shared by the CPU kernel and the CUDA platform's: the element
// starts as x's and adds, in update order, every update aimed at it.
#pragma once

#include "kernels/device/scan.hpp"
#include "kernels/device/take.hpp"
#include "kernels/scatter_add.hpp"

namespace spmd::dev::scatter_add {

// Index j's position within the result block, or -1 when it lands outside.
SPMD_HD int64_t target(const spmd::scatter_add::Params &p, const unsigned char *indices, int64_t j) {
  int64_t i = take::index_at(p.index_dtype, indices + j * dtype_bytes(p.index_dtype));
  if (i < 0) i += p.axis_size;
  if (i < 0 || i >= p.axis_size) return -1;
  i -= p.start;
  return i >= 0 && i < p.len ? i : -1;
}

// The values as A (double for f64, float for the other floats, int64 for
// integers), added as cumsum adds (scan::Plus).
template <typename A>
SPMD_HD void element_as(const spmd::scatter_add::Params &p, int64_t e, unsigned char *out,
                        const unsigned char *x, const unsigned char *indices,
                        const unsigned char *updates) {
  const int es = dtype_bytes(p.dtype);
  const int64_t q = e % p.post, i = (e / p.post) % p.len, r = e / (p.post * p.len);
  const scan::Plus<A> plus{p.dtype};
  A acc = red::load<A>(p.dtype, x + e * es);
  bool added = false;
  for (int64_t j = 0; j < p.count; ++j)
    if (target(p, indices, j) == i) {
      acc = plus(acc, red::load<A>(p.dtype, updates + ((r * p.count + j) * p.post + q) * es));
      added = true;
    }
  // An element no update reaches is x's, bits and all (a 16-bit NaN's
  // payload would not survive the trip through A).
  if (added) red::store<A>(p.dtype, acc, out + e * es);
  else memcpy(out + e * es, x + e * es, static_cast<size_t>(es));
}

// Result element e of pre x len x post.
SPMD_HD void element(const spmd::scatter_add::Params &p, int64_t e, unsigned char *out,
                     const unsigned char *x, const unsigned char *indices,
                     const unsigned char *updates) {
  switch (p.dtype) {
    case SPMD_F64: return element_as<double>(p, e, out, x, indices, updates);
    case SPMD_F32:
    case SPMD_F16:
    case SPMD_BF16: return element_as<float>(p, e, out, x, indices, updates);
    default: return element_as<int64_t>(p, e, out, x, indices, updates);
  }
}

}  // namespace spmd::dev::scatter_add
