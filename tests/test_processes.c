/* The processes of a runtime, seen from one process: a runtime that is not
 * distributed is process 0 of 1 holding every device, the options and
 * $SPMD_DISTRIBUTED that ask for several processes are checked by name, and
 * asking for MPI outside mpirun is refused with the reason; the ways in and
 * out of arrays across processes work on one. The runs under mpirun are
 * tests/mpi/. */
#include "spmd_test.h"

#include <stdlib.h>

/* No launcher seems to have started this process. */
static void forget_launcher(void) {
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMIX_RANK");
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
}

static void one_process_holds_every_device(void **state) {
  (void)state;
  unsetenv("SPMD_DISTRIBUTED");
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.cpu_device_count = 6;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  int index = -1, count = -1, local = -1, devices = -1;
  assert_ok(spmd_runtime_process_index(rt, &index));
  assert_ok(spmd_runtime_process_count(rt, &count));
  assert_ok(spmd_runtime_local_device_count(rt, &local));
  assert_ok(spmd_runtime_device_count(rt, &devices));
  assert_int_equal(index, 0);
  assert_int_equal(count, 1);
  /* The cpu_device_count option counts the cpu platform's devices; on
   * another platform (SPMD_PLATFORM=cuda) the process holds its own. */
  spmd_platform platform = SPMD_PLATFORM_DEFAULT;
  assert_ok(spmd_runtime_platform(rt, &platform));
  if (platform == SPMD_PLATFORM_CPU) assert_int_equal(devices, 6);
  assert_true(devices >= 1);
  assert_int_equal(local, devices);
  for (int d = 0; d < devices; ++d) {
    spmd_device_info info = SPMD_DEVICE_INFO_INIT;
    assert_ok(spmd_runtime_device_info(rt, d, &info));
    assert_int_equal(info.process_index, 0);
    assert_int_equal(info.local_index, d);
  }
  spmd_runtime_destroy(rt);
}

static void none_by_option_or_environment_is_one_process(void **state) {
  (void)state;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.cpu_device_count = 2;
  o.distributed = SPMD_DISTRIBUTED_NONE;
  /* The option wins over the environment. */
  setenv("SPMD_DISTRIBUTED", "mpi", 1);
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(&o, &rt));
  int count = 0;
  assert_ok(spmd_runtime_process_count(rt, &count));
  assert_int_equal(count, 1);
  spmd_runtime_destroy(rt);

  o.distributed = SPMD_DISTRIBUTED_DEFAULT;
  const char *one_process[] = {"none", ""};
  for (size_t i = 0; i < 2; ++i) {
    setenv("SPMD_DISTRIBUTED", one_process[i], 1);
    rt = NULL;
    assert_ok(spmd_runtime_create(&o, &rt));
    assert_ok(spmd_runtime_process_count(rt, &count));
    assert_int_equal(count, 1);
    spmd_runtime_destroy(rt);
  }
  unsetenv("SPMD_DISTRIBUTED");
}

static void bad_values_are_refused_by_name(void **state) {
  (void)state;
  unsetenv("SPMD_DISTRIBUTED");
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  spmd_runtime *rt = NULL;
  o.distributed = (spmd_distributed)7;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->distributed: 7 is not a spmd_distributed");
  o.distributed = (spmd_distributed)-1;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->distributed: -1");

  o.distributed = SPMD_DISTRIBUTED_DEFAULT;
  setenv("SPMD_DISTRIBUTED", "MPI ", 1);
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "SPMD_DISTRIBUTED='MPI ': expected 'mpi' or 'none'");
  unsetenv("SPMD_DISTRIBUTED");

  /* A communicator only means something to a runtime over MPI. */
  o.mpi_comm_given = 1;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->mpi_comm_given");
  o.distributed = SPMD_DISTRIBUTED_NONE;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "options->mpi_comm_given");

  /* The processes' meeting time, read before they meet. */
  o.mpi_comm_given = 0;
  o.distributed = SPMD_DISTRIBUTED_MPI;
  setenv("SPMD_DISTRIBUTED_TIMEOUT", "soon", 1);
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "SPMD_DISTRIBUTED_TIMEOUT='soon': expected seconds");
  setenv("SPMD_DISTRIBUTED_TIMEOUT", "0", 1);
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "SPMD_DISTRIBUTED_TIMEOUT='0'");
  unsetenv("SPMD_DISTRIBUTED_TIMEOUT");
  assert_null(rt);
}

/* Outside mpirun, MPI is refused: where the plugin was built, because no
 * launcher started the process (no singleton job of one process); where it
 * was not, because it is missing. Either way the message says MPI. */
static void mpi_outside_a_launcher_is_refused(void **state) {
  (void)state;
  forget_launcher();
  spmd_runtime *rt = NULL;
  setenv("SPMD_DISTRIBUTED", "mpi", 1);
  spmd_clear_error();
  assert_int_equal(spmd_runtime_create(NULL, &rt), SPMD_ERR_UNSUPPORTED);
  const char *why = spmd_last_error();
  if (strstr(why, "not started by mpirun or srun") == NULL &&
      strstr(why, "MPI is unavailable: its plugin libspmd_mpi.so could not be loaded") == NULL)
    fail_msg("unexpected reason: %s", why);
  assert_non_null(strstr(why, "distributed over MPI"));
  assert_null(rt);

  unsetenv("SPMD_DISTRIBUTED");
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.distributed = SPMD_DISTRIBUTED_MPI;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_UNSUPPORTED, "distributed over MPI");
  assert_null(rt);
}

static void queries_check_their_arguments(void **state) {
  (void)state;
  spmd_runtime *rt = NULL;
  assert_ok(spmd_runtime_create(NULL, &rt));
  int n = 0;
  assert_fails(spmd_runtime_process_index(NULL, &n), SPMD_ERR_INVALID_ARGUMENT, "runtime");
  assert_fails(spmd_runtime_process_count(rt, NULL), SPMD_ERR_INVALID_ARGUMENT, "out");
  assert_fails(spmd_runtime_local_device_count(NULL, &n), SPMD_ERR_INVALID_ARGUMENT,
               "runtime");
  spmd_runtime_destroy(rt);
  assert_fails(spmd_runtime_local_device_count(rt, &n), SPMD_ERR_INVALID_ARGUMENT,
               "not a live spmd_runtime");
}

/* The ways in and out of arrays across processes, in one process: the
 * process's part is the whole array, gathering is reading. */
static void one_process_holds_every_block(void **state) {
  (void)state;
  unsetenv("SPMD_DISTRIBUTED");
  spmd_runtime *rt = test_runtime(8);
  const int64_t mesh_shape[2] = {2, 4};
  spmd_mesh *mesh = test_mesh(rt, 2, mesh_shape);
  spmd_sharding *s = test_sharding(mesh, "x, y");
  const int64_t shape[2] = {4, 8};
  float v[32], out[32];
  for (int i = 0; i < 32; ++i) v[i] = (float)i * 0.5f - 3.0f;

  int64_t part[2] = {0, 0};
  assert_ok(spmd_array_process_local_shape(s, 2, shape, part));
  assert_int_equal(part[0], 4);
  assert_int_equal(part[1], 8);
  spmd_array *a = NULL;
  assert_ok(spmd_array_from_process_local_data(s, SPMD_F32, 2, shape, v, sizeof v, &a));
  int full = 0;
  assert_ok(spmd_array_is_fully_addressable(a, &full));
  assert_int_equal(full, 1);
  assert_ok(spmd_array_process_allgather(a, out, sizeof out));
  assert_memory_equal(out, v, sizeof v);
  memset(out, 0, sizeof out);
  assert_ok(spmd_array_to_host(a, out, sizeof out));
  assert_memory_equal(out, v, sizeof v);

  /* Bad arguments, by name. */
  spmd_array *b = NULL;
  assert_fails(spmd_array_from_process_local_data(s, SPMD_F32, 2, shape, v, 4, &b),
               SPMD_ERR_INVALID_ARGUMENT, "nbytes: 4 bytes given, this process's part");
  assert_fails(spmd_array_from_process_local_data(s, SPMD_F32, 2, shape, NULL, sizeof v, &b),
               SPMD_ERR_INVALID_ARGUMENT, "data: NULL");
  assert_fails(spmd_array_from_process_local_data(NULL, SPMD_F32, 2, shape, v, sizeof v, &b),
               SPMD_ERR_INVALID_ARGUMENT, "sharding");
  assert_fails(spmd_array_from_process_local_data(s, SPMD_F32, 2, shape, v, sizeof v, NULL),
               SPMD_ERR_INVALID_ARGUMENT, "out");
  assert_null(b);
  assert_fails(spmd_array_process_local_shape(s, 2, shape, NULL), SPMD_ERR_INVALID_ARGUMENT,
               "out");
  const int64_t bad[1] = {-1};
  assert_fails(spmd_array_process_local_shape(s, 1, bad, part), SPMD_ERR_INVALID_ARGUMENT,
               "shape");
  assert_fails(spmd_array_process_allgather(a, out, 4), SPMD_ERR_INVALID_ARGUMENT, "nbytes");
  assert_fails(spmd_array_process_allgather(NULL, out, sizeof out), SPMD_ERR_INVALID_ARGUMENT,
               "array");
  assert_fails(spmd_array_is_fully_addressable(a, NULL), SPMD_ERR_INVALID_ARGUMENT, "out");

  spmd_array_destroy(a);

  /* One array per device (jax.make_array_from_single_device_arrays): each
   * device's block of v, put on that device alone. */
  spmd_array *blocks[8] = {0};
  for (int d = 0; d < 8; ++d) {
    spmd_shard_info info = SPMD_SHARD_INFO_INIT;
    assert_ok(spmd_sharding_shard_info_of_device(s, 2, shape, d, &info));
    float block[4];
    int k = 0;
    for (int64_t r = info.start[0]; r < info.stop[0]; ++r)
      for (int64_t c = info.start[1]; c < info.stop[1]; ++c) block[k++] = v[r * 8 + c];
    spmd_sharding *one = NULL;
    assert_ok(spmd_sharding_single_device(rt, d, &one));
    /* Backwards, to show the order does not matter. */
    assert_ok(spmd_array_from_host(one, SPMD_F32, 2, info.local_shape, block, sizeof block,
                                   &blocks[7 - d]));
    spmd_sharding_destroy(one);
  }
  const spmd_array *const *given = (const spmd_array *const *)blocks;
  assert_ok(spmd_array_from_single_device_arrays(s, SPMD_F32, 2, shape, 8, given, &a));
  memset(out, 0, sizeof out);
  assert_ok(spmd_array_to_host(a, out, sizeof out));
  assert_memory_equal(out, v, sizeof v);
  spmd_array_destroy(a);
  a = NULL;
  assert_fails(spmd_array_from_single_device_arrays(s, SPMD_F32, 2, shape, 7, given, &a),
               SPMD_ERR_INVALID_ARGUMENT, "count: 7 arrays given, but the mesh has 8 devices");
  const spmd_array *twice[8];
  memcpy(twice, blocks, sizeof twice);
  twice[1] = blocks[0];
  assert_fails(spmd_array_from_single_device_arrays(s, SPMD_F32, 2, shape, 8, twice, &a),
               SPMD_ERR_INVALID_ARGUMENT, "arrays[1]: a second array on device 7");
  assert_fails(spmd_array_from_single_device_arrays(s, SPMD_I32, 2, shape, 8, given, &a),
               SPMD_ERR_INVALID_ARGUMENT, "arrays[0]: float32(2, 2) but device 7's block is int32(2, 2)");
  spmd_array *spread = test_put(mesh, "x", SPMD_F32, 2, shape, v);
  twice[1] = spread;
  assert_fails(spmd_array_from_single_device_arrays(s, SPMD_F32, 2, shape, 8, twice, &a),
               SPMD_ERR_INVALID_ARGUMENT, "arrays[1]: spread over 8 devices");
  twice[1] = NULL;
  assert_fails(spmd_array_from_single_device_arrays(s, SPMD_F32, 2, shape, 8, twice, &a),
               SPMD_ERR_INVALID_ARGUMENT, "arrays[1]");
  assert_fails(spmd_array_from_single_device_arrays(s, SPMD_F32, 2, shape, 8, NULL, &a),
               SPMD_ERR_INVALID_ARGUMENT, "arrays: NULL");
  assert_null(a);
  spmd_array_destroy(spread);
  for (int d = 0; d < 8; ++d) spmd_array_destroy(blocks[d]);

  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(one_process_holds_every_device),
      cmocka_unit_test(none_by_option_or_environment_is_one_process),
      cmocka_unit_test(bad_values_are_refused_by_name),
      cmocka_unit_test(mpi_outside_a_launcher_is_refused),
      cmocka_unit_test(queries_check_their_arguments),
      cmocka_unit_test(one_process_holds_every_block),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
