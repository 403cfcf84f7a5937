/* A program that initialises MPI itself keeps it: libspmd makes runtimes
 * over the program's communicators (spmd/mpi.h), works on its own copies of
 * them, and never finalises what the program started.
 *
 *   mpirun -np P test_mpi_own_init            MPI_THREAD_MULTIPLE
 *   mpirun -np P test_mpi_own_init serialized a lower thread level, refused
 */
#include "spmd_test.h"

#include <stdlib.h>

#include "spmd/mpi.h"

static int world_rank, world_size;

static void runtimes_over_the_programs_communicators(void **state) {
  (void)state;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.cpu_device_count = 2;
  spmd_runtime *world = NULL;
  assert_ok(spmd_runtime_create_mpi(&o, MPI_COMM_WORLD, &world));
  int index = -1, count = -1, devices = -1;
  assert_ok(spmd_runtime_process_index(world, &index));
  assert_ok(spmd_runtime_process_count(world, &count));
  assert_ok(spmd_runtime_device_count(world, &devices));
  assert_int_equal(index, world_rank);
  assert_int_equal(count, world_size);
  assert_int_equal(devices, 2 * world_size);

  /* Halves of the world, by parity: each process's index is its rank in
   * its half, and the runtime counts only its half's devices. */
  MPI_Comm half = MPI_COMM_NULL;
  assert_int_equal(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half),
                   MPI_SUCCESS);
  int half_rank = 0, half_size = 0;
  MPI_Comm_rank(half, &half_rank);
  MPI_Comm_size(half, &half_size);
  spmd_runtime *part = NULL;
  o.cpu_device_count = 3;
  assert_ok(spmd_runtime_create_mpi(&o, half, &part));
  assert_ok(spmd_runtime_process_index(part, &index));
  assert_ok(spmd_runtime_process_count(part, &count));
  assert_ok(spmd_runtime_device_count(part, &devices));
  assert_int_equal(index, half_rank);
  assert_int_equal(count, half_size);
  assert_int_equal(devices, 3 * half_size);

  /* NULL options take the defaults (8 devices per process). */
  spmd_runtime *defaults = NULL;
  assert_ok(spmd_runtime_create_mpi(NULL, half, &defaults));
  assert_ok(spmd_runtime_device_count(defaults, &devices));
  assert_int_equal(devices, 8 * half_size);
  spmd_runtime_destroy(defaults);

  spmd_runtime_destroy(part);
  spmd_runtime_destroy(world);
  /* The program's communicators still work, untouched by libspmd's
   * messages. */
  int sum = 0, one = 1;
  assert_int_equal(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, half), MPI_SUCCESS);
  assert_int_equal(sum, half_size);
  MPI_Comm_free(&half);
}

static void no_communicator_is_refused(void **state) {
  (void)state;
  spmd_runtime *rt = NULL;
  assert_fails(spmd_runtime_create_mpi(NULL, MPI_COMM_NULL, &rt), SPMD_ERR_INVALID_ARGUMENT,
               "is no communicator");
  assert_null(rt);
}

static void mpi_is_not_finalised_by_libspmd(void **state) {
  (void)state;
  int finished = 1;
  MPI_Finalized(&finished);
  assert_false(finished);
  int sum = 0, one = 1;
  assert_int_equal(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  assert_int_equal(sum, world_size);
}

static void a_lower_thread_level_is_refused_naming_it(void **state) {
  (void)state;
  spmd_runtime *rt = NULL;
  assert_fails(spmd_runtime_create_mpi(NULL, MPI_COMM_WORLD, &rt), SPMD_ERR_UNSUPPORTED,
               "the program initialised MPI with MPI_THREAD_SERIALIZED");
  assert_null(rt);
}

int main(int argc, char **argv) {
  const int serialized = argc > 1 && strcmp(argv[1], "serialized") == 0;
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, serialized ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE,
                      &provided) != MPI_SUCCESS)
    return 2;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  int failed;
  if (serialized) {
    if (provided != MPI_THREAD_SERIALIZED) {
      fprintf(stderr, "MPI gave thread level %d, not MPI_THREAD_SERIALIZED\n", provided);
      MPI_Finalize();
      return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_lower_thread_level_is_refused_naming_it),
        cmocka_unit_test(mpi_is_not_finalised_by_libspmd),
    };
    failed = cmocka_run_group_tests(tests, NULL, NULL);
  } else {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runtimes_over_the_programs_communicators),
        cmocka_unit_test(no_communicator_is_refused),
        cmocka_unit_test(mpi_is_not_finalised_by_libspmd),
    };
    failed = cmocka_run_group_tests(tests, NULL, NULL);
  }
  /* Finalising is the program's: it fails if libspmd had done it. */
  if (MPI_Finalize() != MPI_SUCCESS) {
    fprintf(stderr, "MPI_Finalize failed: was MPI finalised behind the program's back?\n");
    return 1;
  }
  return failed;
}
