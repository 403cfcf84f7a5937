/* Enums cross the ABI as plain ints: any value may arrive. Out-of-range
 * values are refused with a message (never loaded as an enum, which would
 * be undefined; the UBSan build checks that), and a callback's status that
 * is not a spmd_status becomes SPMD_ERR_CALLBACK with the value said. */
#include "spmd_test.h"

#include <limits.h>

static const int kBad[] = {-1, 13, 42, 1000, INT_MIN, INT_MAX};  /* 13: past SPMD_U32 */
enum { kBadCount = sizeof kBad / sizeof kBad[0] };

/* The bad value, reaching the call as the enum type it has in C. */
static spmd_dtype bad_dtype(int i) {
  spmd_dtype t;
  memcpy(&t, &kBad[i], sizeof t);
  return t;
}

static void dtype_queries_answer_nothing_for_unknown_values(void **state) {
  (void)state;
  for (int i = 0; i < kBadCount; ++i) {
    assert_int_equal(spmd_dtype_size(bad_dtype(i)), 0);
    assert_null(spmd_dtype_name(bad_dtype(i)));
  }
  spmd_status st;
  for (int i = 0; i < kBadCount; ++i) {
    memcpy(&st, &kBad[i], sizeof st);
    if (kBad[i] >= SPMD_OK && kBad[i] <= SPMD_ERR_INTERNAL) continue;
    assert_string_equal(spmd_status_string(st), "unknown status");
  }
}

static void constructors_refuse_unknown_dtypes(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(2);
  const int64_t ms[1] = {2}, shape[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  spmd_sharding *s = test_sharding(mesh, "x");
  spmd_key key;
  assert_ok(spmd_random_key(1, &key));
  char data[64] = {0};
  for (int i = 0; i < kBadCount; ++i) {
    const spmd_dtype t = bad_dtype(i);
    spmd_array *a = NULL;
    assert_fails(spmd_array_zeros(s, t, 1, shape, &a), SPMD_ERR_INVALID_ARGUMENT,
                 "dtype: unknown dtype");
    assert_fails(spmd_array_full(s, t, 1, shape, 1.0, &a), SPMD_ERR_INVALID_ARGUMENT, "dtype");
    assert_fails(spmd_array_arange(s, t, 1, shape, 0, 1, &a), SPMD_ERR_INVALID_ARGUMENT, "dtype");
    assert_fails(spmd_array_from_host(s, t, 1, shape, data, 16, &a), SPMD_ERR_INVALID_ARGUMENT,
                 "dtype");
    assert_fails(spmd_random_uniform(s, &key, t, 1, shape, 0, 1, &a), SPMD_ERR_INVALID_ARGUMENT,
                 "dtype");
    assert_fails(spmd_random_bits(s, &key, t, 1, shape, &a), SPMD_ERR_INVALID_ARGUMENT, "dtype");
    assert_null(a);
    spmd_collective *c = NULL;
    assert_fails(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, "x", t, 1, shape, NULL, &c),
                 SPMD_ERR_INVALID_ARGUMENT, "dtype");
    spmd_collective_kind k;
    memcpy(&k, &kBad[i], sizeof k);
    assert_fails(spmd_collective_create(s, k, "x", SPMD_F32, 1, shape, NULL, &c),
                 SPMD_ERR_INVALID_ARGUMENT, "is not a spmd_collective_kind");
    assert_null(c);
  }
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  memcpy(&o.platform, &kBad[0], sizeof o.platform);
  spmd_runtime *other = NULL;
  assert_fails(spmd_runtime_create(&o, &other), SPMD_ERR_INVALID_ARGUMENT,
               "options->platform: -1 is not a known platform");
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

typedef struct {
  int code;          /* what the callback returns (as the int it is) */
  int through_error; /* return it through spmd_ctx_error */
  spmd_status alloc_status[4];
} callback_plan;

static spmd_status returns_a_code(spmd_ctx *ctx, void *ud) {
  callback_plan *p = ud;
  int dev;
  spmd_ctx_device_id(ctx, &dev);
  const int64_t shape[1] = {2};
  spmd_block b = SPMD_BLOCK_INIT;
  int bad = kBad[dev % kBadCount];
  spmd_dtype t;
  memcpy(&t, &bad, sizeof t);
  p->alloc_status[dev] = spmd_ctx_alloc(ctx, t, 1, shape, &b);
  spmd_status st;
  memcpy(&st, &p->code, sizeof st);
  if (p->through_error) return spmd_ctx_error(ctx, st, "odd status");
  return st;
}

static void a_callback_status_that_is_not_a_status_becomes_callback_error(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t ms[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  callback_plan p;
  memset(&p, 0, sizeof p);
  p.code = 42;
  assert_fails(spmd_shard_map_text(mesh, returns_a_code, &p, 0, NULL, NULL, 0, NULL, NULL, NULL),
               SPMD_ERR_CALLBACK, "the callback returned 42, which is not a spmd_status");
  for (int d = 0; d < 4; ++d) assert_int_equal(p.alloc_status[d], SPMD_ERR_INVALID_ARGUMENT);
  p.code = -7;
  p.through_error = 1;
  assert_fails(spmd_shard_map_text(mesh, returns_a_code, &p, 0, NULL, NULL, 0, NULL, NULL, NULL),
               SPMD_ERR_CALLBACK, "-7");
  /* A known status still comes back as itself. */
  p.code = SPMD_ERR_OUT_OF_RANGE;
  assert_fails(spmd_shard_map_text(mesh, returns_a_code, &p, 0, NULL, NULL, 0, NULL, NULL, NULL),
               SPMD_ERR_OUT_OF_RANGE, "odd status");
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static void dtype_names_round_trip(void **state) {
  (void)state;
  for (int v = SPMD_F32; v <= SPMD_U32; ++v) {
    spmd_dtype t;
    memcpy(&t, &v, sizeof t);
    spmd_dtype back = SPMD_DTYPE_INVALID;
    assert_ok(spmd_dtype_from_name(spmd_dtype_name(t), &back));
    assert_int_equal(back, v);
  }
  spmd_dtype out = SPMD_DTYPE_INVALID;
  assert_fails(spmd_dtype_from_name("float128", &out), SPMD_ERR_INVALID_ARGUMENT,
               "name: 'float128' is not a dtype (float32, float64, float16, bfloat16");
  assert_fails(spmd_dtype_from_name(NULL, &out), SPMD_ERR_INVALID_ARGUMENT, "name: NULL");
  assert_fails(spmd_dtype_from_name("int32", NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_int_equal(out, SPMD_DTYPE_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dtype_names_round_trip),
      cmocka_unit_test(dtype_queries_answer_nothing_for_unknown_values),
      cmocka_unit_test(constructors_refuse_unknown_dtypes),
      cmocka_unit_test(a_callback_status_that_is_not_a_status_becomes_callback_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
