/* The libspmd tour: the seed notebooks' cells, one after another, on the
 * default CPU platform (8 virtual devices), printing what the notebooks
 * print. Each cell is shown with the Python it reproduces. */
#include <spmd/spmd.h>

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    spmd_status st_ = (call);                                                           \
    if (st_ != SPMD_OK) {                                                               \
      fprintf(stderr, "tour: %s failed: %s: %s\n", #call, spmd_status_string(st_),       \
              spmd_last_error());                                                       \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

static void cell(const char *python) { printf("\n>>> %s\n", python); }

static void print_owned(char *s) {
  fputs(s, stdout);
  if (s[0] && s[strlen(s) - 1] != '\n') putchar('\n');
  spmd_string_free(s);
}

static void show_picture(const spmd_array *a) {
  char *pic;
  CHECK(spmd_array_visualize(a, NULL, &pic));
  print_owned(pic);
}

static void show_sharding(const spmd_sharding *s) {
  char *str;
  CHECK(spmd_sharding_to_string(s, &str));
  print_owned(str);
}

static void show_device(spmd_runtime *rt, int device) {
  char *str;
  CHECK(spmd_runtime_device_to_string(rt, device, &str));
  print_owned(str);
}

/* jax.devices(), single-device arrays and their pictures. */
static void devices_and_single_device_arrays(spmd_runtime *rt) {
  printf("\n=== Device parallelism for SPMD ===\n");
  cell("jax.devices()");
  int n;
  CHECK(spmd_runtime_device_count(rt, &n));
  putchar('[');
  for (int d = 0; d < n; ++d) {
    char *str;
    CHECK(spmd_runtime_device_to_string(rt, d, &str));
    printf("%s%s", d ? ", " : "", str);
    spmd_string_free(str);
  }
  printf("]\n");

  spmd_sharding *dev0, *dev1;
  CHECK(spmd_sharding_single_device(rt, 0, &dev0));
  CHECK(spmd_sharding_single_device(rt, 1, &dev1));
  int64_t five[1] = {5}, three[1] = {3};
  spmd_array *a, *b;
  cell("a = jnp.arange(5); a.device");
  CHECK(spmd_array_arange(dev0, SPMD_I32, 1, five, 0, 1, &a));
  int device;
  CHECK(spmd_array_device(a, &device));
  show_device(rt, device);
  cell("b = jnp.array([2,3,4], device=jax.devices()[1]); b.device");
  const int32_t bv[3] = {2, 3, 4};
  CHECK(spmd_array_from_host(dev1, SPMD_I32, 1, three, bv, sizeof bv, &b));
  CHECK(spmd_array_device(b, &device));
  show_device(rt, device);
  cell("a.sharding");
  spmd_sharding *as;
  CHECK(spmd_array_sharding(a, &as));
  show_sharding(as);
  cell("jax.debug.visualize_array_sharding(a)");
  show_picture(a);
  cell("jax.debug.visualize_array_sharding(b)");
  show_picture(b);
  spmd_sharding_destroy(as);
  spmd_array_destroy(a);
  spmd_array_destroy(b);
  spmd_sharding_destroy(dev0);
  spmd_sharding_destroy(dev1);
}

/* A (3, 8) array split by rows over a 3-device mesh. */
static void rows_over_three_devices(spmd_runtime *rt) {
  cell("mesh = jax.make_mesh((3,), ('x',))\n"
       "... sharding = jax.sharding.NamedSharding(mesh, PartitionSpec('x',)); print(sharding)");
  int64_t ms[1] = {3};
  const char *x[1] = {"x"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 1, ms, x, NULL, &mesh));
  spmd_sharding *sharding;
  CHECK(spmd_sharding_named_text(mesh, "P('x',)", &sharding));
  show_sharding(sharding);

  cell("arr = jnp.arange(24.0).reshape(3, 8); arr.shape");
  spmd_sharding *dev0;
  CHECK(spmd_sharding_single_device(rt, 0, &dev0));
  int64_t shape[2] = {3, 8};
  spmd_array *arr, *sharded;
  CHECK(spmd_array_arange(dev0, SPMD_F32, 2, shape, 0, 1, &arr));
  int64_t got[2];
  CHECK(spmd_array_shape(arr, got));
  printf("(%lld, %lld)\n", (long long)got[0], (long long)got[1]);

  cell("arr_sharded = jax.device_put(arr, sharding); arr_sharded.sharding");
  CHECK(spmd_array_reshard(arr, sharding, &sharded));
  spmd_sharding *ss;
  CHECK(spmd_array_sharding(sharded, &ss));
  show_sharding(ss);
  cell("jax.debug.visualize_array_sharding(arr_sharded)");
  show_picture(sharded);
  spmd_sharding_destroy(ss);
  spmd_array_destroy(arr);
  spmd_array_destroy(sharded);
  spmd_sharding_destroy(dev0);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
}

/* A (4, 8) array on one device, then over a 2x4 mesh by P('x', 'y'). */
static void grid_over_two_by_four(spmd_runtime *rt) {
  printf("\n=== Introduction to sharded computation ===\n");
  cell("arr = jnp.arange(32.0).reshape(4, 8); arr.devices()");
  spmd_sharding *dev0;
  CHECK(spmd_sharding_single_device(rt, 0, &dev0));
  int64_t shape[2] = {4, 8};
  spmd_array *arr;
  CHECK(spmd_array_arange(dev0, SPMD_F32, 2, shape, 0, 1, &arr));
  int device;
  CHECK(spmd_array_device(arr, &device));
  char *str;
  CHECK(spmd_runtime_device_to_string(rt, device, &str));
  printf("{%s}\n", str);
  spmd_string_free(str);
  cell("arr.sharding");
  show_sharding(dev0);
  cell("jax.debug.visualize_array_sharding(arr)");
  show_picture(arr);

  cell("mesh = jax.sharding.Mesh(mesh_utils.create_device_mesh((2, 4)), ('x', 'y'))\n"
       "... sharding = jax.sharding.NamedSharding(mesh, P('x', 'y')); print(sharding)");
  int64_t ms[2] = {2, 4};
  const char *xy[2] = {"x", "y"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 2, ms, xy, NULL, &mesh));
  spmd_sharding *sharding;
  CHECK(spmd_sharding_named_text(mesh, "P('x', 'y')", &sharding));
  show_sharding(sharding);
  cell("arr_sharded = jax.device_put(arr, sharding)\n"
       "... jax.debug.visualize_array_sharding(arr_sharded)");
  spmd_array *sharded;
  CHECK(spmd_array_reshard(arr, sharding, &sharded));
  show_picture(sharded);
  spmd_array_destroy(sharded);
  spmd_array_destroy(arr);
  spmd_sharding_destroy(sharding);
  spmd_sharding_destroy(dev0);
  spmd_mesh_destroy(mesh);
}

/* FSDP-style placement: batch rows over 'data' of a 2x2 mesh. */
static void batch_over_data_axis(spmd_runtime *rt) {
  printf("\n=== FSDP-style sharding ===\n");
  cell("mesh = Mesh(np.array(jax.devices()).reshape(2, 2), axis_names=('data', 'model'))\n"
       "... x = jax.device_put(x, NamedSharding(mesh, PartitionSpec('data', None)))");
  int64_t ms[2] = {2, 2};
  const char *names[2] = {"data", "model"};
  const int devices[4] = {0, 1, 2, 3};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 2, ms, names, devices, &mesh));
  spmd_sharding *sharding;
  CHECK(spmd_sharding_named_text(mesh, "PartitionSpec('data', None)", &sharding));
  int64_t shape[2] = {4, 10};
  spmd_array *x;
  CHECK(spmd_array_arange(sharding, SPMD_F32, 2, shape, 0, 1, &x));
  show_sharding(sharding);
  show_picture(x);
  spmd_array_destroy(x);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
}

int main(void) {
  spmd_runtime *rt;
  CHECK(spmd_runtime_create(NULL, &rt));
  printf("libspmd %s tour\n", spmd_version_string());
  devices_and_single_device_arrays(rt);
  rows_over_three_devices(rt);
  grid_over_two_by_four(rt);
  batch_over_data_axis(rt);
  spmd_runtime_destroy(rt);
  return 0;
}
