/* Shardings: construction, equality, text, and per-device shard metadata
 * (index, local shape, replica id) for even and uneven shapes. */
#include "spmd_test.h"


static spmd_shard_info info_of(spmd_sharding *s, size_t ndim, const int64_t *shape, size_t i) {
  spmd_shard_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  assert_ok(spmd_sharding_shard_info(s, ndim, shape, i, &info));
  return info;
}

static void row_sharding_on_three_devices(void **state) {
  (void)state;
  int64_t mshape[1] = {3};
  spmd_mesh *m = test_mesh(suite_rt, 1, mshape);
  spmd_sharding *s = test_sharding(m, "x");
  int64_t shape[2] = {3, 8};
  for (size_t i = 0; i < 3; ++i) {
    spmd_shard_info info = info_of(s, 2, shape, i);
    assert_int_equal(info.device, (int)i);
    assert_int_equal(info.replica_id, 0);
    assert_int_equal(info.ndim, 2);
    assert_int_equal(info.start[0], (int64_t)i);
    assert_int_equal(info.stop[0], (int64_t)i + 1);
    assert_int_equal(info.start[1], 0);
    assert_int_equal(info.stop[1], 8);
    assert_int_equal(info.local_shape[0], 1);
    assert_int_equal(info.local_shape[1], 8);
  }
  char *str;
  assert_ok(spmd_sharding_to_string(s, &str));
  assert_string_result(str,
                       "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec('x',), "
                       "memory_kind=device)");
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

static void two_axes_split_two_dimensions(void **state) {
  (void)state;
  int64_t mshape[2] = {2, 4};
  spmd_mesh *m = test_mesh(suite_rt, 2, mshape);
  spmd_sharding *s = test_sharding(m, "P('x', 'y')");
  int64_t shape[2] = {4, 8};
  for (size_t i = 0; i < 8; ++i) {
    spmd_shard_info info = info_of(s, 2, shape, i);
    assert_int_equal(info.device, (int)i);
    assert_int_equal(info.start[0], (int64_t)(i / 4) * 2);
    assert_int_equal(info.stop[0], (int64_t)(i / 4) * 2 + 2);
    assert_int_equal(info.start[1], (int64_t)(i % 4) * 2);
    assert_int_equal(info.stop[1], (int64_t)(i % 4) * 2 + 2);
    assert_int_equal(info.replica_id, 0);
  }
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

static void unused_axis_replicates_with_replica_ids(void **state) {
  (void)state;
  int64_t mshape[2] = {2, 4};
  spmd_mesh *m = test_mesh(suite_rt, 2, mshape);
  spmd_sharding *s = test_sharding(m, "y");
  int64_t shape[1] = {8};
  for (size_t i = 0; i < 8; ++i) {
    spmd_shard_info info = info_of(s, 1, shape, i);
    /* Devices 0 and 4 hold [0, 2), replica ids 0 and 1. */
    assert_int_equal(info.start[0], (int64_t)(i % 4) * 2);
    assert_int_equal(info.stop[0], (int64_t)(i % 4) * 2 + 2);
    assert_int_equal(info.replica_id, (int)(i / 4));
  }
  int full;
  assert_ok(spmd_sharding_is_fully_replicated(s, &full));
  assert_false(full);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

static void tuple_of_axes_orders_shards_by_those_axes(void **state) {
  (void)state;
  int64_t mshape[2] = {2, 4};
  spmd_mesh *m = test_mesh(suite_rt, 2, mshape);
  spmd_sharding *xy = test_sharding(m, "(x, y)");
  spmd_sharding *yx = test_sharding(m, "(y, x)");
  int64_t shape[1] = {16};
  for (size_t i = 0; i < 8; ++i) {
    /* Device i has mesh coords (i/4, i%4). */
    spmd_shard_info a = info_of(xy, 1, shape, i), b = info_of(yx, 1, shape, i);
    int64_t xi = (int64_t)i / 4, yi = (int64_t)i % 4;
    assert_int_equal(a.start[0], (xi * 4 + yi) * 2);
    assert_int_equal(b.start[0], (yi * 2 + xi) * 2);
  }
  spmd_sharding_destroy(xy);
  spmd_sharding_destroy(yx);
  spmd_mesh_destroy(m);
}

static void uneven_dimension_gives_ceil_sized_shards(void **state) {
  (void)state;
  int64_t mshape[1] = {4};
  spmd_mesh *m = test_mesh(suite_rt, 1, mshape);
  spmd_sharding *s = test_sharding(m, "x");
  /* 10 over 4: 3, 3, 3, 1. */
  int64_t ten[1] = {10};
  const int64_t starts10[4] = {0, 3, 6, 9}, stops10[4] = {3, 6, 9, 10};
  for (size_t i = 0; i < 4; ++i) {
    spmd_shard_info info = info_of(s, 1, ten, i);
    assert_int_equal(info.start[0], starts10[i]);
    assert_int_equal(info.stop[0], stops10[i]);
  }
  /* 5 over 4: 2, 2, 1, 0 — the last shard is empty. */
  int64_t five[1] = {5};
  const int64_t starts5[4] = {0, 2, 4, 5}, stops5[4] = {2, 4, 5, 5};
  for (size_t i = 0; i < 4; ++i) {
    spmd_shard_info info = info_of(s, 1, five, i);
    assert_int_equal(info.start[0], starts5[i]);
    assert_int_equal(info.stop[0], stops5[i]);
    assert_int_equal(info.local_shape[0], stops5[i] - starts5[i]);
  }
  /* 2 over 4: 1, 1, 0, 0. */
  int64_t two[1] = {2};
  assert_int_equal(info_of(s, 1, two, 2).local_shape[0], 0);
  assert_int_equal(info_of(s, 1, two, 3).start[0], 2);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

static void single_device_and_replicated_shardings(void **state) {
  (void)state;
  spmd_sharding *single;
  assert_ok(spmd_sharding_single_device(suite_rt, 1, &single));
  char *str;
  assert_ok(spmd_sharding_to_string(single, &str));
  assert_string_result(str, "SingleDeviceSharding(device=CpuDevice(id=1), memory_kind=device)");
  spmd_sharding_kind kind;
  assert_ok(spmd_sharding_get_kind(single, &kind));
  assert_int_equal(kind, SPMD_SHARDING_SINGLE_DEVICE);
  size_t n;
  assert_ok(spmd_sharding_device_count(single, &n));
  assert_int_equal(n, 1);
  int64_t shape[1] = {5};
  spmd_shard_info info = info_of(single, 1, shape, 0);
  assert_int_equal(info.device, 1);
  assert_int_equal(info.stop[0], 5);

  int64_t mshape[1] = {3};
  spmd_mesh *m = test_mesh(suite_rt, 1, mshape);
  spmd_sharding *rep;
  assert_ok(spmd_sharding_replicated(m, &rep));
  int full;
  assert_ok(spmd_sharding_is_fully_replicated(rep, &full));
  assert_true(full);
  assert_ok(spmd_sharding_to_string(rep, &str));
  assert_string_result(str,
                       "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec(), memory_kind=device)");
  for (size_t i = 0; i < 3; ++i) assert_int_equal(info_of(rep, 1, shape, i).replica_id, (int)i);
  assert_fails(spmd_sharding_single_device(suite_rt, 8, &single), SPMD_ERR_OUT_OF_RANGE,
               "device_id: device 8 does not exist");
  spmd_sharding_destroy(single);
  spmd_sharding_destroy(rep);
  spmd_mesh_destroy(m);
}

static void equality_follows_mesh_and_normalised_spec(void **state) {
  (void)state;
  int64_t mshape[2] = {2, 4};
  spmd_mesh *m = test_mesh(suite_rt, 2, mshape);
  spmd_mesh *m2 = test_mesh(suite_rt, 2, mshape);
  spmd_sharding *a = test_sharding(m, "x"), *b = test_sharding(m2, "x, None"),
                *c = test_sharding(m, "None, x");
  int eq;
  assert_ok(spmd_sharding_equal(a, b, &eq));
  assert_true(eq);
  assert_ok(spmd_sharding_equal(a, c, &eq));
  assert_false(eq);
  spmd_sharding *single;
  assert_ok(spmd_sharding_single_device(suite_rt, 0, &single));
  assert_ok(spmd_sharding_equal(a, single, &eq));
  assert_false(eq);
  /* Accessors give back the mesh and spec. */
  spmd_mesh *got;
  assert_ok(spmd_sharding_mesh(a, &got));
  assert_ok(spmd_mesh_equal(got, m, &eq));
  assert_true(eq);
  spmd_spec *spec;
  assert_ok(spmd_sharding_spec(c, &spec));
  char *str;
  assert_ok(spmd_spec_to_string(spec, &str));
  assert_string_result(str, "PartitionSpec(None, 'x')");
  spmd_spec_destroy(spec);
  spmd_mesh_destroy(got);
  spmd_sharding_destroy(a);
  spmd_sharding_destroy(b);
  spmd_sharding_destroy(c);
  spmd_sharding_destroy(single);
  spmd_mesh_destroy(m);
  spmd_mesh_destroy(m2);
}

static void bad_specs_against_the_mesh_fail(void **state) {
  (void)state;
  int64_t mshape[2] = {2, 2};
  const char *names[2] = {"data", "model"};
  spmd_mesh *m;
  assert_ok(spmd_mesh_create(suite_rt, 2, mshape, names, NULL, &m));
  spmd_sharding *s = NULL;
  assert_fails(spmd_sharding_named_text(m, "data, modle", &s), SPMD_ERR_INVALID_ARGUMENT,
               "spec 'data, modle': mesh has no axis 'modle' (axes: data, model)");
  assert_fails(spmd_sharding_named_text(m, "data, data", &s), SPMD_ERR_INVALID_ARGUMENT,
               "axis 'data' is used twice");
  assert_fails(spmd_sharding_named_text(m, NULL, &s), SPMD_ERR_INVALID_ARGUMENT, "spec: NULL");
  assert_fails(spmd_sharding_named(m, NULL, &s), SPMD_ERR_INVALID_ARGUMENT,
               "spec: NULL spmd_spec handle");
  assert_null(s);
  /* More spec entries than array dimensions. */
  s = test_sharding(m, "data, model");
  int64_t shape[1] = {4};
  spmd_shard_info info = {sizeof info, 0, 0, 0, {0}, {0}, {0}};
  assert_fails(spmd_sharding_shard_info(s, 1, shape, 0, &info), SPMD_ERR_INVALID_ARGUMENT,
               "names 2 dimensions but the array has 1 (shape (4,))");
  int64_t shape2[2] = {4, -1};
  assert_fails(spmd_sharding_shard_info(s, 2, shape2, 0, &info), SPMD_ERR_INVALID_ARGUMENT,
               "dimension 1 has negative size -1");
  int64_t ok[2] = {4, 4};
  assert_fails(spmd_sharding_shard_info(s, 2, ok, 4, &info), SPMD_ERR_OUT_OF_RANGE,
               "index: shard 4 does not exist");
  info.struct_size = 8;
  assert_fails(spmd_sharding_shard_info(s, 2, ok, 0, &info), SPMD_ERR_INVALID_ARGUMENT,
               "out->struct_size: 8");
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(row_sharding_on_three_devices),
      cmocka_unit_test(two_axes_split_two_dimensions),
      cmocka_unit_test(unused_axis_replicates_with_replica_ids),
      cmocka_unit_test(tuple_of_axes_orders_shards_by_those_axes),
      cmocka_unit_test(uneven_dimension_gives_ceil_sized_shards),
      cmocka_unit_test(single_device_and_replicated_shardings),
      cmocka_unit_test(equality_follows_mesh_and_normalised_spec),
      cmocka_unit_test(bad_specs_against_the_mesh_fail),
  };
  return cmocka_run_group_tests(tests, suite_setup, suite_teardown);
}
