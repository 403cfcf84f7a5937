#include "dist/mpi/polling.hpp"

#include <algorithm>
#include <thread>

#include "dist/mpi/errors.hpp"
#include "dist/mpi/startup.hpp"

namespace spmd::dist::mpi {

namespace {

// Between two rounds of tests: at first only a yield, as most exchanges
// finish within microseconds; then sleeps growing to a millisecond, so
// that a process waiting for a late peer leaves the cores to the others
// (several processes often share a machine's cores).
void pause(int round) {
  constexpr int kYieldRounds = 64;
  if (round < kYieldRounds) {
    std::this_thread::yield();
    return;
  }
  const int doublings = std::min((round - kYieldRounds) / 16, 5);
  std::this_thread::sleep_for(std::chrono::microseconds(32 << doublings));
}

}  // namespace

bool poll_until(std::span<MPI_Request> requests, std::span<MPI_Status> statuses,
                Deadline deadline, const char *call) {
  for (int round = 0;; ++round) {
    bool all = true;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      int finished = 0;
      check(MPI_Test(&requests[i], &finished, &statuses[i]), call);
      if (!finished) all = false;
    }
    if (all) return true;
    if (Clock::now() >= deadline) return false;
    pause(round);
  }
}

void abandon(std::span<MPI_Request> receives, std::span<MPI_Request> sends) noexcept {
  if (mpi_finished()) return;
  for (MPI_Request &r : receives) {
    if (r == MPI_REQUEST_NULL) continue;
    // A receive not yet matched is cancelled at once; one already matched
    // finishes its copy, so the wait is short either way.
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  for (MPI_Request &r : sends)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

}  // namespace spmd::dist::mpi
