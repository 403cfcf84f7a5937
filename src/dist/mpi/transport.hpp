// The transport over MPI (dist/transport.hpp): every process of the
// caller's communicator, or of MPI_COMM_WORLD, and the groups made of them.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "dist/mpi/communicator.hpp"
#include "dist/plugin.hpp"

namespace spmd::dist::mpi {

class MpiTransport final : public Transport {
 public:
  // Starts MPI where the program has not (dist/mpi/startup.hpp) and makes
  // the transport's own copies of the communicator `config` names, with
  // every process of it, by `config.deadline`.
  static std::unique_ptr<MpiTransport> create(const TransportConfig &config);

  explicit MpiTransport(std::unique_ptr<MpiCommunicator> everyone);
  // Groups go before the communicator they were made from.
  ~MpiTransport() override;

  int rank() const override { return everyone_->rank(); }
  int size() const override { return everyone_->size(); }
  void barrier(Deadline deadline) override { everyone_->barrier(deadline); }
  std::vector<std::byte> all_gather(std::span<const std::byte> mine,
                                    Deadline deadline) override {
    return everyone_->all_gather(mine, deadline);
  }
  std::unique_ptr<Transfer> send(const void *data, size_t bytes, int to, int tag) override {
    return everyone_->send(data, bytes, to, tag);
  }
  std::unique_ptr<Transfer> receive(void *data, size_t bytes, int from, int tag) override {
    return everyone_->receive(data, bytes, from, tag);
  }
  int max_tag() const override { return everyone_->max_tag(); }
  Communicator &group(const std::vector<int> &members, Deadline deadline) override;

 private:
  std::unique_ptr<MpiCommunicator> everyone_;
  std::mutex groups_mu_;
  std::map<std::vector<int>, std::unique_ptr<MpiCommunicator>> groups_;
};

}  // namespace spmd::dist::mpi
