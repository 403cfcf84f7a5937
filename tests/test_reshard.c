/* Resharding: every pair from a list of shardings (one mesh, other meshes
 * over the same devices, one device), even and uneven shapes; every shard
 * of the result, replicas included, must hold its block of the original. */
#include "spmd_test.h"

#include <stdlib.h>

enum { NSHARDINGS = 17 };
static spmd_runtime *rt;
static spmd_mesh *mesh24, *mesh8, *mesh42_reversed;
static spmd_sharding *shardings[NSHARDINGS];
static const char *names[NSHARDINGS];

static int setup(void **state) {
  (void)state;
  rt = test_runtime(8);
  int64_t s24[2] = {2, 4}, s8[1] = {8}, s42[2] = {4, 2};
  mesh24 = test_mesh(rt, 2, s24);
  const char *d[1] = {"d"};
  assert_ok(spmd_mesh_create(rt, 1, s8, d, NULL, &mesh8));
  const char *ab[2] = {"a", "b"};
  int reversed[8] = {7, 6, 5, 4, 3, 2, 1, 0};
  assert_ok(spmd_mesh_create(rt, 2, s42, ab, reversed, &mesh42_reversed));
  static const char *const on24[] = {"",          "x",           "y",       "x, y",
                                     "y, x",      "(x,y)",       "(y,x)",   "None, x",
                                     "None, y",   "None, (x,y)", "None, (y,x)", "x, None",
                                     "P(('y', 'x'), None)"};
  size_t k = 0;
  for (; k < sizeof on24 / sizeof *on24; ++k) {
    shardings[k] = test_sharding(mesh24, on24[k]);
    names[k] = on24[k];
  }
  shardings[k] = test_sharding(mesh8, "None, d");
  names[k++] = "mesh8: None, d";
  shardings[k] = test_sharding(mesh42_reversed, "b, a");
  names[k++] = "mesh42 reversed: b, a";
  shardings[k] = test_sharding(mesh42_reversed, "(a, b)");
  names[k++] = "mesh42 reversed: (a, b)";
  assert_ok(spmd_sharding_single_device(rt, 5, &shardings[k]));
  names[k++] = "single device 5";
  assert_int_equal(k, NSHARDINGS);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (size_t k = 0; k < NSHARDINGS; ++k) spmd_sharding_destroy(shardings[k]);
  spmd_mesh_destroy(mesh24);
  spmd_mesh_destroy(mesh8);
  spmd_mesh_destroy(mesh42_reversed);
  spmd_runtime_destroy(rt);
  return 0;
}

/* Every shard of `a` equals its block of the row-major host array `ref`. */
static void check_shards(spmd_array *a, const int32_t *ref, int64_t cols, const char *what) {
  size_t n;
  assert_ok(spmd_array_shard_count(a, &n));
  for (size_t i = 0; i < n; ++i) {
    spmd_shard_info info = {sizeof info, 0, 0, 0, {0}, {0}, {0}};
    assert_ok(spmd_array_shard_info(a, i, &info));
    const int64_t rows_here = info.local_shape[0], cols_here = info.local_shape[1];
    int32_t *block = malloc((size_t)(rows_here * cols_here + 1) * sizeof *block);
    assert_ok(spmd_array_shard_read(a, i, block, (size_t)(rows_here * cols_here) * sizeof *block));
    for (int64_t r = 0; r < rows_here; ++r)
      for (int64_t c = 0; c < cols_here; ++c) {
        const int32_t want = ref[(info.start[0] + r) * cols + info.start[1] + c];
        if (block[r * cols_here + c] != want)
          fail_msg("%s: shard %zu (device %d) element (%lld, %lld): got %d, want %d", what, i,
                   info.device, (long long)r, (long long)c, block[r * cols_here + c], want);
      }
    free(block);
  }
}

static void reshard_all_pairs(const int64_t *shape) {
  const int64_t n = shape[0] * shape[1];
  int32_t *ref = malloc((size_t)n * sizeof *ref), *back = malloc((size_t)n * sizeof *back);
  for (int64_t i = 0; i < n; ++i) ref[i] = (int32_t)(i * 7 + 3);
  char what[256];
  for (size_t from = 0; from < NSHARDINGS; ++from) {
    spmd_array *a;
    assert_ok(spmd_array_from_host(shardings[from], SPMD_I32, 2, shape, ref,
                                   (size_t)n * sizeof *ref, &a));
    for (size_t to = 0; to < NSHARDINGS; ++to) {
      spmd_array *b;
      assert_ok(spmd_array_reshard(a, shardings[to], &b));
      snprintf(what, sizeof what, "shape (%lld, %lld): [%s] -> [%s]", (long long)shape[0],
               (long long)shape[1], names[from], names[to]);
      check_shards(b, ref, shape[1], what);
      memset(back, 0, (size_t)n * sizeof *back);
      assert_ok(spmd_array_to_host(b, back, (size_t)n * sizeof *back));
      if (memcmp(back, ref, (size_t)n * sizeof *ref) != 0) fail_msg("%s: to_host differs", what);
      int eq;
      spmd_sharding *got;
      assert_ok(spmd_array_sharding(b, &got));
      assert_ok(spmd_sharding_equal(got, shardings[to], &eq));
      assert_true(eq);
      spmd_sharding_destroy(got);
      spmd_array_destroy(b);
    }
    spmd_array_destroy(a);
  }
  free(ref);
  free(back);
}

static void reshard_even_shape_between_every_pair(void **state) {
  (void)state;
  int64_t shape[2] = {8, 16};
  reshard_all_pairs(shape);
}

static void reshard_uneven_shape_between_every_pair(void **state) {
  (void)state;
  int64_t shape[2] = {7, 13};
  reshard_all_pairs(shape);
}

static void reshard_shape_with_empty_shards_between_every_pair(void **state) {
  (void)state;
  int64_t shape[2] = {3, 5};
  reshard_all_pairs(shape);
}

static void reshard_rows_to_columns_keeps_values_in_every_dtype(void **state) {
  (void)state;
  const spmd_dtype dtypes[] = {SPMD_F32, SPMD_F64, SPMD_BF16, SPMD_U8, SPMD_BOOL, SPMD_I64};
  int64_t shape[3] = {6, 9, 5};
  spmd_sharding *rows = test_sharding(mesh24, "x, None, y");
  spmd_sharding *cols = test_sharding(mesh24, "None, (y, x)");
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; ++d) {
    const size_t nbytes = 6 * 9 * 5 * spmd_dtype_size(dtypes[d]);
    unsigned char *in = malloc(nbytes), *out = malloc(nbytes);
    for (size_t i = 0; i < nbytes; ++i) in[i] = (unsigned char)((i * 13) & (dtypes[d] == SPMD_BOOL ? 1 : 0xff));
    spmd_array *a, *b, *c;
    assert_ok(spmd_array_from_host(rows, dtypes[d], 3, shape, in, nbytes, &a));
    assert_ok(spmd_array_reshard(a, cols, &b));
    assert_ok(spmd_array_reshard(b, rows, &c));
    assert_ok(spmd_array_to_host(b, out, nbytes));
    assert_memory_equal(in, out, nbytes);
    assert_ok(spmd_array_to_host(c, out, nbytes));
    assert_memory_equal(in, out, nbytes);
    spmd_array_destroy(a);
    spmd_array_destroy(b);
    spmd_array_destroy(c);
    free(in);
    free(out);
  }
  spmd_sharding_destroy(rows);
  spmd_sharding_destroy(cols);
}

static void reshard_to_a_bad_target_fails_cleanly(void **state) {
  (void)state;
  int64_t shape[1] = {8};
  spmd_sharding *s = test_sharding(mesh24, "x");
  spmd_array *a, *b = NULL;
  assert_ok(spmd_array_zeros(s, SPMD_F32, 1, shape, &a));
  spmd_sharding *two_dims = test_sharding(mesh24, "x, y");
  assert_fails(spmd_array_reshard(a, two_dims, &b), SPMD_ERR_INVALID_ARGUMENT,
               "names 2 dimensions but the array has 1");
  /* A sharding from another runtime cannot receive the data. */
  spmd_runtime *other = test_runtime(8);
  int64_t s8[1] = {8};
  spmd_mesh *m = test_mesh(other, 1, s8);
  spmd_sharding *foreign = test_sharding(m, "x");
  assert_fails(spmd_array_reshard(a, foreign, &b), SPMD_ERR_INVALID_ARGUMENT,
               "sharding: belongs to another runtime");
  assert_fails(spmd_array_reshard(a, NULL, &b), SPMD_ERR_INVALID_ARGUMENT, "sharding: NULL");
  assert_fails(spmd_array_reshard(a, s, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_null(b);
  spmd_sharding_destroy(foreign);
  spmd_mesh_destroy(m);
  spmd_runtime_destroy(other);
  spmd_sharding_destroy(two_dims);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reshard_even_shape_between_every_pair),
      cmocka_unit_test(reshard_uneven_shape_between_every_pair),
      cmocka_unit_test(reshard_shape_with_empty_shards_between_every_pair),
      cmocka_unit_test(reshard_rows_to_columns_keeps_values_in_every_dtype),
      cmocka_unit_test(reshard_to_a_bad_target_fails_cleanly),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
