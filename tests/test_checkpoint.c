/* Checkpoints (spmd_array_save, spmd_array_load): an array saved under one
 * sharding is restored under another, on another mesh and another runtime
 * with another device count, every dtype's bytes intact; a directory that
 * holds a checkpoint is not overwritten; missing, damaged and mismatched
 * checkpoints and bad arguments are refused by name. Runs over several
 * processes: tests/mpi/test_mpi_compare.c. */
#define _XOPEN_SOURCE 700
#include "spmd_test.h"

#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

static char root[256];

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static int setup(void **state) {
  (void)state;
  snprintf(root, sizeof root, "%s/spmd-checkpoint-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

static void dir_of(char *out, size_t size, const char *name) {
  snprintf(out, size, "%s/%s", root, name);
}

static void restored_under_any_sharding(void **state) {
  (void)state;
  spmd_runtime *eight = test_runtime(8), *three = test_runtime(3);
  const int64_t m24[2] = {2, 4}, m3[1] = {3};
  spmd_mesh *a = test_mesh(eight, 2, m24), *b = test_mesh(three, 1, m3);
  const int64_t shape[2] = {6, 10};
  int32_t v[60], out[60];
  for (int i = 0; i < 60; ++i) v[i] = i * 7 - 100;
  const char *saved_specs[3] = {"x, y", "y, x", ""};
  const char *loaded_specs[4] = {"x", "None, x", "", "x, None"};
  for (int k = 0; k < 3; ++k) {
    spmd_array *x = test_put(a, saved_specs[k], SPMD_I32, 2, shape, v);
    char dir[300];
    char name[32];
    snprintf(name, sizeof name, "saved-%d", k);
    dir_of(dir, sizeof dir, name);
    assert_ok(spmd_array_save(x, dir));
    for (int j = 0; j < 4; ++j) {
      spmd_sharding *s = test_sharding(b, loaded_specs[j]);
      spmd_array *y = NULL;
      assert_ok(spmd_array_load(s, dir, &y));
      spmd_dtype dtype;
      assert_ok(spmd_array_dtype(y, &dtype));
      assert_int_equal(dtype, SPMD_I32);
      memset(out, 0, sizeof out);
      assert_ok(spmd_array_to_host(y, out, sizeof out));
      assert_memory_equal(out, v, sizeof v);
      spmd_array_destroy(y);
      spmd_sharding_destroy(s);
    }
    /* Back onto the mesh it came from, under another sharding. */
    spmd_sharding *s = test_sharding(a, "y");
    spmd_array *y = NULL;
    assert_ok(spmd_array_load(s, dir, &y));
    memset(out, 0, sizeof out);
    assert_ok(spmd_array_to_host(y, out, sizeof out));
    assert_memory_equal(out, v, sizeof v);
    spmd_array_destroy(y);
    spmd_sharding_destroy(s);
    spmd_array_destroy(x);
  }
  spmd_mesh_destroy(a);
  spmd_mesh_destroy(b);
  spmd_runtime_destroy(eight);
  spmd_runtime_destroy(three);
}

static void every_dtype_and_empty_arrays_survive(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t m[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, m);
  const spmd_dtype dtypes[] = {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16, SPMD_I32, SPMD_I64,
                               SPMD_U8,  SPMD_BOOL, SPMD_I8,  SPMD_I16,  SPMD_U16, SPMD_U32};
  unsigned char v[8 * 9], out[8 * 9];
  for (size_t i = 0; i < sizeof v; ++i) v[i] = (unsigned char)(i * 31 + 1);
  for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; ++k) {
    const size_t es = spmd_dtype_size(dtypes[k]);
    /* bool holds 0 or 1 only. */
    for (size_t i = 0; i < sizeof v; ++i) v[i] = dtypes[k] == SPMD_BOOL ? (unsigned char)(i % 3 == 0) : (unsigned char)(i * 31 + 1);
    const int64_t shape[1] = {9};
    spmd_array *x = test_put(mesh, "x", dtypes[k], 1, shape, v);
    char dir[300], name[32];
    snprintf(name, sizeof name, "dtype-%zu", k);
    dir_of(dir, sizeof dir, name);
    assert_ok(spmd_array_save(x, dir));
    spmd_sharding *s = test_sharding(mesh, "");
    spmd_array *y = NULL;
    assert_ok(spmd_array_load(s, dir, &y));
    assert_ok(spmd_array_to_host(y, out, 9 * es));
    assert_memory_equal(out, v, 9 * es);
    spmd_array_destroy(y);
    spmd_sharding_destroy(s);
    spmd_array_destroy(x);
  }
  /* An empty array and a scalar. */
  const int64_t empty[2] = {0, 5};
  spmd_array *e = test_put(mesh, "x", SPMD_F32, 2, empty, NULL);
  char dir[300];
  dir_of(dir, sizeof dir, "empty");
  assert_ok(spmd_array_save(e, dir));
  spmd_sharding *s = test_sharding(mesh, "None, x");
  spmd_array *y = NULL;
  assert_ok(spmd_array_load(s, dir, &y));
  size_t nbytes = 1;
  assert_ok(spmd_array_nbytes(y, &nbytes));
  assert_int_equal(nbytes, 0);
  spmd_array_destroy(y);
  spmd_sharding_destroy(s);
  spmd_array_destroy(e);
  const float scalar = 2.5f;
  spmd_array *sc = test_put(mesh, "", SPMD_F32, 0, NULL, &scalar);
  dir_of(dir, sizeof dir, "scalar");
  assert_ok(spmd_array_save(sc, dir));
  s = test_sharding(mesh, "");
  assert_ok(spmd_array_load(s, dir, &y));
  float back = 0;
  assert_ok(spmd_array_to_host(y, &back, sizeof back));
  assert_true(back == scalar);
  spmd_array_destroy(y);
  spmd_sharding_destroy(s);
  spmd_array_destroy(sc);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void bad_checkpoints_and_arguments_are_refused(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(2);
  const int64_t m[1] = {2};
  spmd_mesh *mesh = test_mesh(rt, 1, m);
  const int64_t shape[1] = {4};
  const float v[4] = {1, 2, 3, 4};
  spmd_array *x = test_put(mesh, "x", SPMD_F32, 1, shape, v);
  spmd_sharding *s = test_sharding(mesh, "x");
  spmd_array *y = NULL;
  char dir[300], path[400];
  dir_of(dir, sizeof dir, "bad");
  assert_ok(spmd_array_save(x, dir));
  assert_fails(spmd_array_save(x, dir), SPMD_ERR_INVALID_ARGUMENT, "already holds a checkpoint");

  /* Another rank than the sharding suits. */
  spmd_sharding *two_d = test_sharding(mesh, "x, None");
  assert_fails(spmd_array_load(two_d, dir, &y), SPMD_ERR_INVALID_ARGUMENT,
               "names 2 dimensions but the array has 1");
  spmd_sharding_destroy(two_d);

  /* A block file cut short. */
  snprintf(path, sizeof path, "%s/block-0.bin", dir);
  write_text(path, "xy");
  assert_fails(spmd_array_load(s, dir, &y), SPMD_ERR_INVALID_ARGUMENT, "block-0.bin' holds fewer");

  /* Damaged and foreign indexes. */
  snprintf(path, sizeof path, "%s/index.txt", dir);
  write_text(path, "libspmd checkpoint 1\ndtype float99\n");
  assert_fails(spmd_array_load(s, dir, &y), SPMD_ERR_INVALID_ARGUMENT, "unknown dtype 'float99'");
  write_text(path, "libspmd checkpoint 1\ndtype float32\nshape 4\nblocks 2\nblock block-0.bin 0 2\n");
  assert_fails(spmd_array_load(s, dir, &y), SPMD_ERR_INVALID_ARGUMENT, "block line 1 of 2");
  write_text(path, "libspmd checkpoint 1\ndtype float32\nshape 4\nblocks 1\nblock ../x.bin 0 4\n");
  assert_fails(spmd_array_load(s, dir, &y), SPMD_ERR_INVALID_ARGUMENT, "names a path");
  write_text(path, "libspmd checkpoint 1\ndtype float32\nshape 4\nblocks 1\nblock block-0.bin 0 9\n");
  assert_fails(spmd_array_load(s, dir, &y), SPMD_ERR_INVALID_ARGUMENT, "outside the shape");
  write_text(path, "libspmd checkpoint 1\ndtype float32\nshape 4\nblocks 1\nblock block-0.bin 0 2\n");
  assert_fails(spmd_array_load(s, dir, &y), SPMD_ERR_INVALID_ARGUMENT, "cover 2 elements of 4");
  write_text(path, "a checkpoint of something else\n");
  assert_fails(spmd_array_load(s, dir, &y), SPMD_ERR_INVALID_ARGUMENT, "not a libspmd checkpoint");

  /* Missing, unwritable, and bad arguments. */
  dir_of(dir, sizeof dir, "missing");
  assert_fails(spmd_array_load(s, dir, &y), SPMD_ERR_INVALID_ARGUMENT, "no checkpoint index");
  assert_fails(spmd_array_save(x, "/proc/spmd-cannot-write-here"), SPMD_ERR_INVALID_ARGUMENT,
               "cannot make");
  assert_fails(spmd_array_save(x, ""), SPMD_ERR_INVALID_ARGUMENT, "directory: empty");
  assert_fails(spmd_array_save(x, NULL), SPMD_ERR_INVALID_ARGUMENT, "directory: NULL");
  assert_fails(spmd_array_save(NULL, dir), SPMD_ERR_INVALID_ARGUMENT, "array");
  assert_fails(spmd_array_load(NULL, dir, &y), SPMD_ERR_INVALID_ARGUMENT, "sharding");
  assert_fails(spmd_array_load(s, NULL, &y), SPMD_ERR_INVALID_ARGUMENT, "directory: NULL");
  assert_fails(spmd_array_load(s, dir, NULL), SPMD_ERR_INVALID_ARGUMENT, "out");
  assert_null(y);

  spmd_sharding_destroy(s);
  spmd_array_destroy(x);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(restored_under_any_sharding),
      cmocka_unit_test(every_dtype_and_empty_arrays_survive),
      cmocka_unit_test(bad_checkpoints_and_arguments_are_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
