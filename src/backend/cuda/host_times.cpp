// The CUDA platform's host-time counters (see the header).
#include "backend/cuda/host_times.hpp"

#include <atomic>

namespace spmd::cuda::host_times {

namespace {

constexpr int kKinds = static_cast<int>(Kind::Count);

std::atomic<bool> g_enabled{false};
std::atomic<long long> g_ns[kKinds];
std::atomic<long long> g_calls[kKinds];

const char *name(Kind k) {
  switch (k) {
    case Kind::LaunchEntry: return "launch (the backend's entry, whole)";
    case Kind::KernelLaunch: return "  kernel launches";
    case Kind::EventRecord: return "  cudaEventRecord";
    case Kind::StreamWait: return "  cudaStreamWaitEvent";
    case Kind::EventQuery: return "cudaEventQuery";
    case Kind::AllocateEntry: return "allocate (entry, whole)";
    case Kind::PoolAllocate: return "  cudaMallocFromPoolAsync";
    case Kind::FreeEntry: return "deallocate (entry, whole)";
    case Kind::PoolFree: return "  cudaFreeAsync";
    case Kind::CopyEntry: return "copy_boxes (entry, whole)";
    case Kind::Count: break;
  }
  return "?";
}

}  // namespace

void enable() { g_enabled.store(true, std::memory_order_relaxed); }

bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

void add(Kind kind, long long ns) {
  const int k = static_cast<int>(kind);
  g_ns[k].fetch_add(ns, std::memory_order_relaxed);
  g_calls[k].fetch_add(1, std::memory_order_relaxed);
}

void report(std::FILE *to) {
  std::fprintf(to, "# CUDA platform host times (SPMD_CUDA_HOST_TIMES)\n#   %-64s %10s %12s %10s\n",
               "kind", "calls", "total ms", "us/call");
  for (int k = 0; k < kKinds; ++k) {
    const long long calls = g_calls[k].exchange(0), ns = g_ns[k].exchange(0);
    if (calls == 0) continue;
    std::fprintf(to, "#   %-64s %10lld %12.3f %10.3f\n", name(static_cast<Kind>(k)), calls,
                 static_cast<double>(ns) / 1e6, static_cast<double>(ns) / 1e3 / static_cast<double>(calls));
  }
  std::fflush(to);
}

}  // namespace spmd::cuda::host_times
