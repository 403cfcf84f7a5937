/* A kernel that faults on the GPU becomes an error naming the device and
 * the work that saw it, never a hang or a success. A fault ends the CUDA
 * context for the whole process, so this runs alone, after the rest. */
#include <cuda_runtime.h>

extern "C" {
#include "spmd_test.h"
}

static const int kDevices = 8;

__global__ void write_through_a_bad_pointer(float *p) { p[threadIdx.x] = 1.0f; }

static spmd_status faulting_callback(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block in = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st) return st;
  int device = -1;
  if ((st = spmd_ctx_device_id(ctx, &device))) return st;
  if (device == 5) {
    void *stream = NULL;
    if ((st = spmd_ctx_stream(ctx, &stream))) return st;
    write_through_a_bad_pointer<<<1, 32, 0, (cudaStream_t)stream>>>((float *)0x10);
  }
  return spmd_ctx_set_output(ctx, 0, &in);
}

static void a_device_fault_is_an_error_not_a_hang(void **state) {
  (void)state;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CUDA;
  o.devices_per_gpu = kDevices;
  o.callback_memory = SPMD_MEMORY_DEVICE;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  const int64_t ms[1] = {kDevices};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  float x[64];
  for (int i = 0; i < 64; ++i) x[i] = (float)i;
  const int64_t shape[1] = {64};
  spmd_array *a = test_put(mesh, "x", SPMD_F32, 1, shape, x);
  const char *spec[] = {"x"};
  spmd_array *out = NULL;
  /* The fault surfaces at the shard_map (the device's fence) or at the
   * first wait for its result; either way as an error of the run. */
  spmd_clear_error();
  spmd_status st = spmd_shard_map_text(mesh, faulting_callback, NULL, 1, &a, spec, 1, spec, NULL,
                                       &out);
  if (st == SPMD_OK) {
    float back[64];
    st = spmd_array_to_host(out, back, sizeof back);
  }
  printf("reported: %s: %s\n", spmd_status_string(st), spmd_last_error());
  assert_int_equal(st, SPMD_ERR_INTERNAL);
  assert_non_null(strstr(spmd_last_error(), "device"));
  assert_non_null(strstr(spmd_last_error(), "illegal"));
  spmd_array_destroy(out);
  spmd_array_destroy(a);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("test_cuda_fault: no GPU here; the fault check needs one\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_device_fault_is_an_error_not_a_hang),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
