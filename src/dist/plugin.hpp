// What a transport that lives in a plugin (libspmd_mpi.so) is asked to
// make: a Transport (dist/transport.hpp), through the entry point every
// plugin exports (base/plugin.hpp), with PluginKind::Transport and this
// configuration.
#pragma once

#include <cstddef>

#include "base/plugin.hpp"
#include "dist/transport.hpp"

namespace spmd::dist {

// What the runtime's options ask of the transport.
struct TransportConfig {
  size_t struct_size = sizeof(TransportConfig);
  // Whether `comm` names the processes (an MPI communicator's Fortran
  // handle, MPI_Comm_c2f); otherwise every process of the launch
  // (MPI_COMM_WORLD).
  bool comm_given = false;
  int comm = 0;
  // By when every process must have come to make the transport.
  Deadline deadline;
};

}  // namespace spmd::dist
