/* A runtime over several processes, as every process of an unchanged
 * program sees it under mpirun with SPMD_DISTRIBUTED=mpi:
 *
 *   mpirun -np P test_mpi_runtime P L     (SPMD_CPU_DEVICES=L)
 *
 * Process index, count and local device count; every device's id, place and
 * repr; a mesh over every process's devices with its picture and shard
 * queries (no data needed); a mesh of this process's devices running arrays, reshards, global ops and
 * a shard_map with a psum. Every process runs the same checks. Arrays and
 * work on meshes across processes: test_mpi_compare.c. */
#include "spmd_test.h"

#include <stdlib.h>

static int expected_processes;
static int expected_local;
static spmd_runtime *rt;
static int me;

static int setup(void **state) {
  (void)state;
  if (spmd_runtime_create(NULL, &rt) != SPMD_OK) {
    fprintf(stderr, "spmd_runtime_create: %s\n", spmd_last_error());
    return -1;
  }
  return spmd_runtime_process_index(rt, &me) == SPMD_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  spmd_runtime_destroy(rt);
  return 0;
}

static void processes_and_devices_are_counted(void **state) {
  (void)state;
  int count = 0, local = 0, devices = 0;
  assert_ok(spmd_runtime_process_count(rt, &count));
  assert_ok(spmd_runtime_local_device_count(rt, &local));
  assert_ok(spmd_runtime_device_count(rt, &devices));
  assert_int_equal(count, expected_processes);
  assert_int_equal(local, expected_local);
  assert_int_equal(devices, expected_processes * expected_local);
  assert_true(me >= 0 && me < count);
}

static void every_device_says_where_it_is(void **state) {
  (void)state;
  const int total = expected_processes * expected_local;
  for (int d = 0; d < total; ++d) {
    spmd_device_info info = SPMD_DEVICE_INFO_INIT;
    assert_ok(spmd_runtime_device_info(rt, d, &info));
    assert_int_equal(info.id, d);
    assert_int_equal(info.process_index, d / expected_local);
    assert_int_equal(info.local_index, d % expected_local);
    assert_string_equal(info.platform_name, test_platform_is("sim") ? "sim" : "cpu");
    /* Another process's kind is what it described. */
    assert_string_equal(info.kind, test_platform_is("sim") ? "sim" : "cpu");
  }
  spmd_device_info info = SPMD_DEVICE_INFO_INIT;
  assert_fails(spmd_runtime_device_info(rt, total, &info), SPMD_ERR_OUT_OF_RANGE,
               "does not exist");
}

/* JAX prints another process's CPU device as its own: CpuDevice(id=N). */
static void devices_print_as_jax_prints_them(void **state) {
  (void)state;
  for (int d = 0; d < expected_processes * expected_local; ++d) {
    char *s = NULL, want[64];
    assert_ok(spmd_runtime_device_to_string(rt, d, &s));
    snprintf(want, sizeof want, "CpuDevice(id=%d)", d);
    assert_string_equal(s, want);
    spmd_string_free(s);
  }
}

/* A mesh (processes, local) over every device, devices in order. */
static spmd_mesh *global_mesh(void) {
  const int64_t shape[2] = {expected_processes, expected_local};
  const char *names[2] = {"processes", "local"};
  spmd_mesh *mesh = NULL;
  assert_ok(spmd_mesh_create(rt, 2, shape, names, NULL, &mesh));
  return mesh;
}

static void a_mesh_over_every_process_has_its_picture_and_shards(void **state) {
  (void)state;
  spmd_mesh *mesh = global_mesh();
  char *text = NULL, want[64];
  assert_ok(spmd_mesh_to_string(mesh, &text));
  snprintf(want, sizeof want, "Mesh('processes': %d, 'local': %d)", expected_processes,
           expected_local);
  assert_string_equal(text, want);
  spmd_string_free(text);
  for (size_t i = 0; i < (size_t)(expected_processes * expected_local); ++i) {
    int device = -1;
    assert_ok(spmd_mesh_device(mesh, i, &device));
    assert_int_equal(device, (int)i);
  }

  spmd_sharding *s = test_sharding(mesh, "processes, local");
  const int64_t shape[2] = {2 * expected_processes, 3 * expected_local};
  char *picture = NULL;
  assert_ok(spmd_sharding_visualize(s, 2, shape, NULL, &picture));
  snprintf(want, sizeof want, "CPU %d", expected_processes * expected_local - 1);
  if (strstr(picture, want) == NULL) fail_msg("picture lacks %s:\n%s", want, picture);
  spmd_string_free(picture);

  /* Every device's block, this process's and the others'. */
  for (int d = 0; d < expected_processes * expected_local; ++d) {
    spmd_shard_info info = SPMD_SHARD_INFO_INIT;
    assert_ok(spmd_sharding_shard_info_of_device(s, 2, shape, d, &info));
    assert_int_equal(info.device, d);
    assert_int_equal(info.start[0], 2 * (d / expected_local));
    assert_int_equal(info.stop[0], 2 * (d / expected_local) + 2);
    assert_int_equal(info.start[1], 3 * (d % expected_local));
    assert_int_equal(info.local_shape[1], 3);
  }
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
}

/* A mesh "x" of this process's own devices. */
static spmd_mesh *local_mesh(void) {
  int ids[16];
  for (int i = 0; i < expected_local; ++i) ids[i] = me * expected_local + i;
  const int64_t shape[1] = {expected_local};
  const char *names[1] = {"x"};
  spmd_mesh *mesh = NULL;
  assert_ok(spmd_mesh_create(rt, 1, shape, names, ids, &mesh));
  return mesh;
}

static spmd_status psum_over_x(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block in = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st == SPMD_OK) st = spmd_ctx_psum(ctx, &in, "x", &out);
  if (st == SPMD_OK) st = spmd_ctx_set_output(ctx, 0, &out);
  return st;
}

static void a_mesh_of_this_processs_devices_runs_everything(void **state) {
  (void)state;
  spmd_mesh *mesh = local_mesh();
  const int rows = 2 * expected_local;
  const int64_t shape[2] = {rows, 3};
  float data[32 * 3], out[32 * 3];
  /* Each process its own values. */
  for (int i = 0; i < rows * 3; ++i) data[i] = (float)(i + 100 * me);
  spmd_array *a = test_put(mesh, "x", SPMD_F32, 2, shape, data);
  for (size_t k = 0; k < (size_t)expected_local; ++k) {
    spmd_shard_info info = SPMD_SHARD_INFO_INIT;
    assert_ok(spmd_array_shard_info(a, k, &info));
    assert_int_equal(info.device, me * expected_local + (int)k);
  }
  assert_ok(spmd_array_to_host(a, out, (size_t)rows * 3 * sizeof(float)));
  assert_memory_equal(out, data, (size_t)rows * 3 * sizeof(float));

  /* A reshard to replicated and back to columns. */
  spmd_sharding *replicated = test_sharding(mesh, "");
  spmd_array *r = NULL;
  assert_ok(spmd_array_reshard(a, replicated, &r));
  memset(out, 0, sizeof out);
  assert_ok(spmd_array_to_host(r, out, (size_t)rows * 3 * sizeof(float)));
  assert_memory_equal(out, data, (size_t)rows * 3 * sizeof(float));

  /* Global ops: a + a, then its sum over rows (a collective over x). */
  spmd_array *twice = NULL, *sum = NULL;
  assert_ok(spmd_binary(SPMD_BINARY_ADD, a, a, NULL, &twice));
  const int64_t axis0 = 0;
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, twice, 1, &axis0, 0, NULL, &sum));
  float sums[3];
  assert_ok(spmd_array_to_host(sum, sums, sizeof sums));
  for (int j = 0; j < 3; ++j) {
    float want = 0;
    for (int i = 0; i < rows; ++i) want += 2 * data[i * 3 + j];
    assert_float_equal(sums[j], want, 1e-3);
  }

  /* shard_map with a psum over x. */
  const char *in_spec = "x", *out_spec = "";
  spmd_array *p = NULL;
  assert_ok(spmd_shard_map_text(mesh, psum_over_x, NULL, 1, &a, &in_spec, 1, &out_spec, NULL,
                                &p));
  float block_sums[2 * 3];
  assert_ok(spmd_array_to_host(p, block_sums, sizeof block_sums));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float want = 0;
      for (int k = 0; k < expected_local; ++k) want += data[(2 * k + i) * 3 + j];
      assert_float_equal(block_sums[i * 3 + j], want, 1e-3);
    }

  spmd_array_destroy(p);
  spmd_array_destroy(sum);
  spmd_array_destroy(twice);
  spmd_array_destroy(r);
  spmd_sharding_destroy(replicated);
  spmd_array_destroy(a);
  spmd_mesh_destroy(mesh);
}

/* A mesh of some processes' devices: those processes run the shard_map
 * (a psum across them); a process without a device of it is refused. */
static void a_mesh_of_some_processes_runs_in_them(void **state) {
  (void)state;
  if (expected_processes < 2) skip();
  /* The devices of processes 0 and 1. */
  int ids[32];
  for (int i = 0; i < 2 * expected_local; ++i) ids[i] = i;
  const int64_t shape[1] = {2 * expected_local};
  const char *names[1] = {"x"};
  spmd_mesh *mesh = NULL;
  assert_ok(spmd_mesh_create(rt, 1, shape, names, ids, &mesh));
  const int64_t n[1] = {4 * expected_local};
  float data[64], out[64];
  for (int i = 0; i < 4 * expected_local; ++i) data[i] = (float)i;
  spmd_array *a = test_put(mesh, "x", SPMD_F32, 1, n, data);
  const char *spec = "x";
  spmd_array *p = NULL;
  if (me >= 2) {
    assert_fails(spmd_shard_map_text(mesh, psum_over_x, NULL, 1, &a, &spec, 1, &spec, NULL, &p),
                 SPMD_ERR_UNSUPPORTED, "none of its devices belongs to this process");
  } else {
    assert_ok(spmd_shard_map_text(mesh, psum_over_x, NULL, 1, &a, &spec, 1, &spec, NULL, &p));
    /* This process's blocks: each the sum of every device's block. */
    float want[2] = {0, 0};
    for (int d = 0; d < 2 * expected_local; ++d)
      for (int i = 0; i < 2; ++i) want[i] += data[2 * d + i];
    for (int k = 0; k < expected_local; ++k) {
      const size_t shard = (size_t)(me * expected_local + k);
      assert_ok(spmd_array_shard_read(p, shard, out, 2 * sizeof(float)));
      assert_float_equal(out[0], want[0], 1e-3);
      assert_float_equal(out[1], want[1], 1e-3);
    }
    spmd_array_destroy(p);
  }
  spmd_array_destroy(a);
  spmd_mesh_destroy(mesh);

  /* Then a reshard from the devices of the last two processes onto every
   * process's: the processes that did not run the shard_map still agree
   * with the others on the messages' tags. */
  int tail_ids[32];
  const int first = (expected_processes - 2) * expected_local;
  for (int i = 0; i < 2 * expected_local; ++i) tail_ids[i] = first + i;
  spmd_mesh *tail = NULL, *all = global_mesh();
  assert_ok(spmd_mesh_create(rt, 1, shape, names, tail_ids, &tail));
  spmd_array *b = test_put(tail, "x", SPMD_F32, 1, n, data);
  spmd_sharding *everywhere = test_sharding(all, "(processes, local)");
  spmd_array *c = NULL;
  assert_ok(spmd_array_reshard(b, everywhere, &c));
  memset(out, 0, sizeof out);
  assert_ok(spmd_array_process_allgather(c, out, sizeof(float) * 4 * (size_t)expected_local));
  assert_memory_equal(out, data, sizeof(float) * 4 * (size_t)expected_local);
  spmd_array_destroy(c);
  spmd_sharding_destroy(everywhere);
  spmd_array_destroy(b);
  spmd_mesh_destroy(all);
  spmd_mesh_destroy(tail);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PROCESSES LOCAL_DEVICES (under mpirun)\n", argv[0]);
    return 2;
  }
  expected_processes = atoi(argv[1]);
  expected_local = atoi(argv[2]);
  if (expected_processes < 1 || expected_local < 1 || expected_local > 16) return 2;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(processes_and_devices_are_counted),
      cmocka_unit_test(every_device_says_where_it_is),
      cmocka_unit_test(devices_print_as_jax_prints_them),
      cmocka_unit_test(a_mesh_over_every_process_has_its_picture_and_shards),
      cmocka_unit_test(a_mesh_of_this_processs_devices_runs_everything),
      cmocka_unit_test(a_mesh_of_some_processes_runs_in_them),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
