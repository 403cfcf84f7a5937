/* Runtimes: choosing a platform, the CPU platform's virtual devices and
 * their descriptions, the options every platform checks, and the cuda
 * platform's logical devices where a GPU is. The suite picks its platforms
 * itself, so it runs once, and again as test_runtime.cuda, whose cuda
 * checks fail without a GPU instead of skipping. */
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
  assert_int_equal(info.memory_bytes, 0); /* a GPU's alone */
  assert_int_equal(info.compute_capability, 0);
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
  assert_int_equal(info.memory_bytes, 0);
  assert_int_equal(info.compute_capability, 0);
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

/* setenv, or unsetenv for NULL. */
static void set_env(const char *name, const char *value) {
  if (value != NULL)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

static spmd_runtime_options platform_options(spmd_platform platform) {
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = platform;
  o.cpu_device_count = 2;
  return o;
}

static void devices_per_gpu_out_of_range_is_refused_on_every_platform(void **state) {
  (void)state;
  const spmd_platform platforms[3] = {SPMD_PLATFORM_CPU, SPMD_PLATFORM_SIM, SPMD_PLATFORM_CUDA};
  for (int i = 0; i < 3; ++i) {
    spmd_runtime *rt = NULL;
    spmd_runtime_options o = platform_options(platforms[i]);
    o.devices_per_gpu = -1;
    assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
                 "options->devices_per_gpu: -1");
    o.devices_per_gpu = 65;
    assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
                 "options->devices_per_gpu: 65");
    set_env("SPMD_CUDA_DEVICES_PER_GPU", "many");
    o.devices_per_gpu = 0;
    assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
                 "SPMD_CUDA_DEVICES_PER_GPU='many'");
    set_env("SPMD_CUDA_DEVICES_PER_GPU", "0");
    assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
                 "SPMD_CUDA_DEVICES_PER_GPU='0'");
    set_env("SPMD_CUDA_DEVICES_PER_GPU", NULL);
    assert_null(rt);
  }
  /* Platforms without GPUs take it and ignore it. */
  spmd_runtime_options o = platform_options(SPMD_PLATFORM_CPU);
  o.devices_per_gpu = 64;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  int n = 0;
  assert_ok(spmd_runtime_device_count(rt, &n));
  assert_int_equal(n, 2);
  spmd_runtime_destroy(rt);
}

static void callback_memory_is_checked_against_the_platform(void **state) {
  (void)state;
  spmd_runtime *rt = NULL;
  spmd_runtime_options o = platform_options(SPMD_PLATFORM_CPU);
  o.callback_memory = (spmd_memory_kind)7;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->callback_memory: 7");
  o.callback_memory = (spmd_memory_kind)-1;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->callback_memory: -1");
  /* The cpu platform's memory is host memory: every kind names it. */
  const spmd_memory_kind kinds[3] = {SPMD_MEMORY_DEVICE, SPMD_MEMORY_HOST_MAPPED, SPMD_MEMORY_HOST};
  for (int i = 0; i < 3; ++i) {
    o.callback_memory = kinds[i];
    assert_ok(spmd_runtime_create(&o, &rt));
    spmd_runtime_destroy(rt);
    rt = NULL;
  }
  /* The sim's callbacks run on the host, which cannot touch its memory. */
  o = platform_options(SPMD_PLATFORM_SIM);
  o.callback_memory = SPMD_MEMORY_DEVICE;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT, "mapped memory only");
  o.callback_memory = SPMD_MEMORY_HOST;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->callback_memory: SPMD_MEMORY_HOST");
  o.callback_memory = SPMD_MEMORY_HOST_MAPPED;
  assert_ok(spmd_runtime_create(&o, &rt));
  spmd_runtime_destroy(rt);
  rt = NULL;
  /* Plain host memory is no GPU's callback memory either; refused before
   * any GPU is looked for. */
  o = platform_options(SPMD_PLATFORM_CUDA);
  o.callback_memory = SPMD_MEMORY_HOST;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->callback_memory: SPMD_MEMORY_HOST");
  assert_null(rt);
}

static void callback_memory_environment(void **state) {
  (void)state;
  spmd_runtime *rt = NULL;
  set_env("SPMD_CALLBACK_MEMORY", "bogus");
  assert_fails(spmd_runtime_create(NULL, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "SPMD_CALLBACK_MEMORY='bogus'");
  spmd_runtime_options o = platform_options(SPMD_PLATFORM_SIM);
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "SPMD_CALLBACK_MEMORY='bogus'");
  set_env("SPMD_CALLBACK_MEMORY", "device");
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT, "mapped memory only");
  assert_null(rt);
  /* The option wins over the environment. */
  o.callback_memory = SPMD_MEMORY_HOST_MAPPED;
  assert_ok(spmd_runtime_create(&o, &rt));
  spmd_runtime_destroy(rt);
  set_env("SPMD_CALLBACK_MEMORY", "mapped");
  assert_ok(spmd_runtime_create(NULL, &rt));
  spmd_runtime_destroy(rt);
  set_env("SPMD_CALLBACK_MEMORY", NULL);
}

/* The platform this run is for ($SPMD_PLATFORM when main started; the
 * checks themselves run with a clean environment). */
static int cuda_under_test;

/* A cuda runtime of `o`, or NULL when none can be made here: a failure
 * where cuda is the platform under test, a skip (saying why) elsewhere. */
static spmd_runtime *cuda_runtime_or_skip(const spmd_runtime_options *o) {
  spmd_runtime *rt = NULL;
  spmd_clear_error();
  const spmd_status st = spmd_runtime_create(o, &rt);
  if (st == SPMD_OK) return rt;
  if (st != SPMD_ERR_UNSUPPORTED || cuda_under_test)
    fail_msg("the cuda platform: %s: %s", spmd_status_string(st), spmd_last_error());
  print_message("skipped: no cuda platform here: %s\n", spmd_last_error());
  skip();
  return NULL;
}

static int cuda_device_count(int devices_per_gpu) {
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CUDA;
  o.devices_per_gpu = devices_per_gpu;
  spmd_runtime *rt = cuda_runtime_or_skip(&o);
  int n = 0;
  assert_ok(spmd_runtime_device_count(rt, &n));
  spmd_runtime_destroy(rt);
  return n;
}

static void cuda_logical_devices_per_gpu_by_option_and_environment(void **state) {
  (void)state;
  const int gpus = cuda_device_count(1);
  assert_true(gpus >= 1);
  assert_int_equal(cuda_device_count(3), 3 * gpus);
  set_env("SPMD_CUDA_DEVICES_PER_GPU", "2");
  assert_int_equal(cuda_device_count(0), 2 * gpus);
  /* The option wins over the environment. */
  assert_int_equal(cuda_device_count(4), 4 * gpus);
  set_env("SPMD_CUDA_DEVICES_PER_GPU", "65");
  spmd_runtime_options o = platform_options(SPMD_PLATFORM_CUDA);
  spmd_runtime *rt = NULL;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "SPMD_CUDA_DEVICES_PER_GPU='65'");
  set_env("SPMD_CUDA_DEVICES_PER_GPU", NULL);
  assert_int_equal(cuda_device_count(0), gpus); /* one per GPU by default */
}

static void device_info_describes_cuda_devices(void **state) {
  (void)state;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CUDA;
  o.devices_per_gpu = 2;
  spmd_runtime *rt = cuda_runtime_or_skip(&o);
  spmd_platform p;
  assert_ok(spmd_runtime_platform(rt, &p));
  assert_int_equal(p, SPMD_PLATFORM_CUDA);
  int n = 0;
  assert_ok(spmd_runtime_device_count(rt, &n));
  for (int d = 0; d < n; ++d) {
    spmd_device_info info = SPMD_DEVICE_INFO_INIT;
    assert_ok(spmd_runtime_device_info(rt, d, &info));
    assert_int_equal(info.id, d);
    assert_int_equal(info.platform, SPMD_PLATFORM_CUDA);
    assert_string_equal(info.platform_name, "cuda");
    assert_non_null(info.kind); /* the GPU's name */
    assert_true(strlen(info.kind) > 0 && strcmp(info.kind, "cpu") != 0);
    assert_int_equal(info.process_index, 0);
    assert_int_equal(info.local_index, d);
    assert_true(info.memory_bytes > 0);
    assert_true(info.compute_capability >= 70);
    print_message("device %d: %s, %lld MiB, compute capability %d\n", d, info.kind,
                  (long long)(info.memory_bytes >> 20), info.compute_capability);
    /* The two logical devices of one GPU describe the same GPU. */
    if (d % 2 == 1) {
      spmd_device_info first = SPMD_DEVICE_INFO_INIT;
      assert_ok(spmd_runtime_device_info(rt, d - 1, &first));
      assert_string_equal(first.kind, info.kind);
      assert_int_equal(first.memory_bytes, info.memory_bytes);
      assert_int_equal(first.compute_capability, info.compute_capability);
    }
    char *repr = NULL, want[32];
    assert_ok(spmd_runtime_device_to_string(rt, d, &repr));
    snprintf(want, sizeof want, "CudaDevice(id=%d)", d);
    assert_string_equal(repr, want);
    spmd_string_free(repr);
  }
  spmd_runtime_destroy(rt);
}

int main(void) {
  const char *platform = getenv("SPMD_PLATFORM");
  cuda_under_test = platform != NULL && strcmp(platform, "cuda") == 0;
  /* Each check sets the environment it tests; the run's own stays out. */
  unsetenv("SPMD_PLATFORM");
  unsetenv("SPMD_CALLBACK_MEMORY");
  unsetenv("SPMD_CUDA_DEVICES_PER_GPU");
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
      cmocka_unit_test(devices_per_gpu_out_of_range_is_refused_on_every_platform),
      cmocka_unit_test(callback_memory_is_checked_against_the_platform),
      cmocka_unit_test(callback_memory_environment),
      cmocka_unit_test(cuda_logical_devices_per_gpu_by_option_and_environment),
      cmocka_unit_test(device_info_describes_cuda_devices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
