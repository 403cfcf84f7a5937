#include "backend/collectives.hpp"

#include "backend/backend.hpp"
#include "core/error.hpp"

namespace spmd {

void Backend::run_collective(const CollectiveCall &, GroupSync &) {
  fail(SPMD_ERR_UNSUPPORTED, "collectives are not implemented on the ", platform_name(),
       " platform");
}

}  // namespace spmd
