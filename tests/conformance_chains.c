/* Family "chains": whole programs placed as jax.jit places them. Each case
 * is a chain of 2-6 ops with layout constraints anywhere, some with
 * reshapes, slices and softmaxes, some with einsums of three operands,
 * some with concatenations and broadcasts, some with arg-max/-min,
 * cumulative sums, one-hot encodings and log-softmaxes, some with gathers,
 * scatters and dynamic slices, some with strided slices
 * (conformance/families/chains.py), recorded as a libspmd program, compiled
 * and run: every value JAX returned must come back in JAX's layout, with
 * JAX's values. Eager ops could not pass: jax.jit also places an op from
 * the constraints that follow it. Then every case of the propagation family
 * runs again as a program of one op, which must place it as the eager op
 * does (and as jax.jit does). */
#define SPMD_EXPERIMENTAL
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_cases.h"
#include "spmd_test.h"
#include "spmd/experimental/program.h"

#define MAX_VALUES 16
#define MAX_INPUTS 16

/* The step's list `key` of integers into `out`: as long as `n` unless n is
 * 0; its length. */
static size_t step_ints(const json_value *step, const char *key, int64_t *out, size_t n, const char *where) {
  const size_t got = conformance_ints(conformance_member(step, key, where), out, SPMD_MAX_NDIM, where);
  if (n != 0 && got != n) fail_msg("%s: the step's '%s' has %zu values, not %zu", where, key, got, n);
  return got;
}

/* One step on value v (program inputs in `inputs`); its status. */
static spmd_status run_step(const json_value *step, spmd_array *v, spmd_array **inputs, size_t n_inputs,
                            spmd_mesh *mesh, spmd_array **out, const char *where) {
  const char *op = json_string(conformance_member(step, "op", where));
  const char *fn = json_string(json_get(step, "fn"));
  const json_value *input = json_get(step, "input");
  spmd_array *w = NULL;
  if (input != NULL) {
    const int64_t k = json_int(input, -1);
    if (k < 0 || (size_t)k >= n_inputs) fail_msg("%s: step input %lld out of range", where, (long long)k);
    w = inputs[k];
  }
  if (strcmp(op, "unary") == 0) {
    const spmd_unary_op u = strcmp(fn, "sin") == 0    ? SPMD_UNARY_SIN
                            : strcmp(fn, "tanh") == 0 ? SPMD_UNARY_TANH
                            : strcmp(fn, "neg") == 0  ? SPMD_UNARY_NEG
                                                      : SPMD_UNARY_ABS;
    return spmd_unary(u, v, NULL, out);
  }
  if (strcmp(op, "scalar") == 0)
    return spmd_binary_scalar(strcmp(fn, "mul") == 0 ? SPMD_BINARY_MUL : SPMD_BINARY_ADD, v,
                              conformance_member(step, "scalar", where)->number, NULL, out);
  if (strcmp(op, "binary") == 0)
    return spmd_binary(strcmp(fn, "mul") == 0 ? SPMD_BINARY_MUL : SPMD_BINARY_ADD, v, w, NULL, out);
  if (strcmp(op, "transpose") == 0) {
    int64_t perm[SPMD_MAX_NDIM];
    const size_t n = step_ints(step, "perm", perm, 0, where);
    return spmd_transpose(v, n, perm, NULL, out);
  }
  if (strcmp(op, "sum") == 0) {
    const int64_t axis = json_int(conformance_member(step, "axis", where), 0);
    return spmd_reduce(SPMD_REDUCE_SUM, v, 1, &axis, 0, NULL, out);
  }
  if (strcmp(op, "matmul") == 0) return spmd_matmul(v, w, NULL, out);
  if (strcmp(op, "einsum") == 0)
    return spmd_einsum(json_string(conformance_member(step, "eq", where)), v, w, NULL, out);
  if (strcmp(op, "einsum3") == 0) {
    int64_t k[2];
    if (conformance_ints(conformance_member(step, "inputs", where), k, 2, where) != 2 || k[0] < 0 ||
        (size_t)k[0] >= n_inputs || k[1] < 0 || (size_t)k[1] >= n_inputs)
      fail_msg("%s: an einsum3 step names two inputs in range", where);
    const spmd_array *xs[3] = {v, inputs[k[0]], inputs[k[1]]};
    return spmd_einsum_n(json_string(conformance_member(step, "eq", where)), 3, xs, NULL, out);
  }
  if (strcmp(op, "concat") == 0) {
    const spmd_array *xs[2] = {v, w};
    return spmd_concatenate(2, xs, json_int(conformance_member(step, "axis", where), 0), NULL, out);
  }
  if (strcmp(op, "broadcast") == 0) {
    int64_t shape[SPMD_MAX_NDIM];
    const size_t n = step_ints(step, "shape", shape, 0, where);
    return spmd_broadcast_to(v, n, shape, NULL, out);
  }
  if (strcmp(op, "reshape") == 0) {
    int64_t shape[SPMD_MAX_NDIM];
    const size_t n = step_ints(step, "shape", shape, 0, where);
    return spmd_reshape(v, n, shape, NULL, out);
  }
  if (strcmp(op, "slice") == 0) {
    int64_t start[SPMD_MAX_NDIM], limit[SPMD_MAX_NDIM];
    const size_t n = step_ints(step, "start", start, 0, where);
    step_ints(step, "limit", limit, n, where);
    return spmd_slice(v, n, start, limit, NULL, out);
  }
  if (strcmp(op, "softmax") == 0 || strcmp(op, "log_softmax") == 0)
    return spmd_softmax(v, json_int(conformance_member(step, "axis", where), 0), strcmp(op, "log_softmax") == 0,
                        NULL, out);
  if (strcmp(op, "argmax") == 0) {
    const int64_t axis = json_int(conformance_member(step, "axis", where), 0);
    return strcmp(fn, "argmin") == 0 ? spmd_argmin(v, axis, NULL, out) : spmd_argmax(v, axis, NULL, out);
  }
  if (strcmp(op, "one_hot") == 0)
    return spmd_one_hot(v, json_int(conformance_member(step, "classes", where), 0), -1, SPMD_F32, NULL, out);
  if (strcmp(op, "take") == 0) return spmd_take(v, w, json_int(conformance_member(step, "axis", where), 0), NULL, out);
  if (strcmp(op, "take_from") == 0) return spmd_take(w, v, 0, NULL, out);
  if (strcmp(op, "scatter_add") == 0) {
    const int64_t k = json_int(conformance_member(step, "indices", where), -1);
    const int64_t l = json_int(conformance_member(step, "updates", where), -1);
    if (k < 0 || (size_t)k >= n_inputs || l < 0 || (size_t)l >= n_inputs)
      fail_msg("%s: a scatter_add step names two inputs in range", where);
    return spmd_scatter_add(v, inputs[k], inputs[l], json_int(conformance_member(step, "axis", where), 0), NULL,
                            out);
  }
  if (strcmp(op, "slice_strided") == 0) {
    int64_t start[SPMD_MAX_NDIM], limit[SPMD_MAX_NDIM], strides[SPMD_MAX_NDIM];
    const size_t n = step_ints(step, "start", start, 0, where);
    step_ints(step, "limit", limit, n, where);
    step_ints(step, "strides", strides, n, where);
    return spmd_slice_strided(v, n, start, limit, strides, NULL, out);
  }
  if (strcmp(op, "dynamic_slice") == 0) {
    int64_t start[SPMD_MAX_NDIM], sizes[SPMD_MAX_NDIM];
    const size_t n = step_ints(step, "start", start, 0, where);
    step_ints(step, "sizes", sizes, n, where);
    return spmd_dynamic_slice(v, n, start, sizes, NULL, out);
  }
  if (strcmp(op, "cumsum") == 0)
    return spmd_cumsum(v, json_int(conformance_member(step, "axis", where), 0), NULL, out);
  if (strcmp(op, "constraint") == 0) {
    spmd_sharding *c = conformance_sharding(mesh, conformance_member(step, "spec", where), where);
    const spmd_status st = spmd_array_reshard(v, c, out);
    spmd_sharding_destroy(c);
    return st;
  }
  fail_msg("%s: unknown step '%s'", where, op);
  return SPMD_ERR_INVALID_ARGUMENT;
}

static int close_to(float have, float want, double rtol, double atol) {
  return fabs((double)have - want) <= atol + rtol * fabs((double)want);
}

/* Whether `out` has the reference output's layout and values. */
static int output_agrees(spmd_mesh *mesh, spmd_array *out, const json_value *ref, double rtol, double atol,
                         char *detail, size_t size, const char *where) {
  int ok = conformance_sharding_agrees(out, mesh, conformance_member(ref, "spec", where), where, detail,
                                       size, where);
  size_t len = 0, nbytes = 0;
  const json_value *array = conformance_member(ref, "array", where);
  unsigned char *bytes = conformance_hex(array, &len, where);
  /* float32 values, or int32 ones (arg-max/-min indices and their sums),
   * which must agree exactly. */
  const int ints = strcmp(json_string(conformance_member(array, "dtype", where)), "int32") == 0;
  spmd_dtype dtype = SPMD_DTYPE_INVALID;
  assert_ok(spmd_array_dtype(out, &dtype));
  assert_ok(spmd_array_nbytes(out, &nbytes));
  if (dtype != (ints ? SPMD_I32 : SPMD_F32)) {
    conformance_detail(detail, size, "  %s: dtype %d; JAX: %s\n", where, (int)dtype,
                       json_string(conformance_member(array, "dtype", where)));
    ok = 0;
  } else if (nbytes != len) {
    conformance_detail(detail, size, "  %s: %zu bytes; JAX: %zu\n", where, nbytes, len);
    ok = 0;
  } else if (ints) {
    int32_t *have = malloc(len ? len : 1), *w = malloc(len ? len : 1);
    assert_ok(spmd_array_to_host(out, have, len));
    memcpy(w, bytes, len);
    for (size_t i = 0; i < len / 4; ++i)
      if (have[i] != w[i]) {
        conformance_detail(detail, size, "  %s: element %zu is %d; JAX: %d\n", where, i, (int)have[i], (int)w[i]);
        ok = 0;
        break;
      }
    free(have);
    free(w);
  } else {
    float *have = malloc(len ? len : 1), *w = malloc(len ? len : 1);
    assert_ok(spmd_array_to_host(out, have, len));
    memcpy(w, bytes, len);
    /* Where JAX's own rounding of a cancelling sum is large, the case also
     * holds the exact values: another summation order may land on their
     * other side, as near to them as JAX is. */
    const json_value *exact_ref = json_get(ref, "exact");
    size_t exact_len = 0;
    unsigned char *exact = exact_ref ? conformance_hex(exact_ref, &exact_len, where) : NULL;
    if (exact && exact_len != len) fail_msg("%s: the exact values have %zu bytes, not %zu", where, exact_len, len);
    for (size_t i = 0; i < len / 4; ++i) {
      float e = 0.0f;
      if (exact) memcpy(&e, exact + 4 * i, 4);
      if (!close_to(have[i], w[i], rtol, atol) && !(exact && close_to(have[i], e, rtol, atol))) {
        conformance_detail(detail, size, "  %s: element %zu is %.9g; JAX: %.9g\n", where, i, have[i], w[i]);
        ok = 0;
        break;
      }
    }
    free(exact);
    free(have);
    free(w);
  }
  free(bytes);
  return ok;
}

static void chain_case(conformance_file *f, const json_value *c, conformance_tally *t) {
  const char *name = json_string(conformance_member(c, "name", "chains"));
  spmd_mesh *mesh = conformance_meshes_find(&f->meshes, json_string(conformance_member(c, "mesh", name)), name);
  const json_value *inputs = conformance_member(c, "inputs", name);
  const json_value *steps = conformance_member(c, "steps", name);
  const json_value *outputs = conformance_member(c, "outputs", name);
  const size_t n_in = json_count(inputs), n_steps = json_count(steps), n_out = json_count(outputs);
  if (n_in > MAX_INPUTS || n_steps + 1 > MAX_VALUES || n_out > MAX_VALUES)
    fail_msg("%s: too many inputs, steps or outputs", name);
  spmd_array *in[MAX_INPUTS] = {NULL}, *v[MAX_INPUTS] = {NULL}, *values[MAX_VALUES] = {NULL};
  spmd_array *outs[MAX_VALUES] = {NULL};
  spmd_x_program *p = NULL;
  char detail[2048] = "";
  assert_ok(spmd_x_program_create(f->runtime, &p));
  for (size_t i = 0; i < n_in; ++i) {
    const json_value *input = json_at(inputs, i);
    const json_value *array = conformance_member(input, "array", name);
    int64_t shape[SPMD_MAX_NDIM];
    const size_t nd = conformance_ints(conformance_member(array, "shape", name), shape, SPMD_MAX_NDIM, name);
    size_t len = 0;
    unsigned char *bytes = conformance_hex(array, &len, name);
    spmd_sharding *s = conformance_sharding(mesh, conformance_member(input, "spec", name), name);
    spmd_dtype dt = SPMD_DTYPE_INVALID;  /* float32, or int32 indices */
    assert_ok(spmd_dtype_from_name(json_string(conformance_member(array, "dtype", name)), &dt));
    assert_ok(spmd_array_from_host(s, dt, nd, shape, bytes, len, &in[i]));
    assert_ok(spmd_x_program_input(p, s, dt, nd, shape, &v[i]));
    spmd_sharding_destroy(s);
    free(bytes);
  }
  spmd_status st = SPMD_OK;
  values[0] = v[0];
  for (size_t k = 0; k < n_steps && st == SPMD_OK; ++k)
    st = run_step(json_at(steps, k), values[k], v, n_in, mesh, &values[k + 1], name);
  /* The last output's asked layout, where the case has one. */
  spmd_sharding *asked = json_get(c, "out_spec") ? conformance_sharding(mesh, json_get(c, "out_spec"), name) : NULL;
  for (size_t k = 0; k < n_out && st == SPMD_OK; ++k) {
    const int64_t value = json_int(conformance_member(json_at(outputs, k), "value", name), -1);
    if (value < 0 || (size_t)value > n_steps) fail_msg("%s: output value out of range", name);
    st = spmd_x_program_output(p, values[value], k + 1 == n_out ? asked : NULL);
  }
  spmd_sharding_destroy(asked);
  if (st == SPMD_OK) st = spmd_x_program_compile(p);
  if (st == SPMD_OK) st = spmd_x_program_run(p, n_in, (const spmd_array *const *)in, n_out, outs);
  int ok = st == SPMD_OK;
  if (!ok) conformance_detail(detail, sizeof detail, "  %s\n", spmd_last_error());
  const double rtol = conformance_member(c, "rtol", name)->number;
  const double atol = conformance_member(c, "atol", name)->number;
  for (size_t k = 0; k < n_out && ok; ++k) {
    char where[64];
    snprintf(where, sizeof where, "output %zu", k);
    ok &= output_agrees(mesh, outs[k], json_at(outputs, k), rtol, atol, detail, sizeof detail, where);
  }
  if (!ok) {
    char *text = NULL;
    if (spmd_x_program_text(p, &text) == SPMD_OK) conformance_detail(detail, sizeof detail, "%s", text);
    spmd_string_free(text);
  }
  conformance_record(t, name, ok, detail[0] ? detail : NULL);
  for (size_t k = 0; k < n_out; ++k) spmd_array_destroy(outs[k]);
  for (size_t k = 1; k <= n_steps; ++k) spmd_array_destroy(values[k]);
  for (size_t i = 0; i < n_in; ++i) {
    spmd_array_destroy(v[i]);
    spmd_array_destroy(in[i]);
  }
  spmd_x_program_destroy(p);
}

void conformance_chains(conformance_tally *t) {
  conformance_file f;
  conformance_file_open(&f, "chains");
  for (size_t k = 0; k < json_count(f.cases); ++k) chain_case(&f, json_at(f.cases, k), t);
  conformance_file_close(&f);
  conformance_op_cases_run(t, "propagation", 0, 1);
}
