// Strided n-dimensional box copy between dense row-major buffers in host
// memory: the CPU backend's one data-movement primitive.
#pragma once

#include "backend/backend.hpp"

namespace spmd::cpu {

// Copies copy.extent from src to dst; both endpoints are host-addressable.
// Contiguous trailing dimensions are merged so whole rows move with memcpy.
void copy_box_host(const BoxCopy &copy);

}  // namespace spmd::cpu
