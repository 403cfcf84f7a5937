// Random arrays (spmd/random.h, and spmd/experimental/random.h's draws
// from key data): argument checks, then exec/ops/random.
#define SPMD_EXPERIMENTAL
#include "base/dtype.hpp"
#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "exec/ops/random.hpp"
#include "exec/program/program.hpp"
#include "spmd/experimental/random.h"
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

// The result of `make` on key data `key`; or, given a value of a program
// being recorded, `make` recorded there under `label`.
template <typename Make>
ArrayPtr on_key_data(const char *function, const char *label, const ArrayHold &key, Make make) {
  const std::vector<ArrayPtr> operands{key.ptr()};
  if (!key->abstract()) return make(operands, ops::OpOptions{});
  ops::OpOptions c;
  c.function = function;
  c.label = label;
  return Program::of(operands, {"key"})->record(function, operands, c, make);
}

// The draws from key data: as draw, the key read from an array; or, given
// a value of a program being recorded, recorded there under `label` (each
// run reads the key it is given).
spmd_status draw_from(const char *function, const char *label, const spmd_sharding *sharding,
                      const spmd_array *key, const spmd_dtype &dtype, rng::Request request,
                      size_t ndim, const int64_t *shape, spmd_array **out) {
  return guard(function, [&] {
    const auto &s = use(sharding, "sharding");
    const ArrayHold k(key, "key", Abstract::Allowed);
    out_arg(out);
    check_dtype("dtype", dtype);
    request.dtype = valid_dtype(dtype);
    auto make = [layout = s.impl, request, global = checked_shape("shape", ndim, shape)](
                    const std::vector<ArrayPtr> &x, const ops::OpOptions &) {
      return random_array_from(layout, request, global, *x[0]);
    };
    ArrayPtr result = on_key_data(function, label, k, make);
    *out = new_handle<spmd_array>(std::move(result));
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

spmd_status spmd_x_random_key_data(const spmd_sharding *sharding, const spmd_key *key,
                                   spmd_array **out) {
  return guard(__func__, [&] {
    const auto &s = use(sharding, "sharding");
    const rng::Key k = key_arg(key);
    out_arg(out);
    *out = new_handle<spmd_array>(key_data_array(s.impl, k));
  });
}

spmd_status spmd_x_random_bits_from(const spmd_sharding *sharding, const spmd_array *key,
                                    spmd_dtype dtype, size_t ndim, const int64_t *shape,
                                    spmd_array **out) {
  rng::Request r;
  r.distribution = rng::Distribution::Bits;
  return draw_from(__func__, "random_bits", sharding, key, dtype, r, ndim, shape, out);
}

spmd_status spmd_x_random_uniform_from(const spmd_sharding *sharding, const spmd_array *key,
                                       spmd_dtype dtype, size_t ndim, const int64_t *shape,
                                       double minval, double maxval, spmd_array **out) {
  rng::Request r;
  r.distribution = rng::Distribution::Uniform;
  r.minval = minval;
  r.maxval = maxval;
  return draw_from(__func__, "random_uniform", sharding, key, dtype, r, ndim, shape, out);
}

spmd_status spmd_x_random_normal_from(const spmd_sharding *sharding, const spmd_array *key,
                                      spmd_dtype dtype, size_t ndim, const int64_t *shape,
                                      spmd_array **out) {
  rng::Request r;
  r.distribution = rng::Distribution::Normal;
  return draw_from(__func__, "random_normal", sharding, key, dtype, r, ndim, shape, out);
}

spmd_status spmd_x_random_truncated_normal_from(const spmd_sharding *sharding,
                                                const spmd_array *key, spmd_dtype dtype,
                                                size_t ndim, const int64_t *shape, double lower,
                                                double upper, spmd_array **out) {
  rng::Request r;
  r.distribution = rng::Distribution::TruncatedNormal;
  r.minval = lower;
  r.maxval = upper;
  return draw_from(__func__, "random_truncated_normal", sharding, key, dtype, r, ndim, shape, out);
}

spmd_status spmd_x_random_fold_in_from(const spmd_array *key, uint32_t data, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    const ArrayHold k(key, "key", Abstract::Allowed);
    out_arg(out);
    auto make = [data](const std::vector<ArrayPtr> &x, const ops::OpOptions &) {
      return fold_in_key_data(*x[0], data);
    };
    *out = new_handle<spmd_array>(on_key_data(fn, "random_fold_in", k, make));
  });
}

spmd_status spmd_x_random_split_from(const spmd_array *key, size_t n, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    const ArrayHold k(key, "key", Abstract::Allowed);
    if (n > 0) out_arg(out);
    std::vector<ArrayPtr> keys;
    if (!k->abstract()) {
      keys = split_key_data(*k, n);
    } else if (n > 0) {
      // A step of n results; its examples are values of the program too.
      const std::shared_ptr<Program> program = Program::of({k.ptr()}, {"key"});
      std::vector<ArrayPtr> examples;
      {
        RecordingScope scope(program);
        examples = split_key_data(*k, n);
      }
      keys = program->record_multi(
          fn, {k.ptr()}, examples, [n](const std::vector<ArrayPtr> &x) { return split_key_data(*x[0], n); },
          "random_split");
    }
    hand_out(std::move(keys), out);
  });
}

}  // extern "C"
