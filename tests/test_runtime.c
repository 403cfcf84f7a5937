/* Runtimes: choosing a platform, the CPU platform's virtual devices and
 * their descriptions. The suite picks its platforms itself, so it runs once. */
#include "spmd_test.h"

#include <stdlib.h>

static void default_runtime_has_eight_cpu_devices(void **state) {
  (void)state;
  unsetenv("SPMD_CPU_DEVICES");
  unsetenv("SPMD_PLATFORM");
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(NULL, &rt));
  int n = 0;
  assert_ok(spmd_runtime_device_count(rt, &n));
  assert_int_equal(n, 8);
  spmd_platform p;
  assert_ok(spmd_runtime_platform(rt, &p));
  assert_int_equal(p, SPMD_PLATFORM_CPU);
  spmd_runtime_destroy(rt);
}

static void device_count_option_and_environment(void **state) {
  (void)state;
  spmd_runtime_options o;
  spmd_runtime_options_init(&o, sizeof o);
  assert_int_equal(o.struct_size, sizeof(spmd_runtime_options));
  o.cpu_device_count = 3;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  int n = 0;
  assert_ok(spmd_runtime_device_count(rt, &n));
  assert_int_equal(n, 3);
  spmd_runtime_destroy(rt);

  setenv("SPMD_CPU_DEVICES", "5", 1);
  assert_ok(spmd_runtime_create(NULL, &rt));
  assert_ok(spmd_runtime_device_count(rt, &n));
  assert_int_equal(n, 5);
  spmd_runtime_destroy(rt);
  /* The option wins over the environment. */
  assert_ok(spmd_runtime_create(&o, &rt));
  assert_ok(spmd_runtime_device_count(rt, &n));
  assert_int_equal(n, 3);
  spmd_runtime_destroy(rt);

  setenv("SPMD_CPU_DEVICES", "many", 1);
  rt = NULL;
  assert_fails(spmd_runtime_create(NULL, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "SPMD_CPU_DEVICES='many'");
  assert_null(rt);
  unsetenv("SPMD_CPU_DEVICES");
}

static void bad_options_are_rejected(void **state) {
  (void)state;
  spmd_runtime *rt = NULL;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.cpu_device_count = -2;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->cpu_device_count: -2");
  o = (spmd_runtime_options)SPMD_RUNTIME_OPTIONS_INIT;
  o.worker_threads = -1;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->worker_threads");
  o = (spmd_runtime_options)SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = (spmd_platform)77;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT, "options->platform: 77");
  o = (spmd_runtime_options)SPMD_RUNTIME_OPTIONS_INIT;
  o.struct_size = 0;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT, "struct_size");
  assert_null(rt);
  setenv("SPMD_PLATFORM", "tpu", 1);
  assert_fails(spmd_runtime_create(NULL, &rt), SPMD_ERR_INVALID_ARGUMENT, "SPMD_PLATFORM='tpu'");
  unsetenv("SPMD_PLATFORM");
}

static void device_info_describes_cpu_devices(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  spmd_device_info info = SPMD_DEVICE_INFO_INIT;
  assert_ok(spmd_runtime_device_info(rt, 2, &info));
  assert_int_equal(info.id, 2);
  assert_int_equal(info.platform, SPMD_PLATFORM_CPU);
  assert_string_equal(info.platform_name, "cpu");
  assert_string_equal(info.kind, "cpu");
  assert_int_equal(info.process_index, 0);
  assert_int_equal(info.local_index, 2);
  char *s = NULL;
  assert_ok(spmd_runtime_device_to_string(rt, 3, &s));
  assert_string_result(s, "CpuDevice(id=3)");
  assert_fails(spmd_runtime_device_info(rt, 4, &info), SPMD_ERR_OUT_OF_RANGE,
               "device_id: device 4 does not exist");
  assert_fails(spmd_runtime_device_info(rt, -1, &info), SPMD_ERR_OUT_OF_RANGE, "device -1");
  assert_fails(spmd_runtime_device_info(rt, 0, NULL), SPMD_ERR_INVALID_ARGUMENT, "out");
  spmd_runtime_destroy(rt);
}

static void destroyed_or_null_runtime_is_reported(void **state) {
  (void)state;
  int n;
  assert_fails(spmd_runtime_device_count(NULL, &n), SPMD_ERR_INVALID_ARGUMENT,
               "runtime: NULL spmd_runtime handle");
  spmd_runtime *rt = test_runtime(2);
  spmd_runtime_destroy(rt);
  assert_fails(spmd_runtime_device_count(rt, &n), SPMD_ERR_INVALID_ARGUMENT,
               "runtime: not a live spmd_runtime");
  spmd_runtime_destroy(NULL);
  spmd_runtime_destroy(rt); /* destroying twice is ignored */
}

static void wrong_kind_of_handle_is_reported(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(2);
  int n;
  /* A mesh pointer passed where a runtime is expected. */
  int64_t shape[1] = {2};
  spmd_mesh *mesh = test_mesh(rt, 1, shape);
  assert_fails(spmd_runtime_device_count((const spmd_runtime *)(const void *)mesh, &n),
               SPMD_ERR_INVALID_ARGUMENT, "not a live spmd_runtime");
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static void objects_outlive_their_runtime_handle(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(2);
  int64_t shape[1] = {2};
  spmd_mesh *mesh = test_mesh(rt, 1, shape);
  spmd_sharding *s = test_sharding(mesh, "x");
  spmd_runtime_destroy(rt);
  spmd_mesh_destroy(mesh);
  int64_t ashape[1] = {4};
  spmd_array *a = NULL;
  assert_ok(spmd_array_arange(s, SPMD_I32, 1, ashape, 0, 1, &a));
  int32_t host[4];
  assert_ok(spmd_array_to_host(a, host, sizeof host));
  for (int i = 0; i < 4; ++i) assert_int_equal(host[i], i);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
}

static void sim_platform_by_option_and_environment(void **state) {
  (void)state;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_SIM;
  o.cpu_device_count = 3;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  spmd_platform p;
  assert_ok(spmd_runtime_platform(rt, &p));
  assert_int_equal(p, SPMD_PLATFORM_SIM);
  int n = 0;
  assert_ok(spmd_runtime_device_count(rt, &n));
  assert_int_equal(n, 3);
  spmd_device_info info = SPMD_DEVICE_INFO_INIT;
  assert_ok(spmd_runtime_device_info(rt, 1, &info));
  assert_int_equal(info.platform, SPMD_PLATFORM_SIM);
  assert_string_equal(info.platform_name, "sim");
  assert_string_equal(info.kind, "sim");
  /* Its devices print as the CPU devices JAX's references name. */
  char *repr = NULL;
  assert_ok(spmd_runtime_device_to_string(rt, 1, &repr));
  assert_string_result(repr, "CpuDevice(id=1)");
  spmd_runtime_destroy(rt);

  setenv("SPMD_PLATFORM", "sim", 1);
  assert_ok(spmd_runtime_create(NULL, &rt));
  assert_ok(spmd_runtime_platform(rt, &p));
  assert_int_equal(p, SPMD_PLATFORM_SIM);
  spmd_runtime_destroy(rt);
  unsetenv("SPMD_PLATFORM");
}

static void cuda_platform_without_cuda_build_is_unsupported(void **state) {
  (void)state;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CUDA;
  spmd_runtime *rt = NULL;
  spmd_status st = spmd_runtime_create(&o, &rt);
  if (st == SPMD_OK) {
    spmd_runtime_destroy(rt); /* a CUDA build on a machine with a GPU */
    return;
  }
  assert_int_equal(st, SPMD_ERR_UNSUPPORTED);
  assert_non_null(strstr(spmd_last_error(), "CUDA"));
  assert_null(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(default_runtime_has_eight_cpu_devices),
      cmocka_unit_test(device_count_option_and_environment),
      cmocka_unit_test(bad_options_are_rejected),
      cmocka_unit_test(device_info_describes_cpu_devices),
      cmocka_unit_test(destroyed_or_null_runtime_is_reported),
      cmocka_unit_test(wrong_kind_of_handle_is_reported),
      cmocka_unit_test(objects_outlive_their_runtime_handle),
      cmocka_unit_test(sim_platform_by_option_and_environment),
      cmocka_unit_test(cuda_platform_without_cuda_build_is_unsupported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
