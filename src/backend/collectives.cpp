// The defaults of the collective part of the backend contract.
#include "backend/backend.hpp"
#include "base/error.hpp"

namespace spmd {

void Backend::prepare_collective(CollectiveCall &, CollSlot &, GroupSync &) {}

EventPtr Backend::run_collective(const CollectiveCall &, GroupSync &) {
  fail(SPMD_ERR_UNSUPPORTED, "collectives are not implemented on the ", platform_name(),
       " platform");
}

bool Backend::run_collective_groups(const std::vector<GroupCall> &, EventPtr &) { return false; }

}  // namespace spmd
