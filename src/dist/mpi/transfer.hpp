// One non-blocking send or receive of host memory (dist/transport.hpp's
// Transfer) as an MPI request, waited for by polling.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "dist/transport.hpp"

namespace spmd::dist::mpi {

class MpiTransfer final : public Transfer {
 public:
  // Owns `request`, a send to or a receive from `process` (its index in
  // the runtime, for messages) of `bytes` with `tag`.
  MpiTransfer(MPI_Request request, bool is_receive, int process, size_t bytes, int tag);
  ~MpiTransfer() override;
  MpiTransfer(const MpiTransfer &) = delete;
  MpiTransfer &operator=(const MpiTransfer &) = delete;

  bool done() override;
  void wait(Deadline deadline) override;

 private:
  // A finished receive must have brought exactly the bytes asked for.
  void check_received(const MPI_Status &status) const;
  const char *direction() const { return is_receive_ ? "a receive from" : "a send to"; }

  MPI_Request request_;
  bool is_receive_;
  int process_;
  size_t bytes_;
  int tag_;
};

}  // namespace spmd::dist::mpi
