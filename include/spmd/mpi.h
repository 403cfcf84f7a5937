/**
 * @file
 * libspmd over an MPI communicator the program chose: for programs that use
 * MPI themselves or want a runtime over a sub-communicator
 * (docs/distributed.md). Not included by spmd/spmd.h, since it includes
 * <mpi.h>: build with the MPI that the plugin libspmd_mpi.so was built
 * against (mpicc, or its include path). Programs that leave MPI to libspmd
 * need none of this: SPMD_DISTRIBUTED=mpi, or SPMD_DISTRIBUTED_MPI in
 * spmd_runtime_options, runs them over MPI_COMM_WORLD.
 */
#ifndef SPMD_MPI_H
#define SPMD_MPI_H

#include <mpi.h>
#include <string.h>

#include "spmd/runtime.h"

/**
 * Creates a runtime over the processes of `comm`, each process's index
 * being its rank there: spmd_runtime_create with a copy of `options` whose
 * distributed is SPMD_DISTRIBUTED_MPI and whose mpi_comm is comm's
 * Fortran handle (MPI_Comm_c2f, an integer, so libspmd's own functions name
 * no MPI type and are the same in every build).
 *
 * Every process of `comm` must call it. MPI must have been initialised
 * with MPI_THREAD_MULTIPLE; libspmd works on its own copies of `comm` and
 * never finalises MPI the program initialised. The caller keeps `comm`.
 *
 * @param options The options; NULL takes all defaults.
 * @param comm The processes of the runtime, an intracommunicator.
 * @param out Receives the new runtime; not NULL. Left untouched on failure.
 * @return As spmd_runtime_create; SPMD_ERR_INVALID_ARGUMENT also for
 *         MPI_COMM_NULL or an intercommunicator.
 */
static inline spmd_status spmd_runtime_create_mpi(const spmd_runtime_options *options,
                                                  MPI_Comm comm, spmd_runtime **out) {
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  if (options != NULL) {
    /* A struct_size no struct has: spmd_runtime_create names the mistake. */
    if (options->struct_size < sizeof(size_t) || options->struct_size > 1024)
      return spmd_runtime_create(options, out);
    memcpy(&o, options, options->struct_size < sizeof o ? options->struct_size : sizeof o);
    o.struct_size = sizeof o;
  }
  o.distributed = SPMD_DISTRIBUTED_MPI;
  o.mpi_comm_given = 1;
  o.mpi_comm = (int)MPI_Comm_c2f(comm);
  return spmd_runtime_create(&o, out);
}

#endif /* SPMD_MPI_H */
