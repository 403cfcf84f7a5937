/* hello: the smallest complete libspmd program.
 *
 * Creates the default runtime (8 virtual CPU devices unless SPMD_CPU_DEVICES
 * says otherwise), lays the devices out as a 2-d mesh, shards a 4 x 8 array
 * over both mesh axes, and prints where each block went.
 *
 * Build it against an installed libspmd:
 *   cc hello.c $(pkg-config --cflags --libs spmd) -o hello
 */
#include <stdint.h>
#include <stdio.h>

#include <spmd/spmd.h>

/* On failure: print the code and libspmd's message, then clean up. */
#define CHECK(call)                                                    \
  do {                                                                 \
    spmd_status st_ = (call);                                          \
    if (st_ != SPMD_OK) {                                              \
      fprintf(stderr, "%s failed: %s: %s\n", #call,                    \
              spmd_status_string(st_), spmd_last_error());             \
      goto done;                                                       \
    }                                                                  \
  } while (0)

int main(void) {
  int rc = 1;
  spmd_runtime *runtime = NULL;
  spmd_mesh *mesh = NULL;
  spmd_sharding *sharding = NULL;
  spmd_array *array = NULL;
  char *text = NULL;

  printf("libspmd %s\n", spmd_version_string());

  CHECK(spmd_runtime_create(NULL, &runtime));
  int devices = 0;
  CHECK(spmd_runtime_device_count(runtime, &devices));
  CHECK(spmd_runtime_device_to_string(runtime, 0, &text));
  printf("%d devices, the first is %s\n", devices, text);
  spmd_string_free(text);
  text = NULL;

  /* jax.make_mesh((2, devices / 2), ('data', 'model')), or one row when the
   * device count is odd. */
  const int64_t mesh_shape[2] = {devices % 2 == 0 ? 2 : 1,
                                 devices % 2 == 0 ? devices / 2 : devices};
  const char *const axes[2] = {"data", "model"};
  CHECK(spmd_mesh_create(runtime, 2, mesh_shape, axes, NULL, &mesh));

  /* NamedSharding(mesh, P('data', 'model')) */
  CHECK(spmd_sharding_named_text(mesh, "data, model", &sharding));
  CHECK(spmd_sharding_to_string(sharding, &text));
  printf("%s\n", text);
  spmd_string_free(text);
  text = NULL;

  /* jax.device_put(np.arange(32.0).reshape(4, 8), sharding) */
  enum { ROWS = 4, COLS = 8 };
  float host[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; ++i) host[i] = (float)i;
  const int64_t shape[2] = {ROWS, COLS};
  CHECK(spmd_array_from_host(sharding, SPMD_F32, 2, shape, host, sizeof host,
                             &array));

  size_t shards = 0;
  CHECK(spmd_array_shard_count(array, &shards));
  for (size_t i = 0; i < shards; ++i) {
    spmd_shard_info info;
    info.struct_size = sizeof info;
    CHECK(spmd_array_shard_info(array, i, &info));
    float first = 0.0f;
    if (info.local_shape[0] * info.local_shape[1] > 0) {
      float block[ROWS * COLS];
      const size_t bytes =
          (size_t)(info.local_shape[0] * info.local_shape[1]) * sizeof(float);
      CHECK(spmd_array_shard_read(array, i, block, bytes));
      first = block[0];
    }
    printf("device %d holds rows %lld:%lld, columns %lld:%lld, first value %g\n",
           info.device, (long long)info.start[0], (long long)info.stop[0],
           (long long)info.start[1], (long long)info.stop[1], first);
  }

  /* np.asarray(x).sum() */
  float back[ROWS * COLS];
  CHECK(spmd_array_to_host(array, back, sizeof back));
  double sum = 0.0;
  for (int i = 0; i < ROWS * COLS; ++i) sum += back[i];
  printf("sum of all elements: %g\n", sum);
  rc = 0;

done:
  spmd_string_free(text);
  spmd_array_destroy(array);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(runtime);
  return rc;
}
