#include "dist/mpi/startup.hpp"

#include <mpi.h>

#include <cstdlib>
#include <mutex>

#include "base/error.hpp"
#include "dist/mpi/errors.hpp"

namespace spmd::dist::mpi {

namespace {

const char *thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "an unknown thread level";
  }
}

// The variables the launchers set for each process they start: OpenMPI's
// mpirun, PMIx launchers (OpenMPI 5, srun --mpi=pmix), and PMI ones
// (MPICH's Hydra, srun --mpi=pmi2).
const char *launcher_variable() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (const char *v = std::getenv(name); v != nullptr && *v != '\0') return name;
  return nullptr;
}

void finish_at_exit() {
  int finished = 0;
  if (MPI_Finalized(&finished) == MPI_SUCCESS && !finished) MPI_Finalize();
}

}  // namespace

void start_mpi() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (mpi_finished())
    fail(SPMD_ERR_UNSUPPORTED,
         "MPI has already been finalised in this process (MPI_Finalize): create distributed "
         "runtimes before it");
  int started = 0;
  check(MPI_Initialized(&started), "MPI_Initialized");
  int level = MPI_THREAD_SINGLE;
  if (started) {
    check(MPI_Query_thread(&level), "MPI_Query_thread");
    if (level < MPI_THREAD_MULTIPLE)
      fail(SPMD_ERR_UNSUPPORTED, "the program initialised MPI with ", thread_level_name(level),
           ", but libspmd calls MPI from several threads: initialise it with "
           "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)");
    return;
  }
  if (launcher_variable() == nullptr)
    fail(SPMD_ERR_UNSUPPORTED,
         "this process was not started by mpirun or srun (none of OMPI_COMM_WORLD_SIZE, "
         "PMIX_RANK, PMI_RANK, PMI_SIZE is set): run it as `mpirun -np N program`, or leave "
         "SPMD_DISTRIBUTED unset for one process");
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &level), "MPI_Init_thread");
  std::atexit(finish_at_exit);
  // Failures on the communicators MPI made come back as codes.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  if (level < MPI_THREAD_MULTIPLE)
    fail(SPMD_ERR_UNSUPPORTED, "MPI_Init_thread gave ", thread_level_name(level),
         " where libspmd asked for MPI_THREAD_MULTIPLE (it calls MPI from several threads): "
         "use an MPI built with thread support");
}

bool mpi_finished() {
  int finished = 0;
  return MPI_Finalized(&finished) != MPI_SUCCESS || finished != 0;
}

}  // namespace spmd::dist::mpi
