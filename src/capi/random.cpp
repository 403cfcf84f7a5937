#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "base/dtype.hpp"
#include "exec/ops/random.hpp"
#include "spmd/random.h"

using namespace spmd;
using namespace spmd::capi;

namespace {

rng::Key key_arg(const spmd_key *key) {
  if (key == nullptr) invalid("key: NULL spmd_key pointer");
  return {key->words[0], key->words[1]};
}

void write_key(rng::Key k, spmd_key *out) {
  out->words[0] = k.w0;
  out->words[1] = k.w1;
}

// The generators: argument checks, then one block per device. The dtype
// is read as an integer until it is known to be valid.
spmd_status draw(const char *function, const spmd_sharding *sharding, const spmd_key *key,
                 const spmd_dtype &dtype, rng::Request request, size_t ndim,
                 const int64_t *shape, spmd_array **out) {
  return guard(function, [&] {
    const auto &s = use(sharding, "sharding");
    request.key = key_arg(key);
    out_arg(out);
    check_dtype("dtype", dtype);
    request.dtype = valid_dtype(dtype);
    Shape global = checked_shape("shape", ndim, shape);
    *out = new_handle<spmd_array>(random_array(s.impl, request, std::move(global)));
  });
}

}  // namespace

extern "C" {

spmd_status spmd_random_key(uint64_t seed, spmd_key *out) {
  return guard(__func__, [&] { write_key(rng::key_from_seed(seed), out_arg(out)); });
}

spmd_status spmd_random_split(const spmd_key *key, size_t n, spmd_key *out) {
  return guard(__func__, [&] {
    const rng::Key k = key_arg(key);
    if (n == 0) return;
    out_arg(out);
    for (size_t i = 0; i < n; ++i) write_key(rng::split(k, i), &out[i]);
  });
}

spmd_status spmd_random_fold_in(const spmd_key *key, uint32_t data, spmd_key *out) {
  return guard(__func__, [&] { write_key(rng::fold_in(key_arg(key), data), out_arg(out)); });
}

spmd_status spmd_random_bits(const spmd_sharding *sharding, const spmd_key *key,
                             spmd_dtype dtype, size_t ndim, const int64_t *shape,
                             spmd_array **out) {
  rng::Request r;
  r.distribution = rng::Distribution::Bits;
  return draw(__func__, sharding, key, dtype, r, ndim, shape, out);
}

spmd_status spmd_random_uniform(const spmd_sharding *sharding, const spmd_key *key,
                                spmd_dtype dtype, size_t ndim, const int64_t *shape,
                                double minval, double maxval, spmd_array **out) {
  rng::Request r;
  r.distribution = rng::Distribution::Uniform;
  r.minval = minval;
  r.maxval = maxval;
  return draw(__func__, sharding, key, dtype, r, ndim, shape, out);
}

spmd_status spmd_random_normal(const spmd_sharding *sharding, const spmd_key *key,
                               spmd_dtype dtype, size_t ndim, const int64_t *shape,
                               spmd_array **out) {
  rng::Request r;
  r.distribution = rng::Distribution::Normal;
  return draw(__func__, sharding, key, dtype, r, ndim, shape, out);
}

spmd_status spmd_random_truncated_normal(const spmd_sharding *sharding, const spmd_key *key,
                                         spmd_dtype dtype, size_t ndim, const int64_t *shape,
                                         double lower, double upper, spmd_array **out) {
  rng::Request r;
  r.distribution = rng::Distribution::TruncatedNormal;
  r.minval = lower;
  r.maxval = upper;
  return draw(__func__, sharding, key, dtype, r, ndim, shape, out);
}

}  // extern "C"
