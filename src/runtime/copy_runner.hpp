// Runs a batch of box copies on the runtime's worker pool. Large copies are
// cut into slabs along their outermost split-able dimension so every worker
// gets a share even when there are fewer copies than workers.
#pragma once

#include <vector>

#include "backend/backend.hpp"
#include "base/worker_pool.hpp"

namespace spmd {

// Destinations of the copies must not overlap.
void run_box_copies(Backend &backend, WorkerPool &pool, std::vector<BoxCopy> copies);

}  // namespace spmd
