#include "backend/cpu/cpu_backend.hpp"

#include <mutex>

#include <algorithm>
#include <cstring>
#include <optional>

#include "backend/host/collective_phases.hpp"
#include "backend/host/copy.hpp"
#include "backend/host/kernels.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "base/side_by_side.hpp"
#include "kernels/flush_subnormals.hpp"
#include "kernels/gemm.hpp"

namespace spmd::cpu {

namespace {
// Work of at most this many bytes runs on the calling thread: waking a
// worker costs more than it saves.
constexpr size_t kInlineBytes = 256 * 1024;
// All-reduces of at most this many bytes are reduced whole by every member
// (one phase), from inputs copied into the group's storage, so no member
// reads another's buffers after the reduction and no final barrier is
// needed. Every member folds the same inputs in the same order, so the
// results stay bit-identical.
constexpr size_t kSmallAllReduceBytes = 32 * 1024;
constexpr uint32_t kInputsStaged = 1;
// Copies are cut into slabs of at least this much so every worker gets a
// share even when there are fewer copies than workers.
constexpr int64_t kSlabBytes = int64_t{1} << 20;

// Memory of this platform is host memory: places are host addresses.
inline void *at(const Place &p) { return reinterpret_cast<void *>(p.ptr.bits); }

size_t call_bytes(const CollectiveCall &c) {
  return static_cast<size_t>(shape_elements(c.out_shape)) * dtype_size(c.dtype);
}

bool reduce_whole(const CollectiveCall &c) {
  return c.kind == Transport::AllReduce && call_bytes(c) <= kSmallAllReduceBytes;
}

void split_into(const BoxCopy &c, std::vector<BoxCopy> &out, int64_t want_pieces) {
  int64_t bytes = static_cast<int64_t>(c.elem_size);
  for (int64_t e : c.extent) bytes *= e;
  size_t dim = 0;
  while (dim < c.extent.size() && c.extent[dim] == 1) ++dim;
  int64_t pieces = std::min<int64_t>(want_pieces, bytes / kSlabBytes);
  if (dim == c.extent.size() || pieces <= 1) {
    out.push_back(c);
    return;
  }
  pieces = std::min(pieces, c.extent[dim]);
  const int64_t step = (c.extent[dim] + pieces - 1) / pieces;
  for (int64_t s = 0; s < c.extent[dim]; s += step) {
    BoxCopy piece = c;
    piece.extent[dim] = std::min(step, c.extent[dim] - s);
    piece.src.offset[dim] += s;
    piece.dst.offset[dim] += s;
    out.push_back(std::move(piece));
  }
}

void copy_one(const BoxCopy &c) {
  host::copy_box(at(c.src.place), c.src.shape, c.src.offset, at(c.dst.place), c.dst.shape,
                 c.dst.offset, c.extent, c.elem_size);
}

std::vector<host::HostSlot> host_slots(const GroupView &g) {
  std::vector<host::HostSlot> slots(g.size());
  for (size_t r = 0; r < g.size(); ++r) {
    const CollSlot &s = g.slot(r);
    slots[r] = {at(s.in), &s.in_shape, at(s.out)};
  }
  return slots;
}

}  // namespace

CpuBackend::CpuBackend(int devices, int worker_threads, size_t cache_bytes)
    : devices_(devices), allocator_(devices, cache_bytes), pool_(worker_threads) {}

std::string CpuBackend::device_repr(int device) const {
  return cat("CpuDevice(id=", device, ")");
}

DevicePtr CpuBackend::allocate(int device, size_t bytes, MemoryKind) {
  return {reinterpret_cast<uintptr_t>(allocator_.allocate(device, bytes))};
}

void CpuBackend::deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind,
                            const EventList &after) {
  for (const auto &e : after.events()) e->wait_status();
  allocator_.deallocate(device, reinterpret_cast<void *>(ptr.bits), bytes);
}

bool CpuBackend::cores_taken() const {
  return side_by_side::threads() >= static_cast<size_t>(pool_.size());
}

void CpuBackend::parallel_for(size_t n, size_t bytes, const std::function<void(size_t)> &fn) {
  if (bytes <= kInlineBytes || cores_taken()) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool_.parallel_for(n, fn);
}

EventPtr CpuBackend::copy_boxes(std::span<const BoxCopy> copies, const EventList &after) {
  after.wait();
  if (copies.empty()) return nullptr;
  // Aim for a few tasks per worker so uneven blocks still balance.
  const int64_t target = static_cast<int64_t>(pool_.size()) * 4;
  if (static_cast<int64_t>(copies.size()) >= target || pool_.size() == 1) {
    pool_.parallel_for(copies.size(), [&](size_t i) { copy_one(copies[i]); });
    return nullptr;
  }
  std::vector<BoxCopy> tasks;
  const int64_t per_copy = (target + static_cast<int64_t>(copies.size()) - 1) /
                           static_cast<int64_t>(copies.size());
  for (const auto &c : copies) split_into(c, tasks, per_copy);
  pool_.parallel_for(tasks.size(), [&](size_t i) { copy_one(tasks[i]); });
  return nullptr;
}

// Multiply-adds of a launch's products below which they run one after
// another on the calling thread: handing them to the pool's threads would
// cost more than they take (the training step's products, a few thousand
// each; OpenBLAS runs such ones on one thread by itself).
constexpr int64_t kSideBySideMinWork = int64_t(1) << 20;

void CpuBackend::run_products(std::span<const Kernel> kernels, const std::function<void(size_t)> &run) {
  int64_t work = 0;
  bool small = true;
  for (const auto &k : kernels) {
    if (k.kind != KernelKind::Gemm) continue;
    work += k.gemm.batch * k.gemm.m * k.gemm.n * k.gemm.k;
    small = small && gemm::suits_one_thread(k.gemm);
  }
  // The devices' products side by side, one a thread, each single-threaded
  // (oneDNN's and OpenBLAS's threads held to one meanwhile), where they
  // share the threads evenly or are small and at least as many as the
  // threads (a single small product keeps the team's cores): on 2 cores with AVX-512 the
  // batch-sharded 2048^3 product ran at 0.95 of one oneDNN sgemm on all
  // cores so, against 0.79 with the devices' products one at a time on
  // oneDNN's team, and the Layer program at 19.3-19.9 ms against 20.6-20.8;
  // a small product's team cost more than it saved, its OpenBLAS threads
  // spinning after it and taking the cores from the next op's (the Layer
  // program 26-34 ms so). On the 2-core AVX2 machine, with OpenBLAS alone,
  // the larger products ran as fast either way.
  const auto threads = static_cast<size_t>(pool_.size());
  const bool even = kernels.size() % threads == 0, enough = kernels.size() >= threads;
  if (work >= kSideBySideMinWork && threads > 1 && (small ? enough : even)) {
    pool_.parallel_for(kernels.size(), [&](size_t i) {
      gemm::OnCallingThread alone;
      run(i);
    });
    return;
  }
  // Otherwise products run one after another, each on all the BLAS
  // library's threads, whichever threads launch them: concurrent calls
  // would each start a team of all the cores' threads (oneDNN's OpenMP,
  // OpenBLAS's pool).
  static std::mutex products;
  std::lock_guard<std::mutex> one_at_a_time(products);
  for (size_t i = 0; i < kernels.size(); ++i) run(i);
}

EventPtr CpuBackend::launch(std::span<const Kernel> kernels, const EventList &after) {
  after.wait();
  size_t bytes = 0;
  bool blas = false;
  for (const auto &k : kernels) {
    const size_t out = host::kernel_out_bytes(k);
    bytes += out;
    // An elementwise kernel reads an element of each operand per result
    // element (an operand's span, strides and all, costs more to find than
    // a tiny op's run).
    if (k.kind == KernelKind::Elementwise) {
      const auto elements = static_cast<size_t>(shape_elements(k.elementwise.shape));
      for (int i = 0; i < k.elementwise.nin; ++i)
        if (!k.elementwise.in[i].scalar) bytes += elements * dtype_size(k.elementwise.in[i].dtype);
    } else
      for (int i = 0; i < 3; ++i) bytes += host::kernel_in_bytes(k, i);
    blas = blas || k.kind == KernelKind::Gemm;
  }
  auto run = [&](size_t i) {
    const Kernel &k = kernels[i];
    const void *in[3] = {at(k.in0), at(k.in1), at(k.in2)};
    host::run_kernel(k, at(k.out), in);
  };
  // A device thread among as many as cores (a shard_map body's) runs its
  // products itself, single-threaded, beside the others' (the Layer's
  // shard_map: 52-60 ms against 62-117 with products one at a time on all
  // cores, on 2 cores; the same Layer as global ops 55-73).
  if (blas && cores_taken()) {
    gemm::OnCallingThread alone;
    for (size_t i = 0; i < kernels.size(); ++i) run(i);
    return nullptr;
  }
  if (blas) {
    run_products(kernels, run);
    return nullptr;
  }
  // Float elementwise kernels flush subnormals, as XLA's CPU code does:
  // set once for a batch this thread runs, not once a kernel (a tiny op's
  // eight kernels wrote the control register sixteen times).
  std::optional<FlushSubnormals> flushing;
  if (std::all_of(kernels.begin(), kernels.end(), [](const Kernel &k) {
        return k.kind == KernelKind::Elementwise &&
               (k.elementwise.compute == SPMD_F32 || k.elementwise.compute == SPMD_F64);
      }))
    flushing.emplace();
  parallel_for(kernels.size(), bytes, run);
  return nullptr;
}

void CpuBackend::prepare_collective(CollectiveCall &call, CollSlot &slot, GroupSync &group) {
  if (!reduce_whole(call)) return;
  call.after.wait();
  const size_t bytes = call_bytes(call);
  void *stage = group.member_storage(bytes);
  if (bytes) std::memcpy(stage, at(slot.in), bytes);
  slot.in = Place::host(stage);
  call.backend_flags |= kInputsStaged;
}

EventPtr CpuBackend::run_collective(const CollectiveCall &call, GroupSync &group) {
  // The CPU platform's work is done before its calls return, so every
  // input was ready when its member published it.
  call.after.wait();
  const bool whole = reduce_whole(call);
  const int phases = host::phase_count(call, whole);
  const std::vector<host::HostSlot> slots = host_slots(group);
  const host::HostGroup view(slots, group.rank());
  for (int k = 0; k < phases; ++k) {
    host::run_phase(call, at(call.out), view, k, whole);
    // After the last phase, so no peer still reads this member's buffers;
    // staged inputs outlive the call, so then there is nothing to wait for.
    if (k + 1 < phases || !(call.backend_flags & kInputsStaged)) group.barrier();
  }
  return nullptr;
}

bool CpuBackend::run_collective_groups(const std::vector<GroupCall> &groups, EventPtr &done) {
  // Members of all groups, flattened. The vectors keep their capacity
  // between calls on this thread, so a small collective allocates nothing.
  // (Pool workers reach them through the references: a thread_local named
  // inside the lambda would be the worker's own.)
  struct Item {
    size_t group, rank;
    bool whole;
    int phases;
  };
  thread_local std::vector<Item> items_of_thread;
  thread_local std::vector<std::vector<host::HostSlot>> slots_of_thread;
  auto &items = items_of_thread;
  auto &slots = slots_of_thread;
  items.clear();
  if (slots.size() < groups.size()) slots.resize(groups.size());
  int phases = 0;
  size_t bytes = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const GroupCall &g = groups[gi];
    slots[gi].resize(g.calls.size());
    for (size_t r = 0; r < g.calls.size(); ++r) {
      const CollectiveCall &c = g.calls[r];
      c.after.wait();
      const size_t out_bytes = call_bytes(c);
      const bool whole =
          c.kind == Transport::AllReduce && out_bytes <= kSmallAllReduceBytes;
      const int member_phases = host::phase_count(c, whole);
      items.push_back({gi, r, whole, member_phases});
      phases = std::max(phases, member_phases);
      slots[gi][r] = {at(g.slots[r].in), &g.slots[r].in_shape, at(g.slots[r].out)};
      bytes += out_bytes + static_cast<size_t>(shape_elements(g.slots[r].in_shape)) *
                               dtype_size(c.dtype);
    }
  }
  for (int k = 0; k < phases; ++k)
    parallel_for(items.size(), bytes, [&](size_t i) {
      const Item &it = items[i];
      if (k >= it.phases) return;
      const CollectiveCall &c = groups[it.group].calls[it.rank];
      host::run_phase(c, at(c.out), host::HostGroup(slots[it.group], it.rank), k, it.whole);
    });
  done = nullptr;
  return true;
}

}  // namespace spmd::cpu
