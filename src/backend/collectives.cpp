#include "backend/collectives.hpp"

#include "backend/backend.hpp"
#include "base/error.hpp"

namespace spmd {

void Backend::run_collective(const CollectiveCall &, GroupSync &) {
  fail(SPMD_ERR_UNSUPPORTED, "collectives are not implemented on the ", platform_name(),
       " platform");
}

bool Backend::run_collective_groups(
    const std::vector<GroupCall> &,
    const std::function<void(size_t, const std::function<void(size_t)> &)> &) {
  return false;
}

}  // namespace spmd
