// The body of jnp.take (kernels/take.hpp) for one element of the result,
// shared by the CPU kernel and the CUDA platform's.
#pragma once

#include "kernels/device/common.hpp"
#include "kernels/take.hpp"

namespace spmd::dev::take {

SPMD_HD int64_t index_at(spmd_dtype d, const unsigned char *p) { return load_int(d, p); }

// An integer type's fill: the smallest value of a signed type, the
// largest of an unsigned one (as jnp.take fills).
SPMD_HD int64_t integer_fill(spmd_dtype d) { return int_min(d) < 0 ? int_min(d) : int_max(d); }

// jnp.take's value for an index out of range.
SPMD_HD void fill(spmd_dtype d, unsigned char *o) {
  switch (d) {
    case SPMD_F64: { const uint64_t nan = 0x7ff8000000000000ull; memcpy(o, &nan, 8); return; }
    case SPMD_F32: { const uint32_t nan = 0x7fc00000u; memcpy(o, &nan, 4); return; }
    case SPMD_F16: { const uint16_t nan = 0x7e00u; memcpy(o, &nan, 2); return; }
    case SPMD_BF16: { const uint16_t nan = 0x7fc0u; memcpy(o, &nan, 2); return; }
    case SPMD_BOOL: *o = 1; return;  // true
    default: store_int(d, integer_fill(d), o); return;
  }
}

// Result element e of pre x count x post.
SPMD_HD void element(const spmd::take::Params &p, int64_t e, unsigned char *out, const unsigned char *a,
                     const unsigned char *indices) {
  const int es = dev::dtype_bytes(p.dtype);
  const int64_t q = e % p.post, j = (e / p.post) % p.count, r = e / (p.post * p.count);
  int64_t i = index_at(p.index_dtype, indices + j * dev::dtype_bytes(p.index_dtype));
  if (i < 0) i += p.len;
  if (i < 0 || i >= p.len)
    fill(p.dtype, out + e * es);
  else
    memcpy(out + e * es, a + ((r * p.len + i) * p.post + q) * es, static_cast<size_t>(es));
}

}  // namespace spmd::dev::take
