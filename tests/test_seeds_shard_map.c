/* The shard_map cells of the seed notebooks, each giving the seed's answer:
 * per-device shapes and 2*sin(x)+1 on arange(24) over 3 devices, psum of the
 * shard sums (276), the FSDP matmul with all_gather of the weights, the
 * tensor-parallel MLP with all_gather + psum_scatter, FSDP + TP on a 2x2
 * mesh (each against the unsharded product), and the benchmarking section's
 * collectives on a 1000x1000 f32 array over 4 devices, all_to_all twice
 * being the identity. The programs are the examples' (examples/c/
 * seed_cells.c); here they run on the test's own inputs and are checked
 * against products computed on the host. */
#define _POSIX_C_SOURCE 200809L
#include "seed_cells.h"
#include "spmd_test.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

/* Deterministic values in [-2, 2). */
static void fill_values(float *p, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)((s >> 8) & 0xffff) / 16384.0f - 2.0f;
  }
}

/* c[m,n] = a[m,k] @ b[k,n], row-major, accumulated in double. */
static void matmul(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < k; ++t) s += (double)a[i * k + t] * b[t * n + j];
      c[i * n + j] = (float)s;
    }
}

static void assert_allclose(const float *got, const float *want, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (fabsf(got[i] - want[i]) > 1e-5f + 1e-4f * fabsf(want[i]))
      fail_msg("element %zu: got %.7g, expected %.7g", i, got[i], want[i]);
}

/* ---- 000: f_elementwise on arange(24) over Mesh('x': 3) ---- */

typedef struct {
  int count;
  char lines[8][16];
} sink;

static void collect(int device, const char *text, void *ud) {
  sink *s = ud;
  (void)device;
  if (s->count < 8) snprintf(s->lines[s->count], sizeof s->lines[0], "%s", text);
  s->count++;
}

static void elementwise_sees_8_per_device_and_gives_2sin_plus_1(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t ms[1] = {3};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  const int64_t shape[1] = {24};
  spmd_sharding *rep = test_sharding(mesh, "");
  spmd_array *arr = NULL; /* jnp.arange(24): int32 */
  assert_ok(spmd_array_arange(rep, SPMD_I32, 1, shape, 0, 1, &arr));
  sink s;
  memset(&s, 0, sizeof s);
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.print_fn = collect;
  o.print_user_data = &s;
  spmd_array *out = NULL;
  assert_ok(seed_elementwise_sin(mesh, arr, &o, &out));
  assert_int_equal(s.count, 3);
  for (int i = 0; i < 3; ++i) assert_string_equal(s.lines[i], "(8,)");
  /* The seed's printed values. */
  static const float want[24] = {
      1.0f,        2.682942f,   2.818595f,  1.28224f,    -0.513605f, -0.9178486f,
      0.44116902f, 2.3139732f,  2.9787164f, 1.824237f,   -0.08804214f, -0.99998045f,
      -0.07314587f, 1.8403342f, 2.9812148f, 2.3005757f,  0.42419332f, -0.92279494f,
      -0.50197446f, 1.2997544f, 2.8258905f, 2.6733112f,  0.98229736f, -0.69244087f};
  float got[24];
  spmd_dtype t;
  assert_ok(spmd_array_dtype(out, &t));
  assert_int_equal(t, SPMD_F32);
  assert_ok(spmd_array_to_host(out, got, sizeof got));
  assert_allclose(got, want, 24);
  spmd_array_destroy(out);
  spmd_array_destroy(arr);
  spmd_sharding_destroy(rep);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- 000: psum of the shard sums, out_specs=P() ---- */

static void psum_of_shard_sums_is_276_replicated(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t ms[1] = {3};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  const int64_t shape[1] = {24};
  spmd_sharding *sx = test_sharding(mesh, "x");
  spmd_array *arr = NULL;
  assert_ok(spmd_array_arange(sx, SPMD_F32, 1, shape, 0, 1, &arr));
  spmd_array *out = NULL;
  assert_ok(seed_psum_of_shard_sums(mesh, arr, &out));
  size_t nd = 9;
  assert_ok(spmd_array_ndim(out, &nd));
  assert_int_equal(nd, 0);
  float v = 0;
  assert_ok(spmd_array_to_host(out, &v, sizeof v));
  assert_float_equal(v, 276.0f, 0);
  spmd_sharding *s = NULL;
  char *str = NULL;
  assert_ok(spmd_array_sharding(out, &s));
  assert_ok(spmd_sharding_to_string(s, &str));
  assert_string_result(str, "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec(), memory_kind=device)");
  spmd_sharding_destroy(s);
  spmd_array_destroy(out);
  spmd_array_destroy(arr);
  spmd_sharding_destroy(sx);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- 002: FSDP, TP and FSDP + TP on Mesh(2x2, ('data', 'model')) ---- */

static spmd_mesh *data_model_mesh(spmd_runtime *rt) {
  const int64_t ms[2] = {2, 2};
  const char *names[2] = {"data", "model"};
  spmd_mesh *m = NULL;
  assert_ok(spmd_mesh_create(rt, 2, ms, names, NULL, &m));
  return m;
}

static void fsdp_matmul_gathers_weights(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  spmd_mesh *mesh = data_model_mesh(rt);
  const int64_t sx[2] = {4, 10}, sa[2] = {10, 10};
  float x[40], A[100], want[40], got[40];
  fill_values(x, 40, 1);
  fill_values(A, 100, 2);
  matmul(x, A, want, 4, 10, 10);
  spmd_array *in[2] = {test_put(mesh, "data, None", SPMD_F32, 2, sx, x),
                       test_put(mesh, "data, None", SPMD_F32, 2, sa, A)};
  spmd_array *B = NULL;
  assert_ok(seed_fsdp_matmul(mesh, in[0], in[1], &B));
  assert_ok(spmd_array_to_host(B, got, sizeof got));
  assert_allclose(got, want, 40);
  spmd_array_destroy(B);
  spmd_array_destroy(in[0]);
  spmd_array_destroy(in[1]);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

typedef spmd_status (*mlp_program)(const spmd_mesh *, spmd_array *, spmd_array *, spmd_array *,
                                   spmd_array **);

/* Runs an MLP program on x (4, 10), W1 (10, 40), W2 (40, 10) placed by the
 * given specs, and compares it with x @ W1 @ W2 computed on the host. */
static void check_mlp(mlp_program program, const char *const specs[3], uint32_t seed) {
  spmd_runtime *rt = test_runtime(4);
  spmd_mesh *mesh = data_model_mesh(rt);
  const int64_t sx[2] = {4, 10}, s1[2] = {10, 40}, s2[2] = {40, 10};
  float x[40], W1[400], W2[400], t[160], want[40], got[40];
  fill_values(x, 40, seed);
  fill_values(W1, 400, seed + 1);
  fill_values(W2, 400, seed + 2);
  matmul(x, W1, t, 4, 10, 40);
  matmul(t, W2, want, 4, 40, 10);
  spmd_array *in[3] = {test_put(mesh, specs[0], SPMD_F32, 2, sx, x),
                       test_put(mesh, specs[1], SPMD_F32, 2, s1, W1),
                       test_put(mesh, specs[2], SPMD_F32, 2, s2, W2)};
  spmd_array *B = NULL;
  assert_ok(program(mesh, in[0], in[1], in[2], &B));
  int64_t shape[2];
  assert_ok(spmd_array_shape(B, sizeof shape / sizeof shape[0], shape, NULL));
  assert_int_equal(shape[0], 4);
  assert_int_equal(shape[1], 10);
  assert_ok(spmd_array_to_host(B, got, sizeof got));
  assert_allclose(got, want, 40);
  spmd_array_destroy(B);
  for (int i = 0; i < 3; ++i) spmd_array_destroy(in[i]);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static void tp_mlp_gathers_activations_and_scatters_sums(void **state) {
  (void)state;
  static const char *const specs[3] = {"None, model", "None, model", "model, None"};
  check_mlp(seed_tp_mlp, specs, 3);
}

static void fsdp_plus_tp_on_2x2(void **state) {
  (void)state;
  static const char *const specs[3] = {"data, model", "data, model", "model, data"};
  check_mlp(seed_fsdp_tp, specs, 6);
}

/* ---- 002: benchmarking communication, 1000x1000 f32 over Mesh('data': 4) ---- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void benchmark_section_collectives_and_all_to_all_twice(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t ms[1] = {4};
  const char *names[1] = {"data"};
  spmd_mesh *mesh = NULL;
  assert_ok(spmd_mesh_create(rt, 1, ms, names, NULL, &mesh));
  const int64_t shape[2] = {1000, 1000};
  const size_t n = 1000 * 1000;
  float *X = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
  fill_values(X, n, 9);
  spmd_array *Xs = test_put(mesh, "data, None", SPMD_F32, 2, shape, X);
  spmd_array *out = NULL;
  assert_ok(seed_all_gather(mesh, Xs, &out));
  assert_ok(spmd_array_to_host(out, got, n * sizeof(float)));
  assert_memory_equal(got, X, n * sizeof(float));
  spmd_array_destroy(out);

  /* all_reduce and reduce_scatter take X replicated (in_specs P(None, None)). */
  assert_ok(seed_all_reduce(mesh, Xs, &out));
  assert_ok(spmd_array_to_host(out, got, n * sizeof(float)));
  for (size_t i = 0; i < n; ++i)
    if (got[i] != 4 * X[i]) fail_msg("all_reduce element %zu", i);
  spmd_array_destroy(out);
  assert_ok(seed_reduce_scatter(mesh, Xs, &out));
  assert_ok(spmd_array_to_host(out, got, n * sizeof(float)));
  for (size_t i = 0; i < n; ++i)
    if (got[i] != 4 * X[i]) fail_msg("reduce_scatter element %zu", i);
  spmd_array_destroy(out);

  /* all_to_all: 5 warm-ups, 25 timed iterations, as the seed does. */
  for (int i = 0; i < 5; ++i) {
    assert_ok(seed_all_to_all(mesh, Xs, &out));
    spmd_array_destroy(out);
  }
  const double t0 = now_s();
  for (int i = 0; i < 25; ++i) {
    assert_ok(seed_all_to_all(mesh, Xs, &out));
    assert_ok(spmd_array_block_until_ready(out));
    spmd_array_destroy(out);
  }
  printf("all to all: time per iteration: %.6f seconds (1000x1000 float32, 4 devices)\n",
         (now_s() - t0) / 25);

  spmd_array *XT = NULL, *XTT = NULL;
  assert_ok(seed_all_to_all(mesh, Xs, &XT));
  spmd_sharding *s = NULL, *want = test_sharding(mesh, "None, data");
  int eq = 0;
  assert_ok(spmd_array_sharding(XT, &s));
  assert_ok(spmd_sharding_equal(s, want, &eq));
  assert_true(eq);
  /* X_T is split by columns; in_specs reshards it back to rows. */
  assert_ok(seed_all_to_all(mesh, XT, &XTT));
  assert_ok(spmd_array_to_host(XTT, got, n * sizeof(float)));
  assert_memory_equal(got, X, n * sizeof(float));
  spmd_sharding_destroy(s);
  spmd_sharding_destroy(want);
  spmd_array_destroy(XT);
  spmd_array_destroy(XTT);
  spmd_array_destroy(Xs);
  free(X);
  free(got);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(elementwise_sees_8_per_device_and_gives_2sin_plus_1),
      cmocka_unit_test(psum_of_shard_sums_is_276_replicated),
      cmocka_unit_test(fsdp_matmul_gathers_weights),
      cmocka_unit_test(tp_mlp_gathers_activations_and_scatters_sums),
      cmocka_unit_test(fsdp_plus_tp_on_2x2),
      cmocka_unit_test(benchmark_section_collectives_and_all_to_all_twice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
