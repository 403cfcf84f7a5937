/* Persistent collectives: planned once for (mesh, axes, kind, parameters,
 * dtype, global shape, input sharding), executed many times, the output
 * placed by the derived spec, the equivalent of a jitted
 * shard_map(lambda x: collective(x)). */
#define _POSIX_C_SOURCE 200809L
#include "collective_test_util.h"

typedef struct {
  spmd_runtime *rt;
  spmd_mesh *m4;
  spmd_mesh *m24;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->rt = test_runtime(8);
  const int64_t s4[1] = {4}, s24[2] = {2, 4};
  f->m4 = test_mesh(f->rt, 1, s4);
  f->m24 = test_mesh(f->rt, 2, s24);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  spmd_mesh_destroy(f->m4);
  spmd_mesh_destroy(f->m24);
  spmd_runtime_destroy(f->rt);
  free(f);
  return 0;
}

static spmd_collective *plan(spmd_mesh *mesh, const char *spec, spmd_collective_kind kind,
                             const char *axes, spmd_dtype t, size_t ndim, const int64_t *shape,
                             const spmd_collective_options *o) {
  spmd_sharding *s = test_sharding(mesh, spec);
  spmd_collective *c = NULL;
  assert_ok(spmd_collective_create(s, kind, axes, t, ndim, shape, o, &c));
  spmd_sharding_destroy(s);
  return c;
}

static void assert_output_spec(spmd_collective *c, spmd_mesh *mesh, const char *spec) {
  spmd_sharding *got = NULL, *want = test_sharding(mesh, spec);
  int eq = 0;
  assert_ok(spmd_collective_output_sharding(c, &got));
  assert_ok(spmd_sharding_equal(got, want, &eq));
  if (!eq) {
    char *g = NULL;
    spmd_sharding_to_string(got, &g);
    fail_msg("output sharding %s, expected spec '%s'", g, spec);
  }
  spmd_sharding_destroy(got);
  spmd_sharding_destroy(want);
}

/* The seed's all_gather: rows split over x, gathered along 0: replicated. */
static void all_gather_runs_many_times_replicated(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {16, 8};
  float in[128];
  for (int i = 0; i < 128; ++i) in[i] = (float)i - 3.5f;
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.tiled = 1;
  spmd_collective *c = plan(f->m4, "x, None", SPMD_COLLECTIVE_ALL_GATHER, "x", SPMD_F32, 2, shape, &o);
  assert_output_spec(c, f->m4, "");
  size_t nd;
  int64_t os[2];
  spmd_dtype t;
  assert_ok(spmd_collective_output_ndim(c, &nd));
  assert_ok(spmd_collective_output_shape(c, sizeof os / sizeof os[0], os, NULL));
  assert_ok(spmd_collective_output_dtype(c, &t));
  assert_int_equal(nd, 2);
  assert_int_equal(os[0], 16);
  assert_int_equal(os[1], 8);
  assert_int_equal(t, SPMD_F32);
  spmd_array *a = test_put(f->m4, "x, None", SPMD_F32, 2, shape, in);
  for (int rep = 0; rep < 3; ++rep) {
    spmd_array *out = NULL;
    assert_ok(spmd_collective_execute(c, a, &out));
    float *g = fetch(out, SPMD_F32, 2, shape);
    assert_memory_equal(g, in, sizeof in);
    /* every device holds all of it */
    float shard[128];
    for (size_t i = 0; i < 4; ++i) {
      assert_ok(spmd_array_shard_read(out, i, shard, sizeof shard));
      assert_memory_equal(shard, in, sizeof in);
    }
    free(g);
    spmd_array_destroy(out);
  }
  spmd_array_destroy(a);
  spmd_collective_destroy(c);
}

static void reductions_and_their_dtypes(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {8, 3}, oshape[2] = {2, 3};
  int32_t in[24];
  for (int i = 0; i < 24; ++i) in[i] = i * 3 - 20;
  spmd_array *a = test_put(f->m4, "x", SPMD_I32, 2, shape, in);
  const spmd_collective_kind kinds[4] = {SPMD_COLLECTIVE_PSUM, SPMD_COLLECTIVE_PMEAN,
                                         SPMD_COLLECTIVE_PMAX, SPMD_COLLECTIVE_PMIN};
  for (int k = 0; k < 4; ++k) {
    spmd_collective *c = plan(f->m4, "x", kinds[k], "x", SPMD_I32, 2, shape, NULL);
    assert_output_spec(c, f->m4, "");
    const spmd_dtype ot = kinds[k] == SPMD_COLLECTIVE_PMEAN ? SPMD_F32 : SPMD_I32;
    spmd_array *out = NULL;
    assert_ok(spmd_collective_execute(c, a, &out));
    void *g = fetch(out, ot, 2, oshape);
    for (int i = 0; i < 6; ++i) {
      double s = 0, mx = -1e9, mn = 1e9;
      for (int d = 0; d < 4; ++d) {
        const double v = in[d * 6 + i];
        s += v;
        mx = v > mx ? v : mx;
        mn = v < mn ? v : mn;
      }
      const double want = k == 0 ? s : k == 1 ? s / 4 : k == 2 ? mx : mn;
      assert_true(elem(ot, g, (size_t)i) == want);
    }
    free(g);
    spmd_array_destroy(out);
    spmd_collective_destroy(c);
  }
  spmd_array_destroy(a);
  /* pmean of uint8 wraps in uint8 first, then is scaled in float32 by the
   * reciprocal of the group size (JAX). */
  {
    const uint8_t u8[4] = {200, 100, 50, 25};
    const int64_t s4[1] = {4}, s1[1] = {1};
    spmd_array *au = test_put(f->m4, "x", SPMD_U8, 1, s4, u8);
    spmd_collective *cu = plan(f->m4, "x", SPMD_COLLECTIVE_PMEAN, "x", SPMD_U8, 1, s4, NULL);
    spmd_array *ou = NULL;
    assert_ok(spmd_collective_execute(cu, au, &ou));
    float *gu = fetch(ou, SPMD_F32, 1, s1);
    assert_float_equal(gu[0], 29.75f, 0);
    free(gu);
    spmd_array_destroy(ou);
    spmd_collective_destroy(cu);
    spmd_array_destroy(au);
  }
  /* psum of bool counts in int32 */
  uint8_t b[8] = {1, 0, 1, 1, 0, 1, 1, 1};
  const int64_t s8[1] = {8}, s2[1] = {2};
  spmd_array *ab = test_put(f->m4, "x", SPMD_BOOL, 1, s8, b);
  spmd_collective *cb = plan(f->m4, "x", SPMD_COLLECTIVE_PSUM, "x", SPMD_BOOL, 1, s8, NULL);
  spmd_array *out = NULL;
  assert_ok(spmd_collective_execute(cb, ab, &out));
  int32_t *g = fetch(out, SPMD_I32, 1, s2);
  assert_int_equal(g[0], 3);
  assert_int_equal(g[1], 3);
  free(g);
  spmd_array_destroy(out);
  spmd_collective_destroy(cb);
  spmd_array_destroy(ab);
}

/* A psum above the small-message size runs as reduce-scatter by chunks
 * then all-gather, from the worker pool. */
static void large_psum_from_the_pool(void **state) {
  fixture *f = *state;
  const int64_t per = 40001;
  const int64_t shape[1] = {8 * per}, oshape[1] = {per};
  float *in = malloc((size_t)(8 * per) * sizeof(float));
  for (int64_t i = 0; i < 8 * per; ++i) in[i] = (float)(i % 1009) * 0.5f;
  spmd_collective *c = plan(f->m24, "(x,y)", SPMD_COLLECTIVE_PSUM, "(x,y)", SPMD_F32, 1, shape, NULL);
  spmd_array *a = test_put(f->m24, "(x,y)", SPMD_F32, 1, shape, in);
  spmd_array *out = NULL;
  assert_ok(spmd_collective_execute(c, a, &out));
  float *g = fetch(out, SPMD_F32, 1, oshape);
  for (int64_t i = 0; i < per; ++i) {
    float want = 0;
    for (int64_t d = 0; d < 8; ++d) want += in[d * per + i];
    if (g[i] != want) fail_msg("element %lld: %g != %g", (long long)i, g[i], want);
  }
  /* Every device holds the same bits. */
  float *shard = malloc((size_t)per * sizeof(float));
  for (size_t d = 0; d < 8; ++d) {
    assert_ok(spmd_array_shard_read(out, d, shard, (size_t)per * sizeof(float)));
    assert_memory_equal(shard, g, (size_t)per * sizeof(float));
  }
  free(shard);
  free(g);
  free(in);
  spmd_array_destroy(out);
  spmd_array_destroy(a);
  spmd_collective_destroy(c);
}

/* The seed's reduce_scatter: replicated in, split over x out. */
static void psum_scatter_splits_the_result(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {8, 3};
  double in[24];
  for (int i = 0; i < 24; ++i) in[i] = i * 0.25;
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.tiled = 1;
  spmd_collective *c = plan(f->m4, "", SPMD_COLLECTIVE_PSUM_SCATTER, "x", SPMD_F64, 2, shape, &o);
  assert_output_spec(c, f->m4, "x");
  spmd_array *a = test_put(f->m4, "", SPMD_F64, 2, shape, in);
  spmd_array *out = NULL;
  assert_ok(spmd_collective_execute(c, a, &out));
  double *g = fetch(out, SPMD_F64, 2, shape);
  for (int i = 0; i < 24; ++i) assert_true(g[i] == 4 * in[i]);
  free(g);
  spmd_array_destroy(out);
  spmd_array_destroy(a);
  spmd_collective_destroy(c);
}

/* The seed's all_to_all twice is the identity: the second run reshards
 * its column-split input back to the planned row split. */
static void all_to_all_twice_is_identity(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {12, 12};
  float in[144];
  for (int i = 0; i < 144; ++i) in[i] = (float)(i * 7 % 31);
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.tiled = 1;
  o.axis = 1;        /* split_axis */
  o.concat_axis = 0;
  spmd_collective *c = plan(f->m4, "x, None", SPMD_COLLECTIVE_ALL_TO_ALL, "x", SPMD_F32, 2, shape, &o);
  assert_output_spec(c, f->m4, "None, x");
  spmd_array *a = test_put(f->m4, "x, None", SPMD_F32, 2, shape, in);
  spmd_array *t = NULL, *tt = NULL;
  assert_ok(spmd_collective_execute(c, a, &t));
  assert_ok(spmd_collective_execute(c, t, &tt));
  float *g = fetch(tt, SPMD_F32, 2, shape);
  assert_memory_equal(g, in, sizeof in);
  free(g);
  spmd_array_destroy(t);
  spmd_array_destroy(tt);
  spmd_array_destroy(a);
  spmd_collective_destroy(c);
}

static void execute_into_reuses_the_output(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {16};
  float in[16];
  for (int i = 0; i < 16; ++i) in[i] = (float)i;
  const int64_t ring[8] = {0, 1, 1, 2, 2, 3, 3, 0};
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.npairs = 4;
  o.pairs = ring;
  spmd_collective *c = plan(f->m4, "x", SPMD_COLLECTIVE_PPERMUTE, "x", SPMD_F32, 1, shape, &o);
  assert_output_spec(c, f->m4, "x");
  spmd_array *a = test_put(f->m4, "x", SPMD_F32, 1, shape, in);
  spmd_sharding *os = NULL;
  assert_ok(spmd_collective_output_sharding(c, &os));
  spmd_array *out = NULL;
  assert_ok(spmd_array_zeros(os, SPMD_F32, 1, shape, &out));
  for (int rep = 0; rep < 3; ++rep) {
    for (int i = 0; i < 16; ++i) in[i] = (float)(i + 100 * rep);
    spmd_array_destroy(a);
    a = test_put(f->m4, "x", SPMD_F32, 1, shape, in);
    assert_ok(spmd_collective_execute_into(c, a, out));
    float g[16];
    assert_ok(spmd_array_to_host(out, g, sizeof g));
    for (int i = 0; i < 16; ++i) assert_float_equal(g[i], in[(i + 12) % 16], 0);
  }
  /* The wrong output array is refused. */
  spmd_array *wrong = NULL;
  spmd_sharding *rep = test_sharding(f->m4, "");
  assert_ok(spmd_array_zeros(rep, SPMD_F32, 1, shape, &wrong));
  assert_fails(spmd_collective_execute_into(c, a, wrong), SPMD_ERR_INVALID_ARGUMENT,
               "output: float32(16,) laid out by");
  spmd_array_destroy(wrong);
  spmd_sharding_destroy(rep);
  spmd_sharding_destroy(os);
  spmd_array_destroy(out);
  spmd_array_destroy(a);
  spmd_collective_destroy(c);
}

static void uneven_and_tuple_gathers(void **state) {
  fixture *f = *state;
  const int64_t s10[1] = {10};
  int64_t in[24];
  for (int i = 0; i < 24; ++i) in[i] = 5 * i;
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.tiled = 1;
  spmd_collective *c = plan(f->m4, "x", SPMD_COLLECTIVE_ALL_GATHER, "x", SPMD_I64, 1, s10, &o);
  spmd_array *a = test_put(f->m4, "x", SPMD_I64, 1, s10, in);
  spmd_array *out = NULL;
  assert_ok(spmd_collective_execute(c, a, &out));
  int64_t *g = fetch(out, SPMD_I64, 1, s10);
  assert_memory_equal(g, in, 10 * sizeof(int64_t));
  free(g);
  spmd_array_destroy(out);
  spmd_array_destroy(a);
  spmd_collective_destroy(c);
  /* 2x4, rows over (x,y), gathered over y: still split over x. */
  const int64_t s[2] = {8, 3};
  c = plan(f->m24, "(x,y)", SPMD_COLLECTIVE_ALL_GATHER, "y", SPMD_I64, 2, s, &o);
  assert_output_spec(c, f->m24, "x");
  a = test_put(f->m24, "(x,y)", SPMD_I64, 2, s, in);
  assert_ok(spmd_collective_execute(c, a, &out));
  g = fetch(out, SPMD_I64, 2, s);
  assert_memory_equal(g, in, 24 * sizeof(int64_t));
  free(g);
  spmd_array_destroy(out);
  spmd_array_destroy(a);
  spmd_collective_destroy(c);
  /* Not tiled: a new replicated dimension at axis 1. */
  o.tiled = 0;
  o.axis = 1;
  c = plan(f->m24, "(x,y)", SPMD_COLLECTIVE_ALL_GATHER, "y", SPMD_I64, 2, s, &o);
  assert_output_spec(c, f->m24, "x, None");
  int64_t os[3];
  assert_ok(spmd_collective_output_shape(c, sizeof os / sizeof os[0], os, NULL));
  assert_int_equal(os[0], 2);
  assert_int_equal(os[1], 4);
  assert_int_equal(os[2], 3);
  spmd_collective_destroy(c);
}

static void errors_name_the_argument(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {8, 3};
  spmd_sharding *s = test_sharding(f->m4, "x");
  spmd_collective *c = NULL;
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  assert_fails(spmd_collective_create(NULL, SPMD_COLLECTIVE_PSUM, "x", SPMD_F32, 2, shape, NULL, &c),
               SPMD_ERR_INVALID_ARGUMENT, "input_sharding: NULL");
  assert_fails(spmd_collective_create(s, (spmd_collective_kind)42, "x", SPMD_F32, 2, shape, NULL, &c),
               SPMD_ERR_INVALID_ARGUMENT, "kind: 42 is not a spmd_collective_kind");
  assert_fails(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, "y", SPMD_F32, 2, shape, NULL, &c),
               SPMD_ERR_INVALID_ARGUMENT, "axes 'y': mesh has no axis 'y'");
  assert_fails(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, "x", (spmd_dtype)0, 2, shape, NULL, &c),
               SPMD_ERR_INVALID_ARGUMENT, "dtype");
  assert_fails(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM_SCATTER, "x", SPMD_F32, 2, shape, &o, &c),
               SPMD_ERR_UNSUPPORTED, "psum_scatter over 'x': without tiled");
  o.tiled = 1;
  assert_fails(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM_SCATTER, "x", SPMD_BOOL, 2, shape, &o, &c),
               SPMD_ERR_INVALID_ARGUMENT, "bool has no sum to scatter");
  o.axis = 5;
  assert_fails(spmd_collective_create(s, SPMD_COLLECTIVE_ALL_GATHER, "x", SPMD_F32, 2, shape, &o, &c),
               SPMD_ERR_INVALID_ARGUMENT, "all_gather over 'x': options->axis 5 is out of range");
  o.axis = 0;
  const int64_t bad[2] = {0, 9};
  o.npairs = 1;
  o.pairs = bad;
  assert_fails(spmd_collective_create(s, SPMD_COLLECTIVE_PPERMUTE, "x", SPMD_F32, 2, shape, &o, &c),
               SPMD_ERR_INVALID_ARGUMENT, "options->pairs: pair (0, 9)");
  assert_null(c);
  c = plan(f->m4, "x", SPMD_COLLECTIVE_PSUM, "x", SPMD_F32, 2, shape, NULL);
  spmd_array *wrong = NULL, *out = NULL;
  assert_ok(spmd_array_zeros(s, SPMD_F64, 2, shape, &wrong));
  assert_fails(spmd_collective_execute(c, wrong, &out), SPMD_ERR_INVALID_ARGUMENT,
               "input: dtype float64 but the collective was planned for float32");
  spmd_array_destroy(wrong);
  const int64_t other[2] = {4, 3};
  assert_ok(spmd_array_zeros(s, SPMD_F32, 2, other, &wrong));
  assert_fails(spmd_collective_execute(c, wrong, &out), SPMD_ERR_INVALID_ARGUMENT,
               "input: shape (4, 3) but the collective was planned for (8, 3)");
  assert_fails(spmd_collective_execute(NULL, wrong, &out), SPMD_ERR_INVALID_ARGUMENT,
               "collective: NULL spmd_collective");
  spmd_array_destroy(wrong);
  spmd_collective_destroy(c);
  assert_fails(spmd_collective_execute(c, NULL, &out), SPMD_ERR_INVALID_ARGUMENT,
               "collective: not a live spmd_collective");
  spmd_collective_destroy(NULL);
  spmd_sharding_destroy(s);
}

/* The same plans run on a thread per device with barriers (the path of
 * backends that cannot run all members from the worker pool) give the same
 * results, promotions included. */
static void device_thread_path_gives_the_same_results(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {8, 3};
  int32_t in[24];
  for (int i = 0; i < 24; ++i) in[i] = i * 5 - 40;
  spmd_array *a = test_put(f->m24, "(x,y)", SPMD_I32, 2, shape, in);
  const spmd_collective_kind kinds[3] = {SPMD_COLLECTIVE_PSUM, SPMD_COLLECTIVE_PMEAN,
                                         SPMD_COLLECTIVE_ALL_GATHER};
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.tiled = 1;
  for (int k = 0; k < 3; ++k) {
    spmd_collective *c = plan(f->m24, "(x,y)", kinds[k], "y", SPMD_I32, 2, shape, &o);
    spmd_dtype t;
    size_t nd;
    int64_t os[2];
    assert_ok(spmd_collective_output_dtype(c, &t));
    assert_ok(spmd_collective_output_ndim(c, &nd));
    assert_ok(spmd_collective_output_shape(c, sizeof os / sizeof os[0], os, NULL));
    spmd_array *pool = NULL, *dev = NULL;
    unsetenv("SPMD_COLLECTIVE_THREADS");
    assert_ok(spmd_collective_execute(c, a, &pool));
    setenv("SPMD_COLLECTIVE_THREADS", "device", 1);
    assert_ok(spmd_collective_execute(c, a, &dev));
    unsetenv("SPMD_COLLECTIVE_THREADS");
    void *gp = fetch(pool, t, nd, os), *gd = fetch(dev, t, nd, os);
    assert_memory_equal(gp, gd, (size_t)(os[0] * os[1]) * spmd_dtype_size(t));
    if (kinds[k] == SPMD_COLLECTIVE_PSUM)
      for (int r = 0; r < 2; ++r)
        for (int col = 0; col < 3; ++col) {
          int32_t want = 0;
          for (int y = 0; y < 4; ++y) want += in[(r * 4 + y) * 3 + col];
          assert_int_equal(((int32_t *)gd)[r * 3 + col], want);
        }
    free(gp);
    free(gd);
    spmd_array_destroy(pool);
    spmd_array_destroy(dev);
    spmd_collective_destroy(c);
  }
  spmd_array_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(all_gather_runs_many_times_replicated),
      cmocka_unit_test(reductions_and_their_dtypes),
      cmocka_unit_test(large_psum_from_the_pool),
      cmocka_unit_test(psum_scatter_splits_the_result),
      cmocka_unit_test(all_to_all_twice_is_identity),
      cmocka_unit_test(execute_into_reuses_the_output),
      cmocka_unit_test(uneven_and_tuple_gathers),
      cmocka_unit_test(errors_name_the_argument),
      cmocka_unit_test(device_thread_path_gives_the_same_results),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
