/* Byte counts never wrap: an array, a block or an allocation whose size in
 * bytes does not fit (more than 2^62) is refused with the shape named,
 * before anything is allocated, instead of wrapping to a small number. */
#include "spmd_test.h"

#include <stdlib.h>

static const int64_t kHuge = (int64_t)1 << 62;

typedef struct {
  spmd_runtime *rt;
  spmd_mesh *mesh;
  spmd_sharding *replicated;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->rt = test_runtime(8);
  const int64_t s[1] = {8};
  f->mesh = test_mesh(f->rt, 1, s);
  f->replicated = test_sharding(f->mesh, "");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  spmd_sharding_destroy(f->replicated);
  spmd_mesh_destroy(f->mesh);
  spmd_runtime_destroy(f->rt);
  free(f);
  return 0;
}

static void an_array_of_more_than_2_62_bytes_is_refused(void **state) {
  fixture *f = *state;
  spmd_array *a = NULL;
  const int64_t almost[1] = {kHuge - 1}, exactly[1] = {kHuge};
  assert_fails(spmd_array_zeros(f->replicated, SPMD_F32, 1, almost, &a),
               SPMD_ERR_INVALID_ARGUMENT, "shape (4611686018427387903,)");
  assert_non_null(strstr(spmd_last_error(), "need more than 2^62 bytes"));
  assert_fails(spmd_array_full(f->replicated, SPMD_F64, 1, exactly, 1.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "shape (4611686018427387904,)");
  assert_fails(spmd_array_arange(f->replicated, SPMD_I64, 1, almost, 0, 1, &a),
               SPMD_ERR_INVALID_ARGUMENT, "2^62 bytes");
  spmd_key key;
  assert_ok(spmd_random_key(0, &key));
  assert_fails(spmd_random_normal(f->replicated, &key, SPMD_F32, 1, almost, &a),
               SPMD_ERR_INVALID_ARGUMENT, "2^62 bytes");
  assert_null(a);
  /* One byte per element fits. */
  const int64_t small_enough[1] = {(int64_t)1 << 20};
  assert_ok(spmd_array_zeros(f->replicated, SPMD_U8, 1, small_enough, &a));
  size_t n = 0;
  assert_ok(spmd_array_nbytes(a, &n));
  assert_int_equal(n, (size_t)1 << 20);
  spmd_array_destroy(a);
}

static void from_host_of_a_wrapping_size_is_refused(void **state) {
  fixture *f = *state;
  spmd_array *a = NULL;
  /* 2^62 float32 elements are 2^64 bytes, which wraps to 0 = nbytes. */
  const int64_t shape[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
  char byte = 0;
  assert_fails(spmd_array_from_host(f->replicated, SPMD_F32, 2, shape, &byte, 0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "shape (2147483648, 2147483648)");
  assert_null(a);
}

static spmd_status alloc_huge(spmd_ctx *ctx, void *ud) {
  spmd_status *seen = ud;
  int dev;
  spmd_ctx_device_id(ctx, &dev);
  const int64_t shape[1] = {kHuge};
  spmd_block b = SPMD_BLOCK_INIT;
  seen[dev] = spmd_ctx_alloc(ctx, SPMD_F32, 1, shape, &b);
  if (seen[dev] == SPMD_OK && b.data == NULL) seen[dev] = SPMD_ERR_INTERNAL;
  /* A block claiming that many elements is refused by a collective too. */
  spmd_block fake = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  float x = 0;
  fake.data = &x;
  fake.dtype = SPMD_F64;
  fake.ndim = 1;
  fake.shape[0] = kHuge;
  const spmd_status st = spmd_ctx_psum(ctx, &fake, "x", &out);
  if (st != SPMD_ERR_INVALID_ARGUMENT || !strstr(spmd_last_error(), "x->shape"))
    seen[dev] = SPMD_ERR_INTERNAL;
  return SPMD_OK;
}

static void ctx_alloc_of_a_wrapping_size_is_refused(void **state) {
  fixture *f = *state;
  spmd_status seen[8];
  for (int i = 0; i < 8; ++i) seen[i] = SPMD_OK;
  /* The refused psum fails the shard_map; what matters is each call. */
  spmd_shard_map_text(f->mesh, alloc_huge, seen, 0, NULL, NULL, 0, NULL, NULL, NULL);
  for (int d = 0; d < 8; ++d) assert_int_equal(seen[d], SPMD_ERR_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(an_array_of_more_than_2_62_bytes_is_refused),
      cmocka_unit_test(from_host_of_a_wrapping_size_is_refused),
      cmocka_unit_test(ctx_alloc_of_a_wrapping_size_is_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
