// Which path runs a group's collectives on the CUDA platform: the native
// kernels (members read each other's buffers: logical devices of one GPU,
// or GPUs with peer access) or NCCL. SPMD_CUDA_COLLECTIVES picks the policy:
//
//   auto    NCCL for a group NCCL can take (its members on distinct GPUs, or
//           several on one GPU where the NCCL in use accepts that), the
//           native path otherwise and for single-member groups; the default
//   native  always the native path
//   nccl    always NCCL; a group NCCL cannot take is refused (UNSUPPORTED,
//           naming why)
//
// The answer depends only on the group's devices, so every member of a
// group gets the same one when each asks on its own thread. Internal to
// backend/cuda.
#pragma once

#include <string>
#include <vector>

#include "backend/cuda/device.hpp"

namespace spmd::cuda {

enum class CollectivesPolicy { Auto, Native, Nccl };
enum class CollectivePath { Native, Nccl };

// SPMD_CUDA_COLLECTIVES, read when called (the backend reads it once, at
// construction): unset or empty is auto. Throws INVALID_ARGUMENT for any
// other value.
CollectivesPolicy collectives_policy_from_env();

// The path for a group whose members (rank order) are these logical
// devices. Throws UNSUPPORTED with the reason when the policy's path cannot
// run the group: nccl and NCCL cannot take it; or the native path would
// have to read memory between GPUs without peer access.
CollectivePath choose_collective_path(CollectivesPolicy policy,
                                      const std::vector<const LogicalDevice *> &members);

// Why the native path cannot run a group of these members (two of them on
// GPUs without peer access), or empty when it can.
std::string native_unusable_reason(const std::vector<const LogicalDevice *> &members);

}  // namespace spmd::cuda
