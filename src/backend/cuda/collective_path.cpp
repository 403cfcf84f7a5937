// Choosing the CUDA platform's collective path (see the header).
#include "backend/cuda/collective_path.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "base/error.hpp"

#ifdef SPMD_HAVE_NCCL
#include "backend/cuda/nccl_collectives.hpp"
#endif

namespace spmd::cuda {

namespace {

std::string nccl_reason(const std::vector<const LogicalDevice *> &members) {
#ifdef SPMD_HAVE_NCCL
  return nccl_unusable_reason(members);
#else
  (void)members;
  return "this build of the CUDA platform has no NCCL (libspmd was configured without it)";
#endif
}

}  // namespace

CollectivesPolicy collectives_policy_from_env() {
  const char *v = std::getenv("SPMD_CUDA_COLLECTIVES");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return CollectivesPolicy::Auto;
  if (std::strcmp(v, "native") == 0) return CollectivesPolicy::Native;
  if (std::strcmp(v, "nccl") == 0) return CollectivesPolicy::Nccl;
  invalid("SPMD_CUDA_COLLECTIVES='", v, "': expected auto, native or nccl");
}

std::string native_unusable_reason(const std::vector<const LogicalDevice *> &members) {
  // One member per GPU stands for the rest in the message.
  std::vector<const LogicalDevice *> firsts;
  for (const LogicalDevice *d : members) {
    bool seen = false;
    for (const LogicalDevice *f : firsts) seen = seen || f->gpu->ordinal == d->gpu->ordinal;
    if (!seen) firsts.push_back(d);
  }
  for (const LogicalDevice *a : firsts)
    for (const LogicalDevice *b : firsts) {
      if (a == b) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, a->gpu->ordinal, b->gpu->ordinal) != cudaSuccess) {
        cudaGetLastError();
        can = 0;
      }
      if (!can)
        return cat(a->label(), " cannot read the memory of ", b->label(),
                   " (no peer access between the GPUs), which the native collectives need");
    }
  return {};
}

CollectivePath choose_collective_path(CollectivesPolicy policy,
                                      const std::vector<const LogicalDevice *> &members) {
  auto native = [&] {
    const std::string why = native_unusable_reason(members);
    if (!why.empty())
      fail(SPMD_ERR_UNSUPPORTED, "collectives over ", members.size(), " devices: ", why,
           policy == CollectivesPolicy::Native
               ? " (SPMD_CUDA_COLLECTIVES=native)"
               : cat(", and NCCL cannot run them: ", nccl_reason(members)));
    return CollectivePath::Native;
  };
  switch (policy) {
    case CollectivesPolicy::Native: return native();
    case CollectivesPolicy::Auto:
      // A single member has nothing to exchange: a copy needs no communicator.
      if (members.size() > 1 && nccl_reason(members).empty()) return CollectivePath::Nccl;
      return native();
    case CollectivesPolicy::Nccl: {
      const std::string why = nccl_reason(members);
      if (!why.empty())
        fail(SPMD_ERR_UNSUPPORTED, "SPMD_CUDA_COLLECTIVES=nccl: NCCL cannot run collectives over ",
             members.size(), " devices: ", why);
      return CollectivePath::Nccl;
    }
  }
  fail(SPMD_ERR_INTERNAL, "unknown collectives policy");
}

}  // namespace spmd::cuda
