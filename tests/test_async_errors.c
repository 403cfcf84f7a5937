/* Work may complete after the call that queued it returns (the sim
 * platform always works so), and an error of such work is kept: it
 * surfaces at spmd_array_block_until_ready, at copies to the host, and at
 * every later consumer, whose own results fail the same way. The sim's
 * SPMD_SIM_FAIL_KERNEL makes every kernel of one kind fail. */
#include "spmd_test.h"

#include <stdlib.h>

static spmd_runtime *sim_runtime_failing(const char *kernel) {
  setenv("SPMD_SIM_FAIL_KERNEL", kernel, 1);
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_SIM;
  o.cpu_device_count = 4;
  o.devices_per_gpu = 4;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  unsetenv("SPMD_SIM_FAIL_KERNEL"); /* read when the runtime is made */
  return rt;
}

static spmd_status copy_input(spmd_ctx *ctx, void *user_data) {
  (void)user_data;
  spmd_block in = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st != SPMD_OK) return st;
  return spmd_ctx_set_output(ctx, 0, &in);
}

static void a_failed_fill_surfaces_at_every_consumer(void **state) {
  (void)state;
  spmd_runtime *rt = sim_runtime_failing("fill");
  const int64_t mesh_shape[1] = {4}, shape[2] = {8, 2};
  spmd_mesh *mesh = test_mesh(rt, 1, mesh_shape);
  spmd_sharding *rows = test_sharding(mesh, "x"), *cols = test_sharding(mesh, "None, x");
  spmd_array *a = NULL, *b = NULL, *c = NULL;
  /* Queued: the call itself succeeds. */
  assert_ok(spmd_array_zeros(rows, SPMD_F32, 2, shape, &a));
  assert_fails(spmd_array_block_until_ready(a), SPMD_ERR_INTERNAL,
               "injected failure of a fill on device");
  float host[16];
  assert_fails(spmd_array_to_host(a, host, sizeof host), SPMD_ERR_INTERNAL, "injected failure");
  float shard[4];
  assert_fails(spmd_array_shard_read(a, 1, shard, sizeof shard), SPMD_ERR_INTERNAL,
               "injected failure");
  /* A reshard of it is queued after it, and fails the same way. */
  assert_ok(spmd_array_reshard(a, cols, &b));
  assert_fails(spmd_array_block_until_ready(b), SPMD_ERR_INTERNAL, "injected failure");
  assert_fails(spmd_array_to_host(b, host, sizeof host), SPMD_ERR_INTERNAL, "injected failure");
  /* So does a shard_map that reads it. */
  const char *spec = "x";
  assert_fails(spmd_shard_map_text(mesh, copy_input, NULL, 1, &a, &spec, 1, &spec, NULL, &c),
               SPMD_ERR_INTERNAL, "injected failure");
  assert_null(c);
  spmd_array_destroy(b);
  spmd_array_destroy(a);

  /* Work that does not depend on a failed kernel is unaffected. */
  const float values[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  assert_ok(spmd_array_from_host(rows, SPMD_F32, 2, shape, values, sizeof values, &a));
  assert_ok(spmd_array_reshard(a, cols, &b));
  assert_ok(spmd_array_to_host(b, host, sizeof host));
  assert_memory_equal(host, values, sizeof values);
  spmd_array_destroy(b);
  spmd_array_destroy(a);
  spmd_sharding_destroy(rows);
  spmd_sharding_destroy(cols);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static void a_failed_copy_fails_the_reshard_not_its_source(void **state) {
  (void)state;
  spmd_runtime *rt = sim_runtime_failing("copy");
  const int64_t mesh_shape[1] = {4}, shape[1] = {8};
  spmd_mesh *mesh = test_mesh(rt, 1, mesh_shape);
  spmd_sharding *s = test_sharding(mesh, "x"), *r = test_sharding(mesh, "");
  spmd_array *a = NULL, *b = NULL;
  assert_ok(spmd_array_arange(s, SPMD_I32, 1, shape, 0, 1, &a));
  assert_ok(spmd_array_block_until_ready(a));
  assert_ok(spmd_array_reshard(a, r, &b));
  assert_fails(spmd_array_block_until_ready(b), SPMD_ERR_INTERNAL,
               "injected failure of a copy");
  /* The source is intact and still usable by kernels. */
  assert_ok(spmd_array_block_until_ready(a));
  spmd_array_destroy(b);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_sharding_destroy(r);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_failed_fill_surfaces_at_every_consumer),
      cmocka_unit_test(a_failed_copy_fails_the_reshard_not_its_source),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
