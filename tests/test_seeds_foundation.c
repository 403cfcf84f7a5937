/* The seed notebooks' data-placement cells, with the same shapes and values:
 * single-device arrays, a 3-device mesh with a (3, 8) array, a 2x4 mesh with
 * a (4, 8) array under P('x', 'y'), and P('data', None) on a 2x2 mesh. */
#include "spmd_test.h"


static char *picture(spmd_array *a) {
  char *pic = NULL;
  assert_ok(spmd_array_visualize(a, NULL, &pic));
  return pic;
}

/* a = jnp.arange(5); b = jnp.array([2,3,4], device=jax.devices()[1]) */
static void arrays_on_single_devices(void **state) {
  (void)state;
  spmd_sharding *d0, *d1;
  assert_ok(spmd_sharding_single_device(suite_rt, 0, &d0));
  assert_ok(spmd_sharding_single_device(suite_rt, 1, &d1));
  int64_t five[1] = {5}, three[1] = {3};
  spmd_array *a, *b;
  assert_ok(spmd_array_arange(d0, SPMD_I32, 1, five, 0, 1, &a));
  int32_t bv[3] = {2, 3, 4};
  assert_ok(spmd_array_from_host(d1, SPMD_I32, 1, three, bv, sizeof bv, &b));
  int dev;
  assert_ok(spmd_array_device(a, &dev));
  assert_int_equal(dev, 0);
  assert_ok(spmd_array_device(b, &dev));
  assert_int_equal(dev, 1);
  char *s;
  assert_ok(spmd_sharding_to_string(d0, &s));
  assert_string_result(s, "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)");
  assert_string_result(picture(a), "┌───────┐\n│ CPU 0 │\n└───────┘\n");
  assert_string_result(picture(b), "┌───────┐\n│ CPU 1 │\n└───────┘\n");
  int32_t host[5];
  assert_ok(spmd_array_to_host(a, host, sizeof host));
  for (int i = 0; i < 5; ++i) assert_int_equal(host[i], i);
  spmd_array_destroy(a);
  spmd_array_destroy(b);
  spmd_sharding_destroy(d0);
  spmd_sharding_destroy(d1);
}

/* mesh = jax.make_mesh((3,), ('x',)); arr = jnp.arange(24.0).reshape(3, 8) */
static void arange_rows_over_three_devices(void **state) {
  (void)state;
  int64_t ms[1] = {3};
  spmd_mesh *mesh = test_mesh(suite_rt, 1, ms);
  spmd_sharding *s = test_sharding(mesh, "P('x',)");
  char *str;
  assert_ok(spmd_sharding_to_string(s, &str));
  assert_string_result(str,
                       "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec('x',), "
                       "memory_kind=device)");
  float arr[24];
  for (int i = 0; i < 24; ++i) arr[i] = (float)i;
  int64_t shape[2] = {3, 8};
  spmd_array *sharded;
  assert_ok(spmd_array_from_host(s, SPMD_F32, 2, shape, arr, sizeof arr, &sharded));
  for (size_t i = 0; i < 3; ++i) {
    float row[8];
    assert_ok(spmd_array_shard_read(sharded, i, row, sizeof row));
    for (int c = 0; c < 8; ++c) assert_float_equal(row[c], (float)(i * 8 + (size_t)c), 0.0);
  }
  int64_t got[2];
  assert_ok(spmd_array_shape(sharded, sizeof got / sizeof got[0], got, NULL));
  assert_int_equal(got[0], 3);
  assert_int_equal(got[1], 8);
  spmd_array_destroy(sharded);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
}

/* mesh_utils.create_device_mesh((2, 4)); NamedSharding(mesh, P('x', 'y'))
 * applied to jnp.arange(32.0).reshape(4, 8) */
static void arange_grid_over_two_by_four(void **state) {
  (void)state;
  int64_t ms[2] = {2, 4};
  spmd_mesh *mesh = test_mesh(suite_rt, 2, ms);
  spmd_sharding *s = test_sharding(mesh, "P('x', 'y')");
  char *str;
  assert_ok(spmd_sharding_to_string(s, &str));
  assert_string_result(str,
                       "NamedSharding(mesh=Mesh('x': 2, 'y': 4), spec=PartitionSpec('x', 'y'), "
                       "memory_kind=device)");
  int64_t shape[2] = {4, 8};
  spmd_array *a;
  assert_ok(spmd_array_arange(s, SPMD_F32, 2, shape, 0, 1, &a));
  /* Device 5 has mesh coords (1, 1): rows 2-3, columns 2-3. */
  spmd_shard_info info = {sizeof info, 0, 0, 0, {0}, {0}, {0}};
  assert_ok(spmd_array_shard_info(a, 5, &info));
  assert_int_equal(info.device, 5);
  float block[4];
  assert_ok(spmd_array_shard_read(a, 5, block, sizeof block));
  assert_float_equal(block[0], 18.0f, 0.0);
  assert_float_equal(block[1], 19.0f, 0.0);
  assert_float_equal(block[2], 26.0f, 0.0);
  assert_float_equal(block[3], 27.0f, 0.0);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
}

/* Mesh(np.array(jax.devices()).reshape(2, 2), ("data", "model")) and
 * jax.device_put(x, NamedSharding(mesh, PartitionSpec("data", None))) */
static void batch_rows_over_data_axis(void **state) {
  (void)state;
  int64_t ms[2] = {2, 2};
  const char *names[2] = {"data", "model"};
  spmd_mesh *mesh;
  assert_ok(spmd_mesh_create(suite_rt, 2, ms, names, NULL, &mesh));
  spmd_sharding *s = test_sharding(mesh, "PartitionSpec(\"data\", None)");
  float x[40];
  for (int i = 0; i < 40; ++i) x[i] = (float)i * 0.5f - 3.0f;
  int64_t shape[2] = {4, 10};
  spmd_array *a;
  assert_ok(spmd_array_from_host(s, SPMD_F32, 2, shape, x, sizeof x, &a));
  for (size_t i = 0; i < 4; ++i) {
    spmd_shard_info info = {sizeof info, 0, 0, 0, {0}, {0}, {0}};
    assert_ok(spmd_array_shard_info(a, i, &info));
    assert_int_equal(info.replica_id, (int)(i % 2)); /* model axis replicates */
    float rows[20];
    assert_ok(spmd_array_shard_read(a, i, rows, sizeof rows));
    assert_memory_equal(rows, x + (i / 2) * 20, sizeof rows);
  }
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(arrays_on_single_devices),
      cmocka_unit_test(arange_rows_over_three_devices),
      cmocka_unit_test(arange_grid_over_two_by_four),
      cmocka_unit_test(batch_rows_over_data_axis),
  };
  return cmocka_run_group_tests(tests, suite_setup, suite_teardown);
}
