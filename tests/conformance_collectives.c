/* Conformance family 4, collectives (tests/conformance/collectives/): JAX's
 * shard_map of psum, pmean, pmax, pmin, all_gather, psum_scatter,
 * all_to_all, ppermute, axis_index and axis_size over one mesh axis, a tuple
 * of axes or the empty tuple "()", on the (2,4) and (2,2,2) meshes and the
 * corner cases' meshes (one device, 1x8, 3, 2x3, 7). Each case is run
 * through spmd_shard_map with one generic callback that applies the case's
 * op and parameters via spmd_ctx_* and returns its local result with a
 * leading dimension of 1; the out_spec puts every mesh axis on that
 * dimension, so row k of the output is the local result of the device at
 * row-major mesh position k, as in the reference.
 *
 * Comparison: dtype, shape and every byte must be JAX's, float sums and
 * means included (XLA's CPU collectives add in group order from +0 and
 * flush subnormals; libspmd does the same). Where JAX refuses a call
 * ("error"), libspmd must refuse it with SPMD_ERR_INVALID_ARGUMENT.
 *
 * Documented differences (docs/differences.md) carry "libspmd_rule", the
 * answer under libspmd's rule (computed by JAX through an equivalent
 * program), and are checked against it: ppermute over a tuple of axes not
 * in mesh order (libspmd numbers the group in the tuple's order, as
 * axis_index and the other collectives do), pmax and pmin of NaNs (libspmd
 * propagates them), and psum, pmean, pmax and pmin on a mesh of one device
 * (libspmd computes them as for any group of one). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "conformance.h"
#include "conformance_cases.h"
#include "spmd_test.h"

#define MAX_PAIRS 16

/* One case's op and parameters, shared read-only by the device callbacks. */
typedef struct coll_op {
  const char *op;
  char axes[64]; /* "x", "x,y,z", or "()" for the empty tuple */
  int64_t axis;  /* all_gather axis, psum_scatter dimension, all_to_all split */
  int64_t concat_axis;
  int tiled;
  size_t npairs;
  int64_t pairs[2 * MAX_PAIRS];
} coll_op;

/* The libspmd dtype whose JAX name is `name`. */
static spmd_dtype dtype_named(const char *name, const char *where) {
  for (int d = 1; d < 64; ++d) {
    const char *n = spmd_dtype_name((spmd_dtype)d);
    if (n != NULL && strcmp(n, name) == 0) return (spmd_dtype)d;
  }
  fail_msg("%s: dtype %s unknown to libspmd", where, name);
  return SPMD_DTYPE_INVALID;
}

static int64_t block_elements(const spmd_block *b) {
  int64_t n = 1;
  for (size_t i = 0; i < b->ndim; ++i) n *= b->shape[i];
  return n;
}

/* The generic per-device program: out[0] = op(input)[None]. */
static spmd_status apply_op(spmd_ctx *ctx, void *user_data) {
  const coll_op *c = user_data;
  spmd_block in = SPMD_BLOCK_INIT, r = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  spmd_status s = spmd_ctx_input(ctx, 0, &in);
  if (s != SPMD_OK) return s;
  const int index = strcmp(c->op, "axis_index") == 0, size = strcmp(c->op, "axis_size") == 0;
  if (index || size) {
    int64_t value = 0;
    const int64_t one = 1;
    s = index ? spmd_ctx_axis_index(ctx, c->axes, &value)
              : spmd_ctx_axis_size(ctx, c->axes, &value);
    if (s != SPMD_OK) return s;
    if ((s = spmd_ctx_alloc(ctx, SPMD_I32, 1, &one, &out)) != SPMD_OK) return s;
    *(int32_t *)out.data = (int32_t)value;
    return spmd_ctx_set_output(ctx, 0, &out);
  }
  if (strcmp(c->op, "psum") == 0)
    s = spmd_ctx_psum(ctx, &in, c->axes, &r);
  else if (strcmp(c->op, "pmean") == 0)
    s = spmd_ctx_pmean(ctx, &in, c->axes, &r);
  else if (strcmp(c->op, "pmax") == 0)
    s = spmd_ctx_pmax(ctx, &in, c->axes, &r);
  else if (strcmp(c->op, "pmin") == 0)
    s = spmd_ctx_pmin(ctx, &in, c->axes, &r);
  else if (strcmp(c->op, "all_gather") == 0)
    s = spmd_ctx_all_gather(ctx, &in, c->axes, c->axis, c->tiled, &r);
  else if (strcmp(c->op, "psum_scatter") == 0)
    s = spmd_ctx_psum_scatter(ctx, &in, c->axes, c->axis, c->tiled, &r);
  else if (strcmp(c->op, "all_to_all") == 0)
    s = spmd_ctx_all_to_all(ctx, &in, c->axes, c->axis, c->concat_axis, c->tiled, &r);
  else if (strcmp(c->op, "ppermute") == 0)
    s = spmd_ctx_ppermute(ctx, &in, c->axes, c->npairs, c->pairs, &r);
  else
    return spmd_ctx_error(ctx, SPMD_ERR_INVALID_ARGUMENT, "unknown op in a collectives case");
  if (s != SPMD_OK) return s;
  if (r.ndim + 1 > SPMD_MAX_NDIM)
    return spmd_ctx_error(ctx, SPMD_ERR_INVALID_ARGUMENT, "result rank too high");
  int64_t shape[SPMD_MAX_NDIM];
  shape[0] = 1;
  for (size_t i = 0; i < r.ndim; ++i) shape[i + 1] = r.shape[i];
  if ((s = spmd_ctx_alloc(ctx, r.dtype, r.ndim + 1, shape, &out)) != SPMD_OK) return s;
  const size_t nbytes = (size_t)block_elements(&r) * spmd_dtype_size(r.dtype);
  if (nbytes) memcpy(out.data, r.data, nbytes);
  return spmd_ctx_set_output(ctx, 0, &out);
}

/* Reads the case's op, axes and parameters. */
static void read_op(const json_value *c, const char *name, coll_op *op) {
  memset(op, 0, sizeof *op);
  op->op = json_string(conformance_member(c, "op", name));
  if (op->op == NULL) fail_msg("%s: op is not a string", name);
  const json_value *axes = conformance_member(c, "axes", name);
  for (size_t i = 0; i < json_count(axes); ++i) {
    const char *a = json_string(json_at(axes, i));
    if (a == NULL || strlen(op->axes) + strlen(a) + 2 > sizeof op->axes)
      fail_msg("%s: bad axes", name);
    if (i) strcat(op->axes, ",");
    strcat(op->axes, a);
  }
  if (json_count(axes) == 0) strcpy(op->axes, "()");
  const json_value *p = conformance_member(c, "params", name);
  const json_value *v;
  if ((v = json_get(p, "axis")) != NULL) op->axis = json_int(v, INT64_MIN);
  if ((v = json_get(p, "scatter_dimension")) != NULL) op->axis = json_int(v, INT64_MIN);
  if ((v = json_get(p, "split_axis")) != NULL) op->axis = json_int(v, INT64_MIN);
  if ((v = json_get(p, "concat_axis")) != NULL) op->concat_axis = json_int(v, INT64_MIN);
  if ((v = json_get(p, "tiled")) != NULL) {
    if (v->type != JSON_BOOL) fail_msg("%s: tiled is not a bool", name);
    op->tiled = v->boolean;
  }
  if ((v = json_get(p, "perm")) != NULL) {
    op->npairs = json_count(v);
    if (op->npairs > MAX_PAIRS) fail_msg("%s: too many pairs", name);
    for (size_t i = 0; i < op->npairs; ++i)
      if (conformance_ints(json_at(v, i), op->pairs + 2 * i, 2, name) != 2)
        fail_msg("%s: a perm entry is not a pair", name);
  }
  if (op->axis == INT64_MIN || op->concat_axis == INT64_MIN)
    fail_msg("%s: a parameter is not an integer", name);
}

static double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double v;
  if (exp == 0)
    v = ldexp(frac, -24);
  else if (exp == 31)
    v = frac ? NAN : INFINITY;
  else
    v = ldexp(frac + 1024, exp - 25);
  return sign ? -v : v;
}

/* Element i of a float buffer of `dtype`, as a double. */
static double float_at(const unsigned char *p, spmd_dtype dtype, size_t i) {
  switch (dtype) {
    case SPMD_F32: {
      float f;
      memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case SPMD_F64: {
      double d;
      memcpy(&d, p + 8 * i, 8);
      return d;
    }
    case SPMD_F16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      return half_to_double(h);
    }
    case SPMD_BF16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      const uint32_t bits = (uint32_t)h << 16;
      float f;
      memcpy(&f, &bits, 4);
      return f;
    }
    default:
      return NAN;
  }
}

static int is_float(spmd_dtype d) {
  return d == SPMD_F32 || d == SPMD_F64 || d == SPMD_F16 || d == SPMD_BF16;
}

/* Compares libspmd's output with the reference; writes why not into detail. */
static int output_agrees(spmd_array *got, const json_value *ref, const char *name, char *detail,
                         size_t size) {
  const char *want_dtype_name = json_string(conformance_member(ref, "dtype", name));
  spmd_dtype dtype;
  assert_ok(spmd_array_dtype(got, &dtype));
  if (want_dtype_name == NULL || strcmp(spmd_dtype_name(dtype), want_dtype_name) != 0) {
    conformance_detail(detail, size, "  dtype %s, JAX %s\n", spmd_dtype_name(dtype),
                       want_dtype_name ? want_dtype_name : "?");
    return 0;
  }
  int64_t want_shape[SPMD_MAX_NDIM], have_shape[SPMD_MAX_NDIM];
  const size_t want_ndim =
      conformance_ints(conformance_member(ref, "shape", name), want_shape, SPMD_MAX_NDIM, name);
  size_t have_ndim;
  assert_ok(spmd_array_ndim(got, &have_ndim));
  assert_ok(spmd_array_shape(got, sizeof have_shape / sizeof have_shape[0], have_shape, NULL));
  int same_shape = want_ndim == have_ndim;
  for (size_t i = 0; same_shape && i < want_ndim; ++i) same_shape = want_shape[i] == have_shape[i];
  if (!same_shape) {
    conformance_detail(detail, size, "  shape (");
    for (size_t i = 0; i < have_ndim; ++i)
      conformance_detail(detail, size, "%s%lld", i ? "," : "", (long long)have_shape[i]);
    conformance_detail(detail, size, "), JAX (");
    for (size_t i = 0; i < want_ndim; ++i)
      conformance_detail(detail, size, "%s%lld", i ? "," : "", (long long)want_shape[i]);
    conformance_detail(detail, size, ")\n");
    return 0;
  }
  size_t want_len, nbytes;
  unsigned char *want = conformance_hex(ref, &want_len, name);
  assert_ok(spmd_array_nbytes(got, &nbytes));
  unsigned char *have = malloc(nbytes ? nbytes : 1);
  assert_non_null(have);
  assert_ok(spmd_array_to_host(got, have, nbytes));
  int ok = want_len == nbytes;
  if (!ok) conformance_detail(detail, size, "  %zu bytes, JAX %zu\n", nbytes, want_len);
  const size_t esize = spmd_dtype_size(dtype);
  for (size_t i = 0; ok && i < nbytes / esize; ++i) {
    if (memcmp(have + i * esize, want + i * esize, esize) == 0) continue;
    conformance_detail(detail, size, "  element %zu: libspmd bytes ", i);
    for (size_t b = 0; b < esize; ++b)
      conformance_detail(detail, size, "%02x", have[i * esize + b]);
    conformance_detail(detail, size, ", JAX ");
    for (size_t b = 0; b < esize; ++b)
      conformance_detail(detail, size, "%02x", want[i * esize + b]);
    if (is_float(dtype))
      conformance_detail(detail, size, " (%.9g vs %.9g)", float_at(have, dtype, i),
                         float_at(want, dtype, i));
    conformance_detail(detail, size, "\n");
    ok = 0;
  }
  free(want);
  free(have);
  return ok;
}

static void check_case(conformance_tally *tally, const conformance_meshes *meshes,
                       const json_value *c) {
  const char *name = json_string(conformance_member(c, "name", "collectives case"));
  if (name == NULL) fail_msg("collectives: a case name is not a string");
  spmd_mesh *mesh =
      conformance_meshes_find(meshes, json_string(conformance_member(c, "mesh", name)), name);
  coll_op op;
  read_op(c, name, &op);
  spmd_spec *in_spec = conformance_spec(conformance_member(c, "in_spec", name), name);
  spmd_spec *out_spec = conformance_spec(conformance_member(c, "out_spec", name), name);
  const json_value *input = conformance_member(c, "input", name);
  const json_value *refusal = json_get(c, "error");

  int64_t shape[SPMD_MAX_NDIM];
  const size_t ndim =
      conformance_ints(conformance_member(input, "shape", name), shape, SPMD_MAX_NDIM, name);
  const spmd_dtype dtype =
      dtype_named(json_string(conformance_member(input, "dtype", name)), name);
  size_t len;
  unsigned char *bytes = conformance_hex(input, &len, name);
  spmd_sharding *sharding = NULL;
  assert_ok(spmd_sharding_named(mesh, in_spec, &sharding));
  spmd_array *x = NULL;
  assert_ok(spmd_array_from_host(sharding, dtype, ndim, shape, bytes, len, &x));
  free(bytes);

  char detail[2048] = "";
  spmd_array *out = NULL;
  const spmd_spec *in_specs[1] = {in_spec}, *out_specs[1] = {out_spec};
  spmd_array *inputs[1] = {x};
  const spmd_status s = spmd_shard_map(mesh, apply_op, &op, 1, inputs, in_specs, 1, out_specs,
                                       NULL, &out);
  int agreed;
  if (refusal != NULL) {
    /* JAX refuses the call: libspmd must refuse it too. */
    agreed = s == SPMD_ERR_INVALID_ARGUMENT;
    conformance_detail(detail, sizeof detail, "  JAX: %s\n  libspmd: %s%s%s\n",
                       json_string(refusal), spmd_status_string(s), s != SPMD_OK ? ": " : "",
                       s != SPMD_OK ? spmd_last_error() : "");
  } else if (s != SPMD_OK) {
    conformance_detail(detail, sizeof detail, "  spmd_shard_map: %s: %s\n",
                       spmd_status_string(s), spmd_last_error());
    agreed = 0;
  } else {
    /* Where libspmd deliberately answers differently, its own rule is
     * checked instead (docs/differences.md); the rule's answer was also
     * computed by JAX, through the equivalent program. */
    const json_value *rule = json_get(c, "libspmd_rule");
    const json_value *want = rule != NULL ? conformance_member(rule, "output", name)
                                          : conformance_member(c, "output", name);
    agreed = output_agrees(out, want, name, detail, sizeof detail);
  }
  conformance_record(tally, name, agreed, detail[0] && !agreed ? detail : NULL);
  spmd_array_destroy(out);
  spmd_array_destroy(x);
  spmd_sharding_destroy(sharding);
  spmd_spec_destroy(in_spec);
  spmd_spec_destroy(out_spec);
}

void conformance_collectives(conformance_tally *tally) {
  conformance_file f;
  conformance_file_open(&f, "collectives");
  for (size_t i = 0; i < json_count(f.cases); ++i) check_case(tally, &f.meshes, json_at(f.cases, i));
  conformance_file_close(&f);
}
