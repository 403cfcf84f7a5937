// The collective algorithms of backends whose members can read each other's
// memory (the CPU platform's threads of one process, and the sim platform
// inside its backend): each member reads its peers' buffers directly, a
// single copy with no staging. All-reduce is either reduced whole by every
// member (one phase; for small sizes) or reduce-scatter by chunks followed
// by all-gather (two phases), so each member touches 2(n-1)/n of the data,
// as a ring would. Between phases, and after the last, every member must
// have finished the previous phase: the caller provides that (a barrier, or
// the end of a loop over all members).
#pragma once

#include <cstddef>
#include <vector>

#include "backend/collectives.hpp"

namespace spmd::host {

// A member's slot with host addresses.
struct HostSlot {
  const void *in = nullptr;
  const Shape *in_shape = nullptr;  // the published slot's
  void *out = nullptr;
};

// One member's view of its group's slots.
class HostGroup {
 public:
  HostGroup(const std::vector<HostSlot> &slots, size_t rank) : slots_(slots), rank_(rank) {}
  size_t size() const { return slots_.size(); }
  size_t rank() const { return rank_; }
  const HostSlot &slot(size_t r) const { return slots_[r]; }

 private:
  const std::vector<HostSlot> &slots_;
  size_t rank_;
};

// Phases of `call`: 2 for an all-reduce reduced by chunks, else 1.
int phase_count(const CollectiveCall &call, bool reduce_whole);

// Member `group.rank()`'s part of phase `phase`, writing to `out`.
void run_phase(const CollectiveCall &call, void *out, const HostGroup &group, int phase,
               bool reduce_whole);

}  // namespace spmd::host
