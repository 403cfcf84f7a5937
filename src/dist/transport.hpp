// What a runtime over several processes needs from the library that joins
// them (docs/distributed.md): ranks, a barrier and a small all-gather for
// checks, a communicator per group of processes, and non-blocking transfers
// of host memory. MPI implements it in a plugin (dist/mpi/,
// libspmd_mpi.so); no MPI type appears here, so libspmd itself never sees
// one.
//
// Processes are named by their rank in the transport, which is their
// process index in the runtime ("process 2" in messages, in groups too).
//
// Deadlines. Every call that waits for other processes takes a
// steady_clock deadline and throws SPMD_ERR_TIMEOUT once it passes, naming
// the processes that did not arrive; nothing waits without one. A barrier,
// all-gather or group making that failed leaves the communicator it ran on
// unusable for those calls (messages of it may still be on their way):
// later ones fail at once, saying why. Transfers are not affected.
//
// Errors. Every failure is an spmd::Error; those of MPI carry MPI's own
// error string.
//
// Order. As with MPI's collectives, every member makes the same collective
// calls (barrier, all_gather, group) on a communicator in the same order;
// a communicator serialises the calls this process makes on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace spmd::dist {

// Keeps memory that an abandoned send may still read (after a failure or a
// timeout, MPI may read it later) alive until the process ends. Only
// failures call it, so what it keeps stays small.
inline void keep_until_exit(std::shared_ptr<const void> memory) {
  static std::mutex mu;
  static std::vector<std::shared_ptr<const void>> kept;
  std::lock_guard<std::mutex> lock(mu);
  kept.push_back(std::move(memory));
}

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// A send or receive in flight. Its host memory must stay valid until it
// has finished. Destroying one that has not finished cancels a receive;
// a send is left to finish on its own, so its memory must outlive it.
class Transfer {
 public:
  virtual ~Transfer() = default;
  // Whether it has finished; throws its error.
  virtual bool done() = 0;
  // Returns once it has finished; throws TIMEOUT at the deadline, naming
  // the peer, and leaves it in flight.
  virtual void wait(Deadline deadline) = 0;
};

// A group of processes that exchange messages.
class Communicator {
 public:
  virtual ~Communicator() = default;

  // This process's rank among the members, and their number.
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Returns once every member has arrived.
  virtual void barrier(Deadline deadline) = 0;
  // Every member's `mine` in rank order, this process's included: size()
  // blocks of mine.size() bytes, a size every member must give alike.
  virtual std::vector<std::byte> all_gather(std::span<const std::byte> mine,
                                            Deadline deadline) = 0;

  // Starts sending `bytes` of host memory to member `to`, or receiving them
  // from member `from`; a receive matches the send of the same tag, 0 to
  // max_tag(), and size.
  virtual std::unique_ptr<Transfer> send(const void *data, size_t bytes, int to, int tag) = 0;
  virtual std::unique_ptr<Transfer> receive(void *data, size_t bytes, int from, int tag) = 0;
  virtual int max_tag() const = 0;
};

// Every process of the runtime, and the groups made of them.
class Transport : public Communicator {
 public:
  // The communicator of the processes `members` (ranks, ascending, this
  // process among them), made by every member with the same list the first
  // time it is asked for and kept: later calls with the list return the
  // same communicator. Throws TIMEOUT at the deadline naming the members
  // that did not come to make it.
  virtual Communicator &group(const std::vector<int> &members, Deadline deadline) = 0;
};

}  // namespace spmd::dist
