/* Meshes: shapes, axis names, device order and lookups both ways. */
#include "spmd_test.h"


static void default_devices_are_in_order_row_major(void **state) {
  (void)state;
  int64_t shape[2] = {2, 4};
  spmd_mesh *m = test_mesh(suite_rt, 2, shape);
  size_t ndim, size;
  assert_ok(spmd_mesh_ndim(m, &ndim));
  assert_ok(spmd_mesh_size(m, &size));
  assert_int_equal(ndim, 2);
  assert_int_equal(size, 8);
  const char *name;
  int64_t axis_size;
  assert_ok(spmd_mesh_axis_name(m, 1, &name));
  assert_string_equal(name, "y");
  assert_ok(spmd_mesh_axis_size(m, 1, &axis_size));
  assert_int_equal(axis_size, 4);
  size_t index;
  assert_ok(spmd_mesh_axis_index(m, "y", &index));
  assert_int_equal(index, 1);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      int64_t c[2] = {i, j}, back[2];
      int d;
      assert_ok(spmd_mesh_device_at(m, 2, c, &d));
      assert_int_equal(d, i * 4 + j);
      assert_ok(spmd_mesh_device_coords(m, d, sizeof back / sizeof back[0], back, NULL));
      assert_int_equal(back[0], i);
      assert_int_equal(back[1], j);
    }
  char *s;
  assert_ok(spmd_mesh_to_string(m, &s));
  assert_string_result(s, "Mesh('x': 2, 'y': 4)");
  spmd_mesh_destroy(m);
}

static void explicit_device_order_is_kept(void **state) {
  (void)state;
  int64_t shape[2] = {2, 2};
  const char *names[2] = {"data", "model"};
  int devices[4] = {3, 1, 2, 0};
  spmd_mesh *m;
  assert_ok(spmd_mesh_create(suite_rt, 2, shape, names, devices, &m));
  int d;
  int64_t c[2] = {0, 0};
  assert_ok(spmd_mesh_device_at(m, 2, c, &d));
  assert_int_equal(d, 3);
  c[0] = 1;
  assert_ok(spmd_mesh_device_at(m, 2, c, &d));
  assert_int_equal(d, 2);
  assert_ok(spmd_mesh_device(m, 3, &d));
  assert_int_equal(d, 0);
  int64_t back[2];
  assert_ok(spmd_mesh_device_coords(m, 1, sizeof back / sizeof back[0], back, NULL));
  assert_int_equal(back[0], 0);
  assert_int_equal(back[1], 1);
  assert_fails(spmd_mesh_device_coords(m, 5, sizeof back / sizeof back[0], back, NULL), SPMD_ERR_INVALID_ARGUMENT,
               "device_id: device 5 is not in Mesh('data': 2, 'model': 2)");
  char *s;
  assert_ok(spmd_mesh_to_string(m, &s));
  assert_string_result(s, "Mesh('data': 2, 'model': 2)");
  spmd_mesh_destroy(m);
}

static void equal_meshes_compare_equal(void **state) {
  (void)state;
  int64_t shape[2] = {2, 4};
  spmd_mesh *a = test_mesh(suite_rt, 2, shape), *b = test_mesh(suite_rt, 2, shape);
  int64_t other[2] = {4, 2};
  spmd_mesh *c = test_mesh(suite_rt, 2, other);
  int eq;
  assert_ok(spmd_mesh_equal(a, b, &eq));
  assert_true(eq);
  assert_ok(spmd_mesh_equal(a, c, &eq));
  assert_false(eq);
  spmd_mesh_destroy(a);
  spmd_mesh_destroy(b);
  spmd_mesh_destroy(c);
}

static void bad_shapes_are_rejected(void **state) {
  (void)state;
  spmd_mesh *m = NULL;
  const char *names[2] = {"x", "y"};
  int64_t zero[2] = {2, 0};
  assert_fails(spmd_mesh_create(suite_rt, 2, zero, names, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "axis 1 has size 0");
  int64_t big_then_zero[2] = {16, 0};
  assert_fails(spmd_mesh_create(suite_rt, 2, big_then_zero, names, NULL, &m),
               SPMD_ERR_INVALID_ARGUMENT, "axis 1 has size 0");
  int64_t negative[2] = {-2, 4};
  assert_fails(spmd_mesh_create(suite_rt, 2, negative, names, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "negative size -2");
  int64_t too_big[2] = {4, 4};
  assert_fails(spmd_mesh_create(suite_rt, 2, too_big, names, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "needs 16 devices but the runtime has 8");
  assert_fails(spmd_mesh_create(suite_rt, 0, too_big, names, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "ndim: a mesh needs at least one axis");
  assert_fails(spmd_mesh_create(suite_rt, 2, NULL, names, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "shape: NULL");
  assert_null(m);
}

static void bad_axis_names_are_rejected(void **state) {
  (void)state;
  spmd_mesh *m = NULL;
  int64_t shape[2] = {2, 4};
  const char *twice[2] = {"x", "x"};
  assert_fails(spmd_mesh_create(suite_rt, 2, shape, twice, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "axis_names: 'x' is used for axes 0 and 1");
  const char *empty[2] = {"x", ""};
  assert_fails(spmd_mesh_create(suite_rt, 2, shape, empty, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "axis_names[1]: '' is not a valid axis name");
  const char *none[2] = {"None", "y"};
  assert_fails(spmd_mesh_create(suite_rt, 2, shape, none, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "axis_names[0]: 'None'");
  const char *comma[2] = {"x,y", "z"};
  assert_fails(spmd_mesh_create(suite_rt, 2, shape, comma, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "'x,y' is not a valid axis name");
  const char *null_name[2] = {"x", NULL};
  assert_fails(spmd_mesh_create(suite_rt, 2, shape, null_name, NULL, &m), SPMD_ERR_INVALID_ARGUMENT,
               "axis_names[1]: NULL");
  assert_null(m);
}

static void bad_device_ids_are_rejected(void **state) {
  (void)state;
  spmd_mesh *m = NULL;
  int64_t shape[1] = {4};
  const char *names[1] = {"x"};
  int twice[4] = {0, 1, 1, 2};
  assert_fails(spmd_mesh_create(suite_rt, 1, shape, names, twice, &m), SPMD_ERR_INVALID_ARGUMENT,
               "device_ids: device 1 appears twice (positions 1 and 2)");
  int unknown[4] = {0, 1, 9, 2};
  assert_fails(spmd_mesh_create(suite_rt, 1, shape, names, unknown, &m), SPMD_ERR_INVALID_ARGUMENT,
               "device_ids[2]: device 9 does not exist");
  int negative[4] = {0, -1, 2, 3};
  assert_fails(spmd_mesh_create(suite_rt, 1, shape, names, negative, &m), SPMD_ERR_INVALID_ARGUMENT,
               "device_ids[1]: device -1");
  assert_null(m);
}

static void lookups_outside_the_mesh_fail(void **state) {
  (void)state;
  int64_t shape[2] = {2, 4};
  spmd_mesh *m = test_mesh(suite_rt, 2, shape);
  const char *name;
  assert_fails(spmd_mesh_axis_name(m, 2, &name), SPMD_ERR_OUT_OF_RANGE, "axis: 2");
  size_t index;
  assert_fails(spmd_mesh_axis_index(m, "model", &index), SPMD_ERR_INVALID_ARGUMENT,
               "mesh has no axis 'model' (axes: x, y)");
  int64_t c[2] = {1, 4};
  int d;
  assert_fails(spmd_mesh_device_at(m, 2, c, &d), SPMD_ERR_OUT_OF_RANGE,
               "coords[1]: 4 is outside axis 'y' of size 4");
  assert_fails(spmd_mesh_device(m, 8, &d), SPMD_ERR_OUT_OF_RANGE, "index: 8");
  spmd_mesh_destroy(m);
  assert_fails(spmd_mesh_device(m, 0, &d), SPMD_ERR_INVALID_ARGUMENT, "not a live spmd_mesh");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(default_devices_are_in_order_row_major),
      cmocka_unit_test(explicit_device_order_is_kept),
      cmocka_unit_test(equal_meshes_compare_equal),
      cmocka_unit_test(bad_shapes_are_rejected),
      cmocka_unit_test(bad_axis_names_are_rejected),
      cmocka_unit_test(bad_device_ids_are_rejected),
      cmocka_unit_test(lookups_outside_the_mesh_fail),
  };
  return cmocka_run_group_tests(tests, suite_setup, suite_teardown);
}
