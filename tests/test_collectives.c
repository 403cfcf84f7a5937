/* The jax.lax collectives inside shard_map: psum, pmean, pmax, pmin,
 * all_gather, psum_scatter, all_to_all and ppermute over one mesh axis and
 * over tuples of axes, on 2x4 and 2x2x2 meshes, tiled and not, uneven where
 * it means something, for every dtype; each compared with values computed
 * here from the inputs. */
#include <unistd.h>

#include "collective_test_util.h"

static const spmd_dtype all_dtypes[] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16, SPMD_I32, SPMD_I64,
                                        SPMD_U8,  SPMD_BOOL, SPMD_I8,  SPMD_I16,  SPMD_U16, SPMD_U32};

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

/* bf16 sums accumulate in f32 and round once: 256+1+1+1 is 259 before
 * rounding, 260 in bf16 (a bf16 accumulator stays at 256). f16 sums round
 * to f16 after every addition, in group order, as XLA's CPU collectives do:
 * 2048+1+1+1 stays 2048 (2049 rounds to even), while 1+1+1+2048 reaches
 * 2051 and rounds to 2052. */
static void half_precision_sums_round_as_xla(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {4}, oshape[1] = {1};
  const op_t op = {OP_PSUM, "x", 0, 0, 0, 0, NULL, 0};
  uint16_t h[4], h_rev[4], b[4];
  const float hv[4] = {2048, 1, 1, 1}, bv[4] = {256, 1, 1, 1};
  for (int i = 0; i < 4; ++i) {
    h[i] = float_to_f16_exact(hv[i]);
    h_rev[i] = float_to_f16_exact(hv[3 - i]);
    b[i] = float_to_bf16_exact(bv[i]);
  }
  spmd_array *out = NULL;
  assert_ok(run_op(f->m4, SPMD_F16, 1, shape, h, "x", "", &op, NULL, &out));
  uint16_t *g = fetch(out, SPMD_F16, 1, oshape);
  assert_float_equal(f16_to_float(g[0]), 2048.0f, 0);
  free(g);
  spmd_array_destroy(out);
  assert_ok(run_op(f->m4, SPMD_F16, 1, shape, h_rev, "x", "", &op, NULL, &out));
  g = fetch(out, SPMD_F16, 1, oshape);
  assert_float_equal(f16_to_float(g[0]), 2052.0f, 0);
  free(g);
  spmd_array_destroy(out);
  assert_ok(run_op(f->m4, SPMD_BF16, 1, shape, b, "x", "", &op, NULL, &out));
  g = fetch(out, SPMD_BF16, 1, oshape);
  assert_float_equal(bf16_to_float(g[0]), 260.0f, 0);
  free(g);
  spmd_array_destroy(out);
}

/* The sign bit of element i of a float buffer (f32, f64, or 16-bit). */
static int sign_of(spmd_dtype t, const void *p, size_t i) {
  switch (t) {
    case SPMD_F32: return signbit(((const float *)p)[i]) != 0;
    case SPMD_F64: return signbit(((const double *)p)[i]) != 0;
    default: return (((const uint16_t *)p)[i] >> 15) != 0;
  }
}

/* Sums start from +0, as XLA's do: psum, pmean and psum_scatter of -0.0
 * give +0.0, over a group of four and over a group of one (the 'y' axis of
 * an 8x1 mesh). */
static void sums_of_negative_zeros_are_positive_zero(void **state) {
  fixture *f = *state;
  const spmd_dtype floats[4] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16};
  const int64_t s81[2] = {8, 1}, shape[1] = {16}, four[1] = {4};
  spmd_mesh *m81 = test_mesh(f->rt, 2, s81);
  for (size_t k = 0; k < 4; ++k) {
    const spmd_dtype t = floats[k];
    void *in = malloc(16 * spmd_dtype_size(t));
    for (size_t i = 0; i < 16; ++i) set_elem(t, in, i, -0.0);
    assert_true(sign_of(t, in, 0));
    const op_t ops[3] = {{OP_PSUM, "x", 0, 0, 0, 0, NULL, 0},
                         {OP_PMEAN, "x", 0, 0, 0, 0, NULL, 0},
                         {OP_PSUM_SCATTER, "x", 0, 0, 1, 0, NULL, 0}};
    for (size_t o = 0; o < 3; ++o) {
      spmd_array *out = NULL;
      /* Blocks of 4: psum and pmean give 4 elements everywhere, psum_scatter
       * one on each of the 4 devices. */
      assert_ok(run_op(f->m4, t, 1, shape, in, "x", o == 2 ? "x" : "", &ops[o], NULL, &out));
      void *g = fetch(out, t, 1, four);
      for (size_t i = 0; i < 4; ++i) assert_false(sign_of(t, g, i));
      free(g);
      spmd_array_destroy(out);
      /* A group of one: every device alone on 'y'. */
      op_t alone = ops[o];
      alone.axes = "y";
      assert_ok(run_op(m81, t, 1, shape, in, "x", "x", &alone, NULL, &out));
      g = fetch(out, t, 1, shape);
      for (size_t i = 0; i < 16; ++i) assert_false(sign_of(t, g, i));
      free(g);
      spmd_array_destroy(out);
    }
    free(in);
  }
  spmd_mesh_destroy(m81);
}

/* XLA's CPU code flushes f32, f64 and bf16 subnormals to zero in sums, in
 * and out: FLT_MIN/4 counts as 0, and FLT_MIN*1.5 - FLT_MIN (a subnormal
 * difference) is 0. f16 sums keep their subnormals (2^-24 + 2^-24). */
static void sums_flush_subnormals_as_xla(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {4}, one[1] = {1};
  const op_t op = {OP_PSUM, "x", 0, 0, 0, 0, NULL, 0};
  const float fmin = 1.17549435e-38f;
  const float in[4] = {fmin / 4, fmin / 4, fmin / 4, fmin / 4};
  const float diff[4] = {fmin * 1.5f, -fmin, 0, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m4, SPMD_F32, 1, shape, in, "x", "", &op, NULL, &out));
  float *g = fetch(out, SPMD_F32, 1, one);
  assert_true(g[0] == 0 && !signbit(g[0]));
  free(g);
  spmd_array_destroy(out);
  assert_ok(run_op(f->m4, SPMD_F32, 1, shape, diff, "x", "", &op, NULL, &out));
  g = fetch(out, SPMD_F32, 1, one);
  assert_true(g[0] == 0);
  free(g);
  spmd_array_destroy(out);
  const double dmin = 2.2250738585072014e-308;
  const double din[4] = {dmin / 2, dmin, 0, 0};
  assert_ok(run_op(f->m4, SPMD_F64, 1, shape, din, "x", "", &op, NULL, &out));
  double *gd = fetch(out, SPMD_F64, 1, one);
  assert_true(gd[0] == dmin);
  free(gd);
  spmd_array_destroy(out);
  const uint16_t h[4] = {0x0001, 0x0001, 0, 0}; /* f16 2^-24 twice */
  assert_ok(run_op(f->m4, SPMD_F16, 1, shape, h, "x", "", &op, NULL, &out));
  uint16_t *gh = fetch(out, SPMD_F16, 1, one);
  assert_int_equal(gh[0], 0x0002);
  free(gh);
  spmd_array_destroy(out);
}

/* pmean over a group of 3 multiplies the sum by the reciprocal of 3 rounded
 * to the dtype, as XLA's CPU code does, which differs from a division for a
 * sum of 5: f32 5 * (1/3) is 1.6666667, 5 / 3 is 1.6666666; f64 likewise in
 * its last bit; f16 multiplies by 1/3 rounded to f16. Integers are summed,
 * converted, and multiplied the same way. */
static void pmean_multiplies_by_the_reciprocal(void **state) {
  fixture *f = *state;
  const int64_t s3[1] = {3}, shape[1] = {3}, one[1] = {1};
  spmd_mesh *m3 = test_mesh(f->rt, 1, s3);
  const op_t op = {OP_PMEAN, "x", 0, 0, 0, 0, NULL, 0};
  spmd_array *out = NULL;
  const float in32[3] = {2, 0, 3};
  const float want32 = 5.0f * (1.0f / 3.0f);
  assert_true(want32 != 5.0f / 3.0f);
  assert_ok(run_op(m3, SPMD_F32, 1, shape, in32, "x", "", &op, NULL, &out));
  float *g = fetch(out, SPMD_F32, 1, one);
  assert_true(g[0] == want32);
  free(g);
  spmd_array_destroy(out);
  const int32_t ints[3] = {2, 0, 3};
  assert_ok(run_op(m3, SPMD_I32, 1, shape, ints, "x", "", &op, NULL, &out));
  g = fetch(out, SPMD_F32, 1, one);
  assert_true(g[0] == want32);
  free(g);
  spmd_array_destroy(out);
  const double in64[3] = {2, 0, 3};
  const double want64 = 5.0 * (1.0 / 3.0);
  assert_true(want64 != 5.0 / 3.0);
  assert_ok(run_op(m3, SPMD_F64, 1, shape, in64, "x", "", &op, NULL, &out));
  double *gd = fetch(out, SPMD_F64, 1, one);
  assert_true(gd[0] == want64);
  free(gd);
  spmd_array_destroy(out);
  /* f16: 1/3 rounds to 0x3555 (0.33325195); 5 * that is 1.6662598, which
   * rounds to f16 1.666 (0x3eaa), where 5 / 3 rounds to 1.667 (0x3eab). */
  const uint16_t h[3] = {float_to_f16_exact(2), 0, float_to_f16_exact(3)};
  assert_ok(run_op(m3, SPMD_F16, 1, shape, h, "x", "", &op, NULL, &out));
  uint16_t *gh = fetch(out, SPMD_F16, 1, one);
  assert_int_equal(gh[0], 0x3eaa);
  free(gh);
  spmd_array_destroy(out);
  spmd_mesh_destroy(m3);
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
    const int is_unsigned = t == SPMD_U8 || t == SPMD_U16 || t == SPMD_U32 || t == SPMD_BOOL;
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

/* pmean's product is flushed when it is tiny after rounding to the full
 * precision, as x86 decides with subnormals flushed: f32 0x013fffff times
 * f32(1/3) lies within half a subnormal ulp below FLT_MIN (so rounding on
 * the subnormal grid gives FLT_MIN) but rounds to 24 bits below it: 0.
 * Likewise f64 2.8925960160593614e-307 / 13 (on a runtime of 16 devices). */
static void pmean_flushes_products_tiny_after_rounding(void **state) {
  fixture *f = *state;
  const int64_t s3[1] = {3}, shape3[1] = {3}, one[1] = {1};
  spmd_mesh *m3 = test_mesh(f->rt, 1, s3);
  const op_t op = {OP_PMEAN, "x", 0, 0, 0, 0, NULL, 0};
  const uint32_t bits = 0x013fffffu;
  float in[3] = {0, 0, 0};
  memcpy(&in[0], &bits, 4);
  assert_true(in[0] * (1.0f / 3.0f) == 1.17549435e-38f); /* on the subnormal grid */
  spmd_array *out = NULL;
  assert_ok(run_op(m3, SPMD_F32, 1, shape3, in, "x", "", &op, NULL, &out));
  float *g = fetch(out, SPMD_F32, 1, one);
  assert_true(g[0] == 0);
  free(g);
  spmd_array_destroy(out);
  spmd_mesh_destroy(m3);

  spmd_runtime *rt16 = test_runtime(16);
  const int64_t s13[1] = {13}, shape13[1] = {13};
  spmd_mesh *m13 = test_mesh(rt16, 1, s13);
  double d[13] = {2.8925960160593614e-307};
  assert_true(d[0] * (1.0 / 13) == 2.2250738585072014e-308);
  assert_ok(run_op(m13, SPMD_F64, 1, shape13, d, "x", "", &op, NULL, &out));
  double *gd = fetch(out, SPMD_F64, 1, one);
  assert_true(gd[0] == 0);
  free(gd);
  spmd_array_destroy(out);
  spmd_mesh_destroy(m13);
  spmd_runtime_destroy(rt16);
}

/* On a tie (+0 and -0) pmax and pmin keep the earlier member's value, as
 * XLA's CPU collectives compare: the first member's zero wins over the
 * three others'. */
static void pmax_pmin_keep_the_earlier_of_equal_zeros(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {4}, one[1] = {1};
  const float plus_first[4] = {0.0f, -0.0f, -0.0f, -0.0f};
  const float minus_first[4] = {-0.0f, 0.0f, 0.0f, 0.0f};
  for (int which = 0; which < 2; ++which) {
    const op_t op = {which ? OP_PMIN : OP_PMAX, "x", 0, 0, 0, 0, NULL, 0};
    spmd_array *out = NULL;
    assert_ok(run_op(f->m4, SPMD_F32, 1, shape, plus_first, "x", "", &op, NULL, &out));
    float *g = fetch(out, SPMD_F32, 1, one);
    assert_true(g[0] == 0 && !signbit(g[0]));
    free(g);
    spmd_array_destroy(out);
    assert_ok(run_op(f->m4, SPMD_F32, 1, shape, minus_first, "x", "", &op, NULL, &out));
    g = fetch(out, SPMD_F32, 1, one);
    assert_true(g[0] == 0 && signbit(g[0]));
    free(g);
    spmd_array_destroy(out);
  }
}

/* ---- the empty tuple of axes ---- */

/* "()": every device is a group of one and, as in JAX, nothing moves:
 * psum, pmax, pmin, all_gather and psum_scatter return the input as it is
 * (-0.0 and subnormals kept, no new or removed dimension, bool stays bool),
 * pmean turns integers into float32, all_to_all moves its split dimension
 * of size 1 to concat_axis. */
static void empty_axis_tuple_returns_the_block(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {8};
  const float in[8] = {-0.0f, 1.17549435e-38f / 4, 1, -2, 3, -4, 5, -6};
  const op_t same[6] = {{OP_PSUM, "()", 0, 0, 0, 0, NULL, 0},
                        {OP_PMEAN, "()", 0, 0, 0, 0, NULL, 0},
                        {OP_PMAX, "( )", 0, 0, 0, 0, NULL, 0},
                        {OP_PMIN, "()", 0, 0, 0, 0, NULL, 0},
                        {OP_ALL_GATHER, "()", 0, 0, 0, 0, NULL, 0},
                        {OP_PSUM_SCATTER, "()", 0, 0, 0, 0, NULL, 0}};
  for (size_t o = 0; o < 6; ++o) {
    spmd_array *out = NULL;
    assert_ok(run_op(f->m24, SPMD_F32, 1, shape, in, "(x,y)", "(x,y)", &same[o], NULL, &out));
    float *g = fetch(out, SPMD_F32, 1, shape);
    assert_memory_equal(g, in, sizeof in);
    free(g);
    spmd_array_destroy(out);
  }
  /* psum keeps bool; pmean of int32 is float32. */
  const uint8_t b[8] = {1, 0, 1, 1, 0, 0, 1, 0};
  spmd_array *out = NULL;
  assert_ok(run_op(f->m24, SPMD_BOOL, 1, shape, b, "(x,y)", "(x,y)", &same[0], NULL, &out));
  uint8_t *gb = fetch(out, SPMD_BOOL, 1, shape);
  assert_memory_equal(gb, b, sizeof b);
  free(gb);
  spmd_array_destroy(out);
  const int32_t ints[8] = {-3, 7, 0, 1, 2, 3, 4, 16777217};
  assert_ok(run_op(f->m24, SPMD_I32, 1, shape, ints, "(x,y)", "(x,y)", &same[1], NULL, &out));
  float *g = fetch(out, SPMD_F32, 1, shape);
  for (size_t i = 0; i < 8; ++i) assert_true(g[i] == (float)ints[i]);
  free(g);
  spmd_array_destroy(out);
  /* all_to_all without tiled: local (1, 3) -> (3, 1), elements in order. */
  const int64_t s2[2] = {8, 3}, s2out[2] = {24, 1};
  float m[24];
  for (int i = 0; i < 24; ++i) m[i] = (float)i;
  const op_t a2a = {OP_ALL_TO_ALL, "()", 0, 1, 0, 0, NULL, 0};
  assert_ok(run_op(f->m24, SPMD_F32, 2, s2, m, "(x,y)", "(x,y)", &a2a, NULL, &out));
  g = fetch(out, SPMD_F32, 2, s2out);
  assert_memory_equal(g, m, sizeof m);
  free(g);
  spmd_array_destroy(out);
}

static spmd_status empty_tuple_index_and_size(spmd_ctx *ctx, void *ud) {
  (void)ud;
  int64_t index = -1, size = -1;
  spmd_status st = spmd_ctx_axis_index(ctx, "()", &index);
  if (st == SPMD_OK) st = spmd_ctx_axis_size(ctx, "()", &size);
  if (st != SPMD_OK) return st;
  spmd_block out = SPMD_BLOCK_INIT;
  const int64_t two[1] = {2};
  if ((st = spmd_ctx_alloc(ctx, SPMD_I64, 1, two, &out)) != SPMD_OK) return st;
  ((int64_t *)out.data)[0] = index;
  ((int64_t *)out.data)[1] = size;
  return spmd_ctx_set_output(ctx, 0, &out);
}

/* axis_index(()) is 0 and axis_size(()) is 1 on every device; ppermute over
 * () permutes a group of one; text naming no axis other than "()" fails. */
static void empty_axis_tuple_index_size_and_errors(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {8}, oshape[1] = {16};
  const float in[8] = {0};
  spmd_array *a = test_put(f->m24, "(x,y)", SPMD_F32, 1, shape, in), *out = NULL;
  const char *in_spec = "(x,y)";
  assert_ok(spmd_shard_map_text(f->m24, empty_tuple_index_and_size, NULL, 1, &a, &in_spec, 1,
                                &in_spec, NULL, &out));
  int64_t *g = fetch(out, SPMD_I64, 1, oshape);
  for (size_t d = 0; d < 8; ++d) {
    assert_int_equal(g[2 * d], 0);
    assert_int_equal(g[2 * d + 1], 1);
  }
  free(g);
  spmd_array_destroy(out);
  spmd_array_destroy(a);
  const int64_t self[2] = {0, 0}, away[2] = {0, 1};
  op_t perm = {OP_PPERMUTE, "()", 0, 0, 0, 1, self, 0};
  assert_ok(run_op(f->m24, SPMD_F32, 1, shape, in, "(x,y)", "(x,y)", &perm, NULL, &out));
  spmd_array_destroy(out);
  out = NULL;
  perm.pairs = away;
  assert_fails(run_op(f->m24, SPMD_F32, 1, shape, in, "(x,y)", "(x,y)", &perm, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT,
               "ppermute over (): pairs: pair (0, 1) names an index outside 0..0");
  op_t a2a = {OP_ALL_TO_ALL, "()", 0, 1, 0, 0, NULL, 0};
  const int64_t s2[2] = {16, 2};
  const float m[32] = {0};
  assert_fails(run_op(f->m24, SPMD_F32, 2, s2, m, "(x,y)", "(x,y)", &a2a, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT,
               "all_to_all over (): split_axis 0 has size 2 but the axis size is 1");
  op_t bad = {OP_PSUM, "", 0, 0, 0, 0, NULL, 0};
  assert_fails(run_op(f->m24, SPMD_F32, 1, shape, in, "(x,y)", "(x,y)", &bad, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT,
               "axes '': names no mesh axis (axes: x, y); write \"()\" for the empty tuple");
  bad.axes = "(,)";
  assert_fails(run_op(f->m24, SPMD_F32, 1, shape, in, "(x,y)", "(x,y)", &bad, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT,
               "axes '(,)': unexpected ',' at offset 1 where an axis name was expected");
  assert_null(out);
}

/* Axes are written as Python writes an axis or a tuple of them; text that
 * is not (")x(", "x y") is refused, naming where it goes wrong, rather than
 * guessed at. */
static char *psum_output_sharding(spmd_sharding *s, const char *axes) {
  const int64_t shape[2] = {4, 8};
  spmd_collective *c = NULL;
  assert_ok(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, axes, SPMD_F32, 2, shape, NULL, &c));
  spmd_sharding *o = NULL;
  assert_ok(spmd_collective_output_sharding(c, &o));
  char *text = NULL;
  assert_ok(spmd_sharding_to_string(o, &text));
  spmd_sharding_destroy(o);
  spmd_collective_destroy(c);
  return text;
}

static void axes_text_follows_python_spelling(void **state) {
  fixture *f = *state;
  spmd_sharding *s = NULL;
  assert_ok(spmd_sharding_named_text(f->m24, "x, y", &s));
  const int64_t shape[2] = {4, 8};
  char *xy = psum_output_sharding(s, "x,y");
  const char *same[] = {" x , y ", "(x, y)", "('x', \"y\")", "(x, y,)", "x,y,"};
  for (size_t i = 0; i < sizeof same / sizeof *same; ++i) {
    char *text = psum_output_sharding(s, same[i]);
    assert_string_equal(text, xy);
    spmd_string_free(text);
  }
  char *y = psum_output_sharding(s, "y"), *y1 = psum_output_sharding(s, "(y,)");
  assert_string_equal(y1, y);
  assert_string_not_equal(y, xy);
  spmd_string_free(y1);
  spmd_string_free(y);
  spmd_string_free(xy);
  spmd_collective *c = NULL;
  const struct {
    const char *text, *message;
  } bad[] = {
      {")x(", "axes ')x(': unexpected ')' at offset 0 where an axis name was expected"},
      {"x y", "axes 'x y': unexpected 'y' at offset 2 where the end of the text was expected"},
      {"x,,y", "axes 'x,,y': unexpected ',' at offset 2 where an axis name was expected"},
      {"(x", "axes '(x': ends where a ')' closing the tuple was expected"},
      {"'x\"", "axes ''x\"': unexpected '\"' at offset 2 where the closing quote was expected"},
      {"'x '", "axes ''x '': unexpected ' ' at offset 2 where the closing quote was expected"},
      {"((x))", "axes '((x))': unexpected '(' at offset 1 where an axis name was expected"},
      {"x;y", "axes 'x;y': unexpected ';' at offset 1 where the end of the text was expected"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    c = NULL;
    assert_fails(
        spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, bad[i].text, SPMD_F32, 2, shape, NULL, &c),
        SPMD_ERR_INVALID_ARGUMENT, bad[i].message);
    assert_null(c);
  }
  spmd_sharding_destroy(s);
}

/* Persistent collectives over "()": the output keeps the input's spec and
 * blocks; a non-tiled all_to_all moves its split dimension of size 1 to
 * concat_axis, and is refused when the spec splits that dimension (no spec
 * could place the result). */
static void empty_axis_tuple_in_persistent_collectives(void **state) {
  fixture *f = *state;
  const int64_t shape[1] = {8};
  const float in[8] = {-0.0f, 1.17549435e-38f / 4, 1, -2, 3, -4, 5, -6};
  spmd_sharding *xs = test_sharding(f->m24, "x");
  spmd_array *a = test_put(f->m24, "x", SPMD_F32, 1, shape, in), *out = NULL;
  spmd_collective *c = NULL;
  assert_ok(spmd_collective_create(xs, SPMD_COLLECTIVE_PSUM, "()", SPMD_F32, 1, shape, NULL, &c));
  spmd_sharding *os = NULL;
  int equal = 0;
  assert_ok(spmd_collective_output_sharding(c, &os));
  assert_ok(spmd_sharding_equal(os, xs, &equal));
  assert_true(equal);
  spmd_sharding_destroy(os);
  assert_ok(spmd_collective_execute(c, a, &out));
  float *g = fetch(out, SPMD_F32, 1, shape);
  assert_memory_equal(g, in, sizeof in);
  free(g);
  spmd_array_destroy(out);
  spmd_collective_destroy(c);
  spmd_array_destroy(a);

  /* pmean of uint8 over (): float32, the same values. */
  const uint8_t u[8] = {0, 1, 2, 3, 250, 251, 252, 255};
  a = test_put(f->m24, "x", SPMD_U8, 1, shape, u);
  assert_ok(spmd_collective_create(xs, SPMD_COLLECTIVE_PMEAN, "()", SPMD_U8, 1, shape, NULL, &c));
  assert_ok(spmd_collective_execute(c, a, &out));
  g = fetch(out, SPMD_F32, 1, shape);
  for (size_t i = 0; i < 8; ++i) assert_true(g[i] == (float)u[i]);
  free(g);
  spmd_array_destroy(out);
  spmd_collective_destroy(c);
  spmd_array_destroy(a);
  spmd_sharding_destroy(xs);

  /* all_to_all, split_axis 0 (1 long, unsplit) to concat_axis 1: (1, 8)
   * laid out P(None, (x, y)) becomes (8, 1) laid out P((x, y), None). */
  const int64_t s18[2] = {1, 8}, s81[2] = {8, 1};
  spmd_sharding *cols = test_sharding(f->m24, "None, (x,y)");
  a = test_put(f->m24, "None, (x,y)", SPMD_F32, 2, s18, in);
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.axis = 0;
  o.concat_axis = 1;
  assert_ok(
      spmd_collective_create(cols, SPMD_COLLECTIVE_ALL_TO_ALL, "()", SPMD_F32, 2, s18, &o, &c));
  assert_ok(spmd_collective_output_sharding(c, &os));
  spmd_sharding *rows = test_sharding(f->m24, "(x,y), None");
  assert_ok(spmd_sharding_equal(os, rows, &equal));
  assert_true(equal);
  spmd_sharding_destroy(rows);
  spmd_sharding_destroy(os);
  assert_ok(spmd_collective_execute(c, a, &out));
  g = fetch(out, SPMD_F32, 2, s81);
  assert_memory_equal(g, in, sizeof in);
  free(g);
  spmd_array_destroy(out);
  spmd_collective_destroy(c);
  spmd_array_destroy(a);
  spmd_sharding_destroy(cols);
  /* split_axis longer than 1 is refused as in JAX; one split over x (into
   * blocks of 1 and 0) has a result no spec can place. */
  spmd_sharding *split = test_sharding(f->m24, "x, y");
  const int64_t s24[2] = {2, 4}, s14[2] = {1, 4};
  c = NULL;
  assert_fails(spmd_collective_create(split, SPMD_COLLECTIVE_ALL_TO_ALL, "()", SPMD_F32, 2, s24,
                                      &o, &c),
               SPMD_ERR_INVALID_ARGUMENT,
               "all_to_all over (): options->axis 0 has size 2 but the axis size is 1");
  assert_fails(spmd_collective_create(split, SPMD_COLLECTIVE_ALL_TO_ALL, "()", SPMD_F32, 2, s14,
                                      &o, &c),
               SPMD_ERR_UNSUPPORTED,
               "all_to_all over (): the input's spec splits split_axis 0, which the result "
               "no longer has");
  assert_null(c);
  spmd_sharding_destroy(split);
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
  /* Negative axes count from the end, as everywhere in libspmd (JAX's
   * untiled lowering refuses them; docs/differences.md): -3, -1 is 0, 2. */
  const op_t neg = {OP_ALL_TO_ALL, "x", -3, -1, 0, 0, NULL, 2};
  assert_ok(run_op(f->m4, SPMD_I32, 2, shape, in, "x", "x", &neg, NULL, &out));
  g = fetch(out, SPMD_I32, 3, oshape);
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 3; ++c)
      for (int j = 0; j < 4; ++j) assert_int_equal(g[(i * 3 + c) * 4 + j], 12 * j + 3 * i + c);
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
      cmocka_unit_test(half_precision_sums_round_as_xla),
      cmocka_unit_test(sums_of_negative_zeros_are_positive_zero),
      cmocka_unit_test(sums_flush_subnormals_as_xla),
      cmocka_unit_test(pmean_multiplies_by_the_reciprocal),
      cmocka_unit_test(pmean_flushes_products_tiny_after_rounding),
      cmocka_unit_test(large_psum_is_chunked_and_replicated),
      cmocka_unit_test(large_blocks_gather_and_permute_intact),
      cmocka_unit_test(pmean_of_integers_is_float32),
      cmocka_unit_test(pmax_pmin_every_dtype_over_tuple),
      cmocka_unit_test(pmax_propagates_nan),
      cmocka_unit_test(pmax_pmin_keep_the_earlier_of_equal_zeros),
      cmocka_unit_test(empty_axis_tuple_returns_the_block),
      cmocka_unit_test(empty_axis_tuple_index_size_and_errors),
      cmocka_unit_test(empty_axis_tuple_in_persistent_collectives),
      cmocka_unit_test(all_gather_tiled_and_not_every_dtype),
      cmocka_unit_test(all_gather_follows_tuple_order),
      cmocka_unit_test(all_gather_tiled_uneven_rebuilds_the_array),
      cmocka_unit_test(psum_scatter_tiled_over_tuple),
      cmocka_unit_test(psum_scatter_not_tiled_removes_the_dimension),
      cmocka_unit_test(psum_scatter_uneven_and_inner_dimension),
      cmocka_unit_test(axes_text_follows_python_spelling),
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
