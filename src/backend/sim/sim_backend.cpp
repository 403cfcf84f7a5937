#include "backend/sim/sim_backend.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>

#include "backend/host/collective_phases.hpp"
#include "backend/host/copy.hpp"
#include "backend/host/kernels.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"

namespace spmd::sim {

namespace {

// Device addresses carry this tag in their top bits, which makes them
// non-canonical on x86-64 and AArch64: a host load or store through one
// faults at once.
constexpr uintptr_t kAddressTag = uintptr_t{0x5151} << 48;
constexpr uintptr_t kAddressAlign = 256;
constexpr int kDefaultDelayUs = 50;
// The host memory behind every allocation (through operator new, so a
// test that fails allocations on purpose reaches it too).
constexpr std::align_val_t kBackingAlign{64};

void release(void *host) { ::operator delete(host, kBackingAlign); }

const char *kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::Device: return "device";
    case MemoryKind::Mapped: return "mapped";
    case MemoryKind::Host: return "host";
  }
  return "memory";
}

int env_int(const char *name, int fallback) {
  const char *v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char *end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 1000000)
    invalid(name, "='", v, "': expected a number of microseconds from 0 to 1000000");
  return static_cast<int>(n);
}

size_t box_bytes(const CopyEndpoint &e, size_t elem_size) {
  return static_cast<size_t>(shape_elements(e.shape)) * elem_size;
}

}  // namespace

// A barrier of the queue threads running one group's members. All members
// are queued by one call, so all of them arrive; no timeout is needed.
// Nothing here allocates except keeping a failure's message.
struct GroupRun {
  explicit GroupRun(size_t n) : size(n) {}
  void arrive() {
    std::unique_lock<std::mutex> lock(mu);
    const uint64_t mine = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != mine; });
  }
  void fail(spmd_status st, const char *msg) noexcept {
    std::lock_guard<std::mutex> lock(mu);
    if (status != SPMD_OK) return;
    status = st;
    try {
      message = msg;
    } catch (...) {  // the status says enough
    }
  }
  void fail(spmd_status st, const std::string &msg) noexcept { fail(st, msg.c_str()); }
  bool failed() {
    std::lock_guard<std::mutex> lock(mu);
    return status != SPMD_OK;
  }
  void outcome(spmd_status &st, std::string &msg) noexcept {
    std::lock_guard<std::mutex> lock(mu);
    st = status;
    try {
      msg = message;
    } catch (...) {
    }
  }
  const size_t size;
  std::mutex mu;
  std::condition_variable cv;
  size_t arrived = 0;
  uint64_t generation = 0;
  spmd_status status = SPMD_OK;
  std::string message;
};

// The allocations one task touches, pinned while it runs: freeing one of
// them meanwhile is a violation, not a silent race.
class SimBackend::Pins {
 public:
  explicit Pins(SimBackend &sim) : sim_(sim) {}
  ~Pins() {
    std::lock_guard<std::mutex> lock(sim_.arena_mu_);
    for (Allocation *a : pinned_) --a->pins;
  }
  void add(Allocation *a) { pinned_.push_back(a); }

 private:
  SimBackend &sim_;
  std::vector<Allocation *> pinned_;
};

SimBackend::SimBackend(int devices)
    : devices_(devices), delay_us_(env_int("SPMD_SIM_DELAY_US", kDefaultDelayUs)),
      next_address_(kAddressTag + kAddressAlign) {
  if (const char *f = std::getenv("SPMD_SIM_FAIL_KERNEL")) fail_kernel_ = f;
  for (int d = 0; d < devices_; ++d) {
    auto q = std::make_unique<Queue>();
    q->rng = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(d + 1);
    queues_.push_back(std::move(q));
  }
  for (int d = 0; d < devices_; ++d) {
    try {
      queues_[static_cast<size_t>(d)]->thread = std::thread([this, d] { queue_loop(d); });
    } catch (const std::system_error &e) {
      stop_queues();
      fail(SPMD_ERR_OUT_OF_MEMORY, "the system refused to start the queue thread of device ", d,
           " (", e.what(), "); the sim platform needs one thread per device");
    } catch (...) {
      stop_queues();  // no queue thread may outlive the backend it serves
      throw;
    }
  }
}

SimBackend::~SimBackend() {
  stop_queues();
  for (auto &[base, a] : device_memory_)
    if (a.live) release(a.host);
  for (auto &[base, a] : mapped_memory_)
    if (a.live) release(a.host);
}

void SimBackend::stop_queues() {
  for (auto &q : queues_) {
    {
      std::lock_guard<std::mutex> lock(q->mu);
      q->stop = true;
    }
    q->cv.notify_one();
  }
  for (auto &q : queues_)
    if (q->thread.joinable()) q->thread.join();
}

std::string SimBackend::device_repr(int device) const { return cat("CpuDevice(id=", device, ")"); }

void SimBackend::violation(const std::string &message) const {
  std::fprintf(stderr, "libspmd sim platform: contract violation: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

// ---- memory ----

DevicePtr SimBackend::allocate(int device, size_t bytes, MemoryKind kind) {
  if (kind == MemoryKind::Host) fail(SPMD_ERR_INTERNAL, "sim: host memory is not allocated here");
  void *host = ::operator new(bytes ? bytes : 1, kBackingAlign, std::nothrow);
  if (host == nullptr)
    fail(SPMD_ERR_OUT_OF_MEMORY, "device ", device, ": cannot allocate ", bytes, " bytes");
  std::lock_guard<std::mutex> lock(arena_mu_);
  try {
    if (kind == MemoryKind::Mapped) {
      const auto base = reinterpret_cast<uintptr_t>(host);
      mapped_memory_[base] = {base, bytes, device, kind, host, true, 0};
      return {base};
    }
    const uintptr_t base = next_address_;
    device_memory_[base] = {base, bytes, device, kind, host, true, 0};
    next_address_ += (bytes + kAddressAlign - 1) / kAddressAlign * kAddressAlign + kAddressAlign;
    return {base};
  } catch (...) {
    release(host);  // no record of it could be kept
    throw;
  }
}

void SimBackend::deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind kind,
                            const EventList &after) {
  // Ordered after its users on the device's queue, as cudaFreeAsync is;
  // users that failed still free it. Should even the task not be made
  // (out of memory), the users are waited for here and the memory freed
  // at once: a free must not fail.
  auto free_now = [this, device, ptr, bytes, kind] { free_memory(device, ptr, bytes, kind); };
  try {
    queue(make_task(device, {}, "free", [after, free_now] {
      for (const auto &e : after.events()) e->wait_status();
      free_now();
    }));
  } catch (...) {
    for (const auto &e : after.events()) e->wait_status();
    free_now();
  }
}

void SimBackend::free_memory(int device, DevicePtr ptr, size_t bytes, MemoryKind kind) {
  {
    std::lock_guard<std::mutex> lock(arena_mu_);
    auto &memory = kind == MemoryKind::Mapped ? mapped_memory_ : device_memory_;
    auto it = memory.find(ptr.bits);
    if (it == memory.end() || !it->second.live || it->second.bytes != bytes ||
        it->second.device != device)
      violation(cat("free of ", kind_name(kind), " memory 0x", std::hex, ptr.bits, std::dec, " (",
                    bytes, " bytes, device ", device, ") that is not a live allocation of it"));
    Allocation &a = it->second;
    if (a.pins != 0)
      violation(cat("device ", device, ": ", kind_name(kind), " memory 0x", std::hex, ptr.bits,
                    std::dec, " (", bytes, " bytes) freed while a task still uses it"));
    release(a.host);
    a.host = nullptr;
    a.live = false;
    // Mapped addresses come from malloc and may come back; device
    // addresses never do, so their records stay to name late users.
    if (kind == MemoryKind::Mapped) memory.erase(it);
  }
}

void *SimBackend::host_of(const Place &place, size_t bytes, const std::string &task, Pins &pins) {
  if (place.kind == MemoryKind::Host) return reinterpret_cast<void *>(place.ptr.bits);
  if (!place.ptr && bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(arena_mu_);
  auto &memory = place.kind == MemoryKind::Mapped ? mapped_memory_ : device_memory_;
  auto it = memory.upper_bound(place.ptr.bits);
  if (it == memory.begin()) {
    // Mapped memory a callback owns itself is host memory the sim did not
    // allocate: it is used as it is.
    if (place.kind == MemoryKind::Mapped) return reinterpret_cast<void *>(place.ptr.bits);
    violation(cat(task, ": 0x", std::hex, place.ptr.bits, std::dec,
                  " is not device memory of the sim platform"));
  }
  --it;
  Allocation &a = it->second;
  const uintptr_t end = a.base + a.bytes;
  if (place.ptr.bits >= end + (a.bytes == 0 ? 1 : 0) || place.ptr.bits + bytes > end) {
    if (place.kind == MemoryKind::Mapped) return reinterpret_cast<void *>(place.ptr.bits);
    violation(cat(task, ": ", bytes, " bytes at 0x", std::hex, place.ptr.bits, std::dec,
                  " run past the allocation at 0x", std::hex, a.base, std::dec, " of ", a.bytes,
                  " bytes"));
  }
  if (!a.live)
    violation(cat(task, ": uses ", kind_name(place.kind), " memory 0x", std::hex, place.ptr.bits,
                  std::dec, " of device ", a.device, " after it was freed"));
  if (a.device != place.device)
    violation(cat(task, ": names memory of device ", a.device, " as memory of device ",
                  place.device));
  pins.add(&a);  // first: it may fail, and a pin must not be left behind
  ++a.pins;
  return static_cast<char *>(a.host) + (place.ptr.bits - a.base);
}

// ---- queues ----

SimBackend::Made SimBackend::make_task(int device, const EventList &after, std::string name,
                                      std::function<void()> run,
                                      std::shared_ptr<JoinedEvent> join) {
  if (device < 0 || device >= devices_)
    fail(SPMD_ERR_INTERNAL, "sim: ", name, " on device ", device, " which does not exist");
  Made made{device, {}};
  made.second.push_back(
      {after, std::move(name), std::move(run), std::make_shared<Event>(), std::move(join)});
  return made;
}

EventPtr SimBackend::queue(Made task) noexcept {
  Queue &q = *queues_[static_cast<size_t>(task.first)];
  EventPtr done = task.second.front().done;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    q.tasks.splice(q.tasks.end(), task.second);
  }
  q.cv.notify_one();
  return done;
}

EventPtr SimBackend::enqueue(int device, const EventList &after, std::string name,
                             std::function<void()> run, std::shared_ptr<JoinedEvent> join) {
  return queue(make_task(device, after, std::move(name), std::move(run), std::move(join)));
}

void SimBackend::delay(Queue &q) {
  // xorshift64: which tasks wait, and how long, differs from run to run of
  // the queue but needs no shared state.
  q.rng ^= q.rng << 13;
  q.rng ^= q.rng >> 7;
  q.rng ^= q.rng << 17;
  if (delay_us_ == 0 || (q.rng & 3) != 0) {
    std::this_thread::yield();
    return;
  }
  std::this_thread::sleep_for(
      std::chrono::microseconds(static_cast<int64_t>((q.rng >> 8) % static_cast<uint64_t>(delay_us_))));
}

void SimBackend::queue_loop(int device) {
  Queue &q = *queues_[static_cast<size_t>(device)];
  for (;;) {
    std::list<Task> node;  // taken off the queue without allocating
    {
      std::unique_lock<std::mutex> lock(q.mu);
      q.cv.wait(lock, [&] { return q.stop || !q.tasks.empty(); });
      if (q.tasks.empty()) return;  // stopping, and nothing is left
      node.splice(node.begin(), q.tasks, q.tasks.begin());
    }
    Task &task = node.front();
    // Nothing may escape: a task whose event never completes is a hang.
    std::string message;
    spmd_status status = SPMD_OK;
    try {
      for (const auto &e : task.after.events()) {
        status = e->wait_status(&message);
        if (status != SPMD_OK) break;
      }
      if (status == SPMD_OK) {
        delay(q);
        task.run();
      }
    } catch (const Error &e) {
      status = e.status();
      try {
        message = e.what();
      } catch (const std::bad_alloc &) {
      }
    } catch (const std::bad_alloc &) {
      status = SPMD_ERR_OUT_OF_MEMORY;
      message.clear();
    } catch (const std::exception &e) {
      status = SPMD_ERR_INTERNAL;
      try {
        message = cat("internal error: ", e.what());
      } catch (const std::bad_alloc &) {
      }
    }
    if (status == SPMD_ERR_OUT_OF_MEMORY && message.empty()) message = "out of memory";  // SSO
    if (task.join) task.join->part_done(status, message);
    task.done->complete(status, std::move(message));
  }
}

void SimBackend::check_injected_fault(const char *what, int device) const {
  if (!fail_kernel_.empty() && fail_kernel_ == what)
    fail(SPMD_ERR_INTERNAL, "sim: injected failure of a ", what, " on device ", device,
         " (SPMD_SIM_FAIL_KERNEL=", fail_kernel_, ")");
}

// ---- work ----

EventPtr SimBackend::copy_boxes(std::span<const BoxCopy> copies, const EventList &after) {
  // Each copy runs on the queue of the device it writes to (or reads from,
  // when it writes to the host).
  std::map<int, std::vector<BoxCopy>> by_device;
  for (const auto &c : copies) {
    const int d = c.dst.place.kind != MemoryKind::Host ? c.dst.place.device : c.src.place.device;
    if (d < 0) fail(SPMD_ERR_INTERNAL, "sim: a copy from host to host");
    by_device[d].push_back(c);
  }
  auto joined = std::make_shared<JoinedEvent>(by_device.size());
  std::vector<Made> tasks;
  tasks.reserve(by_device.size());
  for (auto &[device, batch] : by_device) {
    const int d = device;
    tasks.push_back(make_task(d, after, "copy", [this, d, batch = std::move(batch)] {
      check_injected_fault("copy", d);
      Pins pins(*this);
      for (const auto &c : batch) {
        const std::string task = cat("device ", d, ": copy");
        const void *src = host_of(c.src.place, box_bytes(c.src, c.elem_size), task, pins);
        void *dst = host_of(c.dst.place, box_bytes(c.dst, c.elem_size), task, pins);
        host::copy_box(src, c.src.shape, c.src.offset, dst, c.dst.shape, c.dst.offset, c.extent,
                       c.elem_size);
      }
    }, joined));
  }
  for (auto &t : tasks) queue(std::move(t));  // all made: queued whole
  return joined->event();
}

EventPtr SimBackend::launch(std::span<const Kernel> kernels, const EventList &after) {
  std::map<int, std::vector<Kernel>> by_device;
  for (const auto &k : kernels) by_device[k.device].push_back(k);
  auto joined = std::make_shared<JoinedEvent>(by_device.size());
  std::vector<Made> tasks;
  tasks.reserve(by_device.size());
  for (auto &[device, batch] : by_device) {
    const int d = device;
    tasks.push_back(make_task(d, after, "kernel", [this, d, batch = std::move(batch)] {
      Pins pins(*this);
      for (const auto &k : batch) {
        const char *name = kernel_name(k.kind);
        check_injected_fault(name, d);
        const std::string task = cat("device ", d, ": ", name, " kernel");
        void *out = host_of(k.out, host::kernel_out_bytes(k), task, pins);
        const Place *places[3] = {&k.in0, &k.in1, &k.in2};
        const void *in[3];
        for (int i = 0; i < 3; ++i)
          in[i] = host_of(*places[i], places[i]->ptr ? host::kernel_in_bytes(k, i) : 0, task, pins);
        host::run_kernel(k, out, in);
      }
    }, joined));
  }
  for (auto &t : tasks) queue(std::move(t));  // all made: queued whole
  return joined->event();
}

// ---- collectives ----

EventPtr SimBackend::run_collective(const CollectiveCall &call, GroupSync &group) {
  // On the member's own thread, as the CPU platform: the inputs' producers
  // are waited for and the group met, so every member's input is ready,
  // then peers' memory is read through the sim's translation. The
  // all-reduce always goes by chunks (two phases).
  call.after.wait();
  group.barrier();
  const std::string task = cat("device ", call.device, ": collective");
  Pins pins(*this);
  std::vector<host::HostSlot> slots(group.size());
  for (size_t r = 0; r < group.size(); ++r) {
    const CollSlot &s = group.slot(r);
    const size_t in_bytes = static_cast<size_t>(shape_elements(s.in_shape)) * dtype_size(call.dtype);
    const size_t out_bytes =
        s.out.ptr ? static_cast<size_t>(shape_elements(call.out_shape)) * dtype_size(call.dtype) : 0;
    slots[r] = {host_of(s.in, in_bytes, task, pins), &s.in_shape,
                host_of(s.out, out_bytes, task, pins)};
  }
  void *out = host_of(call.out, static_cast<size_t>(shape_elements(call.out_shape)) *
                                    dtype_size(call.dtype),
                      task, pins);
  const host::HostGroup view(slots, group.rank());
  const int phases = host::phase_count(call, false);
  for (int k = 0; k < phases; ++k) {
    host::run_phase(call, out, view, k, false);
    group.barrier();
  }
  return nullptr;
}

bool SimBackend::run_collective_groups(const std::vector<GroupCall> &groups, EventPtr &done) {
  // NCCL's grouped calls: every member is queued on its device, and the
  // queue threads of a group meet at the sim's own barriers. Every member
  // reaches every barrier whatever fails on the way, or its peers would
  // wait for ever; and all members are made before any is queued.
  size_t members = 0;
  for (const auto &g : groups) members += g.calls.size();
  auto joined = std::make_shared<JoinedEvent>(members);
  std::vector<Made> tasks;
  tasks.reserve(members);
  for (const auto &g : groups) {
    auto run = std::make_shared<GroupRun>(g.calls.size());
    auto shared = std::make_shared<GroupCall>(g);
    for (size_t r = 0; r < g.calls.size(); ++r) {
      const int d = g.calls[r].device;
      tasks.push_back(make_task(d, {}, "collective", [this, run, shared, r, d, joined] {
        run_group_member(*run, *shared, r, d);
        spmd_status st = SPMD_OK;
        std::string msg;
        run->outcome(st, msg);
        joined->part_done(st, msg);
      }));
    }
  }
  {
    std::lock_guard<std::mutex> order(group_enqueue_mu_);
    for (auto &t : tasks) queue(std::move(t));
  }
  done = joined->event();
  return true;
}

void SimBackend::run_group_member(GroupRun &run, const GroupCall &gc, size_t r, int d) {
  const CollectiveCall &call = gc.calls[r];
  // Its own inputs first (inside the task, so that it always arrives).
  try {
    for (const auto &e : call.after.events()) {
      std::string msg;
      const spmd_status st = e->wait_status(&msg);
      if (st != SPMD_OK) {
        run.fail(st, msg);
        break;
      }
    }
  } catch (...) {
    run.fail(SPMD_ERR_OUT_OF_MEMORY, "out of memory");
  }
  run.arrive();
  Pins pins(*this);
  std::vector<host::HostSlot> slots;
  if (!run.failed()) {
    try {
      const std::string task = cat("device ", d, ": collective");
      slots.resize(gc.slots.size());
      for (size_t m = 0; m < gc.slots.size(); ++m) {
        const CollSlot &s = gc.slots[m];
        const size_t es = dtype_size(gc.calls[m].dtype);
        slots[m] = {host_of(s.in, static_cast<size_t>(shape_elements(s.in_shape)) * es, task, pins),
                    &s.in_shape,
                    host_of(s.out, static_cast<size_t>(shape_elements(gc.calls[m].out_shape)) * es,
                            task, pins)};
      }
    } catch (const Error &e) {
      run.fail(e.status(), e.what());
    } catch (...) {
      run.fail(SPMD_ERR_OUT_OF_MEMORY, "out of memory");
    }
  }
  const int phases = host::phase_count(call, false);
  for (int k = 0; k < phases; ++k) {
    if (!run.failed()) {
      try {
        host::run_phase(call, slots[r].out, host::HostGroup(slots, r), k, false);
      } catch (const Error &e) {
        run.fail(e.status(), e.what());
      } catch (...) {
        run.fail(SPMD_ERR_OUT_OF_MEMORY, "out of memory");
      }
    }
    run.arrive();
  }
}

}  // namespace spmd::sim
