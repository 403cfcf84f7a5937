#include "dist/mpi/errors.hpp"

#include <mpi.h>

namespace spmd::dist::mpi {

namespace {

// The status closest to an MPI error class: the caller's mistakes, memory,
// and everything else (a peer gone, the network) as internal.
spmd_status status_of(int code) {
  int error_class = MPI_ERR_OTHER;
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS) return SPMD_ERR_INTERNAL;
  switch (error_class) {
    case MPI_ERR_NO_MEM:
      return SPMD_ERR_OUT_OF_MEMORY;
    case MPI_ERR_COMM:
    case MPI_ERR_ARG:
    case MPI_ERR_COUNT:
    case MPI_ERR_TAG:
    case MPI_ERR_RANK:
    case MPI_ERR_GROUP:
    case MPI_ERR_TRUNCATE:
      return SPMD_ERR_INVALID_ARGUMENT;
    case MPI_ERR_UNSUPPORTED_OPERATION:
      return SPMD_ERR_UNSUPPORTED;
    default:
      return SPMD_ERR_INTERNAL;
  }
}

}  // namespace

std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return cat("MPI error ", code);
  return std::string(text, static_cast<size_t>(length));
}

void check(int code, const char *call) {
  if (code != MPI_SUCCESS) fail(status_of(code), "MPI: ", call, " failed: ", error_string(code));
}

}  // namespace spmd::dist::mpi
