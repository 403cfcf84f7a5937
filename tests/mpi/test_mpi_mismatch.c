/* Processes that disagree are refused in every process, naming each one's
 * count or platform:
 *
 *   mpirun -np 2 test_mpi_mismatch 4 cpu EXPECTED : -np 1 test_mpi_mismatch 2 cpu EXPECTED
 *
 * Each process asks for its own local device count and platform, and every
 * one of them must fail with the EXPECTED words. */
#include "spmd_test.h"

#include <stdlib.h>

static int local_devices;
static spmd_platform platform;
static const char *expected;

static void disagreeing_processes_all_fail_naming_each(void **state) {
  (void)state;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.distributed = SPMD_DISTRIBUTED_MPI;
  o.cpu_device_count = local_devices;
  o.platform = platform;
  spmd_runtime *rt = NULL;
  assert_fails(spmd_runtime_create(&o, &rt), SPMD_ERR_INVALID_ARGUMENT, expected);
  assert_null(rt);
  /* The failure leaves nothing behind: a runtime of the same processes
   * that agree is made next. */
  o.cpu_device_count = 2;
  o.platform = SPMD_PLATFORM_CPU;
  assert_ok(spmd_runtime_create(&o, &rt));
  int local = 0;
  assert_ok(spmd_runtime_local_device_count(rt, &local));
  assert_int_equal(local, 2);
  spmd_runtime_destroy(rt);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s LOCAL_DEVICES cpu|sim EXPECTED (under mpirun)\n", argv[0]);
    return 2;
  }
  local_devices = atoi(argv[1]);
  platform = strcmp(argv[2], "sim") == 0 ? SPMD_PLATFORM_SIM : SPMD_PLATFORM_CPU;
  expected = argv[3];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(disagreeing_processes_all_fail_naming_each),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
