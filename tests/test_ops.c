/* Global ops on sharded arrays: values, and the sharding each propagation
 * rule gives (docs/compute.md), with JAX's answers under jax.jit on a 2x4
 * mesh ('x', 'y') as the expected shardings; and every bad input. */
#include "spmd_test.h"
#include "spmd/dlpack.h"

#include <math.h>
#include <stdlib.h>

static spmd_mesh *mesh;  /* 2 x 4: 'x', 'y' */
static float a64[64], b64[64], v8[8];

static int setup(void **state) {
  suite_setup(state);
  int64_t s[2] = {2, 4};
  mesh = test_mesh(suite_rt, 2, s);
  for (int i = 0; i < 64; ++i) {
    a64[i] = (float)i;
    b64[i] = (float)(i % 7) - 3.0f;
  }
  for (int i = 0; i < 8; ++i) v8[i] = (float)(10 * i);
  return 0;
}

static int teardown(void **state) {
  spmd_mesh_destroy(mesh);
  return suite_teardown(state);
}

static const int64_t S88[2] = {8, 8}, S8[1] = {8};

static spmd_array *put88(const char *spec, const float *data) {
  return test_put(mesh, spec, SPMD_F32, 2, S88, data);
}

/* The array's sharding is NamedSharding(mesh, P(spec)) (JAX's ==). */
static void assert_sharding(const spmd_array *a, const char *spec) {
  spmd_sharding *got = NULL, *want = test_sharding(mesh, spec);
  assert_ok(spmd_array_sharding(a, &got));
  int eq = 0;
  assert_ok(spmd_sharding_equal(got, want, &eq));
  if (!eq) {
    char *s = NULL;
    assert_ok(spmd_sharding_to_string(got, &s));
    fail_msg("sharding %s, expected P(%s)", s, spec);
  }
  spmd_sharding_destroy(got);
  spmd_sharding_destroy(want);
}

static void host_f32(const spmd_array *a, float *out, size_t n) {
  assert_ok(spmd_array_to_host(a, out, n * sizeof(float)));
}

static void assert_close(const float *got, const double *want, size_t n, double rtol,
                         const char *what) {
  for (size_t i = 0; i < n; ++i) {
    const double tol = rtol * fabs(want[i]) + 1e-6;
    if (!(fabs(got[i] - want[i]) <= tol))
      fail_msg("%s: element %zu is %.9g, expected %.9g", what, i, (double)got[i], want[i]);
  }
}

/* ---- elementwise ---- */

static void elementwise_keeps_a_common_sharding(void **state) {
  (void)state;
  spmd_array *x = put88("x, y", a64), *y = put88("x, y", b64), *z = NULL;
  assert_ok(spmd_binary(SPMD_BINARY_ADD, x, y, NULL, &z));
  assert_sharding(z, "x, y");
  float got[64];
  double want[64];
  host_f32(z, got, 64);
  for (int i = 0; i < 64; ++i) want[i] = (double)a64[i] + b64[i];
  assert_close(got, want, 64, 0, "x + y");
  spmd_array_destroy(z);
  spmd_array_destroy(x);
  spmd_array_destroy(y);
}

/* f_elementwise of the introduction notebook: 2 * sin(x) + 1, three calls. */
static void two_sin_x_plus_one_keeps_the_sharding(void **state) {
  (void)state;
  spmd_array *x = put88("x, y", a64), *s = NULL, *t = NULL, *u = NULL;
  assert_ok(spmd_unary(SPMD_UNARY_SIN, x, NULL, &s));
  assert_ok(spmd_scalar_binary(SPMD_BINARY_MUL, 2.0, s, NULL, &t));
  assert_ok(spmd_binary_scalar(SPMD_BINARY_ADD, t, 1.0, NULL, &u));
  assert_sharding(u, "x, y");
  float got[64];
  double want[64];
  host_f32(u, got, 64);
  for (int i = 0; i < 64; ++i) want[i] = 2.0 * sin((double)a64[i]) + 1.0;
  assert_close(got, want, 64, 1e-6, "2*sin(x)+1");
  spmd_array_destroy(u);
  spmd_array_destroy(t);
  spmd_array_destroy(s);
  spmd_array_destroy(x);
}

/* Each row: the operands' specs and JAX's result (probed under jax.jit). */
static void conflicting_shardings_meet_as_jax_does(void **state) {
  (void)state;
  static const char *const rows[][3] = {
      {"x, y", "y, x", ""},          {"x, None", "None, x", "x, None"},
      {"x, None", "y, None", ""},    {"x, y", "x, None", "x, y"},
      {"x, None", "(x,y), None", "(x,y), None"},
      {"None, y", "x, None", "x, y"}, {"None, x", "y, None", "y, x"},
      {"", "x, y", "x, y"},
  };
  for (size_t r = 0; r < sizeof rows / sizeof *rows; ++r) {
    spmd_array *x = put88(rows[r][0], a64), *y = put88(rows[r][1], b64), *z = NULL;
    assert_ok(spmd_binary(SPMD_BINARY_MUL, x, y, NULL, &z));
    assert_sharding(z, rows[r][2]);
    float got[64];
    double want[64];
    host_f32(z, got, 64);
    for (int i = 0; i < 64; ++i) want[i] = (double)a64[i] * b64[i];
    assert_close(got, want, 64, 0, rows[r][0]);
    spmd_array_destroy(z);
    spmd_array_destroy(x);
    spmd_array_destroy(y);
  }
}

/* Broadcasting aligns specs from the right; the larger operand wins a
 * conflict (JAX: P('x','y') + v on 'x' -> P('x','y')). */
static void broadcasting_aligns_specs_and_the_larger_operand_wins(void **state) {
  (void)state;
  static const char *const rows[][3] = {
      {"x, y", "y", "x, y"}, {"x, y", "x", "x, y"}, {"None, y", "x", "None, y"},
      {"", "y", "None, y"},
  };
  for (size_t r = 0; r < sizeof rows / sizeof *rows; ++r) {
    spmd_array *x = put88(rows[r][0], a64);
    spmd_array *v = test_put(mesh, rows[r][1], SPMD_F32, 1, S8, v8), *z = NULL;
    assert_ok(spmd_binary(SPMD_BINARY_SUB, v, x, NULL, &z));
    assert_sharding(z, rows[r][2]);
    float got[64];
    double want[64];
    host_f32(z, got, 64);
    for (int i = 0; i < 64; ++i) want[i] = (double)v8[i % 8] - a64[i];
    assert_close(got, want, 64, 0, rows[r][0]);
    spmd_array_destroy(z);
    spmd_array_destroy(x);
    spmd_array_destroy(v);
  }
}

static void unary_functions_agree_with_libm(void **state) {
  (void)state;
  float in[64];
  for (int i = 0; i < 64; ++i) in[i] = (float)(i - 32) / 8.0f;
  spmd_array *x = put88("x, y", in);
  static const spmd_unary_op ops[] = {SPMD_UNARY_NEG, SPMD_UNARY_ABS, SPMD_UNARY_EXP,
                                      SPMD_UNARY_SIN, SPMD_UNARY_COS, SPMD_UNARY_TANH,
                                      SPMD_UNARY_RELU, SPMD_UNARY_LOGISTIC,
                                      SPMD_UNARY_GELU_TANH, SPMD_UNARY_GELU_EXACT};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; ++k) {
    spmd_array *y = NULL;
    assert_ok(spmd_unary(ops[k], x, NULL, &y));
    assert_sharding(y, "x, y");
    float got[64];
    double want[64];
    host_f32(y, got, 64);
    for (int i = 0; i < 64; ++i) {
      const double v = in[i];
      switch (ops[k]) {
        case SPMD_UNARY_NEG: want[i] = -v; break;
        case SPMD_UNARY_ABS: want[i] = fabs(v); break;
        case SPMD_UNARY_EXP: want[i] = exp(v); break;
        case SPMD_UNARY_SIN: want[i] = sin(v); break;
        case SPMD_UNARY_COS: want[i] = cos(v); break;
        case SPMD_UNARY_TANH: want[i] = tanh(v); break;
        case SPMD_UNARY_RELU: want[i] = v > 0 ? v : 0; break;
        case SPMD_UNARY_LOGISTIC: want[i] = 1 / (1 + exp(-v)); break;
        case SPMD_UNARY_GELU_TANH:
          want[i] = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
          break;
        default: want[i] = 0.5 * v * erfc(-v / sqrt(2)); break;
      }
    }
    assert_close(got, want, 64, 4e-6, "unary");
    spmd_array_destroy(y);
  }
  spmd_array *p = NULL, *l = NULL, *s = NULL;
  assert_ok(spmd_unary(SPMD_UNARY_ABS, x, NULL, &p));
  assert_ok(spmd_unary(SPMD_UNARY_LOG, p, NULL, &l));
  assert_ok(spmd_unary(SPMD_UNARY_SQRT, p, NULL, &s));
  float gl[64], gs[64];
  host_f32(l, gl, 64);
  host_f32(s, gs, 64);
  for (int i = 0; i < 64; ++i) {
    const double v = fabs((double)in[i]);
    if (v == 0) {
      assert_true(isinf(gl[i]) && gl[i] < 0);
      continue;
    }
    double wl = log(v), ws = sqrt(v);
    assert_close(&gl[i], &wl, 1, 4e-6, "log");
    assert_close(&gs[i], &ws, 1, 1e-7, "sqrt");
  }
  spmd_array_destroy(p);
  spmd_array_destroy(l);
  spmd_array_destroy(s);
  spmd_array_destroy(x);
}

/* JAX's promotion: i32 + f16 -> f16, i32 / i32 -> f32, bool + 1 -> i32,
 * comparisons give bool, where picks per element. */
static void dtypes_promote_as_jax(void **state) {
  (void)state;
  int32_t iv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint16_t hv[8];
  for (int i = 0; i < 8; ++i) hv[i] = 0x3C00; /* 1.0 in f16 */
  spmd_array *i32 = test_put(mesh, "y", SPMD_I32, 1, S8, iv);
  spmd_array *f16 = test_put(mesh, "y", SPMD_F16, 1, S8, hv);
  spmd_array *r = NULL;
  spmd_dtype dt;
  assert_ok(spmd_binary(SPMD_BINARY_ADD, i32, f16, NULL, &r));
  assert_ok(spmd_array_dtype(r, &dt));
  assert_int_equal(dt, SPMD_F16);
  spmd_array_destroy(r);
  assert_ok(spmd_binary(SPMD_BINARY_DIV, i32, i32, NULL, &r));
  assert_ok(spmd_array_dtype(r, &dt));
  assert_int_equal(dt, SPMD_F32);
  spmd_array_destroy(r);
  assert_ok(spmd_binary_scalar(SPMD_BINARY_MUL, i32, 2.5, NULL, &r));
  assert_ok(spmd_array_dtype(r, &dt));
  assert_int_equal(dt, SPMD_F32);
  float f[8];
  host_f32(r, f, 8);
  assert_true(f[3] == 10.0f);
  spmd_array_destroy(r);
  spmd_array *gt = NULL, *w = NULL, *neg = NULL;
  assert_ok(spmd_binary_scalar(SPMD_BINARY_GT, i32, 4, NULL, &gt));
  assert_ok(spmd_array_dtype(gt, &dt));
  assert_int_equal(dt, SPMD_BOOL);
  assert_ok(spmd_unary(SPMD_UNARY_NEG, i32, NULL, &neg));
  assert_ok(spmd_where(gt, i32, neg, NULL, &w));
  int32_t got[8];
  assert_ok(spmd_array_to_host(w, got, sizeof got));
  for (int i = 0; i < 8; ++i) assert_int_equal(got[i], iv[i] > 4 ? iv[i] : -iv[i]);
  assert_ok(spmd_binary_scalar(SPMD_BINARY_ADD, gt, 1, NULL, &r));
  assert_ok(spmd_array_dtype(r, &dt));
  assert_int_equal(dt, SPMD_I32);
  spmd_array_destroy(r);
  assert_fails(spmd_binary_scalar(SPMD_BINARY_ADD, i32, 1e12, NULL, &r),
               SPMD_ERR_INVALID_ARGUMENT, "is outside int32");
  assert_fails(spmd_binary(SPMD_BINARY_SUB, gt, gt, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "not defined for bool");
  uint8_t bytes[8] = {200, 200, 200, 200, 200, 200, 200, 200};
  spmd_array *u8 = test_put(mesh, "y", SPMD_U8, 1, S8, bytes), *sum = NULL;
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, u8, 0, NULL, 0, NULL, &sum));
  assert_ok(spmd_array_dtype(sum, &dt));
  assert_int_equal(dt, SPMD_U32); /* as jnp.sum of uint8 */
  uint32_t total = 0;
  assert_ok(spmd_array_to_host(sum, &total, sizeof total));
  assert_int_equal(total, 1600);
  spmd_array_destroy(sum);
  spmd_array_destroy(u8);
  /* int64 sums wrap as XLA's do, whatever order the kernel adds in. */
  int64_t big[16];
  uint64_t wrapped = 0;
  for (int i = 0; i < 16; ++i) {
    big[i] = INT64_MAX / 2 + i;
    wrapped += (uint64_t)big[i];
  }
  const int64_t S16[1] = {16};
  spmd_array *i64 = test_put(mesh, "", SPMD_I64, 1, S16, big);
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, i64, 0, NULL, 0, NULL, &sum));
  int64_t total64 = 0;
  assert_ok(spmd_array_to_host(sum, &total64, sizeof total64));
  assert_true((uint64_t)total64 == wrapped);
  spmd_array_destroy(sum);
  spmd_array_destroy(i64);
  spmd_array_destroy(w);
  spmd_array_destroy(neg);
  spmd_array_destroy(gt);
  spmd_array_destroy(i32);
  spmd_array_destroy(f16);
}

/* ---- reductions: the notebook's sum(axis=0) and sum(axis=1) ---- */

static void reductions_keep_unreduced_shards_and_psum_reduced_ones(void **state) {
  (void)state;
  spmd_array *x = put88("x, y", a64), *r = NULL;
  /* (axes, keepdims, JAX's spec) */
  struct { int64_t axis; int all; int keep; const char *spec; } rows[] = {
      {0, 0, 0, "y"}, {1, 0, 0, "x"}, {0, 1, 0, ""}, {0, 0, 1, "None, y"}, {-1, 0, 1, "x, None"}};
  for (size_t k = 0; k < sizeof rows / sizeof *rows; ++k) {
    assert_ok(spmd_reduce(SPMD_REDUCE_SUM, x, rows[k].all ? 0 : 1, rows[k].all ? NULL : &rows[k].axis,
                          rows[k].keep, NULL, &r));
    assert_sharding(r, rows[k].spec);
    float got[8];
    int64_t n;
    assert_ok(spmd_array_size(r, &n));
    host_f32(r, got, (size_t)n);
    for (int i = 0; i < n; ++i) {
      double w = 0;
      for (int j = 0; j < 64; ++j) {
        const int row = j / 8, col = j % 8;
        if (rows[k].all || (rows[k].axis == 0 && col == i) || (rows[k].axis != 0 && row == i))
          w += a64[j];
      }
      assert_close(&got[i], &w, 1, 0, "sum");
    }
    spmd_array_destroy(r);
  }
  int64_t ax1 = 1;
  assert_ok(spmd_reduce(SPMD_REDUCE_MAX, x, 1, &ax1, 0, NULL, &r));
  assert_sharding(r, "x");
  float got[8];
  host_f32(r, got, 8);
  for (int i = 0; i < 8; ++i) assert_true(got[i] == (float)(8 * i + 7));
  spmd_array_destroy(r);
  assert_ok(spmd_reduce(SPMD_REDUCE_MEAN, x, 1, &ax1, 0, NULL, &r));
  host_f32(r, got, 8);
  for (int i = 0; i < 8; ++i) assert_true(fabsf(got[i] - (8.0f * i + 3.5f)) < 1e-5f);
  spmd_array_destroy(r);
  assert_ok(spmd_argmax(x, 1, NULL, &r));
  assert_sharding(r, "x");
  int32_t idx[8];
  assert_ok(spmd_array_to_host(r, idx, sizeof idx));
  for (int i = 0; i < 8; ++i) assert_int_equal(idx[i], 7);
  spmd_array_destroy(r);
  assert_ok(spmd_argmin(x, 1, NULL, &r));
  assert_sharding(r, "x");
  assert_ok(spmd_array_to_host(r, idx, sizeof idx));
  for (int i = 0; i < 8; ++i) assert_int_equal(idx[i], 0);
  spmd_array_destroy(r);
  assert_ok(spmd_softmax(x, 1, 0, NULL, &r));
  assert_sharding(r, "x, y"); /* JAX keeps the sharding: pmax and psum */
  float sm[64];
  host_f32(r, sm, 64);
  for (int i = 0; i < 8; ++i) {
    double s = 0;
    for (int j = 0; j < 8; ++j) s += sm[8 * i + j];
    assert_true(fabs(s - 1) < 1e-6);
  }
  spmd_array_destroy(r);
  spmd_array_destroy(x);
}

/* A reduction whose output sharding asks for the summed axis on a result
 * dimension: psum_scatter, same values. */
static void a_requested_sharding_turns_the_psum_into_a_psum_scatter(void **state) {
  (void)state;
  spmd_array *x = put88("y, None", a64), *r = NULL;
  spmd_sharding *want = test_sharding(mesh, "y");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.out_sharding = want;
  int64_t ax0 = 0;
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, x, 1, &ax0, 0, &o, &r));
  assert_sharding(r, "y");
  float got8[8];
  host_f32(r, got8, 8);
  for (int i = 0; i < 8; ++i) assert_true(got8[i] == (float)(8 * 28 + 8 * i));
  spmd_array_destroy(r);
  spmd_sharding_destroy(want);
  /* f_contract_2: the constraint on another mesh over the same devices. */
  int64_t s8[1] = {8};
  const char *names[1] = {"d"};
  spmd_mesh *mesh8 = NULL;
  assert_ok(spmd_mesh_create(suite_rt, 1, s8, names, NULL, &mesh8));
  want = test_sharding(mesh8, "d");
  o.out_sharding = want;
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, x, 1, &ax0, 0, &o, &r));
  spmd_sharding *got = NULL;
  int eq = 0;
  assert_ok(spmd_array_sharding(r, &got));
  assert_ok(spmd_sharding_equal(got, want, &eq));
  assert_true(eq);
  host_f32(r, got8, 8);
  for (int i = 0; i < 8; ++i) assert_true(got8[i] == (float)(8 * 28 + 8 * i));
  spmd_sharding_destroy(got);
  spmd_array_destroy(r);
  spmd_sharding_destroy(want);
  spmd_mesh_destroy(mesh8);
  /* The same devices in another order: jax.jit refuses ("incompatible
   * devices"), and so does the op, leaving `r` untouched. */
  const int reversed[8] = {7, 6, 5, 4, 3, 2, 1, 0};
  assert_ok(spmd_mesh_create(suite_rt, 1, s8, names, reversed, &mesh8));
  want = test_sharding(mesh8, "d");
  o.out_sharding = want;
  r = NULL;
  assert_fails(spmd_reduce(SPMD_REDUCE_SUM, x, 1, &ax0, 0, &o, &r), SPMD_ERR_INVALID_ARGUMENT,
               "options->out_sharding: is on");
  assert_non_null(strstr(spmd_last_error(), "device ids [7, 6, 5, 4, 3, 2, 1, 0]"));
  assert_null(r);
  spmd_sharding_destroy(want);
  spmd_mesh_destroy(mesh8);
  spmd_array_destroy(x);
}

/* ---- contractions ---- */

static void matmul(const float *a, const float *b, double *c) {
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      double s = 0;
      for (int k = 0; k < 8; ++k) s += (double)a[8 * i + k] * b[8 * k + j];
      c[8 * i + j] = s;
    }
}

/* Each row: lhs spec, rhs spec, JAX's result spec (probed). */
static void matmul_shardings_follow_jax(void **state) {
  (void)state;
  static const char *const rows[][3] = {
      {"x, None", "None, y", "x, y"},  {"None, x", "x, None", ""},
      {"x, y", "y, None", "x, None"},  {"x, y", "y, x", "x, None"},
      {"x, None", "", "x, None"},      {"", "None, y", "None, y"},
      {"x, None", "x, None", "x, None"}, {"None, x", "", ""},
      {"y, x", "y, None", "y, None"},
  };
  double want[64];
  matmul(a64, b64, want);
  for (size_t r = 0; r < sizeof rows / sizeof *rows; ++r) {
    spmd_array *x = put88(rows[r][0], a64), *y = put88(rows[r][1], b64), *z = NULL;
    assert_ok(spmd_matmul(x, y, NULL, &z));
    assert_sharding(z, rows[r][2]);
    float got[64];
    host_f32(z, got, 64);
    assert_close(got, want, 64, 1e-6, rows[r][0]);
    spmd_array_destroy(z);
    spmd_array_destroy(x);
    spmd_array_destroy(y);
  }
  /* f_contract_2: the contraction over 'y' asked to land as P('y'): a
   * psum_scatter. */
  spmd_array *x = put88("None, y", a64), *y = put88("y, None", b64), *z = NULL;
  spmd_sharding *s = test_sharding(mesh, "y, None");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.out_sharding = s;
  assert_ok(spmd_matmul(x, y, &o, &z));
  assert_sharding(z, "y");
  float got[64];
  host_f32(z, got, 64);
  assert_close(got, want, 64, 1e-6, "constrained");
  spmd_array_destroy(z);
  spmd_sharding_destroy(s);
  spmd_array_destroy(x);
  spmd_array_destroy(y);
}

static void einsum_patterns_of_the_attention_layer(void **state) {
  (void)state;
  /* bhqd,bhkd->bhqk and btd,df->btf against dot products on the host. */
  int64_t s4[4] = {2, 2, 4, 4};
  float q[64], k[64];
  for (int i = 0; i < 64; ++i) {
    q[i] = (float)(i % 5) - 2;
    k[i] = (float)(i % 3);
  }
  spmd_array *qa = test_put(mesh, "x, None, y", SPMD_F32, 4, s4, q);
  spmd_array *ka = test_put(mesh, "x", SPMD_F32, 4, s4, k), *sa = NULL;
  assert_ok(spmd_einsum("bhqd,bhkd->bhqk", qa, ka, NULL, &sa));
  assert_sharding(sa, "x, None, y");
  float got[64];
  host_f32(sa, got, 64);
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          double w = 0;
          for (int d = 0; d < 4; ++d) w += q[((b * 2 + h) * 4 + i) * 4 + d] * k[((b * 2 + h) * 4 + j) * 4 + d];
          assert_close(&got[((b * 2 + h) * 4 + i) * 4 + j], &w, 1, 1e-6, "bhqk");
        }
  spmd_array *oa = NULL;
  assert_ok(spmd_einsum("bhqk,bhkd->bhqd", sa, ka, NULL, &oa));
  assert_sharding(oa, "x, None, y");
  spmd_array_destroy(oa);
  int64_t s3[3] = {2, 4, 8}, sw[2] = {8, 8};
  spmd_array *t = test_put(mesh, "x", SPMD_F32, 3, s3, a64);
  spmd_array *w = test_put(mesh, "None, y", SPMD_F32, 2, sw, b64), *tf = NULL;
  assert_ok(spmd_einsum("btd,df->btf", t, w, NULL, &tf));
  assert_sharding(tf, "x, None, y");
  float g2[64];
  host_f32(tf, g2, 64);
  for (int r = 0; r < 8; ++r)
    for (int f = 0; f < 8; ++f) {
      double v = 0;
      for (int d = 0; d < 8; ++d) v += (double)a64[8 * r + d] * b64[8 * d + f];
      assert_close(&g2[8 * r + f], &v, 1, 1e-6, "btf");
    }
  spmd_array_destroy(tf);
  spmd_array_destroy(t);
  spmd_array_destroy(w);
  spmd_array_destroy(sa);
  spmd_array_destroy(qa);
  spmd_array_destroy(ka);
}

/* ---- shape ops ---- */

static void transpose_and_reshape_carry_shardings_as_jax(void **state) {
  (void)state;
  spmd_array *x = put88("x, y", a64), *t = NULL, *r = NULL;
  assert_ok(spmd_transpose(x, 0, NULL, NULL, &t));
  assert_sharding(t, "y, x");
  float got[64];
  host_f32(t, got, 64);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) assert_true(got[8 * i + j] == a64[8 * j + i]);
  int64_t flat[1] = {-1}, split[3] = {8, 2, 4}, lead[3] = {2, 4, 8};
  assert_ok(spmd_reshape(x, 1, flat, NULL, &r));
  assert_sharding(r, "x");
  host_f32(r, got, 64);
  for (int i = 0; i < 64; ++i) assert_true(got[i] == a64[i]);
  spmd_array_destroy(r);
  assert_ok(spmd_reshape(x, 3, split, NULL, &r));
  assert_sharding(r, "x");
  host_f32(r, got, 64);
  for (int i = 0; i < 64; ++i) assert_true(got[i] == a64[i]);
  spmd_array_destroy(r);
  spmd_array *x0 = put88("x, None", a64);
  assert_ok(spmd_reshape(x0, 3, lead, NULL, &r));
  assert_sharding(r, "x");
  host_f32(r, got, 64);
  for (int i = 0; i < 64; ++i) assert_true(got[i] == a64[i]);
  spmd_array_destroy(r);
  spmd_array *v = test_put(mesh, "y", SPMD_F32, 1, S8, v8), *bc = NULL;
  assert_ok(spmd_broadcast_to(v, 2, S88, NULL, &bc));
  assert_sharding(bc, "None, y");
  host_f32(bc, got, 64);
  for (int i = 0; i < 64; ++i) assert_true(got[i] == v8[i % 8]);
  spmd_array_destroy(bc);
  spmd_array_destroy(v);
  spmd_array_destroy(x0);
  spmd_array_destroy(t);
  spmd_array_destroy(x);
}

/* A result's dimension keeps the longest prefix of its axes whose product
 * divides it, as jax.jit places results (answers recorded from JAX 0.10.2
 * on this 2 x 4 mesh); a layout the caller asks for stays uneven. */
static void results_drop_the_axes_that_do_not_divide_them(void **state) {
  (void)state;
  float v[128];
  for (int i = 0; i < 128; ++i) v[i] = (float)i;
  const int64_t s168[2] = {16, 8}, zero[2] = {0, 0};
  const struct {
    const char *spec;
    int64_t rows, cols;
    const char *want;
  } cases[] = {
      {"x, y", 8, 6, "x"},         {"x, y", 6, 8, "x, y"},      {"x, y", 7, 8, "None, y"},
      {"(x, y), None", 6, 8, "x"}, {"(x, y), None", 4, 8, "x"}, {"(x, y), None", 12, 8, "x"},
      {"(y, x), None", 4, 8, "y"}, {"(y, x), None", 2, 8, ""},  {"(y, x), None", 6, 8, ""},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    const int tall = strchr(cases[k].spec, '(') != NULL;
    spmd_array *x = test_put(mesh, cases[k].spec, SPMD_F32, 2, tall ? s168 : S88, v);
    const int64_t hi[2] = {cases[k].rows, cases[k].cols};
    spmd_array *r = NULL;
    assert_ok(spmd_slice(x, 2, zero, hi, NULL, &r));
    assert_sharding(r, cases[k].want);
    float got[128];
    host_f32(r, got, (size_t)(hi[0] * hi[1]));
    for (int64_t i = 0; i < hi[0]; ++i)
      for (int64_t j = 0; j < hi[1]; ++j) assert_true(got[i * hi[1] + j] == v[i * 8 + j]);
    spmd_array_destroy(r);
    spmd_array_destroy(x);
  }
  /* concatenate((8, 8) P('x', 'y'), (8, 2) P('x'), axis=1): (8, 10) P('x'). */
  spmd_array *a = put88("x, y", v);
  const int64_t s82[2] = {8, 2};
  spmd_array *b = test_put(mesh, "x", SPMD_F32, 2, s82, v);
  const spmd_array *parts[2] = {a, b};
  spmd_array *c = NULL;
  assert_ok(spmd_concatenate(2, parts, 1, NULL, &c));
  assert_sharding(c, "x");
  spmd_array_destroy(c);
  /* Asked for, the uneven layout stays. */
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  spmd_sharding *want = test_sharding(mesh, "x, y");
  o.out_sharding = want;
  const int64_t hi[2] = {8, 6};
  assert_ok(spmd_slice(a, 2, zero, hi, &o, &c));
  assert_sharding(c, "x, y");
  spmd_array_destroy(c);
  spmd_sharding_destroy(want);
  spmd_array_destroy(b);
  spmd_array_destroy(a);
}

/* Slices keep the operand's spec, less the axes that do not divide their
 * dimension: jax.jit gives x[2:6, 1:8] of P('x', 'y') P('x'), the 7 columns
 * not dividing by 'y' (4). Concatenations merge the operands' splits:
 * P('x', 'y') with P('y', None) along 0 gives P(None, 'y'), as jax.jit. */
static void slice_and_concatenate_keep_the_spec(void **state) {
  (void)state;
  spmd_array *x = put88("x, y", a64), *y = put88("y, None", b64), *s = NULL, *c = NULL;
  const int64_t lo[2] = {2, 1}, hi[2] = {6, 8};
  assert_ok(spmd_slice(x, 2, lo, hi, NULL, &s));
  assert_sharding(s, "x");
  float got[128];
  host_f32(s, got, 28);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 7; ++j) assert_true(got[7 * i + j] == a64[8 * (i + 2) + j + 1]);
  const spmd_array *parts[2] = {x, y};
  assert_ok(spmd_concatenate(2, parts, 0, NULL, &c));
  assert_sharding(c, "None, y");
  host_f32(c, got, 128);
  for (int i = 0; i < 64; ++i) {
    assert_true(got[i] == a64[i]);
    assert_true(got[64 + i] == b64[i]);
  }
  spmd_array_destroy(c);
  assert_ok(spmd_concatenate(2, parts, -1, NULL, &c));
  host_f32(c, got, 128);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j)
      assert_true(got[16 * i + j] == (j < 8 ? a64[8 * i + j] : b64[8 * i + j - 8]));
  spmd_array_destroy(c);
  const int64_t bad[2] = {2, 9};
  assert_fails(spmd_slice(x, 2, lo, bad, NULL, &c), SPMD_ERR_INVALID_ARGUMENT,
               "stop[1]: 9 is out of range for dimension 1 of size 8");
  const int64_t s3[1] = {3};
  float three[3] = {1, 2, 3};
  spmd_array *v3 = test_put(mesh, "", SPMD_F32, 1, s3, three);
  const spmd_array *mixed[2] = {x, v3};
  assert_fails(spmd_concatenate(2, mixed, 0, NULL, &c), SPMD_ERR_INVALID_ARGUMENT,
               "shapes (8, 8) and (3,) differ outside axis 0");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.donate = 1;
  assert_fails(spmd_concatenate(2, parts, 0, &o, &c), SPMD_ERR_INVALID_ARGUMENT,
               "does not take donations");
  spmd_array_destroy(v3);
  spmd_array_destroy(s);
  spmd_array_destroy(x);
  spmd_array_destroy(y);
}

/* Shards of uneven or empty blocks: 5 columns over 8 devices (three hold
 * nothing), a contraction over them, a max and a softmax across them, and
 * a product whose inner dimension is 0 (zeros, as JAX gives). */
static void uneven_and_empty_blocks_compute_like_even_ones(void **state) {
  (void)state;
  int64_t s8[1] = {8};
  const char *names[1] = {"d"};
  spmd_mesh *m8 = NULL;
  assert_ok(spmd_mesh_create(suite_rt, 1, s8, names, NULL, &m8));
  const int64_t sa[2] = {3, 5}, sb[2] = {5, 3};
  float ha[15], hb[15];
  for (int i = 0; i < 15; ++i) ha[i] = hb[i] = (float)i;
  spmd_array *a = test_put(m8, "None, d", SPMD_F32, 2, sa, ha);
  spmd_array *b = test_put(m8, "d, None", SPMD_F32, 2, sb, hb), *c = NULL, *mx = NULL, *sm = NULL;
  assert_ok(spmd_matmul(a, b, NULL, &c));
  float got[15];
  host_f32(c, got, 9);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double w = 0;
      for (int k = 0; k < 5; ++k) w += (double)ha[5 * i + k] * hb[3 * k + j];
      assert_true(got[3 * i + j] == (float)w);
    }
  const int64_t ax1[1] = {1};
  assert_ok(spmd_reduce(SPMD_REDUCE_MAX, a, 1, ax1, 0, NULL, &mx));
  host_f32(mx, got, 3);
  for (int i = 0; i < 3; ++i) assert_true(got[i] == (float)(5 * i + 4));
  assert_ok(spmd_softmax(a, 1, 0, NULL, &sm));
  host_f32(sm, got, 15);
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 5; ++j) s += got[5 * i + j];
    assert_true(fabs(s - 1) < 1e-6);
  }
  const int64_t e1[2] = {8, 0}, e2[2] = {0, 3};
  spmd_array *z1 = test_put(m8, "d", SPMD_F32, 2, e1, NULL), *z2 = test_put(m8, "", SPMD_F32, 2, e2, NULL);
  spmd_array *zz = NULL;
  assert_ok(spmd_matmul(z1, z2, NULL, &zz));
  float zeros[24];
  host_f32(zz, zeros, 24);
  for (int i = 0; i < 24; ++i) assert_true(zeros[i] == 0.0f);
  spmd_array_destroy(zz);
  spmd_array_destroy(z1);
  spmd_array_destroy(z2);
  spmd_array_destroy(sm);
  spmd_array_destroy(mx);
  spmd_array_destroy(c);
  spmd_array_destroy(a);
  spmd_array_destroy(b);
  spmd_mesh_destroy(m8);
}

/* ---- views ---- */

/* Shard 0's memory, or NULL where the platform exports none (sim). */
static const void *shard0_data(const spmd_array *a) {
  DLManagedTensor *t = NULL;
  if (spmd_array_shard_to_dlpack(a, 0, &t) == SPMD_ERR_UNSUPPORTED) return NULL;
  assert_non_null(t);
  const void *p = (const char *)t->dl_tensor.data + t->dl_tensor.byte_offset;
  t->deleter(t);
  return p;
}

static void assert_values(const spmd_array *a, const float *want, float add, const char *what) {
  float got[64];
  host_f32(a, got, 64);
  for (int i = 0; i < 64; ++i)
    if (got[i] != want[i] + add) fail_msg("%s: element %d is %g, want %g", what, i, got[i], want[i] + add);
}

/* A reshape, and a reshard to the layout an array already has, share its
 * blocks (as jax.jit's reshape is a bitcast and jax.device_put to the same
 * sharding returns the same buffers); nothing writes a shared block in
 * place, so each array keeps its values whatever is done to the other: a
 * shard written, a donation. */
static void views_share_blocks_and_keep_their_values(void **state) {
  (void)state;
  const int64_t s3[3] = {8, 2, 4}, s2[2] = {8, 8};
  const float shard[32] = {0};
  spmd_array *x = put88("x", a64), *v = NULL, *r = NULL, *w = NULL, *z = NULL;
  spmd_sharding *named_otherwise = NULL;
  assert_ok(spmd_reshape(x, 3, s3, NULL, &v));
  assert_ptr_equal(shard0_data(x), shard0_data(v));
  assert_ok(spmd_sharding_named_text(mesh, "x, None", &named_otherwise));
  assert_ok(spmd_array_reshard(x, named_otherwise, &r));
  assert_ptr_equal(shard0_data(x), shard0_data(r));

  /* A shard written: the written array's alone (copy on write). */
  assert_ok(spmd_array_shard_write(r, 0, shard, sizeof shard));
  assert_true(shard0_data(x) != shard0_data(r) || shard0_data(x) == NULL);
  assert_values(x, a64, 0, "x after its reshard's shard was written");
  float mixed[64];
  memcpy(mixed, a64, sizeof mixed);
  memset(mixed, 0, 32 * sizeof(float));
  assert_values(r, mixed, 0, "the written reshard");

  /* A view donated: computed into new blocks, x untouched. */
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.donate = 1u;
  assert_ok(spmd_reshape(x, 2, s2, NULL, &w));
  assert_ok(spmd_binary_scalar(SPMD_BINARY_ADD, w, 1.0, &o, &z));
  assert_values(z, a64, 1, "the donated view plus one");
  assert_values(x, a64, 0, "x after its view was donated");
  spmd_array_destroy(z);
  z = NULL;
  /* x donated while its view lives: the view keeps x's values. */
  assert_ok(spmd_binary_scalar(SPMD_BINARY_ADD, x, 2.0, &o, &z));
  assert_values(z, a64, 2, "the donated x plus two");
  float got[64];
  host_f32(v, got, 64);
  for (int i = 0; i < 64; ++i) assert_true(got[i] == a64[i]);
  /* Once alone, an array's blocks are written in place again. */
  spmd_array *z2 = NULL;
  const void *before = shard0_data(z);
  assert_ok(spmd_binary_scalar(SPMD_BINARY_ADD, z, 1.0, &o, &z2));
  assert_ptr_equal(before, shard0_data(z2));
  assert_values(z2, a64, 3, "z plus one, in place");

  spmd_sharding_destroy(named_otherwise);
  spmd_array *all[] = {x, v, r, w, z, z2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) spmd_array_destroy(all[i]);
}

/* ---- donation ---- */

static void a_donated_operand_is_consumed(void **state) {
  (void)state;
  spmd_array *x = put88("x, y", a64), *y = put88("x, y", b64), *z = NULL;
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.donate = 1u;
  assert_ok(spmd_binary(SPMD_BINARY_ADD, x, y, &o, &z));
  float got[64];
  double want[64];
  host_f32(z, got, 64);
  for (int i = 0; i < 64; ++i) want[i] = (double)a64[i] + b64[i];
  assert_close(got, want, 64, 0, "donated add");
  spmd_array *w = NULL;
  assert_fails(spmd_unary(SPMD_UNARY_NEG, x, NULL, &w), SPMD_ERR_INVALID_ARGUMENT,
               "x: was donated to spmd_binary");
  assert_fails(spmd_array_to_host(x, got, sizeof got), SPMD_ERR_INVALID_ARGUMENT, "donated");
  o.donate = 4u;
  assert_fails(spmd_binary(SPMD_BINARY_ADD, y, y, &o, &w), SPMD_ERR_INVALID_ARGUMENT,
               "options->donate: bit 2");
  /* A refused call leaves the operand usable; a donation with an output
   * sharding on another mesh (a reshard after the op) still consumes it
   * and gives the right values. */
  o.donate = 1u;
  int64_t s3[1] = {3};
  float three[3] = {1, 2, 3};
  spmd_array *v3 = test_put(mesh, "", SPMD_F32, 1, s3, three);
  assert_fails(spmd_binary(SPMD_BINARY_ADD, y, v3, &o, &w), SPMD_ERR_INVALID_ARGUMENT,
               "do not broadcast");
  int64_t s8[1] = {8};
  const char *names[1] = {"d"};
  spmd_mesh *m8 = NULL;
  assert_ok(spmd_mesh_create(suite_rt, 1, s8, names, NULL, &m8));
  spmd_sharding *rows = test_sharding(m8, "d");
  o.out_sharding = rows;
  assert_ok(spmd_binary(SPMD_BINARY_ADD, y, z, &o, &w));
  host_f32(w, got, 64);
  for (int i = 0; i < 64; ++i) want[i] = (double)b64[i] + ((double)a64[i] + b64[i]);
  assert_close(got, want, 64, 0, "donated add onto another mesh");
  assert_fails(spmd_array_to_host(y, got, sizeof got), SPMD_ERR_INVALID_ARGUMENT, "donated");
  spmd_array_destroy(w);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(m8);
  spmd_array_destroy(v3);
  spmd_array_destroy(x);
  spmd_array_destroy(y);
  spmd_array_destroy(z);
}

/* ---- bad input ---- */

/* jnp.max and jnp.min along rows of floats, special values among them, as
 * jax.jit gives them on a CPU (asked of JAX 0.10.2): a row with a NaN gives
 * a NaN (one of its own: which payload is not held to JAX's); else the
 * largest / smallest value with subnormals read as zeros of their sign (so
 * returned as those zeros) and -0 below +0. Every width from a partial
 * vector to several, float32 and float64, against that rule worked out
 * here. */
static uint64_t float_bits(const unsigned char *p, size_t es) {
  uint64_t b = 0;
  if (es == 4) {
    uint32_t u;
    memcpy(&u, p, 4);
    b = u;
  } else {
    memcpy(&b, p, 8);
  }
  return b;
}

/* The rule above on one row: the element bits of the result (for a row
 * with NaNs, its last NaN's). */
static uint64_t extreme_of_row(const unsigned char *row, size_t n, size_t es, int max) {
  const uint64_t sign = es == 4 ? 0x80000000u : 0x8000000000000000ull;
  const uint64_t expo = es == 4 ? 0x7f800000u : 0x7ff0000000000000ull;
  int64_t best = 0;
  uint64_t best_bits = 0, nan_bits = 0;
  int nan = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t b = float_bits(row + i * es, es);
    if ((b & ~sign) > expo) {
      nan = 1;
      nan_bits = b;
      continue;
    }
    if ((b & expo) == 0) b &= sign; /* a subnormal is a zero of its sign */
    /* Signed keys in the floats' order, -0 just below +0. */
    const int64_t mag = (int64_t)(b & ~sign);
    const int64_t key = (b & sign) ? -mag - 1 : mag;
    if (i == 0 || (max ? key > best : key < best)) {
      best = key;
      best_bits = b;
    }
  }
  return nan ? nan_bits : best_bits;
}

static void max_and_min_of_rows_follow_xla(void **state) {
  (void)state;
  const int64_t widths[] = {2, 7, 16, 33, 100};
  const double specials[] = {-0.0, 0.0, 1e-40, -1e-40, 1e-310, -1e-310, INFINITY, -INFINITY, NAN};
  const size_t nspecial = sizeof specials / sizeof specials[0];
  for (int f64 = 0; f64 < 2; ++f64)
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; ++w) {
      const int64_t cols = widths[w], shape[2] = {8, cols}, n = 8 * cols, axis = 1;
      const size_t es = f64 ? 8 : 4;
      unsigned char *v = malloc((size_t)n * es), *got = malloc(8 * es);
      for (int64_t r = 0; r < 8; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t i = r * cols + c;
          /* Row 0: ordinary values; rows 1-3: zeros and subnormals alone
           * (their extremes are signed zeros); the rest: specials now and
           * then, NaNs of different payloads among them. */
          double d = sin((double)i * 2.3) * 50.0;
          if (r >= 1 && r <= 3) d = specials[(size_t)(i * 7 + r) % 6];
          else if (r >= 4 && (i % 3 == 1)) d = specials[(size_t)(i / 3 + r) % nspecial];
          if (f64) {
            ((double *)v)[i] = d;
            if (isnan(d)) ((uint64_t *)v)[i] = 0x7ff8000000000000ull | (uint64_t)i;
          } else {
            ((float *)v)[i] = (float)d;
            if (isnan(d)) ((uint32_t *)v)[i] = 0x7fc00000u | (uint32_t)i;
          }
        }
      spmd_array *x = test_put(mesh, "x", f64 ? SPMD_F64 : SPMD_F32, 2, shape, v);
      for (int max = 0; max < 2; ++max) {
        spmd_array *r = NULL;
        assert_ok(spmd_reduce(max ? SPMD_REDUCE_MAX : SPMD_REDUCE_MIN, x, 1, &axis, 0, NULL, &r));
        assert_ok(spmd_array_to_host(r, got, 8 * es));
        for (int64_t row = 0; row < 8; ++row) {
          const uint64_t want = extreme_of_row(v + (size_t)(row * cols) * es, (size_t)cols, es, max);
          const uint64_t have = float_bits(got + (size_t)row * es, es);
          const uint64_t magnitude = f64 ? 0x7fffffffffffffffull : 0x7fffffffu;
          const uint64_t infinity = f64 ? 0x7ff0000000000000ull : 0x7f800000u;
          int among = 0; /* a NaN of this row */
          for (int64_t c = 0; c < cols && (want & magnitude) > infinity; ++c)
            among = among || float_bits(v + (size_t)(row * cols + c) * es, es) == have;
          if (want != have && !among)
            fail_msg("%s %s of row %lld of %lld: bits %llx, want %llx", f64 ? "float64" : "float32",
                     max ? "max" : "min", (long long)row, (long long)cols, (unsigned long long)have,
                     (unsigned long long)want);
        }
        spmd_array_destroy(r);
      }
      spmd_array_destroy(x);
      free(v);
      free(got);
    }
}

/* softmax and log_softmax along an unsplit last axis run as one kernel a
 * block; it gives the bits of the five ops it replaces (max, subtract,
 * exp, sum, divide or subtract a log), rows of one element, of a partial
 * vector, of several, and special values (infinities, NaN, -0,
 * subnormals, exp's overflow and underflow) included. */
static spmd_array *softmax_by_the_ops(const spmd_array *x, int log) {
  const int64_t axis = 1;
  spmd_array *m = NULL, *sh = NULL, *e = NULL, *s = NULL, *ls = NULL, *out = NULL;
  assert_ok(spmd_reduce(SPMD_REDUCE_MAX, x, 1, &axis, 1, NULL, &m));
  assert_ok(spmd_binary(SPMD_BINARY_SUB, x, m, NULL, &sh));
  assert_ok(spmd_unary(SPMD_UNARY_EXP, sh, NULL, &e));
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, e, 1, &axis, 1, NULL, &s));
  if (log) {
    assert_ok(spmd_unary(SPMD_UNARY_LOG, s, NULL, &ls));
    assert_ok(spmd_binary(SPMD_BINARY_SUB, sh, ls, NULL, &out));
  } else {
    assert_ok(spmd_binary(SPMD_BINARY_DIV, e, s, NULL, &out));
  }
  spmd_array *all[] = {m, sh, e, s, ls};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) spmd_array_destroy(all[i]);
  return out;
}

static void softmax_in_one_pass_has_the_ops_bits(void **state) {
  (void)state;
  static const double specials[] = {INFINITY, -INFINITY, NAN, -0.0, 1e-40, -1e-40, 89.0, -104.0, 1e-310};
  const int64_t widths[] = {1, 7, 16, 33, 128};
  for (int f64 = 0; f64 < 2; ++f64)
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; ++w) {
      const int64_t shape[2] = {8, widths[w]}, n = 8 * widths[w];
      const size_t es = f64 ? 8 : 4;
      unsigned char *v = malloc((size_t)n * es), *got = malloc((size_t)n * es), *want = malloc((size_t)n * es);
      for (int64_t i = 0; i < n; ++i) {
        /* Row 0 all ordinary; the others with a special value now and then. */
        double d = sin((double)i * 1.7) * 30.0;
        if (i >= widths[w] && i % 5 == 3) d = specials[(i / 5) % (sizeof specials / sizeof specials[0])];
        if (f64) ((double *)v)[i] = d;
        else ((float *)v)[i] = (float)d;
      }
      spmd_array *x = test_put(mesh, "x", f64 ? SPMD_F64 : SPMD_F32, 2, shape, v);
      for (int log = 0; log < 2; ++log) {
        spmd_array *fused = NULL, *ops = softmax_by_the_ops(x, log);
        assert_ok(spmd_softmax(x, 1, log, NULL, &fused));
        assert_sharding(fused, "x");
        assert_ok(spmd_array_to_host(fused, got, (size_t)n * es));
        assert_ok(spmd_array_to_host(ops, want, (size_t)n * es));
        for (int64_t i = 0; i < n; ++i)
          if (memcmp(got + i * es, want + i * es, es) != 0)
            fail_msg("%s %s, rows of %lld: element %lld differs from the ops' result",
                     f64 ? "float64" : "float32", log ? "log_softmax" : "softmax", (long long)widths[w],
                     (long long)i);
        spmd_array_destroy(fused);
        spmd_array_destroy(ops);
      }
      spmd_array_destroy(x);
      free(v);
      free(got);
      free(want);
    }
}

/* A transpose moves every element's bits as they are, whatever they mean
 * (NaN payloads, subnormals, any byte): each dtype size, random bits,
 * against the transposition done here. */
static void a_transpose_moves_the_bits_as_they_are(void **state) {
  (void)state;
  const spmd_dtype dtypes[] = {SPMD_U8, SPMD_I8, SPMD_F16, SPMD_BF16, SPMD_I16, SPMD_F32, SPMD_U32, SPMD_F64, SPMD_I64};
  const int64_t shape[3] = {4, 6, 8}, perm[3] = {2, 0, 1};
  const size_t n = 4 * 6 * 8;
  for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; ++t) {
    const size_t es = spmd_dtype_size(dtypes[t]);
    unsigned char *v = malloc(n * es), *got = malloc(n * es), *want = malloc(n * es);
    uint32_t r = 12345u + (uint32_t)t;
    for (size_t i = 0; i < n * es; ++i) {
      r = r * 1664525u + 1013904223u;
      v[i] = (unsigned char)(r >> 24);
    }
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t b = 0; b < 6; ++b)
        for (int64_t c = 0; c < 8; ++c) /* out[c][a][b] = v[a][b][c] */
          memcpy(want + (size_t)((c * 4 + a) * 6 + b) * es, v + (size_t)((a * 6 + b) * 8 + c) * es, es);
    spmd_array *x = test_put(mesh, "x", dtypes[t], 3, shape, v), *y = NULL;
    assert_ok(spmd_transpose(x, 3, perm, NULL, &y));
    assert_ok(spmd_array_to_host(y, got, n * es));
    for (size_t i = 0; i < n; ++i)
      if (memcmp(got + i * es, want + i * es, es) != 0)
        fail_msg("%s: element %zu of the transpose is not the bits moved", spmd_dtype_name(dtypes[t]), i);
    spmd_array_destroy(x);
    spmd_array_destroy(y);
    free(v);
    free(got);
    free(want);
  }
}

static void bad_input_is_refused_with_a_clear_message(void **state) {
  (void)state;
  spmd_array *x = put88("x, y", a64), *r = NULL;
  int64_t s3[1] = {3};
  float three[3] = {1, 2, 3};
  spmd_array *v3 = test_put(mesh, "", SPMD_F32, 1, s3, three);
  assert_fails(spmd_binary(SPMD_BINARY_ADD, x, v3, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "shapes (8, 8) and (3,) do not broadcast");
  assert_fails(spmd_matmul(x, v3, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "inner dimensions differ (8 and 3)");
  int64_t bad_axis = 2;
  assert_fails(spmd_reduce(SPMD_REDUCE_SUM, x, 1, &bad_axis, 0, NULL, &r),
               SPMD_ERR_INVALID_ARGUMENT, "axes[0]: 2 is out of range");
  int64_t twice[2] = {0, -2};
  assert_fails(spmd_reduce(SPMD_REDUCE_SUM, x, 2, twice, 0, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "appears twice");
  int64_t s9[1] = {9};
  assert_fails(spmd_reshape(x, 1, s9, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "cannot reshape an array of shape (8, 8)");
  assert_fails(spmd_unary((spmd_unary_op)99, x, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "not a spmd_unary_op");
  assert_fails(spmd_einsum("ij,jk", x, x, NULL, &r), SPMD_ERR_INVALID_ARGUMENT, "explicit output");
  /* An einsum size mismatch names the subscript, not dimension numbers. */
  int64_t s83[2] = {8, 3};
  float zeros24[24] = {0};
  spmd_array *x83 = test_put(mesh, "", SPMD_F32, 2, s83, zeros24);
  assert_fails(spmd_einsum("ij,jk->ik", x83, x83, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "'j' is 3 long in a (dimension 1) but 8 in b (dimension 0)");
  /* Results of more than SPMD_MAX_NDIM dimensions are refused up front. */
  int64_t s5[5] = {1, 1, 1, 1, 2};
  float two_ones[2] = {1, 1};
  spmd_array *x5 = test_put(mesh, "", SPMD_F32, 5, s5, two_ones);
  spmd_dot_dims nine = SPMD_DOT_DIMS_INIT;
  assert_fails(spmd_dot_general(x5, x5, &nine, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "the result would have 10 dimensions");
  assert_null(r);
  assert_fails(spmd_einsum("abcde,fghij->abcdefghij", x5, x5, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "the result would have 10 dimensions");
  spmd_array_destroy(x5);
  spmd_array_destroy(x83);
  /* matmul names its own arguments. */
  int64_t m1[1] = {8};
  const char *one_axis[1] = {"w"};
  spmd_mesh *solo = NULL;
  assert_ok(spmd_mesh_create(suite_rt, 1, m1, one_axis, NULL, &solo));
  spmd_array *elsewhere_x = test_put(solo, "", SPMD_F32, 1, s3, three);
  assert_fails(spmd_matmul(v3, elsewhere_x, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "a and b: laid out on different meshes");
  spmd_array_destroy(elsewhere_x);
  spmd_mesh_destroy(solo);
  /* Reshape into a shape whose element count overflows. */
  int64_t huge[2] = {(int64_t)1 << 32, (int64_t)1 << 32};
  assert_fails(spmd_reshape(x, 2, huge, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "has more elements than 64 bits count");
  /* softmax over an empty axis is empty, as JAX's (its max starts at -inf). */
  int64_t s40[2] = {4, 0};
  spmd_array *e40 = test_put(mesh, "", SPMD_F32, 2, s40, three), *sm = NULL;
  assert_ok(spmd_softmax(e40, 1, 0, NULL, &sm));
  int64_t got_shape[2] = {0, 0};
  size_t got_nd = 0;
  assert_ok(spmd_array_shape(sm, 2, got_shape, &got_nd));
  assert_int_equal(got_nd, 2);
  assert_int_equal(got_shape[0], 4);
  assert_int_equal(got_shape[1], 0);
  spmd_array_destroy(sm);
  spmd_array_destroy(e40);
  /* A persistent collective is bounded as every array is: 2^62 f32
   * elements need 2^64 bytes. */
  spmd_sharding *rep = test_sharding(mesh, "");
  spmd_collective *coll = NULL;
  const int64_t too_big[1] = {(int64_t)1 << 62};
  assert_fails(spmd_collective_create(rep, SPMD_COLLECTIVE_PSUM, "x", SPMD_F32, 1, too_big, NULL,
                                      &coll),
               SPMD_ERR_INVALID_ARGUMENT, "need more than 2^62 bytes");
  assert_null(coll);
  spmd_sharding_destroy(rep);
  /* dot_general's dimension numbers, each mistake named by its field. */
  spmd_dot_dims dd = SPMD_DOT_DIMS_INIT;
  const int64_t two[1] = {2}, one[1] = {1}, zero[1] = {0}, both[2] = {1, -1};
  dd.ncontract = 1;
  dd.lhs_contract = two;
  dd.rhs_contract = zero;
  assert_fails(spmd_dot_general(x, x, &dd, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "dims->lhs_contract[0]: 2 is out of range for an array of 2 dimensions");
  dd.ncontract = 2;
  dd.lhs_contract = both;
  dd.rhs_contract = both;
  assert_fails(spmd_dot_general(x, x, &dd, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "dims->lhs_contract[1]: dimension 1 is named twice");
  dd.ncontract = 1;
  dd.lhs_contract = one;
  dd.rhs_contract = zero;
  assert_fails(spmd_dot_general(x, v3, &dd, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "contracting dimensions differ in size");
  assert_fails(spmd_dot_general(x, x, NULL, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "dims: NULL spmd_dot_dims pointer");
  assert_fails(spmd_unary(SPMD_UNARY_EXP, NULL, NULL, &r), SPMD_ERR_INVALID_ARGUMENT, "x: NULL");
  assert_fails(spmd_unary(SPMD_UNARY_EXP, x, NULL, NULL), SPMD_ERR_INVALID_ARGUMENT, "NULL output");
  /* An output sharding on a mesh of other devices, or naming too many
   * dimensions. */
  int64_t s8[1] = {8}, s4[1] = {4};
  const char *names[1] = {"d"};
  const int four[4] = {0, 1, 2, 3};
  spmd_mesh *other = NULL, *half = NULL;
  assert_ok(spmd_mesh_create(suite_rt, 1, s8, names, NULL, &other));
  assert_ok(spmd_mesh_create(suite_rt, 1, s4, names, four, &half));
  spmd_sharding *elsewhere = test_sharding(half, "d"), *deep = test_sharding(mesh, "x, y, None");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.out_sharding = elsewhere;
  assert_fails(spmd_unary(SPMD_UNARY_EXP, x, &o, &r), SPMD_ERR_INVALID_ARGUMENT,
               "an output sharding must name the operands' devices in the same order");
  o.out_sharding = deep;
  assert_fails(spmd_unary(SPMD_UNARY_EXP, x, &o, &r), SPMD_ERR_INVALID_ARGUMENT,
               "names 3 dimensions but the result has 2");
  /* Operands on different meshes. */
  spmd_array *on_other = test_put(other, "d", SPMD_F32, 1, s8, v8);
  assert_fails(spmd_binary(SPMD_BINARY_ADD, x, on_other, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "laid out on different meshes");
  spmd_array_destroy(on_other);
  spmd_sharding_destroy(elsewhere);
  spmd_sharding_destroy(deep);
  spmd_mesh_destroy(other);
  spmd_mesh_destroy(half);
  spmd_array_destroy(v3);
  spmd_array_destroy(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(elementwise_keeps_a_common_sharding),
      cmocka_unit_test(two_sin_x_plus_one_keeps_the_sharding),
      cmocka_unit_test(conflicting_shardings_meet_as_jax_does),
      cmocka_unit_test(broadcasting_aligns_specs_and_the_larger_operand_wins),
      cmocka_unit_test(unary_functions_agree_with_libm),
      cmocka_unit_test(dtypes_promote_as_jax),
      cmocka_unit_test(reductions_keep_unreduced_shards_and_psum_reduced_ones),
      cmocka_unit_test(a_requested_sharding_turns_the_psum_into_a_psum_scatter),
      cmocka_unit_test(matmul_shardings_follow_jax),
      cmocka_unit_test(einsum_patterns_of_the_attention_layer),
      cmocka_unit_test(transpose_and_reshape_carry_shardings_as_jax),
      cmocka_unit_test(slice_and_concatenate_keep_the_spec),
      cmocka_unit_test(uneven_and_empty_blocks_compute_like_even_ones),
      cmocka_unit_test(views_share_blocks_and_keep_their_values),
      cmocka_unit_test(a_donated_operand_is_consumed),
      cmocka_unit_test(results_drop_the_axes_that_do_not_divide_them),
      cmocka_unit_test(max_and_min_of_rows_follow_xla),
      cmocka_unit_test(softmax_in_one_pass_has_the_ops_bits),
      cmocka_unit_test(a_transpose_moves_the_bits_as_they_are),
      cmocka_unit_test(bad_input_is_refused_with_a_clear_message),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
