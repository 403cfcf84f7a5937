#include "dist/mpi/transfer.hpp"

#include "base/error.hpp"
#include "dist/mpi/errors.hpp"
#include "dist/mpi/polling.hpp"

namespace spmd::dist::mpi {

MpiTransfer::MpiTransfer(MPI_Request request, bool is_receive, int process, size_t bytes, int tag)
    : request_(request), is_receive_(is_receive), process_(process), bytes_(bytes), tag_(tag) {}

MpiTransfer::~MpiTransfer() {
  if (request_ == MPI_REQUEST_NULL) return;
  if (is_receive_)
    abandon({&request_, 1}, {});
  else
    abandon({}, {&request_, 1});
}

bool MpiTransfer::done() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int finished = 0;
  MPI_Status status;
  check(MPI_Test(&request_, &finished, &status),
        is_receive_ ? "MPI_Test (receive)" : "MPI_Test (send)");
  if (finished && is_receive_) check_received(status);
  return finished != 0;
}

void MpiTransfer::wait(Deadline deadline) {
  if (request_ == MPI_REQUEST_NULL) return;
  const Deadline start = Clock::now();
  MPI_Status status;
  if (!poll_until({&request_, 1}, {&status, 1}, deadline,
                  is_receive_ ? "MPI_Test (receive)" : "MPI_Test (send)")) {
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    fail(SPMD_ERR_TIMEOUT, direction(), " process ", process_, " (", bytes_, " bytes, tag ", tag_,
         ") did not finish before the deadline (waited ", waited, " ms)");
  }
  if (is_receive_) check_received(status);
}

void MpiTransfer::check_received(const MPI_Status &status) const {
  int count = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  if (static_cast<size_t>(count) != bytes_)
    invalid("a receive from process ", process_, " (tag ", tag_, ") expected ", bytes_,
            " bytes, but process ", process_, " sent ", count);
}

}  // namespace spmd::dist::mpi
