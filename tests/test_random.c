/* jax.random in libspmd: keys, split and fold_in as JAX makes them; bits,
 * uniform, normal and truncated normal arrays equal to JAX's references
 * (tests/conformance/random/, written by conformance/families/random.py)
 * whatever the sharding of the output, each device holding exactly its
 * block; and the errors of bad arguments. */
#include <math.h>

#include "random_refs.h"
#include "spmd_test.h"

static random_record *records;
static long record_count;

static int load_records(void **state) {
  (void)state;
  char err[1024];
  record_count = random_read_manifest(&records, err, sizeof err);
  if (record_count < 0) {
    fprintf(stderr, "random references: %s\n", err);
    return -1;
  }
  return 0;
}

static int free_records(void **state) {
  (void)state;
  free(records);
  return 0;
}

static const random_record *find_record(const char *name) {
  for (long i = 0; i < record_count; ++i)
    if (strcmp(records[i].name, name) == 0) return &records[i];
  fail_msg("no reference named %s", name);
  return NULL;
}

static void *reference_values(const random_record *r) {
  char err[512];
  void *want = random_read_file(r->file, random_elements(r) * spmd_dtype_size(r->dtype), err,
                                sizeof err);
  if (want == NULL) fail_msg("%s", err);
  return want;
}

/* Draws r under `sharding`, copies it to the host and compares; returns the
 * worst ulp distance (0 for identical arrays). */
static uint64_t draw_and_compare(const random_record *r, const spmd_sharding *sharding,
                                 const char *layout) {
  const size_t n = random_elements(r), nbytes = n * spmd_dtype_size(r->dtype);
  void *want = reference_values(r);
  void *got = malloc(nbytes ? nbytes : 1);
  assert_non_null(got);
  spmd_array *a = NULL;
  assert_ok(random_draw(r, sharding, &a));
  spmd_dtype dtype;
  assert_ok(spmd_array_dtype(a, &dtype));
  assert_int_equal(dtype, r->dtype);
  assert_ok(spmd_array_to_host(a, got, nbytes));
  uint64_t max_ulp;
  size_t bad;
  if (!random_compare(r, got, want, n, &max_ulp, &bad))
    fail_msg("%s under %s: element %zu is 0x%" PRIx64 ", JAX's is 0x%" PRIx64, r->name, layout,
             bad, random_host_bits(got, spmd_dtype_size(r->dtype), bad),
             random_load_bits(want, spmd_dtype_size(r->dtype), bad));
  spmd_array_destroy(a);
  free(got);
  free(want);
  return max_ulp;
}

static void keys_split_and_fold_in_give_jax_words(void **state) {
  (void)state;
  int seeds = 0, splits = 0, folds = 0;
  for (long i = 0; i < record_count; ++i) {
    const random_record *r = &records[i];
    spmd_key got[8];
    if (r->kind == RANDOM_SEED) {
      assert_ok(spmd_random_key(r->seed, &got[0]));
      if (got[0].words[0] != r->result.words[0] || got[0].words[1] != r->result.words[1])
        fail_msg("PRNGKey(%" PRIu64 "): [%u, %u], JAX [%u, %u]", r->seed, got[0].words[0],
                 got[0].words[1], r->result.words[0], r->result.words[1]);
      ++seeds;
    } else if (r->kind == RANDOM_SPLIT) {
      assert_ok(spmd_random_split(&r->key, r->n, got));
      for (size_t k = 0; k < r->n; ++k) {
        assert_int_equal(got[k].words[0], r->keys[k].words[0]);
        assert_int_equal(got[k].words[1], r->keys[k].words[1]);
      }
      ++splits;
    } else if (r->kind == RANDOM_FOLD) {
      assert_ok(spmd_random_fold_in(&r->key, r->data, &got[0]));
      assert_int_equal(got[0].words[0], r->result.words[0]);
      assert_int_equal(got[0].words[1], r->result.words[1]);
      ++folds;
    }
  }
  assert_true(seeds >= 5 && splits >= 3 && folds >= 3);
}

static void split_keys_do_not_depend_on_the_count(void **state) {
  (void)state;
  spmd_key key, two[2], five[5], folded;
  assert_ok(spmd_random_key(42, &key));
  assert_ok(spmd_random_split(&key, 2, two));
  assert_ok(spmd_random_split(&key, 5, five));
  assert_memory_equal(two, five, sizeof two);
  /* Partitionable threefry: fold_in(key, i) is key i of a split. */
  assert_ok(spmd_random_fold_in(&key, 3, &folded));
  assert_memory_equal(&folded, &five[3], sizeof folded);
  assert_true(memcmp(&five[0], &five[1], sizeof key) != 0);
  /* n = 0 writes nothing and needs no output. */
  assert_ok(spmd_random_split(&key, 0, NULL));
}

/* Shardings every array case is drawn under: replicated, even and uneven
 * splits of the first dimension, both dimensions over a 2x4 mesh, all
 * devices on one dimension, and a single device. */
typedef struct layout_set {
  spmd_runtime *rt;
  spmd_mesh *m8, *m3, *m2x4;
  spmd_sharding *s[8];
  const char *names[8];
  size_t min_ndim[8];
  size_t count;
} layout_set;

static void add_layout(layout_set *l, spmd_sharding *s, const char *name, size_t min_ndim) {
  l->s[l->count] = s;
  l->names[l->count] = name;
  l->min_ndim[l->count] = min_ndim;
  ++l->count;
}

static void layouts_open(layout_set *l) {
  memset(l, 0, sizeof *l);
  const int64_t eight = 8, three = 3, grid[2] = {2, 4};
  l->rt = test_runtime(8);
  l->m8 = test_mesh(l->rt, 1, &eight);
  l->m3 = test_mesh(l->rt, 1, &three);
  l->m2x4 = test_mesh(l->rt, 2, grid);
  spmd_sharding *single = NULL;
  assert_ok(spmd_sharding_single_device(l->rt, 5, &single));
  add_layout(l, test_sharding(l->m8, ""), "replicated on 8", 0);
  add_layout(l, single, "single device 5", 0);
  add_layout(l, test_sharding(l->m8, "x"), "P('x') on 8", 1);
  add_layout(l, test_sharding(l->m3, "x"), "P('x') on 3", 1);
  add_layout(l, test_sharding(l->m2x4, "(y, x)"), "P(('y','x')) on 2x4", 1);
  add_layout(l, test_sharding(l->m2x4, "x, y"), "P('x','y') on 2x4", 2);
  add_layout(l, test_sharding(l->m2x4, "None, (x, y)"), "P(None,('x','y')) on 2x4", 2);
}

static void layouts_close(layout_set *l) {
  for (size_t i = 0; i < l->count; ++i) spmd_sharding_destroy(l->s[i]);
  spmd_mesh_destroy(l->m8);
  spmd_mesh_destroy(l->m3);
  spmd_mesh_destroy(l->m2x4);
  spmd_runtime_destroy(l->rt);
}

/* Every array reference of the given op under every layout its rank
 * allows; returns the worst ulp distance seen and counts the exact arrays. */
static uint64_t check_op(const char *op, int *arrays, int *exact) {
  layout_set l;
  layouts_open(&l);
  uint64_t worst = 0;
  *arrays = *exact = 0;
  for (long i = 0; i < record_count; ++i) {
    const random_record *r = &records[i];
    if (r->kind != RANDOM_ARRAY || strcmp(r->op, op) != 0) continue;
    uint64_t case_worst = 0;
    for (size_t k = 0; k < l.count; ++k) {
      if (r->ndim < l.min_ndim[k]) continue;
      const uint64_t u = draw_and_compare(r, l.s[k], l.names[k]);
      if (u > case_worst) case_worst = u;
    }
    ++*arrays;
    *exact += case_worst == 0;
    if (case_worst > worst) worst = case_worst;
  }
  layouts_close(&l);
  return worst;
}

static void bits_are_jax_bits_under_every_sharding(void **state) {
  (void)state;
  int arrays, exact;
  assert_int_equal(check_op("bits", &arrays, &exact), 0);
  assert_true(arrays >= 40);
  printf("random bits: %d arrays, all identical to JAX's\n", arrays);
}

static void uniforms_are_jax_floats_under_every_sharding(void **state) {
  (void)state;
  int arrays, exact;
  assert_int_equal(check_op("uniform", &arrays, &exact), 0);
  assert_true(arrays >= 60);
  printf("random uniform: %d arrays, all identical to JAX's\n", arrays);
}

static void normals_are_within_tolerance_under_every_sharding(void **state) {
  (void)state;
  int arrays, exact;
  const uint64_t worst = check_op("normal", &arrays, &exact);
  assert_true(arrays >= 60);
  printf("random normal: %d arrays, %d identical to JAX's, largest difference %" PRIu64
         " ulp (tolerance %d)\n",
         arrays, exact, worst, RANDOM_NORMAL_ULP_TOLERANCE);
  assert_true(worst <= RANDOM_NORMAL_ULP_TOLERANCE);
}

static void truncated_normals_are_within_tolerance_under_every_sharding(void **state) {
  (void)state;
  int arrays, exact;
  const uint64_t worst = check_op("truncated_normal", &arrays, &exact);
  assert_true(arrays >= 60);
  printf("random truncated_normal: %d arrays, %d identical to JAX's, largest difference %" PRIu64
         " ulp (tolerance %d)\n",
         arrays, exact, worst, RANDOM_NORMAL_ULP_TOLERANCE);
  assert_true(worst <= RANDOM_NORMAL_ULP_TOLERANCE);
}

/* Each shard is generated on its device: reading a shard alone gives the
 * block of the global reference it covers, for an uneven 2-D split. */
static void each_shard_holds_its_block_of_the_global_draw(void **state) {
  (void)state;
  const random_record *r = find_record("bits_u32_fold42_7_13x17");
  uint32_t *want = reference_values(r);
  spmd_runtime *rt = test_runtime(8);
  const int64_t grid[2] = {2, 4};
  spmd_mesh *mesh = test_mesh(rt, 2, grid);
  spmd_sharding *s = test_sharding(mesh, "x, y");
  spmd_array *a = NULL;
  assert_ok(random_draw(r, s, &a));
  size_t shards;
  assert_ok(spmd_array_shard_count(a, &shards));
  assert_int_equal(shards, 8);
  for (size_t i = 0; i < shards; ++i) {
    spmd_shard_info info = {.struct_size = sizeof info};
    assert_ok(spmd_array_shard_info(a, i, &info));
    const int64_t rows = info.local_shape[0], cols = info.local_shape[1];
    uint32_t block[7 * 5];
    assert_true(rows * cols <= 35);
    assert_ok(spmd_array_shard_read(a, i, block, (size_t)(rows * cols) * sizeof(uint32_t)));
    for (int64_t y = 0; y < rows; ++y)
      for (int64_t x = 0; x < cols; ++x)
        assert_int_equal(block[y * cols + x],
                         want[(info.start[0] + y) * 17 + (info.start[1] + x)]);
  }
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  free(want);
}

/* The seeds' inputs: jax.random.normal(jax.random.PRNGKey(0), shape) laid
 * out as the seed laid them out, P('data', None) on a 2x2 (data, model)
 * mesh, and the 1000x1000 array of the all_to_all benchmark over 4
 * devices, whose element-bit checksum is exact. */
static void seed_inputs_are_jax_normals(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t grid[2] = {2, 2}, four = 4;
  const char *names[2] = {"data", "model"};
  const char *one[1] = {"data"};
  spmd_mesh *mesh = NULL, *line = NULL;
  assert_ok(spmd_mesh_create(rt, 2, grid, names, NULL, &mesh));
  assert_ok(spmd_mesh_create(rt, 1, &four, one, NULL, &line));
  spmd_sharding *rows = test_sharding(mesh, "data, None");
  spmd_key key;
  assert_ok(spmd_random_key(0, &key));
  static const char *const cases[] = {"seeds_normal_4x10", "seeds_normal_10x10",
                                      "seeds_normal_10x40", "seeds_normal_40x10"};
  for (size_t c = 0; c < 4; ++c) {
    const random_record *r = find_record(cases[c]);
    assert_memory_equal(&r->key, &key, sizeof key);
    assert_int_equal(draw_and_compare(r, rows, "P('data', None) on 2x2"), 0);
  }

  const random_record *big = find_record("seeds_normal_1000x1000");
  spmd_sharding *by_rows = test_sharding(line, "data, None");
  spmd_array *a = NULL;
  assert_ok(spmd_random_normal(by_rows, &key, SPMD_F32, big->ndim, big->shape, &a));
  const size_t n = random_elements(big);
  float *x = malloc(n * sizeof *x);
  assert_non_null(x);
  assert_ok(spmd_array_to_host(a, x, n * sizeof *x));
  uint64_t bitsum = 0;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    memcpy(&b, &x[i], 4);
    bitsum += b;
    sum += x[i];
  }
  char err[512];
  const size_t samples = (n + (size_t)big->stride - 1) / (size_t)big->stride;
  float *want = random_read_file(big->file, samples * sizeof(float), err, sizeof err);
  if (want == NULL) fail_msg("%s", err);
  for (size_t k = 0; k < samples; ++k)
    if (memcmp(&x[k * (size_t)big->stride], &want[k], 4) != 0)
      fail_msg("element %zu: %.9g, JAX %.9g", k * (size_t)big->stride,
               x[k * (size_t)big->stride], want[k]);
  assert_true(bitsum == big->bitsum);
  assert_true(fabs(sum - big->sum) <= 1e-6); /* summation order differs */
  free(want);
  free(x);
  spmd_array_destroy(a);
  spmd_sharding_destroy(by_rows);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(line);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static void empty_and_scalar_shapes_are_drawn(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t eight = 8;
  spmd_mesh *mesh = test_mesh(rt, 1, &eight);
  spmd_sharding *s = test_sharding(mesh, "x");
  spmd_key key;
  assert_ok(spmd_random_key(0, &key));
  const int64_t empty[2] = {0, 5};
  spmd_array *a = NULL;
  assert_ok(spmd_random_normal(s, &key, SPMD_F32, 2, empty, &a));
  int64_t size = -1;
  assert_ok(spmd_array_size(a, &size));
  assert_int_equal(size, 0);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* What the bad-argument tests share: an 8-device mesh 'x', shardings
 * P('x') and P(None, 'x'), key 0 and a good and a negative shape. */
typedef struct bad_args {
  spmd_runtime *rt;
  spmd_mesh *mesh;
  spmd_sharding *s, *two;
  spmd_key key;
  int64_t shape[2], negative[2];
} bad_args;

static int bad_args_setup(void **state) {
  bad_args *f = calloc(1, sizeof *f);
  const int64_t eight = 8;
  f->rt = test_runtime(8);
  f->mesh = test_mesh(f->rt, 1, &eight);
  f->s = test_sharding(f->mesh, "x");
  f->two = test_sharding(f->mesh, "None, x");
  assert_ok(spmd_random_key(0, &f->key));
  f->shape[0] = 4, f->shape[1] = 10;
  f->negative[0] = 4, f->negative[1] = -1;
  *state = f;
  return 0;
}

static int bad_args_teardown(void **state) {
  bad_args *f = *state;
  spmd_sharding_destroy(f->two);
  spmd_sharding_destroy(f->s);
  spmd_mesh_destroy(f->mesh);
  spmd_runtime_destroy(f->rt);
  free(f);
  return 0;
}

static void bad_arguments_fail_with_a_message(void **state) {
  bad_args *f = *state;
  spmd_sharding *s = f->s, *two = f->two;
  const spmd_key key = f->key;
  const int64_t *shape = f->shape, *negative = f->negative;
  spmd_array *sentinel = (spmd_array *)&f->key, *a = sentinel;

  assert_fails(spmd_random_bits(s, &key, SPMD_F32, 2, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "dtype: float32 does not hold random bits");
  assert_fails(spmd_random_bits(s, &key, SPMD_BOOL, 2, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "use SPMD_U8, SPMD_U16 or SPMD_U32 (8, 16 or 32 bits), or SPMD_I32 or SPMD_I64");
  /* jax.random.bits refuses signed types; int32 and int64 are libspmd's
   * stores of uint32 and uint64 patterns, the narrower ones are not. */
  assert_fails(spmd_random_bits(s, &key, SPMD_I8, 2, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "dtype: int8 does not hold random bits");
  assert_fails(spmd_random_bits(s, &key, SPMD_I16, 2, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "dtype: int16 does not hold random bits");
  assert_fails(spmd_random_uniform(s, &key, SPMD_I32, 2, shape, 0.0, 1.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "dtype: int32 is not a floating-point type");
  assert_fails(spmd_random_normal(s, &key, SPMD_U8, 2, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "dtype: uint8 is not a floating-point type");
  assert_fails(spmd_random_normal(s, &key, (spmd_dtype)99, 2, shape, &a),
               SPMD_ERR_INVALID_ARGUMENT, "dtype: unknown dtype 99");
  assert_fails(spmd_random_normal(s, NULL, SPMD_F32, 2, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "key: NULL spmd_key pointer");
  assert_fails(spmd_random_bits(s, NULL, SPMD_I32, 2, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "key: NULL");
  assert_fails(spmd_random_uniform(s, &key, SPMD_F32, 2, negative, 0.0, 1.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "shape (4, -1): dimension 1");
  assert_fails(spmd_random_normal(s, &key, SPMD_F32, 2, NULL, &a), SPMD_ERR_INVALID_ARGUMENT,
               "shape: NULL with ndim 2");
  assert_fails(spmd_random_normal(s, &key, SPMD_F32, SPMD_MAX_NDIM + 1, shape, &a),
               SPMD_ERR_INVALID_ARGUMENT, "shape: 9 dimensions");
  assert_fails(spmd_random_normal(two, &key, SPMD_F32, 1, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "names 2");
  assert_fails(spmd_random_normal(NULL, &key, SPMD_F32, 2, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
               "sharding: NULL spmd_sharding handle");
  assert_fails(spmd_random_normal(s, &key, SPMD_F32, 2, shape, NULL), SPMD_ERR_INVALID_ARGUMENT,
               "out: NULL output pointer");
  assert_ptr_equal(a, sentinel); /* outputs untouched on failure */

  spmd_key k = {{7, 7}};
  assert_fails(spmd_random_key(0, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_fails(spmd_random_split(NULL, 2, &k), SPMD_ERR_INVALID_ARGUMENT, "key: NULL");
  assert_fails(spmd_random_split(&key, 2, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_fails(spmd_random_fold_in(NULL, 1, &k), SPMD_ERR_INVALID_ARGUMENT, "key: NULL");
  assert_fails(spmd_random_fold_in(&key, 1, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_int_equal(k.words[0], 7);
  assert_int_equal(k.words[1], 7);

}

/* jax.random.truncated_normal(key, lower, upper, (2, 8), jnp.float32), called
 * eagerly in JAX 0.10.2 on CPU, as float32 bit patterns. */
static const struct {
  const char *key; /* "seed0": PRNGKey(0); "fold42_7": fold_in(PRNGKey(42), 7) */
  double lower, upper;
  uint32_t bits[16];
} truncated_table[] = {
    /* 1.4559592 1.7147487 -0.41267535 -0.07503343 0.16800101 -0.9126141 ... */
    {"seed0", -2.0, 2.0, {0x3fba5cdf, 0x3fdb7ce3, 0xbed34a2f, 0xbd99ab21, 0x3e2c0875, 0xbf69a114,
                          0xbef12315, 0x3ef0b149, 0x3f2130d4, 0xbf648e36, 0x3fe51d85, 0xbfd682b8,
                          0x3eaee4c1, 0x3e1a2c46, 0x3f971269, 0x3faf7325}},
    /* 1.5438782 1.4054934 1.4780239 1.5515975 1.4302312 1.4285555 ... 3.9489267 ... */
    {"fold42_7", 1.0, INFINITY, {0x3fc59dcd, 0x3fb3e735, 0x3fbd2fe3, 0x3fc69abf, 0x3fb711d1,
                                 0x3fb6dae8, 0x3f8603f0, 0x3ffbcb87, 0x3f88b2f6, 0x3f9d183f,
                                 0x3fb47a4a, 0x3f8289f1, 0x407cbb37, 0x3fc1cf24, 0x3f944b2f,
                                 0x3f8dbf86}},
};

/* The table's values, identical under every sharding of the (2, 8) output. */
static void truncated_normals_match_jax_table_under_every_sharding(void **state) {
  (void)state;
  layout_set l;
  layouts_open(&l);
  const int64_t shape[2] = {2, 8};
  for (size_t c = 0; c < sizeof truncated_table / sizeof truncated_table[0]; ++c) {
    spmd_key key;
    if (strcmp(truncated_table[c].key, "seed0") == 0) {
      assert_ok(spmd_random_key(0, &key));
    } else {
      spmd_key base;
      assert_ok(spmd_random_key(42, &base));
      assert_ok(spmd_random_fold_in(&base, 7, &key));
    }
    for (size_t k = 0; k < l.count; ++k) {
      spmd_array *a = NULL;
      assert_ok(spmd_random_truncated_normal(l.s[k], &key, SPMD_F32, 2, shape,
                                             truncated_table[c].lower, truncated_table[c].upper,
                                             &a));
      uint32_t got[16];
      assert_ok(spmd_array_to_host(a, got, sizeof got));
      for (size_t i = 0; i < 16; ++i) {
        float f;
        memcpy(&f, &got[i], sizeof f);
        assert_true(f > truncated_table[c].lower && f < truncated_table[c].upper);
        if (got[i] != truncated_table[c].bits[i])
          fail_msg("%s (%g, %g) under %s: element %zu is 0x%08x, JAX's is 0x%08x",
                   truncated_table[c].key, truncated_table[c].lower, truncated_table[c].upper,
                   l.names[k], i, got[i], truncated_table[c].bits[i]);
      }
      spmd_array_destroy(a);
    }
  }
  layouts_close(&l);
}

/* Every value lies in the open interval, for bounds far into a tail and for
 * bounds one float32 step apart around them. */
static void truncated_normals_stay_inside_the_bounds(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t eight = 8, shape[1] = {4096};
  spmd_mesh *mesh = test_mesh(rt, 1, &eight);
  spmd_sharding *s = test_sharding(mesh, "x");
  spmd_key key;
  assert_ok(spmd_random_key(3, &key));
  static const double bounds[][2] = {{-2.0, 2.0}, {4.0, 5.0}, {-INFINITY, -6.0},
                                     {0.0, INFINITY}, {-INFINITY, INFINITY}};
  for (size_t c = 0; c < sizeof bounds / sizeof bounds[0]; ++c) {
    spmd_array *a = NULL;
    assert_ok(spmd_random_truncated_normal(s, &key, SPMD_F32, 1, shape, bounds[c][0],
                                           bounds[c][1], &a));
    static float x[4096];
    assert_ok(spmd_array_to_host(a, x, sizeof x));
    for (size_t i = 0; i < 4096; ++i)
      if (!(x[i] > bounds[c][0] && x[i] < bounds[c][1]))
        fail_msg("(%g, %g): element %zu is %.9g", bounds[c][0], bounds[c][1], i, x[i]);
    spmd_array_destroy(a);
  }
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static void truncated_normal_bad_arguments_fail_with_a_message(void **state) {
  bad_args *f = *state;
  spmd_sharding *s = f->s, *two = f->two;
  const spmd_key key = f->key;
  const int64_t *shape = f->shape, *negative = f->negative;
  spmd_array *sentinel = (spmd_array *)&f->key, *a = sentinel;

  assert_fails(spmd_random_truncated_normal(NULL, &key, SPMD_F32, 2, shape, -2.0, 2.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "sharding: NULL spmd_sharding handle");
  assert_fails(spmd_random_truncated_normal(s, NULL, SPMD_F32, 2, shape, -2.0, 2.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "key: NULL spmd_key pointer");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_F32, 2, shape, -2.0, 2.0, NULL),
               SPMD_ERR_INVALID_ARGUMENT, "out: NULL output pointer");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_I32, 2, shape, -2.0, 2.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "dtype: int32 is not a floating-point type");
  assert_fails(spmd_random_truncated_normal(s, &key, (spmd_dtype)99, 2, shape, -2.0, 2.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "dtype: unknown dtype 99");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_F32, 2, NULL, -2.0, 2.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "shape: NULL with ndim 2");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_F32, 2, negative, -2.0, 2.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "shape (4, -1): dimension 1");
  assert_fails(
      spmd_random_truncated_normal(s, &key, SPMD_F32, SPMD_MAX_NDIM + 1, shape, -2.0, 2.0, &a),
      SPMD_ERR_INVALID_ARGUMENT, "shape: 9 dimensions");
  assert_fails(spmd_random_truncated_normal(two, &key, SPMD_F32, 1, shape, -2.0, 2.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "names 2");
  /* lower < upper, as given and in the dtype. */
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_F32, 2, shape, 2.0, -2.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "lower, upper: need lower < upper, got lower 2 and upper -2");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_F32, 2, shape, 1.5, 1.5, &a),
               SPMD_ERR_INVALID_ARGUMENT, "got lower 1.5 and upper 1.5");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_F64, 2, shape, NAN, 2.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "got lower nan and upper 2");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_F32, 2, shape, -2.0, NAN, &a),
               SPMD_ERR_INVALID_ARGUMENT, "got lower -2 and upper nan");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_F32, 2, shape, INFINITY, INFINITY, &a),
               SPMD_ERR_INVALID_ARGUMENT, "got lower inf and upper inf");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_F32, 2, shape, 1.0, 1.0 + 1e-12, &a),
               SPMD_ERR_INVALID_ARGUMENT,
               "lower, upper: 1 and 1.000000000001 are both 1 in float32; need lower < upper in "
               "the dtype");
  assert_fails(spmd_random_truncated_normal(s, &key, SPMD_BF16, 2, shape, 1.0, 1.001, &a),
               SPMD_ERR_INVALID_ARGUMENT, "are both 1 in bfloat16");
  assert_ptr_equal(a, sentinel); /* outputs untouched on failure */

  /* Close bounds that stay apart in the dtype are accepted. */
  assert_ok(spmd_random_truncated_normal(s, &key, SPMD_F64, 2, shape, 1.0, 1.0 + 1e-12, &a));
  spmd_array_destroy(a);

}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(keys_split_and_fold_in_give_jax_words),
      cmocka_unit_test(split_keys_do_not_depend_on_the_count),
      cmocka_unit_test(bits_are_jax_bits_under_every_sharding),
      cmocka_unit_test(uniforms_are_jax_floats_under_every_sharding),
      cmocka_unit_test(normals_are_within_tolerance_under_every_sharding),
      cmocka_unit_test(truncated_normals_are_within_tolerance_under_every_sharding),
      cmocka_unit_test(each_shard_holds_its_block_of_the_global_draw),
      cmocka_unit_test(seed_inputs_are_jax_normals),
      cmocka_unit_test(empty_and_scalar_shapes_are_drawn),
      cmocka_unit_test_setup_teardown(bad_arguments_fail_with_a_message, bad_args_setup,
                                      bad_args_teardown),
      cmocka_unit_test(truncated_normals_match_jax_table_under_every_sharding),
      cmocka_unit_test(truncated_normals_stay_inside_the_bounds),
      cmocka_unit_test_setup_teardown(truncated_normal_bad_arguments_fail_with_a_message,
                                      bad_args_setup, bad_args_teardown),
  };
  return cmocka_run_group_tests(tests, load_records, free_records);
}
