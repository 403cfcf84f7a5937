// MPI's life in a process that libspmd joins: started here only when the
// program has not started it, finished here only if started here.
//
// Finishing happens at process exit (atexit), not when the last transport
// goes: MPI cannot be started again once finished, so a program that
// destroys its distributed runtime and makes another would otherwise find
// MPI gone; JAX keeps its distributed client until exit too. What the
// program started, the program finishes.
#pragma once

namespace spmd::dist::mpi {

// Makes sure MPI runs with MPI_THREAD_MULTIPLE (runtimes call it from any
// thread). Starts it (MPI_Init_thread) when the program has not, which
// only a process launched by mpirun or srun may do: a plain run would
// become a job of one process, which is never what SPMD_DISTRIBUTED=mpi
// asks for. Throws UNSUPPORTED otherwise, saying why: not launched by an
// MPI launcher, MPI already finished, or a thread level below
// MPI_THREAD_MULTIPLE (naming the level MPI gave).
void start_mpi();

// Whether MPI can no longer be called (finished by the program or at exit):
// what MPI objects are left must then be dropped without calls.
bool mpi_finished();

}  // namespace spmd::dist::mpi
