// A group of processes over MPI (dist/transport.hpp's Communicator): two
// MPI communicators over the same processes, one for the collective calls
// (barrier, all-gather, making groups) and one for transfers, so that the
// tags a runtime gives its transfers never meet the collectives' messages.
//
// The barrier and the all-gather are built from point-to-point messages
// (each member sends to and receives from every other) rather than from
// MPI_Ibarrier and MPI_Iallgather: when the deadline passes, the receives
// still open say exactly which processes did not arrive.
#pragma once

#include <mpi.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dist/transport.hpp"

namespace spmd::dist::mpi {

class MpiCommunicator final : public Communicator {
 public:
  // Owns `control` and `data`; processes[r] is the process index of rank r
  // (how messages name it).
  MpiCommunicator(MPI_Comm control, MPI_Comm data, std::vector<int> processes);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator &) = delete;
  MpiCommunicator &operator=(const MpiCommunicator &) = delete;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(processes_.size()); }
  void barrier(Deadline deadline) override;
  std::vector<std::byte> all_gather(std::span<const std::byte> mine, Deadline deadline) override;
  std::unique_ptr<Transfer> send(const void *data, size_t bytes, int to, int tag) override;
  std::unique_ptr<Transfer> receive(void *data, size_t bytes, int from, int tag) override;
  int max_tag() const override { return max_tag_; }

  // The communicator of `members` (ranks here, ascending, this rank among
  // them), made with them: they meet first (an exchange against the
  // deadline that names who does not come), then MPI makes it.
  std::unique_ptr<MpiCommunicator> make_group(const std::vector<int> &members,
                                              Deadline deadline);

 private:
  // Every member's `mine` (members: ranks, ascending, this rank among
  // them), under mu_. `what` names the call in messages.
  std::vector<std::byte> exchange(std::span<const std::byte> mine,
                                  const std::vector<int> &members, int tag, Deadline deadline,
                                  const std::string &what);
  // Throws when an earlier exchange left the communicator unusable.
  void check_usable(const std::string &what) const;
  void check_member(const char *what, int rank) const;
  std::vector<int> all_ranks() const;

  MPI_Comm control_;
  MPI_Comm data_;
  int rank_ = 0;
  std::vector<int> processes_;
  int max_tag_ = 32767;  // the least MPI promises
  std::mutex mu_;
  std::string unusable_;  // why, once an exchange has failed
};

// "process 2", "processes 1 and 3", "processes 0, 1 and 3".
std::string name_processes(const std::vector<int> &processes);

}  // namespace spmd::dist::mpi
