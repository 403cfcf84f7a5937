/* SPMD_DISTRIBUTED=mpi in a process no launcher started is refused with the
 * reason, before MPI is initialised: a plain run would otherwise become a
 * job of one process (an MPI singleton), which is never what was asked. */
#include "spmd_test.h"

#include <mpi.h>
#include <stdlib.h>

static void mpi_outside_mpirun_is_refused_before_mpi_starts(void **state) {
  (void)state;
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMIX_RANK");
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
  setenv("SPMD_DISTRIBUTED", "mpi", 1);
  spmd_runtime *rt = NULL;
  assert_fails(spmd_runtime_create(NULL, &rt), SPMD_ERR_UNSUPPORTED,
               "spmd_runtime_create: distributed over MPI: this process was not started by "
               "mpirun or srun");
  assert_fails(spmd_runtime_create(NULL, &rt), SPMD_ERR_UNSUPPORTED, "mpirun -np N");
  assert_null(rt);
  int started = 1;
  MPI_Initialized(&started);
  assert_false(started);
  /* One process is still what the same program gets without it. */
  setenv("SPMD_DISTRIBUTED", "none", 1);
  assert_ok(spmd_runtime_create(NULL, &rt));
  spmd_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mpi_outside_mpirun_is_refused_before_mpi_starts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
