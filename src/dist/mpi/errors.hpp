// MPI's failures as spmd::Error, with MPI's own error string. Every
// communicator the plugin uses has MPI_ERRORS_RETURN, so failures come back
// as codes instead of ending the process.
#pragma once

#include <string>

#include "base/error.hpp"

namespace spmd::dist::mpi {

// MPI's string for an error code ("MPI_ERR_RANK: invalid rank").
std::string error_string(int code);

// Throws unless `code` is MPI_SUCCESS, naming the MPI function `call`.
void check(int code, const char *call);

}  // namespace spmd::dist::mpi
