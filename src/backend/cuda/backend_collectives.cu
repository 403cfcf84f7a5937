// The CUDA backend's collectives: the native path (members read each
// other's buffers; collective_kernels.hpp) and NCCL's, chosen per group
// (collective_path.hpp).
#include <algorithm>
#include <functional>

#include "backend/cuda/backend_impl.hpp"
#include "backend/cuda/collective_kernels.hpp"
#include "backend/cuda/stream_event.hpp"
#include "base/dtype.hpp"

namespace spmd::cuda {

namespace {
// All-reduces of at most this many bytes are reduced whole by every member
// (one phase); larger ones go by chunks (reduce-scatter, then all-gather).
constexpr size_t kSmallAllReduceBytes = 256 * 1024;
}  // namespace

namespace {

size_t call_bytes(const CollectiveCall &c) {
  return static_cast<size_t>(shape_elements(c.out_shape)) * dtype_size(c.dtype);
}

bool reduce_whole(const CollectiveCall &c) {
  return c.kind == Transport::AllReduce && call_bytes(c) <= kSmallAllReduceBytes;
}

void sync_stream(LogicalDevice &d, const char *what) {
  const cudaError_t st = cudaStreamSynchronize(d.stream);
  if (st != cudaSuccess) {
    cudaGetLastError();
    fail(SPMD_ERR_INTERNAL, d.label(), ": ", what, " failed on the GPU: ", cudaGetErrorName(st),
         " (", cudaGetErrorString(st), ")");
  }
}

}  // namespace

#ifdef SPMD_HAVE_NCCL
namespace {

// Device scratch for NCCL's part, freed after the work that uses it.
struct Scratch {
  CudaBackend &backend;
  int device;
  size_t bytes;
  DevicePtr ptr;
  Scratch(CudaBackend &b, int d, size_t n)
      : backend(b), device(d), bytes(n),
        ptr(n ? b.allocate(d, n, MemoryKind::Device) : DevicePtr{}) {}
  ~Scratch() { release({}); }
  void release(const EventList &after) noexcept {
    if (ptr) backend.deallocate(device, ptr, bytes, MemoryKind::Device, after);
    ptr = {};
  }
  DeviceScratch view() const { return {address({MemoryKind::Device, device, ptr}), bytes}; }
};

// Fails the event of a group's NCCL work when its communicators were
// aborted under it (the kernels then end without an error of their own).
std::function<std::string()> nccl_verdict(const std::shared_ptr<NcclCollectives> &nccl,
                                          std::vector<int> devices) {
  std::weak_ptr<NcclCollectives> weak = nccl;
  return [weak, devices = std::move(devices)]() -> std::string {
    const auto n = weak.lock();
    return n ? n->failure(devices) : std::string();
  };
}

}  // namespace

EventPtr CudaBackend::run_nccl_member(CudaBackend &self, Impl &m, const CollectiveCall &call,
                                      GroupSync &group) {
  // Scratch first and the member's inputs queued before the group meets,
  // so that nothing can fail once a peer may be waiting inside NCCL.
  LogicalDevice &d = m.dev(call.device);
  Scratch scratch(self, call.device, nccl_scratch_bytes(call, group));
  {
    std::lock_guard<std::mutex> lock(d.mu);
    DeviceGuard guard(d.gpu->ordinal);
    wait_on(d, call.after);
  }
  group.barrier();
  EventPtr done;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    DeviceGuard guard(d.gpu->ordinal);
    if (!m.nccl->queue_member(call, group, scratch.view()))
      fail(SPMD_ERR_INTERNAL, d.label(), ": NCCL refused a collective it said it expresses");
    EventBuilder event(cat(d.label(), ": collective over NCCL"));
    event.add(d);
    event.set_verdict(nccl_verdict(m.nccl, group.identity().devices));
    done = event.finish({});
  }
  scratch.release(EventList{done});
  return done;
}

EventPtr CudaBackend::run_nccl_groups(CudaBackend &self, Impl &m,
                                      const std::vector<GroupCall> &groups,
                                      const EventList &after) {
  std::vector<std::unique_ptr<Scratch>> held;
  std::vector<std::vector<DeviceScratch>> scratch(groups.size());
  std::vector<LogicalDevice *> devices;
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t r = 0; r < groups[g].calls.size(); ++r) {
      const int id = groups[g].calls[r].device;
      held.push_back(std::make_unique<Scratch>(self, id, nccl_scratch_bytes(groups[g], r)));
      scratch[g].push_back(held.back()->view());
      devices.push_back(&m.dev(id));
    }
  std::sort(devices.begin(), devices.end(),
            [](const LogicalDevice *a, const LogicalDevice *b) { return a->id < b->id; });
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  // Every member device's lock, in device order (NCCL's group call queues
  // on all of their streams at once).
  std::vector<std::unique_lock<std::mutex>> locks;
  for (LogicalDevice *d : devices) locks.emplace_back(d->mu);
  for (const auto &g : groups)
    for (const auto &c : g.calls) {
      LogicalDevice &d = m.dev(c.device);
      DeviceGuard guard(d.gpu->ordinal);
      wait_on(d, c.after);
    }
  if (!m.nccl->queue_groups(groups, scratch))
    fail(SPMD_ERR_INTERNAL, "NCCL refused a collective it said it expresses");
  EventBuilder event(cat("collective over NCCL on ", devices.size(), " devices"));
  for (LogicalDevice *d : devices) event.add(*d);
  // One verdict for all the groups: any aborted group fails the call.
  std::vector<std::vector<int>> group_ids;
  for (const auto &g : groups) group_ids.push_back(g.identity.devices);
  std::weak_ptr<NcclCollectives> weak = m.nccl;
  event.set_verdict([weak, group_ids]() -> std::string {
    const auto n = weak.lock();
    if (!n) return {};
    for (const auto &g : group_ids)
      if (std::string f = n->failure(g); !f.empty()) return f;
    return {};
  });
  locks.clear();
  EventPtr done = event.finish(after);
  for (auto &s : held) s->release(EventList{done});
  return done;
}
#endif

EventPtr CudaBackend::run_collective(const CollectiveCall &call, GroupSync &group) {
  // One member on its own thread (shard_map). The host meets the group
  // between phases: every member's input is ready before any member reads
  // it (its producers and everything its callback queued on its stream),
  // and no member leaves while a peer may still read its buffers.
  Impl &m = *impl_;
  LogicalDevice &d = m.dev(call.device);
  const CollectivePath path = m.path_of(group.identity().devices);
#ifdef SPMD_HAVE_NCCL
  if (path == CollectivePath::Nccl) {
    if (nccl_expresses(call, group)) return run_nccl_member(*this, m, call, group);
    m.require_native(group.identity().devices);
  }
#else
  (void)path;
#endif
  call.after.wait();
  sync_stream(d, "work before a collective");
  group.barrier();
  std::vector<DeviceSlot> slots(group.size());
  for (size_t r = 0; r < group.size(); ++r) {
    const CollSlot &s = group.slot(r);
    slots[r] = {address(s.in), &s.in_shape, address(s.out)};
  }
  const bool whole = reduce_whole(call);
  const int phases = native_phase_count(call, whole);
  for (int k = 0; k < phases; ++k) {
    {
      std::lock_guard<std::mutex> lock(d.mu);
      DeviceGuard guard(d.gpu->ordinal);
      queue_native_phase(call, address(call.out), slots, group.rank(), k, whole, d.stream);
    }
    sync_stream(d, "a collective");
    group.barrier();
  }
  return nullptr;
}

bool CudaBackend::run_collective_groups(const std::vector<GroupCall> &groups, EventPtr &done) {
  // Every member of every group queued from this one thread: members wait
  // for each other on the GPU (CUDA events), never on the host.
  Impl &m = *impl_;
  EventList after;
  for (const auto &g : groups)
    for (const auto &c : g.calls) after.add(c.after);
  if (EventPtr failed = failed_dependency(after)) {
    done = failed;
    return true;
  }
  bool all_nccl = true;
  for (const auto &g : groups) {
    const CollectivePath path = m.path_of(g.identity.devices);
#ifdef SPMD_HAVE_NCCL
    if (path == CollectivePath::Nccl && nccl_expresses(g)) continue;
    if (path == CollectivePath::Nccl) m.require_native(g.identity.devices);
#else
    (void)path;
#endif
    all_nccl = false;
  }
#ifdef SPMD_HAVE_NCCL
  if (all_nccl && !groups.empty()) {
    done = run_nccl_groups(*this, m, groups, after);
    return true;
  }
#else
  (void)all_nccl;
#endif
  struct Member {
    LogicalDevice *device;
    const CollectiveCall *call;
    bool whole;
    int phases;
    cudaEvent_t mark = nullptr;  // the member's last queued step
  };
  std::vector<std::vector<Member>> members(groups.size());
  EventBuilder event("collective");
  // Gives back every mark still held, on any exit.
  struct Marks {
    std::vector<std::vector<Member>> &members;
    ~Marks() {
      for (auto &g : members)
        for (auto &mem : g)
          if (mem.mark) mem.device->gpu->events->give_back(mem.mark);
    }
  } marks{members};
  auto mark = [](Member &mem) {
    if (mem.mark == nullptr) mem.mark = mem.device->gpu->events->take();
    check(cudaEventRecord(mem.mark, mem.device->stream), "cudaEventRecord");
  };
  int phases = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const GroupCall &g = groups[gi];
    for (const auto &c : g.calls) {
      Member mem{&m.dev(c.device), &c, reduce_whole(c), 0};
      mem.phases = native_phase_count(c, mem.whole);
      phases = std::max(phases, mem.phases);
      std::lock_guard<std::mutex> lock(mem.device->mu);
      DeviceGuard guard(mem.device->gpu->ordinal);
      wait_on(*mem.device, c.after);
      members[gi].push_back(mem);
      mark(members[gi].back());
    }
  }
  std::vector<std::vector<DeviceSlot>> slots(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (const auto &s : groups[gi].slots)
      slots[gi].push_back({address(s.in), &s.in_shape, address(s.out)});
  // Each phase of each member waits for every peer's previous step; after
  // the last, each member waits for its peers too, so that later writers
  // of its buffers come after every peer's reads.
  for (int k = 0; k <= phases; ++k) {
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      auto &group = members[gi];
      std::vector<cudaEvent_t> previous;
      for (auto &mem : group) previous.push_back(mem.mark);
      for (size_t r = 0; r < group.size(); ++r) {
        Member &mem = group[r];
        std::lock_guard<std::mutex> lock(mem.device->mu);
        DeviceGuard guard(mem.device->gpu->ordinal);
        for (size_t p = 0; p < group.size(); ++p)
          if (p != r)
            check(cudaStreamWaitEvent(mem.device->stream, previous[p], 0), "cudaStreamWaitEvent");
        if (k < mem.phases)
          queue_native_phase(*mem.call, address(mem.call->out), slots[gi], r, k, mem.whole,
                             mem.device->stream);
        if (k == phases) event.add(*mem.device);
      }
      // New marks only once every member has waited for the old ones (a
      // recorded event is overwritten by its next record).
      if (k < phases)
        for (auto &mem : group) {
          std::lock_guard<std::mutex> lock(mem.device->mu);
          DeviceGuard guard(mem.device->gpu->ordinal);
          mark(mem);
        }
    }
  }
  done = event.finish(after);
  return true;
}

}  // namespace spmd::cuda
