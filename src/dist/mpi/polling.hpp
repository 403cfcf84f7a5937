// Waiting for MPI requests without ever blocking inside MPI: each is tested
// (MPI_Test) until it finishes or the deadline passes, so no wait outlives
// its deadline, whatever the other processes do.
#pragma once

#include <mpi.h>

#include <span>

#include "dist/transport.hpp"

namespace spmd::dist::mpi {

// Tests `requests` until all have finished or `deadline` has passed;
// returns whether all finished. A finished request becomes
// MPI_REQUEST_NULL and its status is in statuses[i]; the others stay in
// flight. Throws the first failure, naming `call`.
bool poll_until(std::span<MPI_Request> requests, std::span<MPI_Status> statuses,
                Deadline deadline, const char *call);

// Lets go of requests that will not be waited for: receives are cancelled
// and completed (their buffers are free afterwards), sends are released to
// finish on their own (their buffers must outlive them). Never throws.
void abandon(std::span<MPI_Request> receives, std::span<MPI_Request> sends) noexcept;

}  // namespace spmd::dist::mpi
