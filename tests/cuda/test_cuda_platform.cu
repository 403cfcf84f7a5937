/* The CUDA platform where only a GPU can show it: logical devices and what
 * device info says of them, shard_map callbacks that queue their own
 * kernels on the device's stream (spmd_ctx_stream) with collectives and
 * outputs ordered after them, out-of-memory reported and survived, and the
 * caller's current device left alone. Built wherever the CUDA platform is;
 * run on a GPU (SPMD_TEST_CUDA). */
#include <cuda_runtime.h>

extern "C" {
#include "spmd_test.h"
}

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int kDevices = 8;

static spmd_runtime *cuda_runtime(spmd_memory_kind callback_memory) {
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CUDA;
  o.devices_per_gpu = kDevices;
  o.callback_memory = callback_memory;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  return rt;
}

static int gpu_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

static void logical_devices_describe_their_gpu(void **state) {
  (void)state;
  spmd_runtime *rt = cuda_runtime(SPMD_MEMORY_DEFAULT);
  int count = 0;
  assert_ok(spmd_runtime_device_count(rt, &count));
  assert_int_equal(count, kDevices * gpu_count());
  cudaDeviceProp prop;
  assert_int_equal(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  for (int d = 0; d < count; ++d) {
    spmd_device_info info = SPMD_DEVICE_INFO_INIT;
    assert_ok(spmd_runtime_device_info(rt, d, &info));
    assert_int_equal(info.platform, SPMD_PLATFORM_CUDA);
    assert_string_equal(info.platform_name, "cuda");
    if (d < kDevices) {
      assert_string_equal(info.kind, prop.name);
      assert_int_equal(info.memory_bytes, (int64_t)prop.totalGlobalMem);
      assert_int_equal(info.compute_capability, prop.major * 10 + prop.minor);
    }
  }
  char *repr = NULL;
  assert_ok(spmd_runtime_device_to_string(rt, 3, &repr));
  assert_string_equal(repr, "CudaDevice(id=3)");
  spmd_string_free(repr);
  spmd_runtime_destroy(rt);
}

/* y = 2x + 1, by a kernel of the callback's own on the device's stream. */
__global__ void two_x_plus_one(const float *x, float *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = 2.0f * x[i] + 1.0f;
}

typedef struct {
  int bad_kind;    /* a block not in device memory */
  int no_stream;   /* spmd_ctx_stream gave NULL */
} device_probe;

static spmd_status scale_then_psum(spmd_ctx *ctx, void *ud) {
  device_probe *p = (device_probe *)ud;
  spmd_block in = SPMD_BLOCK_INIT, y = SPMD_BLOCK_INIT, sum = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st) return st;
  if ((st = spmd_ctx_alloc(ctx, SPMD_F32, in.ndim, in.shape, &y))) return st;
  if (in.memory_kind != SPMD_MEMORY_DEVICE || y.memory_kind != SPMD_MEMORY_DEVICE)
    p->bad_kind = 1;
  void *stream = NULL;
  if ((st = spmd_ctx_stream(ctx, &stream))) return st;
  if (stream == NULL) {
    p->no_stream = 1;
    return SPMD_ERR_INTERNAL;
  }
  two_x_plus_one<<<4, 128, 0, (cudaStream_t)stream>>>((const float *)in.data, (float *)y.data,
                                                      in.shape[0]);
  if (cudaGetLastError() != cudaSuccess) return SPMD_ERR_INTERNAL;
  /* The collective reads y after the kernel: same stream, same order. */
  if ((st = spmd_ctx_psum(ctx, &y, "x", &sum))) return st;
  if (sum.memory_kind != SPMD_MEMORY_DEVICE) p->bad_kind = 1;
  if ((st = spmd_ctx_set_output(ctx, 0, &y))) return st;
  return spmd_ctx_set_output(ctx, 1, &sum);
}

static void callbacks_queue_kernels_on_the_device_stream(void **state) {
  (void)state;
  spmd_runtime *rt = cuda_runtime(SPMD_MEMORY_DEVICE);
  const int64_t ms[1] = {kDevices};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  enum { n = 8 * 1024 };
  const int64_t shape[1] = {n};
  float *x = (float *)malloc(n * sizeof(float)), *got = (float *)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) x[i] = (float)(i % 97) - 40.0f;
  spmd_array *a = test_put(mesh, "x", SPMD_F32, 1, shape, x);
  const char *in_specs[] = {"x"};
  const char *out_specs[] = {"x", "x"};
  spmd_array *outs[2] = {NULL, NULL};
  device_probe p = {0, 0};
  assert_ok(spmd_shard_map_text(mesh, scale_then_psum, &p, 1, &a, in_specs, 2, out_specs, NULL,
                                outs));
  assert_false(p.bad_kind);
  assert_false(p.no_stream);
  assert_ok(spmd_array_to_host(outs[0], got, n * sizeof(float)));
  for (int i = 0; i < n; ++i) assert_true(got[i] == 2.0f * x[i] + 1.0f);
  /* psum over x of the blocks: block b's element j summed over b. */
  const int block = n / kDevices;
  assert_ok(spmd_array_to_host(outs[1], got, n * sizeof(float)));
  for (int j = 0; j < block; ++j) {
    float want = 0.0f;
    for (int b = 0; b < kDevices; ++b) want += 2.0f * x[b * block + j] + 1.0f;
    for (int b = 0; b < kDevices; ++b) assert_true(fabsf(got[b * block + j] - want) <= 1e-3f);
  }
  spmd_array_destroy(outs[0]);
  spmd_array_destroy(outs[1]);
  spmd_array_destroy(a);
  free(x);
  free(got);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static void out_of_memory_is_reported_and_survived(void **state) {
  (void)state;
  spmd_runtime *rt = cuda_runtime(SPMD_MEMORY_DEFAULT);
  spmd_device_info info = SPMD_DEVICE_INFO_INIT;
  assert_ok(spmd_runtime_device_info(rt, 0, &info));
  const int64_t ms[1] = {kDevices};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  spmd_sharding *s = test_sharding(mesh, "x");
  /* Twice the GPU's memory, spread over its logical devices. */
  const int64_t huge[1] = {info.memory_bytes / 2};
  spmd_array *a = NULL;
  assert_fails(spmd_array_zeros(s, SPMD_F32, 1, huge, &a), SPMD_ERR_OUT_OF_MEMORY,
               "cannot allocate");
  assert_null(a);
  const int64_t small[1] = {1024};
  assert_ok(spmd_array_zeros(s, SPMD_F32, 1, small, &a));
  assert_ok(spmd_array_block_until_ready(a));
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

static void the_callers_current_device_is_kept(void **state) {
  (void)state;
  const int last = gpu_count() - 1;
  assert_int_equal(cudaSetDevice(last), cudaSuccess);
  spmd_runtime *rt = cuda_runtime(SPMD_MEMORY_DEFAULT);
  const int64_t ms[1] = {kDevices};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  spmd_sharding *s = test_sharding(mesh, "x");
  const int64_t shape[1] = {4096};
  spmd_array *a = NULL;
  assert_ok(spmd_array_arange(s, SPMD_F32, 1, shape, 0.0, 1.0, &a));
  assert_ok(spmd_array_block_until_ready(a));
  int now = -1;
  assert_int_equal(cudaGetDevice(&now), cudaSuccess);
  assert_int_equal(now, last);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  assert_int_equal(cudaGetDevice(&now), cudaSuccess);
  assert_int_equal(now, last);
}

/* A setting of the platform's with a value it does not know fails the
 * runtime's creation, naming the variable and the values it takes. The
 * setting is put back before anything is asserted, so that a failure here
 * cannot fail the tests after it. */
static void unknown_settings_are_refused(void **state) {
  (void)state;
  const char *kept = getenv("SPMD_CUDA_COLLECTIVES");
  char *saved = kept ? strdup(kept) : NULL;
  assert_int_equal(setenv("SPMD_CUDA_COLLECTIVES", "sideways", 1), 0);
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CUDA;
  o.devices_per_gpu = kDevices;
  spmd_runtime *rt = NULL;
  spmd_clear_error();
  const spmd_status st = spmd_runtime_create(&o, &rt);
  char message[1024];
  snprintf(message, sizeof message, "%s", spmd_last_error());
  if (saved) setenv("SPMD_CUDA_COLLECTIVES", saved, 1);
  else unsetenv("SPMD_CUDA_COLLECTIVES");
  free(saved);
  assert_int_equal(st, SPMD_ERR_INVALID_ARGUMENT);
  assert_null(rt);
  if (strstr(message, "SPMD_CUDA_COLLECTIVES") == NULL ||
      strstr(message, "expected auto, native or nccl") == NULL)
    fail_msg("message \"%s\" does not name the setting and its values", message);
}

/* SPMD_CUDA_HOST_TIMES=1: the runtime's going prints where the host's
 * time went, kernel launches and event records among it. stderr goes to a
 * file meanwhile; it and the setting are put back before anything is
 * asserted, so that a failure's message is seen. */
static void host_times_are_printed_when_asked(void **state) {
  (void)state;
  FILE *log = tmpfile();
  assert_non_null(log);
  fflush(stderr);
  const int saved = dup(2);
  assert_true(saved >= 0);
  assert_int_equal(setenv("SPMD_CUDA_HOST_TIMES", "1", 1), 0);
  assert_true(dup2(fileno(log), 2) >= 0);
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CUDA;
  o.devices_per_gpu = kDevices;
  spmd_runtime *rt = NULL;
  spmd_mesh *mesh = NULL;
  spmd_sharding *s = NULL;
  spmd_array *a = NULL, *b = NULL;
  const int64_t ms[1] = {kDevices}, shape[1] = {64};
  const char *axis[1] = {"x"};
  const char *failed = NULL;
  if (spmd_runtime_create(&o, &rt) != SPMD_OK) failed = "spmd_runtime_create";
  else if (spmd_mesh_create(rt, 1, ms, axis, NULL, &mesh) != SPMD_OK) failed = "spmd_mesh_create";
  else if (spmd_sharding_named_text(mesh, "x", &s) != SPMD_OK) failed = "spmd_sharding_named_text";
  else if (spmd_array_arange(s, SPMD_F32, 1, shape, 0.0, 1.0, &a) != SPMD_OK) failed = "spmd_array_arange";
  else if (spmd_binary(SPMD_BINARY_ADD, a, a, NULL, &b) != SPMD_OK) failed = "spmd_binary";
  else if (spmd_array_block_until_ready(b) != SPMD_OK) failed = "spmd_array_block_until_ready";
  char why[1024] = "";
  if (failed) snprintf(why, sizeof why, "%s", spmd_last_error());
  spmd_array_destroy(b);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  unsetenv("SPMD_CUDA_HOST_TIMES");
  char text[8192] = "";
  rewind(log);
  const size_t n = fread(text, 1, sizeof text - 1, log);
  text[n] = '\0';
  fclose(log);
  if (failed) fail_msg("%s: %s", failed, why);
  if (strstr(text, "CUDA platform host times") == NULL || strstr(text, "kernel launches") == NULL ||
      strstr(text, "cudaEventRecord") == NULL || strstr(text, "cudaMallocFromPoolAsync") == NULL)
    fail_msg("no table of host times on stderr; it held:\n%s", text);
}

int main(void) {
  if (gpu_count() == 0) {
    printf("test_cuda_platform: no GPU here; the CUDA platform's GPU checks need one\n");
    return 77;  /* CTest's SKIP_RETURN_CODE */
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(logical_devices_describe_their_gpu),
      cmocka_unit_test(callbacks_queue_kernels_on_the_device_stream),
      cmocka_unit_test(out_of_memory_is_reported_and_survived),
      cmocka_unit_test(the_callers_current_device_is_kept),
      cmocka_unit_test(unknown_settings_are_refused),
      cmocka_unit_test(host_times_are_printed_when_asked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
