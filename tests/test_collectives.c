/* The jax.lax collectives inside shard_map: psum, pmean, pmax, pmin,
 * all_gather, psum_scatter, all_to_all and ppermute over one mesh axis and
 * over tuples of axes, on 2x4 and 2x2x2 meshes, tiled and not, uneven where
 * it means something, for every dtype; each compared with values computed
 * here from the inputs. */
#include <unistd.h>

#include "collective_test_util.h"

static const spmd_dtype all_dtypes[] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16,
                                        SPMD_I32, SPMD_I64, SPMD_U8,  SPMD_BOOL};

typedef struct {
  spmd_runtime *rt;
  spmd_mesh *m24;  /* x=2, y=4 */
  spmd_mesh *m222; /* x=2, y=2, z=2 */
  spmd_mesh *m4;   /* x=4 */
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->rt = test_runtime(8);
  const int64_t s24[2] = {2, 4}, s222[3] = {2, 2, 2}, s4[1] = {4};
  f->m24 = test_mesh(f->rt, 2, s24);
  f->m222 = test_mesh(f->rt, 3, s222);
  f->m4 = test_mesh(f->rt, 1, s4);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  spmd_mesh_destroy(f->m24);
  spmd_mesh_destroy(f->m222);
  spmd_mesh_destroy(f->m4);
  spmd_runtime_destroy(f->rt);
  free(f);
  return 0;
}

/* A host buffer of n elements of dtype with value gen(i). */
static void *filled(spmd_dtype t, size_t n, double (*gen)(size_t)) {
  void *p = malloc(n * spmd_dtype_size(t) + 1);
  for (size_t i = 0; i < n; ++i) set_elem(t, p, i, gen(i));
  return p;
}

static double small_int(size_t i) { return (double)(i % 7); }
static double index_value(size_t i) { return (double)i; }

/* ---- psum ---- */

/* psum over x of (8,3) split (x,y): device (i,j) holds row i*4+j; the sum
 * along x is row j + row 4+j, the result varies along y only. */
static void psum_over_one_axis_every_dtype(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {8, 3}, oshape[2] = {4, 3};
  const op_t op = {OP_PSUM, "x", 0, 0, 0, 0, NULL, 0};
  for (size_t k = 0; k < sizeof all_dtypes / sizeof *all_dtypes; ++k) {
    const spmd_dtype t = all_dtypes[k];
    void *in = filled(t, 24, small_int);
    spmd_array *out = NULL;
    assert_ok(run_op(f->m24, t, 2, shape, in, "(x,y)", "y", &op, NULL, &out));
    const spmd_dtype rt = t == SPMD_BOOL ? SPMD_I32 : t; /* bool sums to int32 */
    void *got = fetch(out, rt, 2, oshape);
    for (size_t j = 0; j < 4; ++j)
      for (size_t c = 0; c < 3; ++c) {
        double want = elem(t, in, j * 3 + c) + elem(t, in, (4 + j) * 3 + c);
        assert_true(elem(rt, got, j * 3 + c) == want);
      }
    free(got);
    free(in);
    spmd_array_destroy(out);
  }
}

/* psum over the tuple (x, y) sums all 8 blocks; u8 and i32 wrap. */
static void psum_over_tuple_wraps_integers(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {8}, oshape[1] = {1};
  const op_t op = {OP_PSUM, "(x, y)", 0, 0, 0, 0, NULL, 0};
  uint8_t u8[8] = {200, 100, 50, 25, 1, 2, 3, 4};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m24, SPMD_U8, 1, shape, u8, "(x,y)", "", &op, NULL, &out));
  uint8_t *g8 = fetch(out, SPMD_U8, 1, oshape);
  assert_int_equal(g8[0], (200 + 100 + 50 + 25 + 1 + 2 + 3 + 4) % 256);
  free(g8);
  spmd_array_destroy(out);
  int32_t i32[8] = {INT32_MAX, 1, 0, 0, 0, 0, 0, 5};
  assert_ok(run_op(f->m24, SPMD_I32, 1, shape, i32, "(x,y)", "", &op, NULL, &out));
  int32_t *g32 = fetch(out, SPMD_I32, 1, oshape);
  assert_int_equal(g32[0], INT32_MIN + 5);
  free(g32);
  spmd_array_destroy(out);
}

/* f16 and bf16 sums accumulate in f32 and round once: 2048+1+1+1 is 2051
 * before rounding, 2052 in f16 (an f16 accumulator would stay at 2048);
 * 256+1+1+1 is 260 in bf16 (a bf16 accumulator stays at 256). */
static void half_precision_sums_accumulate_in_f32(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {4}, oshape[1] = {1};
  const op_t op = {OP_PSUM, "x", 0, 0, 0, 0, NULL, 0};
  uint16_t h[4], b[4];
  const float hv[4] = {2048, 1, 1, 1}, bv[4] = {256, 1, 1, 1};
  for (int i = 0; i < 4; ++i) {
    h[i] = float_to_f16_exact(hv[i]);
    b[i] = float_to_bf16_exact(bv[i]);
  }
  spmd_array *out = NULL;
  assert_ok(run_op(f->m4, SPMD_F16, 1, shape, h, "x", "", &op, NULL, &out));
  uint16_t *g = fetch(out, SPMD_F16, 1, oshape);
  assert_float_equal(f16_to_float(g[0]), 2052.0f, 0);
  free(g);
  spmd_array_destroy(out);
  assert_ok(run_op(f->m4, SPMD_BF16, 1, shape, b, "x", "", &op, NULL, &out));
  g = fetch(out, SPMD_BF16, 1, oshape);
  assert_float_equal(bf16_to_float(g[0]), 260.0f, 0);
  free(g);
  spmd_array_destroy(out);
}

/* A large psum takes the chunked reduce-scatter + all-gather path; every
 * device ends with identical bits (check_rep) and the right sums. */
static void large_psum_is_chunked_and_replicated(void **state) {
  fixture *f = *state;
  const int64_t n = 8 * 30001; /* not a multiple of the chunking */
  const int64_t shape[1] = {n}, oshape[1] = {n / 8};
  float *in = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) in[i] = (float)(i % 1000) * 0.25f;
  const op_t op = {OP_PSUM, "(y, x)", 0, 0, 0, 0, NULL, 0};
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = 1;
  spmd_array *out = NULL;
  assert_ok(run_op(f->m24, SPMD_F32, 1, shape, in, "(x,y)", "", &op, &o, &out));
  float *g = fetch(out, SPMD_F32, 1, oshape);
  for (int64_t i = 0; i < n / 8; ++i) {
    float want = 0;
    for (int64_t d = 0; d < 8; ++d) want += in[d * (n / 8) + i];
    if (g[i] != want) fail_msg("element %lld: got %g, expected %g", (long long)i, g[i], want);
  }
  free(g);
  free(in);
  spmd_array_destroy(out);
}

/* Blocks over a megabyte take the CPU backend's large-copy path. */
static void large_blocks_gather_and_permute_intact(void **state) {
  fixture *f = *state;
  const int64_t per = 300000; /* 1.2 MB of float32 per device */
  const int64_t shape[1] = {4 * per};
  float *in = malloc((size_t)(4 * per) * sizeof(float));
  for (int64_t i = 0; i < 4 * per; ++i) in[i] = (float)(i % 100003);
  const op_t ag = {OP_ALL_GATHER, "x", 0, 0, 1, 0, NULL, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m4, SPMD_F32, 1, shape, in, "x", "", &ag, NULL, &out));
  float *g = fetch(out, SPMD_F32, 1, shape);
  assert_memory_equal(g, in, (size_t)(4 * per) * sizeof(float));
  free(g);
  spmd_array_destroy(out);
  const int64_t ring[8] = {0, 1, 1, 2, 2, 3, 3, 0};
  const op_t pp = {OP_PPERMUTE, "x", 0, 0, 0, 4, ring, 0};
  assert_ok(run_op(f->m4, SPMD_F32, 1, shape, in, "x", "x", &pp, NULL, &out));
  g = fetch(out, SPMD_F32, 1, shape);
  for (int64_t d = 0; d < 4; ++d)
    assert_memory_equal(g + d * per, in + ((d + 3) % 4) * per, (size_t)per * sizeof(float));
  free(g);
  spmd_array_destroy(out);
  free(in);
}

/* ---- pmean, pmax, pmin ---- */

static void pmean_of_integers_is_float32(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {4, 2}, oshape[2] = {1, 2};
  int32_t in[8] = {1, 10, 2, 20, 3, 30, 5, 41};
  const op_t op = {OP_PMEAN, "x", 0, 0, 0, 0, NULL, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m4, SPMD_I32, 2, shape, in, "x", "", &op, NULL, &out));
  float *g = fetch(out, SPMD_F32, 2, oshape);
  assert_float_equal(g[0], 11.0f / 4.0f, 0);
  assert_float_equal(g[1], 101.0f / 4.0f, 0);
  free(g);
  spmd_array_destroy(out);
  double d[8] = {1, 10, 2, 20, 3, 30, 5, 41};
  assert_ok(run_op(f->m4, SPMD_F64, 2, shape, d, "x", "", &op, NULL, &out));
  double *gd = fetch(out, SPMD_F64, 2, oshape);
  assert_true(gd[0] == 11.0 / 4 && gd[1] == 101.0 / 4);
  free(gd);
  spmd_array_destroy(out);
  /* Integers sum in their own wrapping arithmetic before the division, as
   * JAX's psum-then-divide does: uint8 (200+100+50+25) % 256 / 4 = 29.75,
   * int32 (INT32_MAX + 1) wraps to INT32_MIN; bool counts. */
  const int64_t s4[1] = {4}, s1[1] = {1};
  const uint8_t u8[4] = {200, 100, 50, 25};
  assert_ok(run_op(f->m4, SPMD_U8, 1, s4, u8, "x", "", &op, NULL, &out));
  g = fetch(out, SPMD_F32, 1, s1);
  assert_float_equal(g[0], 29.75f, 0);
  free(g);
  spmd_array_destroy(out);
  const int32_t big[4] = {INT32_MAX, 1, 0, 0};
  assert_ok(run_op(f->m4, SPMD_I32, 1, s4, big, "x", "", &op, NULL, &out));
  g = fetch(out, SPMD_F32, 1, s1);
  assert_float_equal(g[0], -536870912.0f, 0);
  free(g);
  spmd_array_destroy(out);
  const uint8_t b4[4] = {1, 0, 1, 1};
  assert_ok(run_op(f->m4, SPMD_BOOL, 1, s4, b4, "x", "", &op, NULL, &out));
  g = fetch(out, SPMD_F32, 1, s1);
  assert_float_equal(g[0], 0.75f, 0);
  free(g);
  spmd_array_destroy(out);
  /* f16 keeps its dtype */
  uint16_t h[8];
  for (int i = 0; i < 8; ++i) h[i] = float_to_f16_exact((float)d[i]);
  assert_ok(run_op(f->m4, SPMD_F16, 2, shape, h, "x", "", &op, NULL, &out));
  uint16_t *gh = fetch(out, SPMD_F16, 2, oshape);
  assert_float_equal(f16_to_float(gh[0]), 2.75f, 0);
  assert_float_equal(f16_to_float(gh[1]), 25.25f, 0);
  free(gh);
  spmd_array_destroy(out);
}

static double signed_pattern(size_t i) { return (double)((int)((i * 37) % 23) - 11); }

static void pmax_pmin_every_dtype_over_tuple(void **state) {
  fixture *f = *state;
  /* 2x2x2 mesh, (8, 2) split over (x,y,z): device (x,y,z) holds row
   * x*4+y*2+z; reducing over (z, x) leaves the rows varying along y. */
  const int64_t shape[2] = {8, 2}, oshape[2] = {2, 2};
  for (size_t k = 0; k < sizeof all_dtypes / sizeof *all_dtypes; ++k) {
    const spmd_dtype t = all_dtypes[k];
    const int is_unsigned = t == SPMD_U8 || t == SPMD_BOOL;
    void *in = filled(t, 16, is_unsigned ? small_int : signed_pattern);
    for (int which = 0; which < 2; ++which) {
      const op_t op = {which ? OP_PMIN : OP_PMAX, "(z, x)", 0, 0, 0, 0, NULL, 0};
      spmd_array *out = NULL;
      assert_ok(run_op(f->m222, t, 2, shape, in, "(x,y,z)", "y", &op, NULL, &out));
      void *g = fetch(out, t, 2, oshape);
      for (size_t y = 0; y < 2; ++y)
        for (size_t c = 0; c < 2; ++c) {
          double want = which ? INFINITY : -INFINITY;
          for (size_t x = 0; x < 2; ++x)
            for (size_t z = 0; z < 2; ++z) {
              const double v = elem(t, in, (x * 4 + y * 2 + z) * 2 + c);
              want = which ? fmin(want, v) : fmax(want, v);
            }
          assert_true(elem(t, g, y * 2 + c) == want);
        }
      free(g);
      spmd_array_destroy(out);
    }
    free(in);
  }
}

static void pmax_propagates_nan(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {4}, oshape[1] = {1};
  float in[4] = {1, NAN, 3, 2};
  const op_t op = {OP_PMAX, "x", 0, 0, 0, 0, NULL, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m4, SPMD_F32, 1, shape, in, "x", "", &op, NULL, &out));
  float *g = fetch(out, SPMD_F32, 1, oshape);
  assert_true(isnan(g[0]));
  free(g);
  spmd_array_destroy(out);
}

/* ---- all_gather ---- */

static void all_gather_tiled_and_not_every_dtype(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {8, 6};
  for (size_t k = 0; k < sizeof all_dtypes / sizeof *all_dtypes; ++k) {
    const spmd_dtype t = all_dtypes[k];
    void *in = filled(t, 48, t == SPMD_BOOL ? small_int : index_value);
    spmd_array *out = NULL;
    /* Tiled over y along dim 0: each x-row of devices rebuilds its half. */
    op_t op = {OP_ALL_GATHER, "y", 0, 0, 1, 0, NULL, 0};
    assert_ok(run_op(f->m24, t, 2, shape, in, "(x,y)", "x", &op, NULL, &out));
    void *g = fetch(out, t, 2, shape);
    assert_memory_equal(g, in, 48 * spmd_dtype_size(t));
    free(g);
    spmd_array_destroy(out);
    /* Not tiled, new axis 1: local (1,6) -> (1,4,6); global (2,4,6). */
    op.tiled = 0;
    op.axis = 1;
    const int64_t s3[3] = {2, 4, 6};
    assert_ok(run_op(f->m24, t, 2, shape, in, "(x,y)", "x", &op, NULL, &out));
    g = fetch(out, t, 3, s3);
    assert_memory_equal(g, in, 48 * spmd_dtype_size(t));
    free(g);
    spmd_array_destroy(out);
    /* Not tiled, new axis 0: local (4,1,6); spec (None, x) -> (4,2,6) with
     * out[j][i] = in[i*4+j]. */
    op.axis = 0;
    const int64_t s3b[3] = {4, 2, 6};
    assert_ok(run_op(f->m24, t, 2, shape, in, "(x,y)", "None, x", &op, NULL, &out));
    g = fetch(out, t, 3, s3b);
    for (size_t j = 0; j < 4; ++j)
      for (size_t i = 0; i < 2; ++i)
        for (size_t c = 0; c < 6; ++c)
          assert_true(elem(t, g, (j * 2 + i) * 6 + c) == elem(t, in, (i * 4 + j) * 6 + c));
    free(g);
    spmd_array_destroy(out);
    free(in);
  }
}

/* The tuple's order decides the gather order: over (y, x), position
 * y*2+x holds the block of device (x, y), which is row x*4+y. */
static void all_gather_follows_tuple_order(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {8, 2};
  float in[16];
  for (int i = 0; i < 16; ++i) in[i] = (float)i;
  const op_t op = {OP_ALL_GATHER, "(y, x)", 0, 0, 1, 0, NULL, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m24, SPMD_F32, 2, shape, in, "(x,y)", "", &op, NULL, &out));
  float *g = fetch(out, SPMD_F32, 2, shape);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 2; ++x)
      for (int c = 0; c < 2; ++c) assert_float_equal(g[(y * 2 + x) * 2 + c], in[(x * 4 + y) * 2 + c], 0);
  free(g);
  spmd_array_destroy(out);
  /* On 2x2x2 over (z, x) along dim 0 (negative axis -1 on a 1-d block). */
  const int64_t s1[1] = {8};
  const op_t op3 = {OP_ALL_GATHER, "z,x", -1, 0, 1, 0, NULL, 0};
  assert_ok(run_op(f->m222, SPMD_F32, 1, s1, in, "(x,y,z)", "y", &op3, NULL, &out));
  g = fetch(out, SPMD_F32, 1, s1);
  for (int y = 0; y < 2; ++y)
    for (int z = 0; z < 2; ++z)
      for (int x = 0; x < 2; ++x) assert_float_equal(g[y * 4 + z * 2 + x], in[x * 4 + y * 2 + z], 0);
  free(g);
  spmd_array_destroy(out);
}

/* Uneven shards (10 over 4: 3, 3, 3, 1) gather back to the whole array. */
static void all_gather_tiled_uneven_rebuilds_the_array(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {10, 3};
  int64_t in[30];
  for (int i = 0; i < 30; ++i) in[i] = 1000 + i;
  const op_t op = {OP_ALL_GATHER, "x", 0, 0, 1, 0, NULL, 0};
  spmd_array *out = NULL;
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = 1;
  assert_ok(run_op(f->m4, SPMD_I64, 2, shape, in, "x", "", &op, &o, &out));
  int64_t *g = fetch(out, SPMD_I64, 2, shape);
  assert_memory_equal(g, in, sizeof in);
  free(g);
  spmd_array_destroy(out);
}

/* ---- psum_scatter ---- */

static void psum_scatter_tiled_over_tuple(void **state) {
  fixture *f = *state;
  /* (16, 4) split over x: local (8, 4) differs along x, equal along y.
   * Scatter over (x,y) gives device rank x*4+y row r = x*4+y of the sum
   * over all 8 devices: 4 * (in[r] + in[8+r]). */
  const int64_t shape[2] = {16, 4}, oshape[2] = {8, 4};
  for (size_t k = 0; k < sizeof all_dtypes / sizeof *all_dtypes; ++k) {
    const spmd_dtype t = all_dtypes[k];
    if (t == SPMD_BOOL) continue; /* psum of bool is int32: covered by psum */
    void *in = filled(t, 64, small_int);
    const op_t op = {OP_PSUM_SCATTER, "(x,y)", 0, 0, 1, 0, NULL, 0};
    spmd_array *out = NULL;
    assert_ok(run_op(f->m24, t, 2, shape, in, "x", "(x,y)", &op, NULL, &out));
    void *g = fetch(out, t, 2, oshape);
    for (size_t r = 0; r < 8; ++r)
      for (size_t c = 0; c < 4; ++c)
        assert_true(elem(t, g, r * 4 + c) ==
                    4 * (elem(t, in, r * 4 + c) + elem(t, in, (8 + r) * 4 + c)));
    free(g);
    free(in);
    spmd_array_destroy(out);
  }
}

static void psum_scatter_not_tiled_removes_the_dimension(void **state) {
  fixture *f = *state;
  /* Replicated (4, 3): over y (size 4) device j gets 4 * in[j]. */
  const int64_t shape[2] = {4, 3}, oshape[1] = {12};
  float in[12];
  for (int i = 0; i < 12; ++i) in[i] = (float)i;
  const op_t op = {OP_PSUM_SCATTER, "y", 0, 0, 0, 0, NULL, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m24, SPMD_F32, 2, shape, in, "", "y", &op, NULL, &out));
  float *g = fetch(out, SPMD_F32, 1, oshape);
  for (int i = 0; i < 12; ++i) assert_float_equal(g[i], 4 * in[i], 0);
  free(g);
  spmd_array_destroy(out);
  /* bool has no sum to scatter, as in JAX. */
  const uint8_t b4[4] = {1, 0, 1, 1};
  const int64_t s4[1] = {4};
  const op_t tiled = {OP_PSUM_SCATTER, "y", 0, 0, 1, 0, NULL, 0};
  assert_fails(run_op(f->m24, SPMD_BOOL, 1, s4, b4, "", "y", &tiled, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "psum_scatter over 'y': bool has no sum to scatter");
  /* The dimension must equal the axis size. */
  const int64_t bad[2] = {3, 3};
  assert_fails(run_op(f->m24, SPMD_F32, 2, bad, in, "", "y", &op, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT,
               "psum_scatter over 'y': scatter_dimension 0 has size 3 but the axis size is 4");
}

static void psum_scatter_uneven_and_inner_dimension(void **state) {
  fixture *f = *state;
  /* (10,) replicated over 4 devices: chunks 3, 3, 3, 1 of 4 * in. */
  const int64_t s1[1] = {10};
  double in[24];
  for (int i = 0; i < 24; ++i) in[i] = i + 0.5;
  op_t op = {OP_PSUM_SCATTER, "x", 0, 0, 1, 0, NULL, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m4, SPMD_F64, 1, s1, in, "", "x", &op, NULL, &out));
  double *g = fetch(out, SPMD_F64, 1, s1);
  for (int i = 0; i < 10; ++i) assert_true(g[i] == 4 * in[i]);
  free(g);
  spmd_array_destroy(out);
  /* (3, 8) replicated on 2x4, over y along dim 1: (3, 2) blocks of 4*in. */
  const int64_t s2[2] = {3, 8};
  op.axes = "y";
  op.axis = 1;
  assert_ok(run_op(f->m24, SPMD_F64, 2, s2, in, "", "None, y", &op, NULL, &out));
  g = fetch(out, SPMD_F64, 2, s2);
  for (int i = 0; i < 24; ++i) assert_true(g[i] == 4 * in[i]);
  free(g);
  spmd_array_destroy(out);
}

/* ---- all_to_all ---- */

static void all_to_all_tiled_is_the_seed_transpose(void **state) {
  fixture *f = *state;
  /* Rows split over x; split columns, concat rows: the same global array
   * now split by columns. */
  const int64_t shape[2] = {8, 8};
  for (size_t k = 0; k < sizeof all_dtypes / sizeof *all_dtypes; ++k) {
    const spmd_dtype t = all_dtypes[k];
    void *in = filled(t, 64, t == SPMD_BOOL ? small_int : index_value);
    const op_t op = {OP_ALL_TO_ALL, "x", 1, 0, 1, 0, NULL, 0};
    spmd_array *out = NULL;
    assert_ok(run_op(f->m4, t, 2, shape, in, "x", "None, x", &op, NULL, &out));
    void *g = fetch(out, t, 2, shape);
    assert_memory_equal(g, in, 64 * spmd_dtype_size(t));
    free(g);
    spmd_array_destroy(out);
    free(in);
  }
  /* Over a tuple on 2x2x2, and uneven columns (10 over 4: 3, 3, 3, 1). */
  float in[80];
  for (int i = 0; i < 80; ++i) in[i] = (float)i;
  const op_t op3 = {OP_ALL_TO_ALL, "(x,y,z)", 1, 0, 1, 0, NULL, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m222, SPMD_F32, 2, shape, in, "(x,y,z)", "None, (x,y,z)", &op3, NULL, &out));
  float *g = fetch(out, SPMD_F32, 2, shape);
  assert_memory_equal(g, in, 64 * sizeof(float));
  free(g);
  spmd_array_destroy(out);
  const int64_t s10[2] = {8, 10};
  const op_t opu = {OP_ALL_TO_ALL, "x", 1, 0, 1, 0, NULL, 0};
  assert_ok(run_op(f->m4, SPMD_F32, 2, s10, in, "x", "None, x", &opu, NULL, &out));
  g = fetch(out, SPMD_F32, 2, s10);
  assert_memory_equal(g, in, 80 * sizeof(float));
  free(g);
  spmd_array_destroy(out);
}

/* jax.lax.all_to_all(x.reshape(4,1,3), 'x', 0, 2) on arange(48).reshape(16,3)
 * split over 4 devices gives a (4, 3, 4) array with out[i][c][j] =
 * 12*j + 3*i + c (JAX's own output). */
static void all_to_all_not_tiled_matches_jax(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {16, 3}, oshape[3] = {4, 3, 4};
  int32_t in[48];
  for (int i = 0; i < 48; ++i) in[i] = i;
  const op_t op = {OP_ALL_TO_ALL, "x", 0, 2, 0, 0, NULL, 2}; /* view (4,3) as (4,1,3) */
  spmd_array *out = NULL;
  assert_ok(run_op(f->m4, SPMD_I32, 2, shape, in, "x", "x", &op, NULL, &out));
  int32_t *g = fetch(out, SPMD_I32, 3, oshape);
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 3; ++c)
      for (int j = 0; j < 4; ++j) assert_int_equal(g[(i * 3 + c) * 4 + j], 12 * j + 3 * i + c);
  free(g);
  spmd_array_destroy(out);
  /* concat_axis 1: (4, 4, 3) with out[i][j][c] = 12*j + 3*i + c. */
  const op_t op1 = {OP_ALL_TO_ALL, "x", 0, 1, 0, 0, NULL, 2};
  const int64_t oshape1[3] = {4, 4, 3};
  assert_ok(run_op(f->m4, SPMD_I32, 2, shape, in, "x", "x", &op1, NULL, &out));
  g = fetch(out, SPMD_I32, 3, oshape1);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int c = 0; c < 3; ++c) assert_int_equal(g[(i * 4 + j) * 3 + c], 12 * j + 3 * i + c);
  free(g);
  spmd_array_destroy(out);
}

/* ---- ppermute ---- */

/* JAX: ppermute(x, 'x', [(0,1), (1,2)]) on arange(48).reshape(16,3) over 4
 * devices: device 1 gets block 0, device 2 block 1, devices 0 and 3 zeros. */
static void ppermute_pairs_and_zeros_match_jax(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {16, 3};
  for (size_t k = 0; k < sizeof all_dtypes / sizeof *all_dtypes; ++k) {
    const spmd_dtype t = all_dtypes[k];
    void *in = filled(t, 48, t == SPMD_BOOL ? small_int : index_value);
    const int64_t pairs[4] = {0, 1, 1, 2};
    const op_t op = {OP_PPERMUTE, "x", 0, 0, 0, 2, pairs, 0};
    spmd_array *out = NULL;
    assert_ok(run_op(f->m4, t, 2, shape, in, "x", "x", &op, NULL, &out));
    void *g = fetch(out, t, 2, shape);
    for (size_t r = 0; r < 16; ++r)
      for (size_t c = 0; c < 3; ++c) {
        const size_t blk = r / 4;
        const double want = (blk == 1 || blk == 2) ? elem(t, in, (r - 4) * 3 + c) : 0.0;
        assert_true(elem(t, g, r * 3 + c) == want);
      }
    free(g);
    free(in);
    spmd_array_destroy(out);
  }
}

/* A ring shift over the tuple (x, z) on 2x2x2. */
static void ppermute_ring_over_tuple(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {8};
  float in[8];
  for (int i = 0; i < 8; ++i) in[i] = (float)(10 * i);
  const int64_t ring[8] = {0, 1, 1, 2, 2, 3, 3, 0};
  const op_t op = {OP_PPERMUTE, "(x, z)", 0, 0, 0, 4, ring, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m222, SPMD_F32, 1, shape, in, "(x,y,z)", "(x,y,z)", &op, NULL, &out));
  float *g = fetch(out, SPMD_F32, 1, shape);
  for (int x = 0; x < 2; ++x)
    for (int y = 0; y < 2; ++y)
      for (int z = 0; z < 2; ++z) {
        const int r = x * 2 + z, src = (r + 3) % 4;
        const int sx = src / 2, sz = src % 2;
        assert_float_equal(g[x * 4 + y * 2 + z], in[sx * 4 + y * 2 + sz], 0);
      }
  free(g);
  spmd_array_destroy(out);
  const int64_t dup[4] = {0, 1, 0, 2};
  const op_t bad = {OP_PPERMUTE, "(x, z)", 0, 0, 0, 2, dup, 0};
  assert_fails(run_op(f->m222, SPMD_F32, 1, shape, in, "(x,y,z)", "(x,y,z)", &bad, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "index 0 is a source in more than one pair");
  const int64_t far[2] = {0, 4};
  const op_t bad2 = {OP_PPERMUTE, "(x, z)", 0, 0, 0, 1, far, 0};
  assert_fails(run_op(f->m222, SPMD_F32, 1, shape, in, "(x,y,z)", "(x,y,z)", &bad2, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "pair (0, 4) names an index outside 0..3");
}

/* Bad parameters are refused with the collective and axes named. */
/* Groups that run at different speeds: on a 2x4 mesh the two 'x' rows
 * each psum over 'y' many times in a row, small and large, and one row
 * sleeps now and then, so a fast member starts its next psum while slow
 * peers still reduce the previous one. Every result must be its own
 * iteration's sum (100 x + 10 y + it, summed over y). */
static spmd_status successive_psums(spmd_ctx *ctx, void *ud) {
  (void)ud;
  int64_t x = 0, y = 0;
  if (spmd_ctx_axis_index(ctx, "x", &x) || spmd_ctx_axis_index(ctx, "y", &y)) return 1;
  spmd_block in = SPMD_BLOCK_INIT, sum = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  const int64_t one[1] = {1};
  if (spmd_ctx_alloc(ctx, SPMD_F32, 1, one, &out)) return 1;
  float *wrong = out.data;
  *wrong = 0;
  for (int it = 0; it < 60; ++it) {
    /* Staged (small) and direct (large) all-reduces alternate. */
    const int64_t n[1] = {it % 4 == 3 ? 16384 : 64};
    if (spmd_ctx_alloc(ctx, SPMD_F32, 1, n, &in)) return 1;
    for (int64_t i = 0; i < n[0]; ++i) ((float *)in.data)[i] = (float)(100 * x + 10 * y + it);
    if (x == 1 && it % 3 == 0) usleep(300);
    if (spmd_ctx_psum(ctx, &in, "y", &sum)) return 1;
    const float want = (float)(4 * (100 * x + it) + 10 * (0 + 1 + 2 + 3));
    for (int64_t i = 0; i < n[0]; ++i) *wrong += ((const float *)sum.data)[i] != want;
  }
  return spmd_ctx_set_output(ctx, 0, &out);
}

/* Runs a program on the 2x4 mesh that counts, per device, the results it
 * found wrong, and asserts that every count is zero. */
static void assert_no_wrong_results(spmd_mesh *mesh, spmd_shard_fn program) {
  const char *out_spec = "(x, y)";
  spmd_array *out = NULL;
  assert_ok(spmd_shard_map_text(mesh, program, NULL, 0, NULL, NULL, 1, &out_spec, NULL, &out));
  float wrong[8];
  assert_ok(spmd_array_to_host(out, wrong, sizeof wrong));
  for (int d = 0; d < 8; ++d)
    if (wrong[d] != 0.0f) fail_msg("device %d found %g wrong results", d, wrong[d]);
  spmd_array_destroy(out);
}

static void successive_psums_of_groups_at_different_speeds(void **state) {
  fixture *f = *state;
  assert_no_wrong_results(f->m24, successive_psums);
}

/* Every collective in turn, over 'y' of a 2x4 mesh, with the members of
 * each group delayed by different amounts at different steps: each result
 * is checked against the values its own step's inputs give. Block values
 * encode (x, y, step, element) so a result from the wrong step or peer
 * shows. */
static float skew_value(int64_t x, int64_t y, int step, int64_t i) {
  return (float)(1000 * x + 100 * y + 10 * step + i % 7);
}

static spmd_status mixed_collectives(spmd_ctx *ctx, void *ud) {
  (void)ud;
  int64_t x = 0, y = 0;
  if (spmd_ctx_axis_index(ctx, "x", &x) || spmd_ctx_axis_index(ctx, "y", &y)) return 1;
  spmd_block out = SPMD_BLOCK_INIT, in = SPMD_BLOCK_INIT, r = SPMD_BLOCK_INIT;
  const int64_t one[1] = {1}, n = 32, shape[1] = {n};
  if (spmd_ctx_alloc(ctx, SPMD_F32, 1, one, &out)) return 1;
  float *wrong = out.data;
  *wrong = 0;
  const int64_t ring[8] = {0, 1, 1, 2, 2, 3, 3, 0};
  for (int step = 0; step < 40; ++step) {
    if (spmd_ctx_alloc(ctx, SPMD_F32, 1, shape, &in)) return 1;
    float *v = in.data;
    for (int64_t i = 0; i < n; ++i) v[i] = skew_value(x, y, step, i);
    if ((step + (int)y + 2 * (int)x) % 5 == 0) usleep(200);
    const float *got;
    switch (step % 4) {
      case 0: /* all_gather, tiled: peer p's block at [p*n, (p+1)*n) */
        if (spmd_ctx_all_gather(ctx, &in, "y", 0, 1, &r)) return 1;
        got = r.data;
        for (int64_t p = 0; p < 4; ++p)
          for (int64_t i = 0; i < n; ++i) *wrong += got[p * n + i] != skew_value(x, p, step, i);
        break;
      case 1: /* psum_scatter, tiled: chunk y of the sum over peers */
        if (spmd_ctx_psum_scatter(ctx, &in, "y", 0, 1, &r)) return 1;
        got = r.data;
        for (int64_t i = 0; i < n / 4; ++i) {
          float want = 0;
          for (int64_t p = 0; p < 4; ++p) want += skew_value(x, p, step, y * (n / 4) + i);
          *wrong += got[i] != want;
        }
        break;
      case 2: /* ppermute around the ring: from y - 1 */
        if (spmd_ctx_ppermute(ctx, &in, "y", 4, ring, &r)) return 1;
        got = r.data;
        for (int64_t i = 0; i < n; ++i) *wrong += got[i] != skew_value(x, (y + 3) % 4, step, i);
        break;
      default: /* all_to_all, tiled: chunk y of every peer, in peer order */
        if (spmd_ctx_all_to_all(ctx, &in, "y", 0, 0, 1, &r)) return 1;
        got = r.data;
        for (int64_t p = 0; p < 4; ++p)
          for (int64_t i = 0; i < n / 4; ++i)
            *wrong += got[p * (n / 4) + i] != skew_value(x, p, step, y * (n / 4) + i);
        break;
    }
  }
  return spmd_ctx_set_output(ctx, 0, &out);
}

static void every_collective_under_skewed_arrivals(void **state) {
  fixture *f = *state;
  assert_no_wrong_results(f->m24, mixed_collectives);
}

static void bad_parameters_name_the_collective(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {8, 2};
  float in[16] = {0};
  spmd_array *out = NULL;
  op_t op = {OP_ALL_GATHER, "x", 2, 0, 1, 0, NULL, 0};
  assert_fails(run_op(f->m4, SPMD_F32, 2, shape, in, "x", "", &op, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "all_gather over 'x': axis 2 is out of range");
  op.axes = "q";
  assert_fails(run_op(f->m4, SPMD_F32, 2, shape, in, "x", "", &op, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "axes 'q': mesh has no axis 'q' (axes: x)");
  op_t a2a = {OP_ALL_TO_ALL, "x", 0, 1, 0, 0, NULL, 0};
  assert_fails(run_op(f->m4, SPMD_F32, 2, shape, in, "x", "", &a2a, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "all_to_all over 'x': split_axis 0 has size 2");
  assert_null(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(psum_over_one_axis_every_dtype),
      cmocka_unit_test(psum_over_tuple_wraps_integers),
      cmocka_unit_test(half_precision_sums_accumulate_in_f32),
      cmocka_unit_test(large_psum_is_chunked_and_replicated),
      cmocka_unit_test(large_blocks_gather_and_permute_intact),
      cmocka_unit_test(pmean_of_integers_is_float32),
      cmocka_unit_test(pmax_pmin_every_dtype_over_tuple),
      cmocka_unit_test(pmax_propagates_nan),
      cmocka_unit_test(all_gather_tiled_and_not_every_dtype),
      cmocka_unit_test(all_gather_follows_tuple_order),
      cmocka_unit_test(all_gather_tiled_uneven_rebuilds_the_array),
      cmocka_unit_test(psum_scatter_tiled_over_tuple),
      cmocka_unit_test(psum_scatter_not_tiled_removes_the_dimension),
      cmocka_unit_test(psum_scatter_uneven_and_inner_dimension),
      cmocka_unit_test(all_to_all_tiled_is_the_seed_transpose),
      cmocka_unit_test(all_to_all_not_tiled_matches_jax),
      cmocka_unit_test(ppermute_pairs_and_zeros_match_jax),
      cmocka_unit_test(ppermute_ring_over_tuple),
      cmocka_unit_test(successive_psums_of_groups_at_different_speeds),
      cmocka_unit_test(every_collective_under_skewed_arrivals),
      cmocka_unit_test(bad_parameters_name_the_collective),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
