/* Family "propagation": each global op run on the inputs and shardings JAX
 * was given under jax.jit; the result must have the sharding JAX chose and
 * JAX's values (bit for bit, or within the case's ulps for floats). After
 * the cases, the largest disagreement in ulps seen per op is printed: the
 * measured accuracy docs/compute.md quotes. */
#define SPMD_EXPERIMENTAL /* programs: the cases run again as programs of one op */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_cases.h"
#include "spmd_test.h"
#include "spmd/experimental/program.h"

static spmd_dtype dtype_of(const char *name) {
  spmd_dtype d = SPMD_DTYPE_INVALID;
  assert_ok(spmd_dtype_from_name(name, &d));
  return d;
}

static spmd_array *input_array(spmd_mesh *mesh, const json_value *in, const char *where) {
  const json_value *array = conformance_member(in, "array", where);
  int64_t shape[SPMD_MAX_NDIM];
  const size_t nd = conformance_ints(conformance_member(array, "shape", where), shape,
                                     SPMD_MAX_NDIM, where);
  size_t len = 0;
  unsigned char *bytes = conformance_hex(array, &len, where);
  spmd_sharding *s = conformance_sharding(mesh, conformance_member(in, "spec", where), where);
  spmd_array *a = NULL;
  assert_ok(spmd_array_from_host(s, dtype_of(json_string(conformance_member(array, "dtype", where))),
                                 nd, shape, bytes, len, &a));
  spmd_sharding_destroy(s);
  free(bytes);
  return a;
}

static int op_code(const char *name, const char *const *names, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (strcmp(names[i], name) == 0) return (int)i + 1;
  fail_msg("propagation: unknown op '%s'", name);
  return 0;
}

static const char *const unary_names[] = {"neg",  "abs",  "exp",      "log",       "sin",
                                          "cos",  "tanh", "sqrt",     "rsqrt",     "relu",
                                          "logistic", "gelu_tanh", "gelu_exact"};
static const char *const binary_names[] = {"add", "sub", "mul", "div", "max", "min", "pow",
                                           "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
static const char *const reduce_names[] = {"sum", "mean", "max", "min"};

#define COUNT(a) (sizeof(a) / sizeof *(a))

static size_t ints_of(const json_value *v, int64_t *out, const char *where) {
  if (v == NULL || v->type == JSON_NULL) return 0;
  return conformance_ints(v, out, SPMD_MAX_NDIM, where);
}

/* Runs the case's op; returns its status. */
static spmd_status run_op(const char *op, const json_value *params, spmd_array **in, size_t n_in,
                          const spmd_op_options *o, spmd_array **out, const char *where) {
  int64_t a[SPMD_MAX_NDIM], b[SPMD_MAX_NDIM];
  if (strcmp(op, "unary") == 0) {
    const char *name = json_string(conformance_member(params, "op", where));
    const char *prelude = json_string(json_get(params, "prelude"));
    spmd_array *x = in[0], *t = NULL, *u = NULL;
    spmd_status st = SPMD_OK;
    if (prelude != NULL) { /* jnp.abs(u) (+ 1), as the reference's function */
      st = spmd_unary(SPMD_UNARY_ABS, x, NULL, &t);
      if (st == SPMD_OK && strcmp(prelude, "abs_plus_1") == 0) {
        st = spmd_binary_scalar(SPMD_BINARY_ADD, t, 1.0, NULL, &u);
        spmd_array_destroy(t);
        t = u;
      }
      x = t;
    }
    if (st == SPMD_OK)
      st = spmd_unary((spmd_unary_op)op_code(name, unary_names, COUNT(unary_names)), x, o, out);
    spmd_array_destroy(t);
    return st;
  }
  if (strcmp(op, "astype") == 0)
    return spmd_astype(in[0], dtype_of(json_string(conformance_member(params, "dtype", where))), o,
                       out);
  if (strcmp(op, "binary") == 0) {
    const char *name = json_string(conformance_member(params, "op", where));
    if (strcmp(name, "pow") == 0) { /* jnp.power(jnp.abs(u), v) */
      spmd_array *t = NULL;
      spmd_status st = spmd_unary(SPMD_UNARY_ABS, in[0], NULL, &t);
      if (st == SPMD_OK) st = spmd_binary(SPMD_BINARY_POW, t, in[1], o, out);
      spmd_array_destroy(t);
      return st;
    }
    return spmd_binary((spmd_binary_op)op_code(name, binary_names, COUNT(binary_names)), in[0], in[1], o, out);
  }
  if (strcmp(op, "binary_scalar") == 0) {
    const spmd_binary_op b_op = (spmd_binary_op)op_code(
        json_string(conformance_member(params, "op", where)), binary_names, COUNT(binary_names));
    const double s = conformance_member(params, "scalar", where)->number;
    return conformance_member(params, "scalar_first", where)->boolean
               ? spmd_scalar_binary(b_op, s, in[0], o, out)
               : spmd_binary_scalar(b_op, in[0], s, o, out);
  }
  if (strcmp(op, "where") == 0) return spmd_where(in[0], in[1], in[2], o, out);
  if (strcmp(op, "reduce") == 0) {
    const json_value *axes = conformance_member(params, "axes", where);
    const size_t n = ints_of(axes, a, where);
    return spmd_reduce((spmd_reduce_op)op_code(json_string(conformance_member(params, "op", where)),
                                               reduce_names, COUNT(reduce_names)),
                       in[0], n, axes->type == JSON_NULL ? NULL : a,
                       conformance_member(params, "keepdims", where)->boolean, o, out);
  }
  if (strcmp(op, "argmax") == 0)
    return spmd_argmax(in[0], json_int(conformance_member(params, "axis", where), 0), o, out);
  if (strcmp(op, "argmin") == 0)
    return spmd_argmin(in[0], json_int(conformance_member(params, "axis", where), 0), o, out);
  if (strcmp(op, "cumsum") == 0)
    return spmd_cumsum(in[0], json_int(conformance_member(params, "axis", where), 0), o, out);
  if (strcmp(op, "take") == 0)
    return spmd_take(in[0], in[1], json_int(conformance_member(params, "axis", where), 0), o, out);
  if (strcmp(op, "scatter_add") == 0)
    return spmd_scatter_add(in[0], in[1], in[2], json_int(conformance_member(params, "axis", where), 0),
                            o, out);
  if (strcmp(op, "one_hot") == 0)
    return spmd_one_hot(in[0], json_int(conformance_member(params, "num_classes", where), 0),
                        json_int(conformance_member(params, "axis", where), 0),
                        dtype_of(json_string(conformance_member(params, "dtype", where))), o, out);
  if (strcmp(op, "softmax") == 0)
    return spmd_softmax(in[0], json_int(conformance_member(params, "axis", where), 0),
                        conformance_member(params, "log", where)->boolean, o, out);
  if (strcmp(op, "matmul") == 0) return spmd_matmul(in[0], in[1], o, out);
  if (strcmp(op, "einsum_n") == 0)
    return spmd_einsum_n(json_string(conformance_member(params, "subscripts", where)), n_in,
                         (const spmd_array *const *)in, o, out);
  if (strcmp(op, "einsum") == 0)
    return spmd_einsum(json_string(conformance_member(params, "subscripts", where)), in[0], in[1],
                       o, out);
  if (strcmp(op, "transpose") == 0) {
    const size_t n = ints_of(json_get(params, "perm"), a, where);
    return spmd_transpose(in[0], n, n ? a : NULL, o, out);
  }
  if (strcmp(op, "reshape") == 0 || strcmp(op, "broadcast_to") == 0) {
    const size_t n = ints_of(conformance_member(params, "shape", where), a, where);
    return op[0] == 'r' ? spmd_reshape(in[0], n, a, o, out) : spmd_broadcast_to(in[0], n, a, o, out);
  }
  if (strcmp(op, "slice") == 0) {
    const size_t n = ints_of(conformance_member(params, "start", where), a, where);
    ints_of(conformance_member(params, "stop", where), b, where);
    return spmd_slice(in[0], n, a, b, o, out);
  }
  if (strcmp(op, "slice_strided") == 0) {
    int64_t c[SPMD_MAX_NDIM];
    const size_t n = ints_of(conformance_member(params, "start", where), a, where);
    ints_of(conformance_member(params, "stop", where), b, where);
    ints_of(conformance_member(params, "strides", where), c, where);
    return spmd_slice_strided(in[0], n, a, b, c, o, out);
  }
  if (strcmp(op, "dynamic_slice") == 0) {
    const size_t n = ints_of(conformance_member(params, "start", where), a, where);
    ints_of(conformance_member(params, "sizes", where), b, where);
    return spmd_dynamic_slice(in[0], n, a, b, o, out);
  }
  if (strcmp(op, "concatenate") == 0)
    return spmd_concatenate(n_in, (const spmd_array *const *)in,
                            json_int(conformance_member(params, "axis", where), 0), o, out);
  fail_msg("%s: unknown op '%s'", where, op);
  return SPMD_ERR_INTERNAL;
}

/* The distance in ulps of the reference between two float32 values; with
 * `zero_signs`, zeros of two signs are as far apart as any two values can
 * be (1/x tells them apart, and JAX's max and min order them). */
static double ulps_apart(float got, float want, int zero_signs) {
  if (zero_signs && got == 0 && want == 0 && signbit(got) != signbit(want)) return INFINITY;
  if (got == want || (isnan(got) && isnan(want))) return 0;
  if (isnan(got) || isnan(want) || isinf(got) || isinf(want)) return INFINITY;
  const float w = fabsf(want) < 1.17549435e-38f ? 1.17549435e-38f : fabsf(want);
  return fabs((double)got - (double)want) / (double)(nextafterf(w, INFINITY) - w);
}

static double bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* Largest disagreement per op name, for the accuracy table. */
static struct {
  char name[48];
  double ulps;
} worst[64];
static size_t n_worst;

static void note_ulps(const char *name, double u) {
  for (size_t i = 0; i < n_worst; ++i)
    if (strcmp(worst[i].name, name) == 0) {
      if (u > worst[i].ulps) worst[i].ulps = u;
      return;
    }
  if (n_worst < 64) {
    snprintf(worst[n_worst].name, sizeof worst[n_worst].name, "%s", name);
    worst[n_worst++].ulps = u;
  }
}

/* The case's op recorded as a program of its own, over inputs laid out as
 * the case's, compiled and run: a program of one op is placed as jax.jit
 * places that op. */
static spmd_status run_as_program(spmd_runtime *rt, const char *op, const json_value *params,
                                  spmd_array **in, size_t n_in, const spmd_op_options *o,
                                  spmd_array **out, const char *where) {
  spmd_x_program *p = NULL;
  spmd_array *v[4] = {NULL, NULL, NULL, NULL}, *r = NULL;
  assert_ok(spmd_x_program_create(rt, &p));
  for (size_t i = 0; i < n_in && i < 4; ++i) {
    spmd_sharding *s = NULL;
    spmd_dtype dt;
    int64_t shape[SPMD_MAX_NDIM];
    size_t nd = 0;
    assert_ok(spmd_array_sharding(in[i], &s));
    assert_ok(spmd_array_dtype(in[i], &dt));
    assert_ok(spmd_array_shape(in[i], SPMD_MAX_NDIM, shape, &nd));
    assert_ok(spmd_x_program_input(p, s, dt, nd, shape, &v[i]));
    spmd_sharding_destroy(s);
  }
  spmd_status st = run_op(op, params, v, n_in, o, &r, where);
  if (st == SPMD_OK) st = spmd_x_program_output(p, r, NULL);
  if (st == SPMD_OK) st = spmd_x_program_compile(p);
  if (st == SPMD_OK) st = spmd_x_program_run(p, n_in, (const spmd_array *const *)in, 1, out);
  spmd_array_destroy(r);
  for (size_t i = 0; i < 4; ++i) spmd_array_destroy(v[i]);
  spmd_x_program_destroy(p);
  return st;
}

void conformance_op_cases(conformance_tally *t, const char *family, int report_ulps) {
  conformance_op_cases_run(t, family, report_ulps, 0);
}

void conformance_op_cases_run(conformance_tally *t, const char *family, int report_ulps,
                              int as_programs) {
  conformance_file f;
  conformance_file_open(&f, family);
  for (size_t k = 0; k < json_count(f.cases); ++k) {
    const json_value *c = json_at(f.cases, k);
    const char *name = json_string(conformance_member(c, "name", family));
    spmd_mesh *mesh = conformance_meshes_find(
        &f.meshes, json_string(conformance_member(c, "mesh", name)), name);
    const json_value *inputs = conformance_member(c, "inputs", name);
    spmd_array *in[4] = {NULL, NULL, NULL, NULL};
    const size_t n_in = json_count(inputs);
    for (size_t i = 0; i < n_in && i < 4; ++i) in[i] = input_array(mesh, json_at(inputs, i), name);
    spmd_op_options o = SPMD_OP_OPTIONS_INIT;
    spmd_sharding *requested = NULL;
    if (json_get(c, "out_spec") != NULL) requested = conformance_sharding(mesh, json_get(c, "out_spec"), name);
    o.out_sharding = requested;
    const char *op = json_string(conformance_member(c, "op", name));
    const json_value *params = conformance_member(c, "params", name);
    spmd_array *out = NULL;
    char detail[1024] = "";
    int ok = 1;
    const spmd_status st = as_programs ? run_as_program(f.runtime, op, params, in, n_in, &o, &out, name)
                                       : run_op(op, params, in, n_in, &o, &out, name);
    if (st != SPMD_OK) {
      conformance_detail(detail, sizeof detail, "  %s\n", spmd_last_error());
      ok = 0;
    }
    const json_value *result = conformance_member(c, "result", name);
    if (ok) {
      /* The sharding JAX chose. */
      ok = conformance_sharding_agrees(out, mesh, conformance_member(result, "spec", name), NULL, detail,
                                       sizeof detail, name);
      /* The values. */
      const json_value *array = conformance_member(result, "array", name);
      const spmd_dtype dt = dtype_of(json_string(conformance_member(array, "dtype", name)));
      spmd_dtype have_dt;
      assert_ok(spmd_array_dtype(out, &have_dt));
      size_t len = 0, nbytes = 0;
      unsigned char *ref = conformance_hex(array, &len, name);
      assert_ok(spmd_array_nbytes(out, &nbytes));
      if (have_dt != dt || nbytes != len) {
        conformance_detail(detail, sizeof detail, "  dtype %s, %zu bytes; JAX: %s, %zu bytes\n",
                           spmd_dtype_name(have_dt), nbytes, spmd_dtype_name(dt), len);
        ok = 0;
      } else {
        unsigned char *have = malloc(len ? len : 1);
        assert_ok(spmd_array_to_host(out, have, len));
        const double allowed = (double)json_int(conformance_member(c, "ulps", name), 0);
        const json_value *atol_v = json_get(c, "atol");
        const double atol = atol_v ? atol_v->number : 0;
        double most = 0, most_abs = 0;
        /* A product's zero takes the sign of the dot strategy XLA's CPU
         * backend picks by shape (a 1x2 @ 2x4 gives -0 where 4x2 @ 2x4
         * gives +0): docs/differences.md. */
        const int zero_signs = strcmp(op, "matmul") != 0 && strncmp(op, "einsum", 6) != 0;
        if (dt == SPMD_F32 || dt == SPMD_BF16 || (dt == SPMD_F16 && (allowed > 0 || atol > 0))) {
          const size_t es = dt == SPMD_F32 ? 4 : 2, n = len / es;
          for (size_t i = 0; i < n; ++i) {
            double u;
            if (dt == SPMD_F32) {
              float g, w;
              memcpy(&g, have + 4 * i, 4);
              memcpy(&w, ref + 4 * i, 4);
              u = ulps_apart(g, w, zero_signs);
              if (fabs((double)g - w) > most_abs) most_abs = fabs((double)g - w);
            } else {
              uint16_t g, w;
              memcpy(&g, have + 2 * i, 2);
              memcpy(&w, ref + 2 * i, 2);
              /* 16-bit ulps: the distance in steps of the type's grid */
              double (*value)(uint16_t) = dt == SPMD_F16 ? f16_value : bf16_value;
              u = g == w                          ? 0
                  : value(g) == 0 && value(w) == 0 ? (zero_signs ? INFINITY : 0)
                                                   : fabs(value(g) - value(w)) /
                                                         fabs(value((uint16_t)(w + 1)) - value(w));
              if (fabs(value(g) - value(w)) > most_abs) most_abs = fabs(value(g) - value(w));
            }
            if (u > most) most = u;
          }
          const char *fn = json_string(json_get(params, "op"));
          char key[48];
          snprintf(key, sizeof key, "%s %s%s%s", op, fn ? fn : "", fn ? " " : "",
                   spmd_dtype_name(dt));
          note_ulps(key, most);
          if (most > allowed && !(atol > 0 && most_abs <= atol)) {
            conformance_detail(detail, sizeof detail,
                               "  values %.3g ulps apart (allowed %g), %.3g apart (allowed %g)\n",
                               most, allowed, most_abs, atol);
            ok = 0;
          }
        } else if (memcmp(have, ref, len) != 0) {
          conformance_detail(detail, sizeof detail, "  values differ (compared bit for bit)\n");
          ok = 0;
        }
        free(have);
      }
      free(ref);
    }
    conformance_record(t, name, ok, detail[0] ? detail : NULL);
    spmd_array_destroy(out);
    spmd_sharding_destroy(requested);
    for (size_t i = 0; i < 4; ++i) spmd_array_destroy(in[i]);
  }
  if (report_ulps) {
    printf("[%s] largest distance from JAX's values, in ulps:\n", family);
    for (size_t i = 0; i < n_worst; ++i) printf("  %-32s %g\n", worst[i].name, worst[i].ulps);
  }
  conformance_file_close(&f);
}

void conformance_propagation(conformance_tally *t) { conformance_op_cases(t, "propagation", 1); }
