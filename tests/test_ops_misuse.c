/* The global ops of spmd/ops.h under hostile input: results of more than
 * SPMD_MAX_NDIM dimensions, shapes whose element count overflows, empty
 * arrays with huge dimensions, bool and every integer dtype on every
 * reduction and contraction, and blocks left empty on every split. The
 * expected answers are JAX's (jax 0.10, int32 and float32 as under its
 * defaults, int64 and float64 under jax_enable_x64), within the bound on
 * shapes of docs/compute.md; a refused call must change nothing. */
#include "spmd_test.h"

#include <math.h>

static spmd_mesh *mesh; /* 2 x 4: 'x', 'y' */
static spmd_mesh *line; /* 8: 'd' */

static const int64_t kTwo62 = (int64_t)1 << 62, kTwo32 = (int64_t)1 << 32,
                     kTwo31 = (int64_t)1 << 31;

static int setup(void **state) {
  suite_setup(state);
  int64_t s[2] = {2, 4}, s8[1] = {8};
  const char *names[1] = {"d"};
  mesh = test_mesh(suite_rt, 2, s);
  assert_ok(spmd_mesh_create(suite_rt, 1, s8, names, NULL, &line));
  return 0;
}

static int teardown(void **state) {
  spmd_mesh_destroy(line);
  spmd_mesh_destroy(mesh);
  return suite_teardown(state);
}

/* ---- helpers ---- */

static int64_t elements(size_t nd, const int64_t *shape) {
  int64_t n = 1;
  for (size_t i = 0; i < nd; ++i) n *= shape[i];
  return n;
}

/* An array of zeros (no host buffer, so huge empty shapes can be made). */
static spmd_array *zeros(spmd_mesh *m, const char *spec, spmd_dtype t, size_t nd,
                         const int64_t *shape) {
  spmd_sharding *s = test_sharding(m, spec);
  spmd_array *a = NULL;
  assert_ok(spmd_array_zeros(s, t, nd, shape, &a));
  spmd_sharding_destroy(s);
  return a;
}

static void assert_shape(const spmd_array *a, spmd_dtype t, size_t nd, const int64_t *shape) {
  spmd_dtype dt;
  assert_ok(spmd_array_dtype(a, &dt));
  if (dt != t) fail_msg("dtype %s, expected %s", spmd_dtype_name(dt), spmd_dtype_name(t));
  size_t got_nd = 0;
  int64_t got[SPMD_MAX_NDIM];
  assert_ok(spmd_array_shape(a, SPMD_MAX_NDIM, got, &got_nd));
  assert_int_equal(got_nd, nd);
  for (size_t i = 0; i < nd; ++i)
    if (got[i] != shape[i])
      fail_msg("dimension %zu is %lld, expected %lld", i, (long long)got[i], (long long)shape[i]);
}

/* The array holds exactly these bytes (row-major). */
static void assert_bytes(const spmd_array *a, const void *want, size_t nbytes) {
  unsigned char got[512];
  assert_true(nbytes <= sizeof got);
  assert_ok(spmd_array_to_host(a, got, nbytes));
  if (memcmp(got, want, nbytes) != 0) fail_msg("values differ");
}

/* Integer or bool values, whatever the dtype, against int64 ones. */
static void assert_ints(const spmd_array *a, spmd_dtype t, size_t nd, const int64_t *shape,
                        const int64_t *want) {
  assert_shape(a, t, nd, shape);
  const int64_t n = elements(nd, shape);
  unsigned char buf[512];
  const size_t es = spmd_dtype_size(t);
  assert_true((size_t)n * es <= sizeof buf);
  assert_ok(spmd_array_to_host(a, buf, (size_t)n * es));
  for (int64_t i = 0; i < n; ++i) {
    int64_t v;
    switch (t) {
      case SPMD_I8: v = (int8_t)buf[i]; break;
      case SPMD_I16: { int16_t x; memcpy(&x, buf + 2 * i, 2); v = x; break; }
      case SPMD_U16: { uint16_t x; memcpy(&x, buf + 2 * i, 2); v = x; break; }
      case SPMD_I32: { int32_t x; memcpy(&x, buf + 4 * i, 4); v = x; break; }
      case SPMD_U32: { uint32_t x; memcpy(&x, buf + 4 * i, 4); v = x; break; }
      case SPMD_I64: memcpy(&v, buf + 8 * i, 8); break;
      default: v = buf[i]; break;
    }
    if (v != want[i])
      fail_msg("element %lld is %lld, JAX's is %lld", (long long)i, (long long)v,
               (long long)want[i]);
  }
}

/* Float values within a relative distance of JAX's. */
static void assert_floats(const spmd_array *a, spmd_dtype t, size_t nd, const int64_t *shape,
                          const double *want, double rtol) {
  assert_shape(a, t, nd, shape);
  const int64_t n = elements(nd, shape);
  double got[64];
  assert_true(n <= 64);
  if (t == SPMD_F64) {
    assert_ok(spmd_array_to_host(a, got, (size_t)n * 8));
  } else {
    float f[64];
    assert_ok(spmd_array_to_host(a, f, (size_t)n * 4));
    for (int64_t i = 0; i < n; ++i) got[i] = f[i];
  }
  for (int64_t i = 0; i < n; ++i)
    if (!(fabs(got[i] - want[i]) <= rtol * fabs(want[i]) + 1e-30))
      fail_msg("element %lld is %.9g, JAX's is %.9g", (long long)i, got[i], want[i]);
}

/* An address no call may write into an output it refuses. */
static char untouched_cell;
#define UNTOUCHED ((spmd_array *)(void *)&untouched_cell)

/* Calls `call` (which writes *out) expecting a refusal that names `needle`,
 * with *out untouched. */
#define assert_refused(call, out, needle)                  \
  do {                                                     \
    *(out) = UNTOUCHED;                                    \
    assert_fails(call, SPMD_ERR_INVALID_ARGUMENT, needle); \
    assert_ptr_equal(*(out), UNTOUCHED);                   \
  } while (0)

/* ---- results of more than SPMD_MAX_NDIM dimensions ---- */

/* Each call would make a result of 9 or 10 dimensions (these are the ops
 * whose result's rank the caller chooses): refused before it does
 * anything, a donated operand included, which stays as it was. */
static void results_of_more_than_eight_dimensions_are_refused_and_leave_operands_usable(
    void **state) {
  (void)state;
  const int64_t s5[5] = {1, 1, 1, 2, 1};
  const float v[2] = {1, 2};
  spmd_array *a = test_put(mesh, "x, None, None, y", SPMD_F32, 5, s5, v), *r = NULL;
  spmd_op_options donate = SPMD_OP_OPTIONS_INIT;
  donate.donate = 1;
  spmd_dot_dims dd = SPMD_DOT_DIMS_INIT; /* no pairs: 5 + 5 dimensions */
  assert_refused(spmd_dot_general(a, a, &dd, &donate, &r), &r, "spmd_dot_general: dims");
  const int64_t zero[1] = {0};
  dd.nbatch = 1; /* 1 + 4 + 4 */
  dd.lhs_batch = zero;
  dd.rhs_batch = zero;
  assert_refused(spmd_dot_general(a, a, &dd, &donate, &r), &r, "spmd_dot_general: dims");
  assert_refused(spmd_einsum("abcde,fghij->abcdefghij", a, a, &donate, &r), &r,
                 "spmd_einsum: subscripts");
  const int64_t ones9[9] = {1, 1, 1, 1, 1, 1, 1, 2, 1}, perm9[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t lo9[9] = {0}, hi9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  assert_refused(spmd_broadcast_to(a, 9, ones9, &donate, &r), &r, "spmd_broadcast_to: shape");
  assert_refused(spmd_reshape(a, 9, ones9, &donate, &r), &r, "spmd_reshape: shape");
  assert_refused(spmd_transpose(a, 9, perm9, &donate, &r), &r, "spmd_transpose: perm");
  assert_refused(spmd_slice(a, 9, lo9, hi9, &donate, &r), &r, "spmd_slice");
  /* Still usable, values unchanged, and still donatable. */
  assert_bytes(a, v, sizeof v);
  assert_ok(spmd_unary(SPMD_UNARY_NEG, a, &donate, &r));
  const float neg[2] = {-1, -2};
  assert_bytes(r, neg, sizeof neg);
  spmd_array_destroy(r);
  spmd_array_destroy(a);
}

/* Exactly SPMD_MAX_NDIM dimensions is allowed: products of two
 * 4-dimensional arrays, and a batched matmul of 8 dimensions. */
static void products_of_exactly_eight_dimensions_are_made(void **state) {
  (void)state;
  const int64_t s4[4] = {1, 2, 1, 1}, s8[8] = {1, 2, 1, 1, 1, 2, 1, 1};
  const float v[2] = {1, 2};
  spmd_array *a = test_put(mesh, "None, y", SPMD_F32, 4, s4, v), *r = NULL;
  spmd_dot_dims dd = SPMD_DOT_DIMS_INIT;
  assert_ok(spmd_dot_general(a, a, &dd, NULL, &r));
  const float outer[4] = {1, 2, 2, 4};
  assert_shape(r, SPMD_F32, 8, s8);
  assert_bytes(r, outer, sizeof outer);
  spmd_array_destroy(r);
  assert_ok(spmd_einsum("abcd,efgh->abcdefgh", a, a, NULL, &r));
  assert_shape(r, SPMD_F32, 8, s8);
  assert_bytes(r, outer, sizeof outer);
  spmd_array_destroy(r);
  /* (1,1,1,1,1,1,2,3) @ (3,2) */
  const int64_t sa[8] = {1, 1, 1, 1, 1, 1, 2, 3}, sb[2] = {3, 2}, so[8] = {1, 1, 1, 1, 1, 1, 2, 2};
  const float va[6] = {1, 2, 3, 4, 5, 6}, vb[6] = {1, 0, 0, 1, 1, 1};
  spmd_array *m8 = test_put(mesh, "None, None, None, None, None, None, x", SPMD_F32, 8, sa, va);
  spmd_array *b = test_put(mesh, "y", SPMD_F32, 2, sb, vb);
  assert_ok(spmd_matmul(m8, b, NULL, &r));
  const float prod[4] = {4, 5, 10, 11};
  assert_shape(r, SPMD_F32, 8, so);
  assert_bytes(r, prod, sizeof prod);
  spmd_array_destroy(r);
  spmd_array_destroy(b);
  spmd_array_destroy(m8);
  spmd_array_destroy(a);
}

/* Reductions that keep all 8 dimensions, and softmax (which keeps them
 * for its max and sum). */
static void reductions_keeping_eight_dimensions_are_made(void **state) {
  (void)state;
  const int64_t sa[8] = {1, 1, 1, 1, 1, 1, 2, 3};
  const float va[6] = {1, 2, 3, 4, 5, 6};
  spmd_array *m8 = test_put(mesh, "None, None, None, None, None, None, x", SPMD_F32, 8, sa, va);
  spmd_array *r = NULL;
  /* Sums over dimension 7 and over every dimension, keeping all eight. */
  const int64_t axis7 = 7, k7[8] = {1, 1, 1, 1, 1, 1, 2, 1}, k0[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, m8, 1, &axis7, 1, NULL, &r));
  const float rows[2] = {6, 15};
  assert_shape(r, SPMD_F32, 8, k7);
  assert_bytes(r, rows, sizeof rows);
  spmd_array_destroy(r);
  assert_ok(spmd_reduce(SPMD_REDUCE_MAX, m8, 0, NULL, 1, NULL, &r));
  const float top[1] = {6};
  assert_shape(r, SPMD_F32, 8, k0);
  assert_bytes(r, top, sizeof top);
  spmd_array_destroy(r);
  assert_ok(spmd_softmax(m8, 6, 0, NULL, &r));
  assert_shape(r, SPMD_F32, 8, sa);
  const double sm[6] = {0.0474258736, 0.0474258736, 0.0474258736,
                        0.952574127,  0.952574127,  0.952574127};
  assert_floats(r, SPMD_F32, 8, sa, sm, 1e-6);
  spmd_array_destroy(r);
  spmd_array_destroy(m8);
}

/* ---- overflowing shapes ---- */

/* Element counts past 64 bits, or past 2^62 bytes, are refused by every op
 * that makes a shape, naming the argument it came from; the operands stay
 * as they were. */
static void shapes_whose_size_overflows_are_refused(void **state) {
  (void)state;
  const int64_t s4[1] = {4};
  const float v4[4] = {1, 2, 3, 4};
  spmd_array *a = test_put(line, "d", SPMD_F32, 1, s4, v4), *r = NULL;
  const int64_t big2[2] = {kTwo32, kTwo32}, big3[3] = {kTwo32, kTwo32, 0};
  const int64_t infer[2] = {-1, kTwo62}, wide[3] = {3, -1, INT64_MAX};
  assert_refused(spmd_reshape(a, 2, big2, NULL, &r), &r, "spmd_reshape: shape");
  assert_refused(spmd_reshape(a, 2, infer, NULL, &r), &r, "spmd_reshape: shape");
  assert_refused(spmd_reshape(a, 3, wide, NULL, &r), &r, "spmd_reshape: shape");
  const int64_t e0[1] = {0};
  spmd_array *empty = zeros(line, "", SPMD_F32, 1, e0);
  assert_refused(spmd_reshape(empty, 3, big3, NULL, &r), &r, "spmd_reshape: shape");
  const int64_t huge1[2] = {kTwo62, 4}, huge2[2] = {INT64_MAX, INT64_MAX},
                huge3[3] = {0, INT64_MAX, 4}, huge4[2] = {kTwo31, kTwo31};
  const int64_t s1[1] = {1};
  spmd_array *one = test_put(line, "", SPMD_F32, 1, s1, v4);
  assert_refused(spmd_broadcast_to(one, 2, huge1, NULL, &r), &r, "spmd_broadcast_to: shape");
  assert_refused(spmd_broadcast_to(one, 2, huge2, NULL, &r), &r, "spmd_broadcast_to: shape");
  assert_refused(spmd_broadcast_to(one, 3, huge3, NULL, &r), &r, "spmd_broadcast_to: shape");
  assert_refused(spmd_broadcast_to(one, 2, huge4, NULL, &r), &r, "spmd_broadcast_to: shape");
  /* (2^31, 0) @ (0, 2^31): zeros of 2^62 float32 elements, past 2^62 bytes. */
  const int64_t tall[2] = {kTwo31, 0}, flat[2] = {0, kTwo31};
  spmd_array *t = zeros(mesh, "x", SPMD_F32, 2, tall),
             *f = zeros(mesh, "None, y", SPMD_F32, 2, flat);
  assert_refused(spmd_matmul(t, f, NULL, &r), &r, "spmd_matmul");
  assert_refused(spmd_einsum("ik,kj->ij", t, f, NULL, &r), &r, "spmd_einsum");
  spmd_dot_dims dd = SPMD_DOT_DIMS_INIT;
  const int64_t one_[1] = {1}, zero_[1] = {0};
  dd.ncontract = 1;
  dd.lhs_contract = one_;
  dd.rhs_contract = zero_;
  assert_refused(spmd_dot_general(t, f, &dd, NULL, &r), &r, "spmd_dot_general");
  /* Broadcasting two empty arrays to (2^31, 2^31, 0): bool fits 2^62 bytes,
   * float32 does not. */
  const int64_t col[3] = {kTwo31, 1, 0}, row[3] = {1, kTwo31, 0}, both[3] = {kTwo31, kTwo31, 0};
  spmd_array *bc = zeros(mesh, "x", SPMD_BOOL, 3, col),
             *br = zeros(mesh, "None, y", SPMD_BOOL, 3, row);
  spmd_array *fc = zeros(mesh, "x", SPMD_F32, 3, col);
  assert_ok(spmd_binary(SPMD_BINARY_ADD, bc, br, NULL, &r));
  assert_shape(r, SPMD_BOOL, 3, both);
  spmd_array_destroy(r);
  assert_refused(spmd_binary(SPMD_BINARY_ADD, fc, br, NULL, &r), &r, "spmd_binary");
  assert_refused(spmd_where(bc, fc, br, NULL, &r), &r, "spmd_where");
  /* A dimension of 2^62 + 2^62 does not fit int64. */
  const int64_t e62[2] = {0, kTwo62};
  spmd_array *u = zeros(mesh, "x, y", SPMD_U8, 2, e62);
  const spmd_array *pair[2] = {u, u};
  assert_refused(spmd_concatenate(2, pair, 1, NULL, &r), &r, "spmd_concatenate");
  /* u8 fits 2^62 bytes of (0, 2^62); float32 and int32 do not. */
  assert_refused(spmd_astype(u, SPMD_F32, NULL, &r), &r, "spmd_astype");
  assert_refused(spmd_unary(SPMD_UNARY_EXP, u, NULL, &r), &r, "spmd_unary");
  assert_refused(spmd_binary_scalar(SPMD_BINARY_DIV, u, 2, NULL, &r), &r, "spmd_binary_scalar");
  assert_refused(spmd_softmax(u, 1, 0, NULL, &r), &r, "spmd_softmax");
  const int64_t ax0 = 0;
  assert_refused(spmd_reduce(SPMD_REDUCE_SUM, u, 1, &ax0, 0, NULL, &r), &r, "spmd_reduce");
  assert_bytes(a, v4, sizeof v4);
  spmd_array_destroy(u);
  spmd_array_destroy(fc);
  spmd_array_destroy(bc);
  spmd_array_destroy(br);
  spmd_array_destroy(t);
  spmd_array_destroy(f);
  spmd_array_destroy(one);
  spmd_array_destroy(empty);
  spmd_array_destroy(a);
}

/* The last call's message names one of `args` right after "fn: ". */
static void assert_names_one_of(const char *fn, const char *const *args) {
  const char *msg = spmd_last_error();
  const size_t n = strlen(fn);
  if (strncmp(msg, fn, n) != 0 || strncmp(msg + n, ": ", 2) != 0)
    fail_msg("\"%s\" does not start with \"%s: \"", msg, fn);
  const char *word = msg + n + 2;
  size_t len = 0;
  while (word[len] == '_' || (word[len] >= 'a' && word[len] <= 'z')) ++len;
  for (; *args != NULL; ++args)
    if (strlen(*args) == len && strncmp(word, *args, len) == 0) return;
  fail_msg("\"%s\" names none of %s's arguments", msg, fn);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Each refusal of a result past the bound on shapes names the argument
 * the shape came from, among the function's own. */
static void refusals_past_the_bound_name_an_argument(void **state) {
  (void)state;
  const int64_t tall[2] = {kTwo31, 0}, flat[2] = {0, kTwo31}, e62[2] = {0, kTwo62};
  spmd_array *t = zeros(mesh, "x", SPMD_F32, 2, tall),
             *f = zeros(mesh, "None, y", SPMD_F32, 2, flat);
  spmd_array *u = zeros(mesh, "x, y", SPMD_U8, 2, e62), *r = NULL;
  assert_refused(spmd_matmul(t, f, NULL, &r), &r, "spmd_matmul");
  assert_names_one_of("spmd_matmul", ARGS("a", "b"));
  assert_refused(spmd_einsum("ik,kj->ij", t, f, NULL, &r), &r, "spmd_einsum");
  assert_names_one_of("spmd_einsum", ARGS("subscripts", "a", "b"));
  spmd_dot_dims dd = SPMD_DOT_DIMS_INIT;
  const int64_t one[1] = {1}, zero[1] = {0};
  dd.ncontract = 1;
  dd.lhs_contract = one;
  dd.rhs_contract = zero;
  assert_refused(spmd_dot_general(t, f, &dd, NULL, &r), &r, "spmd_dot_general");
  assert_names_one_of("spmd_dot_general", ARGS("lhs", "rhs", "dims"));
  assert_refused(spmd_reduce(SPMD_REDUCE_SUM, u, 1, zero, 0, NULL, &r), &r, "spmd_reduce");
  assert_names_one_of("spmd_reduce", ARGS("x", "axes"));
  assert_refused(spmd_astype(u, SPMD_F32, NULL, &r), &r, "spmd_astype");
  assert_names_one_of("spmd_astype", ARGS("x", "dtype"));
  assert_refused(spmd_softmax(u, 1, 0, NULL, &r), &r, "spmd_softmax");
  assert_names_one_of("spmd_softmax", ARGS("x"));
  const spmd_array *pair[2] = {u, u};
  assert_refused(spmd_concatenate(2, pair, 1, NULL, &r), &r, "spmd_concatenate");
  assert_names_one_of("spmd_concatenate", ARGS("xs", "axis"));
  spmd_array_destroy(u);
  spmd_array_destroy(f);
  spmd_array_destroy(t);
}

/* ---- empty arrays with huge dimensions ---- */

/* An empty array's non-zero dimensions still span at most 2^62 bytes
 * (NumPy's rule, docs/compute.md): {0, 2^62} of u8 and bool is made,
 * of float32 not, and {0, INT64_MAX, 2} of nothing. */
static void empty_arrays_with_huge_dimensions_are_bounded_in_bytes(void **state) {
  (void)state;
  const int64_t e62[2] = {0, kTwo62}, e62r[2] = {kTwo62, 0}, emax[3] = {0, INT64_MAX, 2};
  spmd_sharding *s = test_sharding(mesh, "x, y");
  spmd_array *a = NULL;
  static const spmd_dtype all[] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16, SPMD_I32, SPMD_I64,
                                   SPMD_U8,  SPMD_BOOL, SPMD_I8,  SPMD_I16,  SPMD_U16, SPMD_U32};
  for (size_t k = 0; k < sizeof all / sizeof *all; ++k) {
    const int small = spmd_dtype_size(all[k]) == 1;
    for (int order = 0; order < 2; ++order) {
      const int64_t *shape = order ? e62r : e62;
      spmd_status st = spmd_array_zeros(s, all[k], 2, shape, &a);
      if (small) {
        assert_int_equal(st, SPMD_OK);
        assert_shape(a, all[k], 2, shape);
        spmd_array_destroy(a);
      } else {
        assert_int_equal(st, SPMD_ERR_INVALID_ARGUMENT);
      }
      a = NULL;
      st = spmd_array_from_host(s, all[k], 2, shape, NULL, 0, &a);
      assert_int_equal(st, small ? SPMD_OK : SPMD_ERR_INVALID_ARGUMENT);
      spmd_array_destroy(a);
      a = NULL;
    }
    assert_fails(spmd_array_zeros(s, all[k], 3, emax, &a), SPMD_ERR_INVALID_ARGUMENT, "shape");
    assert_null(a);
  }
  spmd_sharding_destroy(s);
}

/* Every op takes an empty u8 array of shape (0, 2^62), split over both
 * mesh axes, and gives JAX's shapes; what its result could not hold
 * (a float32 of that shape, a reduction to 2^62 elements) is refused. */
static void every_op_takes_an_empty_array_of_huge_dimensions(void **state) {
  (void)state;
  const int64_t e62[2] = {0, kTwo62}, t62[2] = {kTwo62, 0}, e0[1] = {0}, e1[2] = {0, 1};
  spmd_array *u = zeros(mesh, "x, y", SPMD_U8, 2, e62), *r = NULL;
  spmd_array *ut = zeros(mesh, "y", SPMD_U8, 2, t62);
  assert_ok(spmd_unary(SPMD_UNARY_NEG, u, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e62);
  spmd_array_destroy(r);
  assert_ok(spmd_astype(u, SPMD_BOOL, NULL, &r));
  assert_shape(r, SPMD_BOOL, 2, e62);
  spmd_array_destroy(r);
  assert_ok(spmd_binary(SPMD_BINARY_MUL, u, u, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e62);
  spmd_array_destroy(r);
  assert_ok(spmd_binary(SPMD_BINARY_LT, u, u, NULL, &r));
  assert_shape(r, SPMD_BOOL, 2, e62);
  spmd_array_destroy(r);
  assert_ok(spmd_binary_scalar(SPMD_BINARY_ADD, u, 3, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e62);
  spmd_array_destroy(r);
  assert_ok(spmd_scalar_binary(SPMD_BINARY_SUB, 3, u, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e62);
  spmd_array_destroy(r);
  assert_ok(spmd_where(u, u, u, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e62);
  spmd_array_destroy(r);
  assert_ok(spmd_cumsum(u, 1, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e62);
  spmd_array_destroy(r);
  /* Reductions over the huge dimension: empty results; over the empty
   * one, max and min have no identity (JAX: ValueError). */
  const int64_t ax1 = 1, ax0 = 0;
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, u, 1, &ax1, 0, NULL, &r));
  assert_shape(r, SPMD_U32, 1, e0); /* as jnp.sum of uint8 */
  spmd_array_destroy(r);
  assert_ok(spmd_reduce(SPMD_REDUCE_MAX, u, 1, &ax1, 1, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e1);
  spmd_array_destroy(r);
  assert_ok(spmd_reduce(SPMD_REDUCE_MIN, u, 1, &ax1, 0, NULL, &r));
  assert_shape(r, SPMD_U8, 1, e0);
  spmd_array_destroy(r);
  assert_refused(spmd_reduce(SPMD_REDUCE_MAX, u, 1, &ax0, 0, NULL, &r), &r, "spmd_reduce: axes");
  assert_ok(spmd_argmax(u, 1, NULL, &r));
  assert_shape(r, SPMD_I32, 1, e0);
  spmd_array_destroy(r);
  assert_refused(spmd_argmax(u, 0, NULL, &r), &r, "spmd_argmax: axis");
  assert_refused(spmd_argmin(u, 0, NULL, &r), &r, "spmd_argmin: axis");
  assert_refused(spmd_argmin(u, 2, NULL, &r), &r, "spmd_argmin: axis");
  assert_refused(spmd_argmin(NULL, 0, NULL, &r), &r, "spmd_argmin: x");
  /* Contracting the huge dimension: (0, 2^62) @ (2^62, 0) is (0, 0). */
  const int64_t e00[2] = {0, 0};
  assert_ok(spmd_matmul(u, ut, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e00);
  spmd_array_destroy(r);
  assert_ok(spmd_einsum("ij,jk->ik", u, ut, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e00);
  spmd_array_destroy(r);
  spmd_dot_dims dd = SPMD_DOT_DIMS_INIT;
  dd.ncontract = 1;
  dd.lhs_contract = &ax1;
  dd.rhs_contract = &ax0;
  assert_ok(spmd_dot_general(u, ut, &dd, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e00);
  spmd_array_destroy(r);
  /* Shape ops. */
  assert_ok(spmd_transpose(u, 0, NULL, NULL, &r));
  assert_shape(r, SPMD_U8, 2, t62);
  spmd_array_destroy(r);
  const int64_t r3[3] = {kTwo31, 0, kTwo31}, inferred[2] = {-1, 2}, e2[2] = {0, 2};
  assert_ok(spmd_reshape(u, 3, r3, NULL, &r));
  assert_shape(r, SPMD_U8, 3, r3);
  spmd_array_destroy(r);
  /* JAX infers -1 from the other dimensions only when they are not 0. */
  assert_ok(spmd_reshape(u, 2, inferred, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e2);
  spmd_array_destroy(r);
  const int64_t zero_infer[2] = {0, -1};
  assert_refused(spmd_reshape(u, 2, zero_infer, NULL, &r), &r, "spmd_reshape: shape");
  const int64_t b3[3] = {1, 0, kTwo62}, b3big[3] = {2, 0, kTwo62};
  assert_ok(spmd_broadcast_to(u, 3, b3, NULL, &r));
  assert_shape(r, SPMD_U8, 3, b3);
  spmd_array_destroy(r);
  assert_refused(spmd_broadcast_to(u, 3, b3big, NULL, &r), &r, "spmd_broadcast_to: shape");
  const int64_t lo[2] = {0, kTwo62 - 5}, hi[2] = {0, kTwo62}, sl[2] = {0, 5};
  assert_ok(spmd_slice(u, 2, lo, hi, NULL, &r));
  assert_shape(r, SPMD_U8, 2, sl);
  spmd_array_destroy(r);
  const spmd_array *pair[2] = {u, u};
  assert_ok(spmd_concatenate(2, pair, 0, NULL, &r));
  assert_shape(r, SPMD_U8, 2, e62);
  spmd_array_destroy(r);
  /* The refusals left it as it was. */
  assert_shape(u, SPMD_U8, 2, e62);
  spmd_array_destroy(ut);
  spmd_array_destroy(u);
}

/* ---- bool and integers on every reduction and contraction ---- */

/* A (3, 5) array split 'x, y' on the 2 x 4 mesh (blocks of 2 and 1 rows;
 * of 2, 2, 1 and 0 columns), a (5, 2) one split 'y' on its rows, and
 * JAX's answers for each dtype: sums wrap (bool and u8 sum in int32; JAX
 * gives uint32 for u8, docs/differences.md), means are float32 (float64
 * for int64), contractions keep the dtype (u8 wraps, bool is an OR of
 * ANDs). */
typedef struct int_case {
  spmd_dtype dtype, sum_dtype, mean_dtype;
  int64_t x[15], w[10], k[2];
  int64_t sum0[5], sum1[3], sum_all, max0[5], max1[3], max_all, min0[5], min1[3], min_all;
  double mean0[5], mean1[3], mean_all;
  int64_t argmax0[5], argmax1[3], argmin0[5], argmin1[3];
  int64_t matmul[6], ij_j[3], ij_k[2], batch[3];
} int_case;

#define MAX32 2147483647LL
#define MIN32 (-2147483647LL - 1)
#define MAX64 INT64_MAX
#define MIN64 INT64_MIN

/* clang-format off */
static const int_case kIntCases[] = {
    {.dtype = SPMD_BOOL, .sum_dtype = SPMD_I32, .mean_dtype = SPMD_F32,
     .x = {1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0}, .w = {1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
     .k = {1, 0},
     .sum0 = {2, 0, 2, 0, 0}, .sum1 = {2, 1, 1}, .sum_all = 4,
     .max0 = {1, 0, 1, 0, 0}, .max1 = {1, 1, 1}, .max_all = 1,
     .min0 = {0, 0, 0, 0, 0}, .min1 = {0, 0, 0}, .min_all = 0,
     .mean0 = {0.666666687, 0, 0.666666687, 0, 0}, .mean1 = {0.4, 0.2, 0.2}, .mean_all = 0.266666681,
     .argmax0 = {0, 0, 0, 0, 0}, .argmax1 = {0, 2, 0},
    .argmin0 = {1, 0, 2, 0, 0}, .argmin1 = {1, 0, 1},
     .matmul = {1, 1, 0, 1, 1, 0}, .ij_j = {1, 0, 1}, .ij_k = {1, 0}, .batch = {1, 1, 1}},
    {.dtype = SPMD_U8, .sum_dtype = SPMD_U32, .mean_dtype = SPMD_F32,
     .x = {200, 100, 3, 0, 255, 100, 200, 0, 1, 255, 7, 9, 250, 2, 255},
     .w = {2, 1, 3, 0, 1, 1, 0, 5, 1, 2}, .k = {1, 2},
     .sum0 = {307, 309, 253, 3, 765}, .sum1 = {558, 556, 523}, .sum_all = 1637,
     .max0 = {200, 200, 250, 2, 255}, .max1 = {255, 255, 255}, .max_all = 255,
     .min0 = {7, 9, 0, 0, 255}, .min1 = {0, 0, 2}, .min_all = 0,
     .mean0 = {102.333336, 103, 84.3333359, 1, 255}, .mean1 = {111.599998, 111.200005, 104.599998},
     .mean_all = 109.133339,
     .argmax0 = {0, 1, 2, 2, 0}, .argmax1 = {4, 4, 4},
    .argmin0 = {2, 2, 1, 0, 0}, .argmin1 = {3, 2, 3},
     .matmul = {190, 201, 31, 103, 34, 9}, .ij_j = {190, 31, 34}, .ij_k = {101, 202},
     .batch = {90, 82, 171}},
    {.dtype = SPMD_I32, .sum_dtype = SPMD_I32, .mean_dtype = SPMD_F32,
     .x = {MAX32, 1, -3, 0, 7, MAX32, -8, 2, 2, -1, 1, 9, 4, -6, MIN32},
     .w = {2, 1, 3, 0, 1, 1, 0, 5, 1, 2}, .k = {1, 2},
     .sum0 = {-1, 2, 3, -4, -2147483642}, .sum1 = {-2147483644, 2147483642, -2147483640},
     .sum_all = -2147483642,
     .max0 = {MAX32, 9, 4, 2, 7}, .max1 = {MAX32, MAX32, 9}, .max_all = MAX32,
     .min0 = {1, -8, -3, -6, MIN32}, .min1 = {-3, -8, MIN32}, .min_all = MIN32,
     .mean0 = {1.43165581e+09, 0.666666687, 1, -1.33333337, -715827904},
     .mean1 = {429496736, 429496736, -429496736}, .mean_all = 143165584,
     .argmax0 = {0, 2, 2, 1, 0}, .argmax1 = {0, 0, 1},
     .argmin0 = {2, 1, 0, 2, 2}, .argmin1 = {2, 1, 4},
     .matmul = {5, -2147483638, -25, -2147483639, -2147483615, -25},
     .ij_j = {5, -25, -2147483615}, .ij_k = {-2147483642, 12}, .batch = {60, 74, 134}},
    {.dtype = SPMD_I64, .sum_dtype = SPMD_I64, .mean_dtype = SPMD_F64,
     .x = {MAX64, 1, -3, 0, 7, MAX64, -8, 2, 2, -1, 1, 9, 4, -6, MIN64},
     .w = {2, 1, 3, 0, 1, 1, 0, 5, 1, 2}, .k = {1, 2},
     .sum0 = {-1, 2, 3, -4, -9223372036854775802},
     .sum1 = {-9223372036854775804, 9223372036854775802, -9223372036854775800},
     .sum_all = -9223372036854775802,
     .max0 = {MAX64, 9, 4, 2, 7}, .max1 = {MAX64, MAX64, 9}, .max_all = MAX64,
     .min0 = {1, -8, -3, -6, MIN64}, .min1 = {-3, -8, MIN64}, .min_all = MIN64,
     .mean0 = {6.14891469e+18, 0.666666667, 1, -1.33333333, -3.07445735e+18},
     .mean1 = {1.84467441e+18, 1.84467441e+18, -1.84467441e+18}, .mean_all = 6.14891469e+17,
     .argmax0 = {0, 2, 2, 1, 0}, .argmax1 = {0, 0, 1},
     .argmin0 = {2, 1, 0, 2, 2}, .argmin1 = {2, 1, 4},
     .matmul = {5, -9223372036854775798, -25, -9223372036854775799, -9223372036854775775, -25},
     .ij_j = {5, -25, -9223372036854775775}, .ij_k = {-9223372036854775802, 12},
     .batch = {60, 74, 134}},
    /* int8, int16, uint16 and uint32, as JAX 0.10.2 (x64 off) answers for
     * X = jnp.array(x, t).reshape(3, 5), W likewise (5, 2): X.sum(0), ...,
     * X.mean(1), X @ W, X @ W[:, 0], jnp.einsum('ij,k->k', X, k) and
     * lax.dot_general(X, X, (((1,), (1,)), ((0,), (0,)))); sums of the
     * narrow types widen to (u)int32, products wrap in the type. */
    {.dtype = SPMD_I8, .sum_dtype = SPMD_I32, .mean_dtype = SPMD_F32,
     .x = {127, 1, -3, 0, 7, 127, -8, 2, 2, -1, 1, 9, 4, -6, -128},
     .w = {2, 1, 3, 0, 1, 1, 0, 5, 1, 2}, .k = {1, 2},
     .sum0 = {255, 2, 3, -4, -122}, .sum1 = {132, 122, -120}, .sum_all = 134,
     .max0 = {127, 9, 4, 2, 7}, .max1 = {127, 127, 9}, .max_all = 127,
     .min0 = {1, -8, -3, -6, -128}, .min1 = {-3, -8, -128}, .min_all = -128,
     .mean0 = {85, 0.666666687, 1, -1.33333337, -40.6666679}, .mean1 = {26.3999996, 24.3999996, -24}, .mean_all = 8.9333334,
     .argmax0 = {0, 2, 2, 1, 0}, .argmax1 = {0, 0, 1},
     .argmin0 = {2, 1, 0, 2, 2}, .argmin1 = {2, 1, 4},
     .matmul = {5, -118, -25, -119, -95, -25}, .ij_j = {5, -25, -95}, .ij_k = {-122, 12},
     .batch = {60, 74, -122}},
    {.dtype = SPMD_I16, .sum_dtype = SPMD_I32, .mean_dtype = SPMD_F32,
     .x = {32767, 1, -3, 0, 7, 32767, -8, 2, 2, -1, 1, 9, 4, -6, -32768},
     .w = {2, 1, 3, 0, 1, 1, 0, 5, 1, 2}, .k = {1, 2},
     .sum0 = {65535, 2, 3, -4, -32762}, .sum1 = {32772, 32762, -32760}, .sum_all = 32774,
     .max0 = {32767, 9, 4, 2, 7}, .max1 = {32767, 32767, 9}, .max_all = 32767,
     .min0 = {1, -8, -3, -6, -32768}, .min1 = {-3, -8, -32768}, .min_all = -32768,
     .mean0 = {21845, 0.666666687, 1, -1.33333337, -10920.667}, .mean1 = {6554.3999, 6552.3999, -6552}, .mean_all = 2184.93335,
     .argmax0 = {0, 2, 2, 1, 0}, .argmax1 = {0, 0, 1},
     .argmin0 = {2, 1, 0, 2, 2}, .argmin1 = {2, 1, 4},
     .matmul = {5, -32758, -25, -32759, -32735, -25}, .ij_j = {5, -25, -32735}, .ij_k = {-32762, 12},
     .batch = {60, 74, 134}},
    {.dtype = SPMD_U16, .sum_dtype = SPMD_U32, .mean_dtype = SPMD_F32,
     .x = {65535, 100, 3, 0, 255, 100, 65535, 0, 1, 255, 7, 9, 250, 2, 65535},
     .w = {2, 1, 3, 0, 1, 1, 0, 5, 1, 2}, .k = {1, 2},
     .sum0 = {65642, 65644, 253, 3, 66045}, .sum1 = {65893, 65891, 65803}, .sum_all = 197587,
     .max0 = {65535, 65535, 250, 2, 65535}, .max1 = {65535, 65535, 65535}, .max_all = 65535,
     .min0 = {7, 9, 0, 0, 255}, .min1 = {0, 0, 2}, .min_all = 0,
     .mean0 = {21880.668, 21881.334, 84.3333359, 1, 22015}, .mean1 = {13178.6006, 13178.2002, 13160.6006}, .mean_all = 13172.4678,
     .argmax0 = {0, 1, 2, 2, 2}, .argmax1 = {0, 1, 4},
     .argmin0 = {2, 2, 1, 0, 0}, .argmin1 = {3, 2, 3},
     .matmul = {556, 512, 452, 615, 290, 265}, .ij_j = {556, 452, 290}, .ij_k = {979, 1958},
     .batch = {9499, 9491, 62635}},
    {.dtype = SPMD_U32, .sum_dtype = SPMD_U32, .mean_dtype = SPMD_F32,
     .x = {4294967295, 100, 3, 0, 255, 100, 4294967295, 0, 1, 255, 7, 9, 250, 2, 4294967295},
     .w = {2, 1, 3, 0, 1, 1, 0, 5, 1, 2}, .k = {1, 2},
     .sum0 = {106, 108, 253, 3, 509}, .sum1 = {357, 355, 267}, .sum_all = 979,
     .max0 = {4294967295, 4294967295, 250, 2, 4294967295}, .max1 = {4294967295, 4294967295, 4294967295}, .max_all = 4294967295,
     .min0 = {7, 9, 0, 0, 255}, .min1 = {0, 0, 2}, .min_all = 0,
     .mean0 = {1.43165581e+09, 1.43165581e+09, 84.3333359, 1, 1.43165594e+09}, .mean1 = {858993472, 858993472, 858993600}, .mean_all = 858993536,
     .argmax0 = {0, 1, 2, 2, 2}, .argmax1 = {0, 1, 4},
     .argmin0 = {2, 2, 1, 0, 0}, .argmin1 = {3, 2, 3},
     .matmul = {556, 512, 452, 615, 290, 265}, .ij_j = {556, 452, 290}, .ij_k = {979, 1958},
     .batch = {75035, 75027, 62635}},
};
/* clang-format on */

/* n int64 values as the bytes of dtype t (an integer type or bool), each
 * wrapped to the type's width: its low bytes, little-endian. */
static void pack(spmd_dtype t, const int64_t *v, size_t n, void *out) {
  const size_t es = spmd_dtype_size(t);
  for (size_t i = 0; i < n; ++i)
    for (size_t b = 0; b < es; ++b)
      ((unsigned char *)out)[i * es + b] = (unsigned char)((uint64_t)v[i] >> (8 * b));
}

static spmd_array *put_ints(spmd_mesh *m, const char *spec, spmd_dtype t, size_t nd,
                            const int64_t *shape, const int64_t *v) {
  unsigned char buf[256];
  pack(t, v, (size_t)elements(nd, shape), buf);
  return test_put(m, spec, t, nd, shape, buf);
}

static const int64_t S35[2] = {3, 5}, S52[2] = {5, 2}, S5[1] = {5}, S3[1] = {3}, S2[1] = {2},
                     S15[2] = {1, 5}, S31[2] = {3, 1}, S11[2] = {1, 1}, S32[2] = {3, 2};

/* sum, mean, max and min over axis 0, axis 1, both (as a list and as
 * every axis), keeping dimensions or not, and over no axis at all; then
 * argmax. Every reduced dimension is split, one with an empty block. */
static void reductions_of_bool_and_integers_follow_jax(void **state) {
  (void)state;
  for (size_t c = 0; c < sizeof kIntCases / sizeof *kIntCases; ++c) {
    const int_case *k = &kIntCases[c];
    print_message("dtype %s\n", spmd_dtype_name(k->dtype));
    spmd_array *x = put_ints(mesh, "x, y", k->dtype, 2, S35, k->x), *r = NULL;
    const int64_t ax0 = 0, ax1 = -1, both[2] = {1, 0};
    struct {
      spmd_reduce_op op;
      spmd_dtype dtype;
      const int64_t *r0, *r1, *all;
      const double *m0, *m1, *mall;
    } ops[] = {
        {SPMD_REDUCE_SUM, k->sum_dtype, k->sum0, k->sum1, &k->sum_all, NULL, NULL, NULL},
        {SPMD_REDUCE_MAX, k->dtype, k->max0, k->max1, &k->max_all, NULL, NULL, NULL},
        {SPMD_REDUCE_MIN, k->dtype, k->min0, k->min1, &k->min_all, NULL, NULL, NULL},
        {SPMD_REDUCE_MEAN, k->mean_dtype, NULL, NULL, NULL, k->mean0, k->mean1, &k->mean_all},
    };
    for (size_t o = 0; o < 4; ++o) {
      for (int keep = 0; keep < 2; ++keep) {
        const int64_t *s0 = keep ? S15 : S5, *s1 = keep ? S31 : S3, *sa = keep ? S11 : NULL;
        const size_t n0 = keep ? 2 : 1, na = keep ? 2 : 0;
        assert_ok(spmd_reduce(ops[o].op, x, 1, &ax0, keep, NULL, &r));
        if (ops[o].r0)
          assert_ints(r, ops[o].dtype, n0, s0, ops[o].r0);
        else
          assert_floats(r, ops[o].dtype, n0, s0, ops[o].m0, 1e-6);
        spmd_array_destroy(r);
        assert_ok(spmd_reduce(ops[o].op, x, 1, &ax1, keep, NULL, &r));
        if (ops[o].r1)
          assert_ints(r, ops[o].dtype, n0, s1, ops[o].r1);
        else
          assert_floats(r, ops[o].dtype, n0, s1, ops[o].m1, 1e-6);
        spmd_array_destroy(r);
        for (int list = 0; list < 2; ++list) {
          assert_ok(spmd_reduce(ops[o].op, x, list ? 2 : 0, list ? both : NULL, keep, NULL, &r));
          if (ops[o].all)
            assert_ints(r, ops[o].dtype, na, sa, ops[o].all);
          else
            assert_floats(r, ops[o].dtype, na, sa, ops[o].mall, 1e-6);
          spmd_array_destroy(r);
        }
      }
    }
    /* Over no axis (jnp.sum(x, axis=())): x itself, in the sum's dtype. */
    static const int64_t none[1] = {0};
    assert_ok(spmd_reduce(SPMD_REDUCE_SUM, x, 0, none, 0, NULL, &r));
    assert_ints(r, k->sum_dtype, 2, S35, k->x);
    spmd_array_destroy(r);
    assert_ok(spmd_reduce(SPMD_REDUCE_MAX, x, 0, none, 0, NULL, &r));
    assert_ints(r, k->dtype, 2, S35, k->x);
    spmd_array_destroy(r);
    assert_ok(spmd_argmax(x, 0, NULL, &r));
    assert_ints(r, SPMD_I32, 1, S5, k->argmax0);
    spmd_array_destroy(r);
    assert_ok(spmd_argmax(x, 1, NULL, &r));
    assert_ints(r, SPMD_I32, 1, S3, k->argmax1);
    spmd_array_destroy(r);
    assert_ok(spmd_argmin(x, 0, NULL, &r));
    assert_ints(r, SPMD_I32, 1, S5, k->argmin0);
    spmd_array_destroy(r);
    assert_ok(spmd_argmin(x, 1, NULL, &r));
    assert_ints(r, SPMD_I32, 1, S3, k->argmin1);
    spmd_array_destroy(r);
    spmd_array_destroy(x);
  }
}

/* matmul, einsum and dot_general for each dtype, with the contracting
 * dimension split alike on both sides (partial results combined across
 * 'y', one device's block empty), split on one side, and whole. */
static void contractions_of_bool_and_integers_follow_jax(void **state) {
  (void)state;
  static const char *const layouts[][2] = {{"x, y", "y"}, {"None, y", ""}, {"x", ""}};
  for (size_t c = 0; c < sizeof kIntCases / sizeof *kIntCases; ++c) {
    const int_case *k = &kIntCases[c];
    print_message("dtype %s\n", spmd_dtype_name(k->dtype));
    const int64_t w0[5] = {k->w[0], k->w[2], k->w[4], k->w[6], k->w[8]};
    for (size_t l = 0; l < 3; ++l) {
      spmd_array *x = put_ints(mesh, layouts[l][0], k->dtype, 2, S35, k->x);
      spmd_array *w = put_ints(mesh, layouts[l][1], k->dtype, 2, S52, k->w);
      spmd_array *v = put_ints(mesh, layouts[l][1], k->dtype, 1, S5, w0);
      spmd_array *kv = put_ints(mesh, "", k->dtype, 1, S2, k->k), *r = NULL;
      assert_ok(spmd_matmul(x, w, NULL, &r));
      assert_ints(r, k->dtype, 2, S32, k->matmul);
      spmd_array_destroy(r);
      assert_ok(spmd_matmul(x, v, NULL, &r));
      assert_ints(r, k->dtype, 1, S3, k->ij_j);
      spmd_array_destroy(r);
      assert_ok(spmd_einsum("ij,jk->ik", x, w, NULL, &r));
      assert_ints(r, k->dtype, 2, S32, k->matmul);
      spmd_array_destroy(r);
      assert_ok(spmd_einsum("ij,j->i", x, v, NULL, &r));
      assert_ints(r, k->dtype, 1, S3, k->ij_j);
      spmd_array_destroy(r);
      spmd_dot_dims dd = SPMD_DOT_DIMS_INIT;
      const int64_t zero[1] = {0}, one[1] = {1};
      dd.nbatch = 1;
      dd.lhs_batch = zero;
      dd.rhs_batch = zero;
      dd.ncontract = 1;
      dd.lhs_contract = one;
      dd.rhs_contract = one;
      assert_ok(spmd_dot_general(x, x, &dd, NULL, &r));
      assert_ints(r, k->dtype, 1, S3, k->batch);
      spmd_array_destroy(r);
      spmd_array_destroy(kv);
      spmd_array_destroy(v);
      spmd_array_destroy(w);
      spmd_array_destroy(x);
    }
  }
}

/* A letter of one operand that the output lacks is summed first, in the
 * operands' dtype as jnp.einsum does (u8 wraps, bool is an OR). */
static void einsum_sums_a_lone_letter_in_the_operands_dtype(void **state) {
  (void)state;
  for (size_t c = 0; c < sizeof kIntCases / sizeof *kIntCases; ++c) {
    const int_case *k = &kIntCases[c];
    print_message("dtype %s\n", spmd_dtype_name(k->dtype));
    spmd_array *x = put_ints(mesh, "x, y", k->dtype, 2, S35, k->x);
    spmd_array *kv = put_ints(mesh, "y", k->dtype, 1, S2, k->k), *r = NULL;
    assert_ok(spmd_einsum("ij,k->k", x, kv, NULL, &r));
    assert_ints(r, k->dtype, 1, S2, k->ij_k);
    spmd_array_destroy(r);
    spmd_array_destroy(kv);
    spmd_array_destroy(x);
  }
}

/* jax.nn.softmax subtracts the max in the integer type first, exact where
 * float32 (float64) is not. */
static void softmax_of_integers_subtracts_the_max_in_their_type(void **state) {
  (void)state;
  const int64_t s2[1] = {2};
  const int32_t i32[2] = {16777217, 16777216};
  const int64_t i64[2] = {((int64_t)1 << 53) + 1, (int64_t)1 << 53};
  spmd_array *a = test_put(line, "d", SPMD_I32, 1, s2, i32), *r = NULL;
  const double sm[2] = {0.731058598, 0.268941432}, lsm[2] = {-0.313261628, -1.31326163};
  assert_ok(spmd_softmax(a, 0, 0, NULL, &r));
  assert_floats(r, SPMD_F32, 1, s2, sm, 1e-6);
  spmd_array_destroy(r);
  assert_ok(spmd_softmax(a, 0, 1, NULL, &r));
  assert_floats(r, SPMD_F32, 1, s2, lsm, 1e-6);
  spmd_array_destroy(r);
  spmd_array *b = test_put(line, "d", SPMD_I64, 1, s2, i64);
  const double sm64[2] = {0.7310585786300049, 0.2689414213699951};
  assert_ok(spmd_softmax(b, 0, 0, NULL, &r));
  assert_floats(r, SPMD_F64, 1, s2, sm64, 1e-12);
  spmd_array_destroy(r);
  spmd_array_destroy(b);
  spmd_array_destroy(a);
}

/* JAX raises TypeError for softmax of bool (x - max of bools). */
static void softmax_of_bool_is_refused(void **state) {
  (void)state;
  const int64_t s2[1] = {2};
  const uint8_t bools[2] = {1, 0};
  spmd_array *t = test_put(line, "d", SPMD_BOOL, 1, s2, bools), *r = NULL;
  assert_refused(spmd_softmax(t, 0, 0, NULL, &r), &r, "spmd_softmax: x");
  assert_refused(spmd_softmax(t, 0, 1, NULL, &r), &r, "spmd_softmax: x");
  spmd_array_destroy(t);
}

/* cumsum, one_hot and take refuse what JAX refuses, naming the argument,
 * and leave their operands usable. */
static void cumsum_one_hot_and_take_refusals_name_the_argument(void **state) {
  (void)state;
  const int64_t s2[1] = {2};
  const uint8_t bools[2] = {1, 0};
  const int32_t labels[2] = {1, 0};
  spmd_array *b = test_put(line, "d", SPMD_BOOL, 1, s2, bools);
  spmd_array *l = test_put(line, "d", SPMD_I32, 1, s2, labels), *r = NULL;
  assert_refused(spmd_cumsum(l, 1, NULL, &r), &r, "spmd_cumsum: axis");
  assert_refused(spmd_cumsum(l, -2, NULL, &r), &r, "spmd_cumsum: axis");
  assert_refused(spmd_cumsum(NULL, 0, NULL, &r), &r, "spmd_cumsum: x");
  assert_int_equal(spmd_cumsum(l, 0, NULL, NULL), SPMD_ERR_INVALID_ARGUMENT);
  assert_refused(spmd_one_hot(l, -1, -1, SPMD_F32, NULL, &r), &r, "spmd_one_hot: num_classes");
  assert_refused(spmd_one_hot(l, 3, 2, SPMD_F32, NULL, &r), &r, "spmd_one_hot: axis");
  assert_refused(spmd_one_hot(l, 3, -3, SPMD_F32, NULL, &r), &r, "spmd_one_hot: axis");
  assert_refused(spmd_one_hot(l, 3, -1, (spmd_dtype)99, NULL, &r), &r, "spmd_one_hot: dtype");
  assert_refused(spmd_one_hot(b, 3, -1, SPMD_F32, NULL, &r), &r, "spmd_one_hot: x");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.donate = 1;
  assert_refused(spmd_one_hot(l, 3, -1, SPMD_F32, &o, &r), &r, "spmd_one_hot: options->donate");
  /* Still usable: one_hot of [1, 0] over 3 classes, along the first axis. */
  assert_ok(spmd_one_hot(l, 3, 0, SPMD_I32, NULL, &r));
  const int64_t s32[2] = {3, 2};
  const int64_t want[6] = {0, 1, 1, 0, 0, 0};
  assert_ints(r, SPMD_I32, 2, s32, want);
  spmd_array_destroy(r);
  /* take: integer indices only, an axis of a. */
  const float fl[2] = {1, 0};
  spmd_array *f = test_put(line, "d", SPMD_F32, 1, s2, fl);
  assert_refused(spmd_take(l, f, 0, NULL, &r), &r, "spmd_take: indices");
  assert_refused(spmd_take(l, b, 0, NULL, &r), &r, "spmd_take: indices");
  assert_refused(spmd_take(f, l, 1, NULL, &r), &r, "spmd_take: axis");
  assert_refused(spmd_take(f, NULL, 0, NULL, &r), &r, "spmd_take: indices");
  assert_ok(spmd_take(f, l, 0, NULL, &r)); /* f[[1, 0]] */
  const double back[2] = {0, 1};
  assert_floats(r, SPMD_F32, 1, s2, back, 0);
  spmd_array_destroy(r);
  spmd_array_destroy(f);
  /* bool sums as int32. */
  assert_ok(spmd_cumsum(b, 0, NULL, &r));
  const int64_t sums[2] = {1, 1};
  assert_ints(r, SPMD_I32, 1, s2, sums);
  spmd_array_destroy(r);
  spmd_array_destroy(b);
  spmd_array_destroy(l);
}

/* Strided and dynamic slices refuse what lax.slice and lax.dynamic_slice
 * refuse, naming the argument; a dynamic window moves back inside the
 * array, a negative start counting from the end. */
static void strided_and_dynamic_slices_follow_jax(void **state) {
  (void)state;
  const int64_t s12[1] = {12};
  float v[12];
  for (int i = 0; i < 12; ++i) v[i] = (float)i;
  spmd_array *x = test_put(line, "d", SPMD_F32, 1, s12, v), *r = NULL;
  const int64_t lo[1] = {1}, hi[1] = {12}, four[1] = {4}, none[1] = {0}, neg[1] = {-1},
                past[1] = {13}, back[1] = {-3}, big[1] = {20};
  assert_refused(spmd_slice_strided(x, 1, lo, hi, none, NULL, &r), &r, "spmd_slice_strided: strides[0]");
  assert_refused(spmd_slice_strided(x, 1, lo, hi, neg, NULL, &r), &r, "spmd_slice_strided: strides[0]");
  assert_refused(spmd_slice_strided(x, 1, lo, past, four, NULL, &r), &r, "spmd_slice_strided: stop[0]");
  assert_refused(spmd_slice_strided(x, 1, lo, hi, NULL, NULL, &r), &r, "spmd_slice_strided: strides");
  assert_refused(spmd_slice_strided(x, 2, lo, hi, four, NULL, &r), &r, "spmd_slice_strided");
  assert_refused(spmd_slice_strided(NULL, 1, lo, hi, four, NULL, &r), &r, "spmd_slice_strided: x");
  assert_int_equal(spmd_slice_strided(x, 1, lo, hi, four, NULL, NULL), SPMD_ERR_INVALID_ARGUMENT);
  assert_refused(spmd_dynamic_slice(x, 1, lo, past, NULL, &r), &r, "spmd_dynamic_slice: sizes[0]");
  assert_refused(spmd_dynamic_slice(x, 1, lo, neg, NULL, &r), &r, "spmd_dynamic_slice: sizes[0]");
  assert_refused(spmd_dynamic_slice(x, 1, NULL, four, NULL, &r), &r, "spmd_dynamic_slice: start");
  assert_refused(spmd_dynamic_slice(NULL, 1, lo, four, NULL, &r), &r, "spmd_dynamic_slice: x");
  /* x[1::4] = 1, 5, 9, split over 8 devices as 3 does not divide: whole. */
  assert_ok(spmd_slice_strided(x, 1, lo, hi, four, NULL, &r));
  const int64_t s3[1] = {3}, s4[1] = {4};
  const double every4[3] = {1, 5, 9};
  assert_floats(r, SPMD_F32, 1, s3, every4, 0);
  spmd_array_destroy(r);
  /* Windows of 4: at -3 (9..11, moved back to 8..11), at 20 (8..11). */
  const double tail[4] = {8, 9, 10, 11};
  assert_ok(spmd_dynamic_slice(x, 1, back, four, NULL, &r));
  assert_floats(r, SPMD_F32, 1, s4, tail, 0);
  spmd_array_destroy(r);
  assert_ok(spmd_dynamic_slice(x, 1, big, four, NULL, &r));
  assert_floats(r, SPMD_F32, 1, s4, tail, 0);
  spmd_array_destroy(r);
  spmd_array_destroy(x);
}

/* einsum of one, three or four operands: jnp.einsum's values, and what it
 * refuses named. */
static void einsum_of_many_operands_follows_jax(void **state) {
  (void)state;
  const int64_t s22[2] = {2, 2}, s2[1] = {2};
  const float m[4] = {1, 2, 3, 4}, v[2] = {1, -1};
  spmd_array *a = test_put(line, "d", SPMD_F32, 2, s22, m), *x = test_put(line, "d", SPMD_F32, 1, s2, v);
  spmd_array *r = NULL;
  /* a a a = [[37, 54], [81, 118]]; v a v = 1 - 2 - 3 + 4 = 0; a.T. */
  const spmd_array *three[3] = {a, a, a}, *vav[3] = {x, a, x}, *one[1] = {a};
  assert_ok(spmd_einsum_n("ij,jk,kl->il", 3, three, NULL, &r));
  const double cube[4] = {37, 54, 81, 118};
  assert_floats(r, SPMD_F32, 2, s22, cube, 0);
  spmd_array_destroy(r);
  assert_ok(spmd_einsum_n("i,ij,j->", 3, vav, NULL, &r));
  const double zero[1] = {0};
  assert_floats(r, SPMD_F32, 0, NULL, zero, 0);
  spmd_array_destroy(r);
  assert_ok(spmd_einsum_n("ij->ji", 1, one, NULL, &r));
  const double t[4] = {1, 3, 2, 4};
  assert_floats(r, SPMD_F32, 2, s22, t, 0);
  spmd_array_destroy(r);
  assert_ok(spmd_einsum_n("ij->i", 1, one, NULL, &r));
  const double rows[2] = {3, 7};
  assert_floats(r, SPMD_F32, 1, s2, rows, 0);
  spmd_array_destroy(r);
  const spmd_array *five[5] = {a, a, a, a, a};
  assert_refused(spmd_einsum_n("ij,jk,kl,lm,mn->in", 5, five, NULL, &r), &r, "spmd_einsum_n: n");
  assert_refused(spmd_einsum_n("ij->ij", 0, three, NULL, &r), &r, "spmd_einsum_n: n");
  assert_refused(spmd_einsum_n(NULL, 3, three, NULL, &r), &r, "spmd_einsum_n: subscripts");
  assert_refused(spmd_einsum_n("ij,jk->ik", 3, three, NULL, &r), &r, "spmd_einsum_n: subscripts");
  assert_refused(spmd_einsum_n("ij,jk,kl", 3, three, NULL, &r), &r, "spmd_einsum_n: subscripts");
  assert_refused(spmd_einsum_n("ij,jk,k->ik", 3, three, NULL, &r), &r, "spmd_einsum_n: subscripts");
  assert_refused(spmd_einsum_n("i,ij,i->j", 3, three, NULL, &r), &r, "spmd_einsum_n: subscripts");
  assert_refused(spmd_einsum_n("ij,jk,kl->iz", 3, three, NULL, &r), &r, "spmd_einsum_n: subscripts");
  assert_refused(spmd_einsum_n("ij,jk,kl->il", 3, NULL, NULL, &r), &r, "spmd_einsum_n: xs");
  const spmd_array *holes[3] = {a, NULL, a};
  assert_refused(spmd_einsum_n("ij,jk,kl->il", 3, holes, NULL, &r), &r, "spmd_einsum_n: xs[1]");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.donate = 1;
  assert_refused(spmd_einsum_n("ij,jk,kl->il", 3, three, &o, &r), &r, "spmd_einsum_n: options->donate");
  const int64_t s23[2] = {2, 3};
  const float six[6] = {0};
  spmd_array *w = test_put(line, "d", SPMD_F32, 2, s23, six);
  const spmd_array *mismatch[3] = {a, w, w};
  assert_refused(spmd_einsum_n("ij,jk,kl->il", 3, mismatch, NULL, &r), &r, "spmd_einsum_n: subscripts");
  spmd_array_destroy(w);
  spmd_array_destroy(x);
  spmd_array_destroy(a);
}

/* The spec a result prints, as jax.jit names it. */
static void assert_spec_text(const spmd_array *a, const char *want) {
  spmd_sharding *s = NULL;
  char *text = NULL;
  assert_ok(spmd_array_sharding(a, &s));
  assert_ok(spmd_sharding_to_string(s, &text));
  if (strstr(text, want) == NULL) fail_msg("sharding %s, JAX's has %s", text, want);
  spmd_string_free(text);
  spmd_sharding_destroy(s);
}

/* A result is named as jax.jit names it: the output sharding asked for, as
 * written; the first operand's, as written, when the result is laid out
 * alike with its rank; else a spec without trailing Nones. */
static void results_are_named_as_jit_names_them(void **state) {
  (void)state;
  const int64_t s48[2] = {4, 8};
  float v[32] = {0};
  spmd_array *a = test_put(mesh, "P('x', 'y')", SPMD_F32, 2, s48, v);
  spmd_array *b = test_put(mesh, "P('x', None)", SPMD_F32, 2, s48, v), *r = NULL, *t = NULL;
  assert_ok(spmd_transpose(a, 0, NULL, NULL, &t));
  assert_ok(spmd_matmul(a, t, NULL, &r)); /* a @ a.T: new, P('x',) */
  assert_spec_text(r, "spec=PartitionSpec('x',),");
  spmd_array_destroy(r);
  assert_ok(spmd_unary(SPMD_UNARY_SIN, b, NULL, &r)); /* b's own, as written */
  assert_spec_text(r, "spec=PartitionSpec('x', None),");
  spmd_array_destroy(r);
  const spmd_array *just_b[1] = {b}; /* an op that hands back b itself */
  assert_ok(spmd_einsum_n("ij->ij", 1, just_b, NULL, &r));
  assert_spec_text(r, "spec=PartitionSpec('x', None),");
  spmd_array_destroy(r);
  spmd_sharding *asked = test_sharding(mesh, "P('x', None)");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.out_sharding = asked;
  assert_ok(spmd_unary(SPMD_UNARY_SIN, a, &o, &r)); /* the one asked for, as written */
  assert_spec_text(r, "spec=PartitionSpec('x', None),");
  spmd_array_destroy(r);
  spmd_sharding_destroy(asked);
  spmd_array_destroy(t);
  spmd_array_destroy(b);
  spmd_array_destroy(a);
}

/* Out-of-range indices give jnp.take's fill value for each dtype (NaN,
 * the lowest signed integer, 255, true); negative ones count from the end. */
static void take_fills_out_of_range_indices_as_jax(void **state) {
  (void)state;
  const int64_t s3[1] = {3}, s4[1] = {4};
  const int64_t idx[4] = {-1, 3, -4, 0};
  int32_t idx32[4];
  for (int i = 0; i < 4; ++i) idx32[i] = (int32_t)idx[i];
  spmd_array *ix = test_put(line, "d", SPMD_I32, 1, s4, idx32), *r = NULL;
  const int32_t i32[3] = {5, 6, 7};
  const uint8_t u8[3] = {5, 6, 7}, bl[3] = {0, 0, 0};
  const int64_t want_i32[4] = {7, INT32_MIN, INT32_MIN, 5}, want_u8[4] = {7, 255, 255, 5},
                want_bool[4] = {0, 1, 1, 0};
  struct { spmd_dtype t; const void *v; const int64_t *want; } cases[] = {
      {SPMD_I32, i32, want_i32}, {SPMD_U8, u8, want_u8}, {SPMD_BOOL, bl, want_bool}};
  for (size_t c = 0; c < 3; ++c) {
    spmd_array *a = test_put(line, "d", cases[c].t, 1, s3, cases[c].v);
    assert_ok(spmd_take(a, ix, 0, NULL, &r));
    assert_ints(r, cases[c].t, 1, s4, cases[c].want);
    spmd_array_destroy(r);
    spmd_array_destroy(a);
  }
  const float f32[3] = {5, 6, 7};
  spmd_array *a = test_put(line, "d", SPMD_F32, 1, s3, f32);
  assert_ok(spmd_take(a, ix, 0, NULL, &r));
  float got[4];
  assert_ok(spmd_array_to_host(r, got, sizeof got));
  assert_true(got[0] == 7 && isnan(got[1]) && isnan(got[2]) && got[3] == 5);
  spmd_array_destroy(r);
  spmd_array_destroy(a);
  spmd_array_destroy(ix);
}

/* scatter_add refuses what JAX refuses, naming the argument, and leaves
 * its operands usable. */
static void scatter_add_refusals_name_the_argument(void **state) {
  (void)state;
  const int64_t s2[1] = {2}, s4[1] = {4}, s5[1] = {5}, s22[2] = {2, 2};
  const float xs[4] = {1, 2, 3, 4}, us[5] = {1, 10, 100, 1000, 0.5f};
  const int32_t idx[5] = {0, -1, 4, -5, 0};
  const uint8_t bools[2] = {1, 0};
  spmd_array *x = test_put(line, "d", SPMD_F32, 1, s4, xs);
  spmd_array *i = test_put(line, "d", SPMD_I32, 1, s5, idx);
  spmd_array *u = test_put(line, "d", SPMD_F32, 1, s5, us);
  spmd_array *b = test_put(line, "d", SPMD_BOOL, 1, s2, bools);
  spmd_array *fi = test_put(line, "d", SPMD_F32, 1, s5, us);
  spmd_array *u22 = zeros(line, "d", SPMD_F32, 2, s22);
  spmd_array *other = zeros(mesh, "x", SPMD_F32, 1, s5), *r = NULL;
  assert_refused(spmd_scatter_add(x, fi, u, 0, NULL, &r), &r, "spmd_scatter_add: indices");
  assert_refused(spmd_scatter_add(b, b, b, 0, NULL, &r), &r, "spmd_scatter_add: indices");
  assert_refused(spmd_scatter_add(x, i, u, 1, NULL, &r), &r, "spmd_scatter_add: axis");
  assert_refused(spmd_scatter_add(x, i, u, -2, NULL, &r), &r, "spmd_scatter_add: axis");
  assert_refused(spmd_scatter_add(x, i, u22, 0, NULL, &r), &r, "spmd_scatter_add: updates");
  assert_refused(spmd_scatter_add(x, i, x, 0, NULL, &r), &r, "spmd_scatter_add: updates");
  assert_refused(spmd_scatter_add(x, i, other, 0, NULL, &r), &r, "updates");
  assert_refused(spmd_scatter_add(NULL, i, u, 0, NULL, &r), &r, "spmd_scatter_add: x");
  assert_refused(spmd_scatter_add(x, NULL, u, 0, NULL, &r), &r, "spmd_scatter_add: indices");
  assert_refused(spmd_scatter_add(x, i, NULL, 0, NULL, &r), &r, "spmd_scatter_add: updates");
  assert_int_equal(spmd_scatter_add(x, i, u, 0, NULL, NULL), SPMD_ERR_INVALID_ARGUMENT);
  /* bool into bool: JAX's add does not accept bool. */
  const int32_t i01[2] = {0, 1};
  spmd_array *i2 = test_put(line, "d", SPMD_I32, 1, s2, i01);
  assert_refused(spmd_scatter_add(b, i2, b, 0, NULL, &r), &r, "spmd_scatter_add: x and updates");
  /* Still usable: 4 and 0.5 dropped past the ends, -1 and -5 wrapping
   * to 3 and (still out of range) dropped, index 0 twice. */
  assert_ok(spmd_scatter_add(x, i, u, 0, NULL, &r));
  const double want[4] = {2.5, 2, 3, 14};
  assert_floats(r, SPMD_F32, 1, s4, want, 0);
  spmd_array_destroy(r);
  spmd_array_destroy(i2);
  spmd_array_destroy(other);
  spmd_array_destroy(u22);
  spmd_array_destroy(fi);
  spmd_array_destroy(b);
  spmd_array_destroy(u);
  spmd_array_destroy(i);
  spmd_array_destroy(x);
}

/* x (3 elements of xt) with two updates (of ut) added at `at`, against
 * JAX's values. */
static void assert_scatter_add(spmd_dtype xt, const void *x, spmd_dtype ut, const void *u,
                               const int32_t at[2], const int64_t want[3]) {
  const int64_t s2[1] = {2}, s3[1] = {3};
  spmd_array *xa = test_put(line, "d", xt, 1, s3, x), *ua = test_put(line, "d", ut, 1, s2, u);
  spmd_array *ia = test_put(line, "d", SPMD_I32, 1, s2, at), *r = NULL;
  assert_ok(spmd_scatter_add(xa, ia, ua, 0, NULL, &r));
  assert_ints(r, xt, 1, s3, want);
  spmd_array_destroy(r);
  spmd_array_destroy(ia);
  spmd_array_destroy(ua);
  spmd_array_destroy(xa);
}

/* Integers wrap; other dtypes add in the promoted type and come back as
 * x's, as JAX converts (a float into int32 truncates, saturates, NaN gives
 * 0; bool x reads the sum's truth). */
static void scatter_add_converts_and_wraps_as_jax(void **state) {
  (void)state;
  const int32_t i01[2] = {0, 1}, i00[2] = {0, 0};
  const int32_t big[3] = {INT32_MAX, 0, 1}, ones32[2] = {1, 1};
  const int64_t wrapped[3] = {(int64_t)INT32_MIN + 1, 0, 1};
  assert_scatter_add(SPMD_I32, big, SPMD_I32, ones32, i00, wrapped);
  const uint8_t u8x[3] = {255, 7, 0}, u8u[2] = {1, 2};
  const int64_t u8want[3] = {0, 9, 0};
  assert_scatter_add(SPMD_U8, u8x, SPMD_U8, u8u, i01, u8want);
  const int32_t i32x[3] = {1, 1, 1};
  const float fl[2] = {2.7f, -2.7f}, odd[2] = {NAN, 3e10f};
  const int64_t truncated[3] = {3, -1, 1}, saturated[3] = {0, INT32_MAX, 1};
  assert_scatter_add(SPMD_I32, i32x, SPMD_F32, fl, i01, truncated);
  assert_scatter_add(SPMD_I32, i32x, SPMD_F32, odd, i01, saturated);
  const uint8_t bx[3] = {0, 0, 1};
  const int32_t bu[2] = {1, 0};
  const int64_t truth[3] = {1, 0, 1};
  assert_scatter_add(SPMD_BOOL, bx, SPMD_I32, bu, i01, truth);
}

/* ---- empty blocks on every split ---- */

/* (3,) over 8 devices: blocks of 1, 1, 1 and five empty ones. Every op,
 * its result laid out the same way or gathered, computes as on one device;
 * max and min of every dtype ignore the empty blocks. */
static void every_op_computes_across_empty_blocks(void **state) {
  (void)state;
  const float v[3] = {1, -2, 3};
  spmd_array *a = test_put(line, "d", SPMD_F32, 1, S3, v),
             *whole = test_put(line, "", SPMD_F32, 1, S3, v);
  spmd_array *r = NULL;
  assert_ok(spmd_unary(SPMD_UNARY_NEG, a, NULL, &r));
  const float neg[3] = {-1, 2, -3};
  assert_bytes(r, neg, sizeof neg);
  spmd_array_destroy(r);
  assert_ok(spmd_unary(SPMD_UNARY_EXP, a, NULL, &r));
  const double ex[3] = {2.71828183, 0.135335283, 20.0855369};
  assert_floats(r, SPMD_F32, 1, S3, ex, 1e-6);
  spmd_array_destroy(r);
  assert_ok(spmd_astype(a, SPMD_I32, NULL, &r));
  const int64_t as_int[3] = {1, -2, 3};
  assert_ints(r, SPMD_I32, 1, S3, as_int);
  spmd_array_destroy(r);
  assert_ok(spmd_binary(SPMD_BINARY_ADD, a, whole, NULL, &r));
  const float twice[3] = {2, -4, 6};
  assert_bytes(r, twice, sizeof twice);
  spmd_array_destroy(r);
  assert_ok(spmd_binary_scalar(SPMD_BINARY_MUL, a, 2, NULL, &r));
  assert_bytes(r, twice, sizeof twice);
  spmd_array_destroy(r);
  spmd_array *pos = NULL;
  assert_ok(spmd_binary_scalar(SPMD_BINARY_GT, a, 0, NULL, &pos));
  assert_ok(spmd_where(pos, a, whole, NULL, &r));
  assert_bytes(r, v, sizeof v);
  spmd_array_destroy(r);
  spmd_array_destroy(pos);
  /* A float condition: any non-zero value is true, NaN included. */
  const float cond[3] = {0.5f, NAN, 0};
  const int32_t yes[3] = {1, 1, 1}, no[3] = {2, 2, 2};
  spmd_array *fc = test_put(line, "d", SPMD_F32, 1, S3, cond);
  spmd_array *iy = test_put(line, "d", SPMD_I32, 1, S3, yes),
             *in = test_put(line, "", SPMD_I32, 1, S3, no);
  assert_ok(spmd_where(fc, iy, in, NULL, &r));
  const int64_t picked[3] = {1, 1, 2};
  assert_ints(r, SPMD_I32, 1, S3, picked);
  spmd_array_destroy(r);
  spmd_array_destroy(in);
  spmd_array_destroy(iy);
  spmd_array_destroy(fc);
  /* Floats to integers truncate and saturate; NaN gives 0. */
  const float wild[4] = {256, 3e9f, -1.5f, NAN};
  const int64_t s4[1] = {4};
  spmd_array *w = test_put(line, "d", SPMD_F32, 1, s4, wild);
  const int64_t to_u8[4] = {255, 255, 0, 0}, to_i32[4] = {256, 2147483647, -1, 0};
  assert_ok(spmd_astype(w, SPMD_U8, NULL, &r));
  assert_ints(r, SPMD_U8, 1, s4, to_u8);
  spmd_array_destroy(r);
  assert_ok(spmd_astype(w, SPMD_I32, NULL, &r));
  assert_ints(r, SPMD_I32, 1, s4, to_i32);
  spmd_array_destroy(r);
  spmd_array_destroy(w);
  /* Reductions over the split dimension, every dtype. */
  static const spmd_dtype types[] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16, SPMD_I32, SPMD_I64,
                                     SPMD_U8,  SPMD_BOOL, SPMD_I8,  SPMD_I16,  SPMD_U16, SPMD_U32};
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t) {
    spmd_array *x = NULL, *mx = NULL, *mn = NULL;
    assert_ok(spmd_astype(a, types[t], NULL, &x));
    assert_ok(spmd_reduce(SPMD_REDUCE_MAX, x, 0, NULL, 0, NULL, &mx));
    assert_ok(spmd_reduce(SPMD_REDUCE_MIN, x, 0, NULL, 0, NULL, &mn));
    /* JAX: -2.0 saturates to 0 in the unsigned types; every value is true in bool. */
    double want_max = 3, want_min = -2;
    if (types[t] == SPMD_U8 || types[t] == SPMD_U16 || types[t] == SPMD_U32) want_max = 3, want_min = 0;
    if (types[t] == SPMD_BOOL) want_max = 1, want_min = 1;
    spmd_array *fmx = NULL, *fmn = NULL;
    assert_ok(spmd_astype(mx, SPMD_F64, NULL, &fmx));
    assert_ok(spmd_astype(mn, SPMD_F64, NULL, &fmn));
    double got_max, got_min;
    assert_ok(spmd_array_to_host(fmx, &got_max, 8));
    assert_ok(spmd_array_to_host(fmn, &got_min, 8));
    if (got_max != want_max || got_min != want_min)
      fail_msg("%s: max %g and min %g, JAX's are %g and %g", spmd_dtype_name(types[t]), got_max,
               got_min, want_max, want_min);
    spmd_array_destroy(fmx);
    spmd_array_destroy(fmn);
    spmd_array_destroy(mx);
    spmd_array_destroy(mn);
    spmd_array_destroy(x);
  }
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, a, 0, NULL, 0, NULL, &r));
  const float two[1] = {2};
  assert_bytes(r, two, sizeof two);
  spmd_array_destroy(r);
  assert_ok(spmd_argmax(a, 0, NULL, &r));
  const int64_t at2[1] = {2};
  assert_ints(r, SPMD_I32, 0, NULL, at2);
  spmd_array_destroy(r);
  assert_ok(spmd_softmax(a, 0, 0, NULL, &r));
  const double sm[3] = {0.118499655, 0.00589975, 0.875600597};
  assert_floats(r, SPMD_F32, 1, S3, sm, 1e-6);
  spmd_array_destroy(r);
  /* Contractions over the split dimension. */
  const float dot[1] = {14};
  assert_ok(spmd_matmul(a, a, NULL, &r));
  assert_bytes(r, dot, sizeof dot);
  spmd_array_destroy(r);
  assert_ok(spmd_einsum("i,i->", a, whole, NULL, &r));
  assert_bytes(r, dot, sizeof dot);
  spmd_array_destroy(r);
  /* Shape ops. */
  const int64_t s31[2] = {3, 1}, s23[2] = {2, 3}, s6[1] = {6}, lo[1] = {1}, hi[1] = {3};
  assert_ok(spmd_reshape(a, 2, s31, NULL, &r));
  assert_shape(r, SPMD_F32, 2, s31);
  assert_bytes(r, v, sizeof v);
  spmd_array_destroy(r);
  assert_ok(spmd_broadcast_to(a, 2, s23, NULL, &r));
  const float rows[6] = {1, -2, 3, 1, -2, 3};
  assert_bytes(r, rows, sizeof rows);
  spmd_array *m = r;
  assert_ok(spmd_transpose(m, 0, NULL, NULL, &r));
  const float cols[6] = {1, 1, -2, -2, 3, 3};
  assert_bytes(r, cols, sizeof cols);
  spmd_array_destroy(r);
  spmd_array_destroy(m);
  assert_ok(spmd_slice(a, 1, lo, hi, NULL, &r));
  assert_bytes(r, v + 1, 2 * sizeof(float));
  spmd_array_destroy(r);
  const int64_t all[1] = {3}, step2[1] = {2}, zero[1] = {0}, far[1] = {5};
  assert_ok(spmd_slice_strided(a, 1, zero, all, step2, NULL, &r)); /* a[::2] */
  const float odd[2] = {1, 3};
  assert_bytes(r, odd, sizeof odd);
  spmd_array_destroy(r);
  assert_ok(spmd_dynamic_slice(a, 1, far, step2, NULL, &r)); /* clamped to a[1:3] */
  assert_bytes(r, v + 1, 2 * sizeof(float));
  spmd_array_destroy(r);
  const spmd_array *pair[2] = {a, a};
  assert_ok(spmd_concatenate(2, pair, 0, NULL, &r));
  const float cat[6] = {1, -2, 3, 1, -2, 3};
  assert_shape(r, SPMD_F32, 1, s6);
  assert_bytes(r, cat, sizeof cat);
  spmd_array_destroy(r);
  /* A psum_scatter into empty blocks: (5, 3) split on rows, summed over
   * them and asked to land split over the same devices. */
  const int64_t s53[2] = {5, 3};
  const float g[15] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  spmd_array *x = test_put(line, "d", SPMD_F32, 2, s53, g);
  spmd_sharding *split = test_sharding(line, "d");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.out_sharding = split;
  const int64_t ax0 = 0;
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, x, 1, &ax0, 0, &o, &r));
  const float colsum[3] = {35, 40, 45};
  assert_bytes(r, colsum, sizeof colsum);
  spmd_array_destroy(r);
  const float ones5[5] = {1, 1, 1, 1, 1};
  const int64_t s5[1] = {5};
  spmd_array *u = test_put(line, "d", SPMD_F32, 1, s5, ones5);
  assert_ok(spmd_matmul(u, x, &o, &r));
  assert_bytes(r, colsum, sizeof colsum);
  spmd_array_destroy(r);
  spmd_array_destroy(u);
  spmd_array_destroy(x);
  spmd_sharding_destroy(split);
  spmd_array_destroy(whole);
  spmd_array_destroy(a);
}

/* (2, 3) split over both axes of the 2 x 4 mesh (columns in blocks of
 * 1, 1, 1 and 0), with operands split otherwise: elementwise ops,
 * reductions and contractions over each dimension. */
static void two_dimensional_splits_with_empty_blocks_compute_like_one_device(void **state) {
  (void)state;
  const float g[6] = {1, 2, 3, 4, 5, 6}, c[3] = {10, 20, 30};
  const int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
  spmd_array *a = test_put(mesh, "x, y", SPMD_F32, 2, s23, g);
  spmd_array *col = test_put(mesh, "y", SPMD_F32, 1, S3, c), *r = NULL;
  assert_ok(spmd_binary(SPMD_BINARY_MUL, a, col, NULL, &r));
  const float scaled[6] = {10, 40, 90, 40, 100, 180};
  assert_bytes(r, scaled, sizeof scaled);
  spmd_array_destroy(r);
  const int64_t ax1 = 1;
  assert_ok(spmd_reduce(SPMD_REDUCE_MIN, a, 1, &ax1, 0, NULL, &r));
  const float mins[2] = {1, 4};
  assert_bytes(r, mins, sizeof mins);
  spmd_array_destroy(r);
  assert_ok(spmd_matmul(a, col, NULL, &r));
  const float mv[2] = {140, 320};
  assert_bytes(r, mv, sizeof mv);
  spmd_array_destroy(r);
  spmd_array *t = test_put(mesh, "y, x", SPMD_F32, 2, s32, g);
  assert_ok(spmd_matmul(a, t, NULL, &r));
  const float mm[4] = {22, 28, 49, 64};
  assert_bytes(r, mm, sizeof mm);
  spmd_array_destroy(r);
  spmd_array_destroy(t);
  spmd_array_destroy(col);
  spmd_array_destroy(a);
}

/* ---- scalars past their integer type ---- */

/* An integral scalar beside an integer array must fit the array's type
 * (JAX: OverflowError; 2^63 is the first double past int64), and the
 * array stays as it was. Last: where the scalar is converted unchecked,
 * UBSan stops the suite here. */
static void integral_scalars_wrap_into_the_type_and_past_int32_are_refused(void **state) {
  (void)state;
  const int64_t i64[3] = {1, -2, 3};
  const int32_t i32[3] = {1, -2, 3};
  const uint8_t u8[3] = {1, 2, 3}, b[3] = {1, 0, 1};
  spmd_array *l = test_put(line, "d", SPMD_I64, 1, S3, i64), *r = NULL;
  spmd_array *i = test_put(line, "d", SPMD_I32, 1, S3, i32);
  spmd_array *u = test_put(line, "d", SPMD_U8, 1, S3, u8),
             *t = test_put(line, "d", SPMD_BOOL, 1, S3, b);
  assert_refused(spmd_binary_scalar(SPMD_BINARY_ADD, l, 9223372036854775808.0, NULL, &r), &r,
                 "spmd_binary_scalar: scalar");
  assert_refused(spmd_scalar_binary(SPMD_BINARY_SUB, -9223372036854777856.0, l, NULL, &r), &r,
                 "spmd_scalar_binary: scalar");
  assert_refused(spmd_binary_scalar(SPMD_BINARY_MUL, i, 2147483648.0, NULL, &r), &r,
                 "spmd_binary_scalar: scalar");
  assert_refused(spmd_binary_scalar(SPMD_BINARY_ADD, t, 2147483648.0, NULL, &r), &r,
                 "spmd_binary_scalar: scalar");
  assert_refused(spmd_binary_scalar(SPMD_BINARY_ADD, u, -2147483649.0, NULL, &r), &r,
                 "spmd_binary_scalar: scalar: the scalar -2.14748e+09 is outside int32");
  assert_bytes(l, i64, sizeof i64);
  /* The narrow types: a scalar past int32 is refused naming it (JAX's
   * OverflowError, uint32 + 2^31 too); one inside becomes the array's type
   * wrapping, as JAX converts it (int8 + 300 adds 44), and the op wraps. */
  const int8_t i8[3] = {1, -2, 3};
  const int16_t i16[3] = {1, -2, 3};
  const uint16_t u16[3] = {1, 2, 3};
  const uint32_t u32[3] = {1, 2, 3};
  spmd_array *n8 = test_put(line, "d", SPMD_I8, 1, S3, i8), *n16 = test_put(line, "d", SPMD_I16, 1, S3, i16),
             *m16 = test_put(line, "d", SPMD_U16, 1, S3, u16), *m32 = test_put(line, "d", SPMD_U32, 1, S3, u32);
  assert_refused(spmd_binary_scalar(SPMD_BINARY_ADD, m32, 2147483648.0, NULL, &r), &r,
                 "spmd_binary_scalar: scalar: the scalar 2.14748e+09 is outside int32");
  assert_refused(spmd_scalar_binary(SPMD_BINARY_SUB, -2147483649.0, n8, NULL, &r), &r,
                 "spmd_scalar_binary: scalar");
  assert_bytes(n8, i8, sizeof i8);
  /* Each as JAX 0.10.2 gives it. */
  const struct { spmd_array *x; spmd_binary_op op; int first; spmd_dtype t; double s; int64_t want[3]; } rows[] = {
      {n8, SPMD_BINARY_ADD, 0, SPMD_I8, 300, {45, 42, 47}},
      {n8, SPMD_BINARY_SUB, 1, SPMD_I8, -129, {126, -127, 124}},
      {n8, SPMD_BINARY_ADD, 0, SPMD_I8, 127, {-128, 125, -126}},
      {n16, SPMD_BINARY_MUL, 0, SPMD_I16, 32768, {-32768, 0, -32768}},
      {n16, SPMD_BINARY_ADD, 0, SPMD_I16, -32768, {-32767, 32766, -32765}},
      {m16, SPMD_BINARY_ADD, 0, SPMD_U16, -1, {0, 1, 2}},
      {m32, SPMD_BINARY_MAX, 0, SPMD_U32, -1, {4294967295, 4294967295, 4294967295}},
      {m32, SPMD_BINARY_MUL, 0, SPMD_U32, -2, {4294967294, 4294967292, 4294967290}},
      {u, SPMD_BINARY_ADD, 0, SPMD_U8, 256, {1, 2, 3}},
      {t, SPMD_BINARY_ADD, 0, SPMD_I32, -5, {-4, -5, -4}},
  };
  for (size_t f = 0; f < sizeof rows / sizeof *rows; ++f) {
    assert_ok(rows[f].first ? spmd_scalar_binary(rows[f].op, rows[f].s, rows[f].x, NULL, &r)
                            : spmd_binary_scalar(rows[f].op, rows[f].x, rows[f].s, NULL, &r));
    assert_ints(r, rows[f].t, 1, S3, rows[f].want);
    spmd_array_destroy(r);
  }
  /* Comparisons see the wrapped scalar too: uint8 > 300 is uint8 > 44. */
  assert_ok(spmd_binary_scalar(SPMD_BINARY_GT, u, 300, NULL, &r));
  const uint8_t none[3] = {0, 0, 0};
  assert_bytes(r, none, sizeof none);
  spmd_array_destroy(r);
  spmd_array_destroy(m32);
  spmd_array_destroy(m16);
  spmd_array_destroy(n16);
  spmd_array_destroy(n8);
  /* -2^63 itself fits; -2 + -2^63 wraps. */
  assert_ok(spmd_binary_scalar(SPMD_BINARY_ADD, l, -9223372036854775808.0, NULL, &r));
  const int64_t want[3] = {INT64_MIN + 1, INT64_MAX - 1, INT64_MIN + 3};
  assert_ints(r, SPMD_I64, 1, S3, want);
  spmd_array_destroy(r);
  spmd_array_destroy(t);
  spmd_array_destroy(u);
  spmd_array_destroy(i);
  spmd_array_destroy(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(results_of_more_than_eight_dimensions_are_refused_and_leave_operands_usable),
      cmocka_unit_test(products_of_exactly_eight_dimensions_are_made),
      cmocka_unit_test(reductions_keeping_eight_dimensions_are_made),
      cmocka_unit_test(shapes_whose_size_overflows_are_refused),
      cmocka_unit_test(refusals_past_the_bound_name_an_argument),
      cmocka_unit_test(empty_arrays_with_huge_dimensions_are_bounded_in_bytes),
      cmocka_unit_test(every_op_takes_an_empty_array_of_huge_dimensions),
      cmocka_unit_test(reductions_of_bool_and_integers_follow_jax),
      cmocka_unit_test(contractions_of_bool_and_integers_follow_jax),
      cmocka_unit_test(einsum_sums_a_lone_letter_in_the_operands_dtype),
      cmocka_unit_test(softmax_of_integers_subtracts_the_max_in_their_type),
      cmocka_unit_test(softmax_of_bool_is_refused),
      cmocka_unit_test(cumsum_one_hot_and_take_refusals_name_the_argument),
      cmocka_unit_test(take_fills_out_of_range_indices_as_jax),
      cmocka_unit_test(strided_and_dynamic_slices_follow_jax),
      cmocka_unit_test(einsum_of_many_operands_follows_jax),
      cmocka_unit_test(results_are_named_as_jit_names_them),
      cmocka_unit_test(scatter_add_refusals_name_the_argument),
      cmocka_unit_test(scatter_add_converts_and_wraps_as_jax),
      cmocka_unit_test(every_op_computes_across_empty_blocks),
      cmocka_unit_test(two_dimensional_splits_with_empty_blocks_compute_like_one_device),
      cmocka_unit_test(integral_scalars_wrap_into_the_type_and_past_int32_are_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
