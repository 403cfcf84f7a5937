// The processes a runtime spans (docs/distributed.md): this one alone, or
// every process of an MPI communicator, each with the same number of local
// devices of the same platform. Global device ids are process-major:
// process * local_devices + local index, as jax.devices() orders them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "dist/transport.hpp"
#include "spmd/runtime.h"

namespace spmd {

// What a process told the others about its devices when the runtime was
// made: all of them alike, so one description per process.
struct ProcessDevices {
  spmd_platform platform = SPMD_PLATFORM_CPU;
  int local_devices = 0;
  std::string kind;
  int64_t memory_bytes = 0;
  int compute_capability = 0;
};

struct Processes {
  int index = 0;
  int count = 1;
  int local_devices = 0;
  // Each process's description, in process order.
  std::vector<ProcessDevices> described;
  // spmd_runtime_options.exact_reductions (or $SPMD_EXACT_REDUCTIONS),
  // the same in every process.
  bool exact_reductions = false;
  // How the processes reach each other; null for one process.
  std::shared_ptr<dist::Transport> transport;

  int process_of(int device) const { return device / local_devices; }
  int first_local_device() const { return index * local_devices; }
};

// Whether the options ask for several processes: options->distributed,
// else $SPMD_DISTRIBUTED. Throws INVALID_ARGUMENT for a value that is
// neither, or a communicator given to a runtime of one process.
bool distributed_from(const spmd_runtime_options &o);

// This process alone, holding every device of `local`.
Processes single_process(const Backend &local);

// The processes of the transport the options name (libspmd_mpi.so), each
// having described its devices of `local` to the others. Throws in every
// process alike when they differ in platform or local device count, naming
// each process's; UNSUPPORTED when the plugin is unavailable or refuses
// (not launched by mpirun, say); TIMEOUT when a process does not come
// within $SPMD_DISTRIBUTED_TIMEOUT seconds (300), naming it.
Processes join_processes(const spmd_runtime_options &o, const Backend &local);

}  // namespace spmd
