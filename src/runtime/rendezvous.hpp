// Rendezvous of the devices of a mesh-axis group inside one shard_map (or
// one execution of a persistent collective): barriers that carry each
// member's published buffers, with a timeout, and that fail at once when a
// missing member has already left its callback. A failure breaks the group
// for good and every member waiting in it, or arriving later, gets the same
// error naming the collective, the axes and the missing devices.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/collectives.hpp"
#include "core/mesh.hpp"
#include "spmd/status.h"

namespace spmd {

// The collective timeout when none is given: $SPMD_COLLECTIVE_TIMEOUT_MS, or
// 60 s. Throws INVALID_ARGUMENT naming `arg` for a negative value. Any
// timeout too long for the clock (INT64_MAX, SPMD_TIMEOUT_FOREVER) waits
// forever.
std::chrono::milliseconds collective_timeout(int64_t timeout_ms, const char *arg);

// now + timeout on the steady clock, saturating at the clock's end instead
// of wrapping around into the past.
std::chrono::steady_clock::time_point deadline_after(std::chrono::milliseconds timeout);

class Session;

class Group {
 public:
  Group(Session &session, GroupIdentity identity);

  size_t size() const { return identity_.devices.size(); }
  const std::vector<int> &devices() const { return identity_.devices; }
  const GroupIdentity &identity() const { return identity_; }

  // Publishes member `rank`'s slot and signature, then waits for all.
  // `what` names the collective for messages ("psum over 'x'").
  void exchange(size_t rank, CollSlot slot, std::string signature, const std::string &what);
  // Waits until every member has arrived.
  void barrier(size_t rank, const std::string &what);

  // Member r's slot and signature in the exchange that member `me` last
  // took part in, as `me` sees them. Valid until `me`'s next exchange. Two
  // tables alternate between successive exchanges: a member that has left
  // a collective without a final barrier (a staged all-reduce) publishes
  // its next slot into the other table while slower peers still read this
  // one, and it can come back to this table only after every peer has
  // arrived at the exchange in between, that is, has finished reading.
  const CollSlot &slot(size_t me, size_t r) const { return slots_[parity(me)][r]; }
  const std::string &signature(size_t me, size_t r) const {
    return signatures_[parity(me)][r];
  }

  // Host memory of `bytes` owned by the group for member `rank` (see
  // GroupSync::member_storage). Two areas per member alternate between
  // successive uses: a member writes one only after every member has
  // arrived at the collective that followed its last use, so no reader
  // remains.
  void *member_storage(size_t rank, size_t bytes);

  // Marks the group failed (every waiter throws this error) and wakes it.
  void break_with(spmd_status status, const std::string &message);
  void wake();

 private:
  void arrive(std::unique_lock<std::mutex> &lock, size_t rank, const std::string &what);
  [[noreturn]] void break_locked(spmd_status status, std::string message);
  std::string device_list(bool missing_only) const;

  Session &session_;
  GroupIdentity identity_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  size_t blocked_ = 0;  // members registered as waiting (Session::start_waiting)
  // generation_, readable without the lock, for the short yielding wait
  // before a member blocks.
  std::atomic<uint64_t> published_generation_{0};
  std::atomic<bool> published_broken_{false};
  size_t arrived_ = 0;
  std::vector<char> here_;
  // Which of the two tables member `me`'s last exchange used. exchanges_[me]
  // is written only by `me`'s own thread.
  size_t parity(size_t me) const { return (exchanges_[me] - 1) & 1; }
  std::vector<uint64_t> exchanges_;               // per rank, count
  std::vector<CollSlot> slots_[2];                // [parity][rank]
  std::vector<std::string> signatures_[2];        // [parity][rank]
  std::vector<std::vector<unsigned char>> storage_[2];  // [parity][rank]
  std::vector<uint64_t> storage_uses_;                   // per rank, count
  bool broken_ = false;
  spmd_status status_ = SPMD_OK;
  std::string message_;
};

// One member's view of a group for the backend.
class MemberSync final : public GroupSync {
 public:
  MemberSync(Group &group, size_t rank, const std::string &what)
      : group_(group), rank_(rank), what_(what) {}
  const GroupIdentity &identity() const override { return group_.identity(); }
  size_t size() const override { return group_.size(); }
  size_t rank() const override { return rank_; }
  const CollSlot &slot(size_t member) const override { return group_.slot(rank_, member); }
  void barrier() override { group_.barrier(rank_, what_); }
  void *member_storage(size_t bytes) override { return group_.member_storage(rank_, bytes); }

 private:
  Group &group_;
  size_t rank_;
  const std::string &what_;
};

class Session {
 public:
  Session(std::shared_ptr<const Mesh> mesh, std::chrono::milliseconds timeout);

  const Mesh &mesh() const { return *mesh_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // A device's group. Over several processes `group` holds only the
  // members of this process (they meet in it; the others are reached
  // through exec/across_processes.hpp), `global` every member.
  struct Member {
    Group *group;
    size_t rank;                   // in group
    const GroupIdentity *global;   // every member, in rank order
    size_t global_rank;            // in global
  };
  // The group over `axes` (mesh axis indices, in the caller's order) that
  // the device at mesh position `position` belongs to, and its rank there
  // (row-major over its coordinates along `axes`).
  Member member(size_t position, const std::vector<int> &axes);
  // Whether some group over `axes` has members in several processes.
  bool spans_processes(const std::vector<int> &axes);
  // Every device of the mesh that this process holds, as one group: where
  // they meet before a collective that crosses processes.
  Member process_member(size_t position);

  // The device at `position` has left its callback: with SPMD_OK when it
  // returned normally, else with its error. Wakes every waiting group.
  // Never fails (a message that cannot be kept is dropped).
  void depart(size_t position, spmd_status status, const std::string &message) noexcept;
  // True, with the status and message, if device `device` has left.
  bool departed(int device, spmd_status &status, std::string &message) const;
  // Forgets departures, for the next execution of a persistent collective.
  void reset_departures();
  // True once any group has failed (a reused session must be rebuilt).
  bool broken() const { return broken_.load(std::memory_order_acquire); }
  void mark_broken() { broken_.store(true, std::memory_order_release); }

  // Who waits for whom, so that devices waiting for each other in different
  // collectives (psum over "x, y" on one, over "y, x" or over "x" on
  // another) are reported at once instead of at the timeout. A member about
  // to block records the call it waits in and the devices it waits for;
  // when that closes a cycle of devices each waiting for the next, the
  // returned message names every call in it and `groups` lists the groups
  // to break. Called with the waiting group's lock held.
  struct Deadlock {
    std::string message;
    std::vector<Group *> groups;
  };
  std::optional<Deadlock> start_waiting(int device, Group &group, const std::string &call,
                                        const std::vector<int> &missing);
  void stop_waiting(int device);
  // `device` has arrived in `group`: no member of it waits for it any more.
  void arrived(Group &group, int device);

 private:
  struct Waiting {
    Group *group = nullptr;
    std::string call;
    std::vector<int> for_devices;
  };
  struct GroupSet {
    std::vector<std::unique_ptr<Group>> groups;  // null where no member is here
    std::vector<GroupIdentity> global;
    std::vector<Member> of_position;
    bool across = false;
  };
  GroupSet &set_of(const std::vector<int> &axes);  // under mu_

  std::shared_ptr<const Mesh> mesh_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::map<std::vector<int>, GroupSet> sets_;
  std::unique_ptr<std::atomic<int>[]> left_;  // per position: 0 running, 1 left
  std::vector<spmd_status> left_status_;
  std::vector<std::string> left_message_;
  std::atomic<bool> broken_{false};
  std::vector<std::optional<Waiting>> waiting_;  // per position, under mu_
  std::vector<Group *> all_groups_;              // under mu_
  std::vector<std::vector<Group *>> to_wake_;    // per position: depart's list
};

}  // namespace spmd
