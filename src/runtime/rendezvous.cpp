#include "runtime/rendezvous.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/error.hpp"
#include "core/axis_groups.hpp"

namespace spmd {

std::chrono::milliseconds collective_timeout(int64_t timeout_ms, const char *arg) {
  if (timeout_ms < 0) invalid(arg, ": ", timeout_ms, " ms is negative (0 means the default)");
  if (timeout_ms > 0) return std::chrono::milliseconds(timeout_ms);
  if (const char *env = std::getenv("SPMD_COLLECTIVE_TIMEOUT_MS"); env && *env) {
    char *end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (*end != '\0' || v <= 0)
      invalid("SPMD_COLLECTIVE_TIMEOUT_MS='", env, "': expected a positive number of ms");
    return std::chrono::milliseconds(v);
  }
  return std::chrono::milliseconds(60000);
}

std::chrono::steady_clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto now = clock::now();
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(clock::time_point::max() - now);
  if (timeout >= room) return clock::time_point::max();
  return now + timeout;
}

// ---- Group ----

namespace {
// How long an arriving member yields its core to its peers before it
// blocks on the condition variable.
constexpr std::chrono::microseconds kYieldWait{50};
}  // namespace

Group::Group(Session &session, GroupIdentity identity)
    : session_(session), identity_(std::move(identity)), here_(size(), 0), exchanges_(size(), 0),
      slots_{std::vector<CollSlot>(size()), std::vector<CollSlot>(size())},
      signatures_{std::vector<std::string>(size()), std::vector<std::string>(size())},
      storage_{std::vector<std::vector<unsigned char>>(size()),
               std::vector<std::vector<unsigned char>>(size())},
      storage_uses_(size(), 0) {}

void *Group::member_storage(size_t rank, size_t bytes) {
  auto &buf = storage_[storage_uses_[rank]++ & 1][rank];
  if (buf.size() < bytes) buf.resize(bytes);
  return buf.data();
}

std::string Group::device_list(bool missing_only) const {
  std::string s;
  for (size_t r = 0; r < identity_.devices.size(); ++r) {
    if (missing_only && here_[r]) continue;
    s += cat(s.empty() ? "" : ", ", identity_.devices[r]);
  }
  return s;
}

void Group::break_locked(spmd_status status, std::string message) {
  broken_ = true;
  published_broken_.store(true, std::memory_order_release);
  status_ = status;
  message_ = std::move(message);
  session_.mark_broken();
  cv_.notify_all();
  throw Error(status_, message_);
}

void Group::break_with(spmd_status status, const std::string &message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_) return;
  broken_ = true;
  published_broken_.store(true, std::memory_order_release);
  status_ = status;
  message_ = message;
  session_.mark_broken();
  cv_.notify_all();
}

void Group::wake() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

void Group::arrive(std::unique_lock<std::mutex> &lock, size_t rank, const std::string &what) {
  const uint64_t mine = generation_;
  const int device = identity_.devices[rank];
  here_[rank] = 1;
  if (blocked_) session_.arrived(*this, device);
  if (++arrived_ == identity_.devices.size()) {
    arrived_ = 0;
    std::fill(here_.begin(), here_.end(), 0);
    ++generation_;
    published_generation_.store(generation_, std::memory_order_release);
    cv_.notify_all();
    return;
  }
  // Peers usually arrive within microseconds; while they do, give them the
  // core (yield, no busy spinning) instead of paying a sleep and a wake-up.
  // Bounded: after kYieldWait the member blocks on the condition variable.
  {
    lock.unlock();
    const auto until = std::chrono::steady_clock::now() + kYieldWait;
    for (int i = 0;; ++i) {
      if (published_generation_.load(std::memory_order_acquire) != mine ||
          published_broken_.load(std::memory_order_acquire))
        break;
      if ((i & 7) == 7 && std::chrono::steady_clock::now() >= until) break;
      std::this_thread::yield();
    }
    lock.lock();
    if (generation_ != mine) return;
  }
  if (broken_) throw Error(status_, message_);
  // About to block: devices that wait for each other in different
  // collectives would only ever meet the timeout.
  std::vector<int> missing;
  for (size_t r = 0; r < identity_.devices.size(); ++r)
    if (!here_[r]) missing.push_back(identity_.devices[r]);
  std::optional<Session::Deadlock> deadlock = session_.start_waiting(device, *this, what, missing);
  ++blocked_;
  struct StopWaiting {
    Group &g;
    int device;
    ~StopWaiting() {
      --g.blocked_;
      g.session_.stop_waiting(device);
    }
  } stop_waiting{*this, device};
  if (deadlock) {
    // Other groups are broken without this one's lock held (each takes its
    // own), then this one.
    lock.unlock();
    for (Group *g : deadlock->groups)
      if (g != this) g->break_with(SPMD_ERR_INVALID_ARGUMENT, deadlock->message);
    lock.lock();
    if (broken_) throw Error(status_, message_);
    break_locked(SPMD_ERR_INVALID_ARGUMENT, deadlock->message);
  }
  const auto deadline = deadline_after(session_.timeout());
  for (;;) {
    if (generation_ != mine) return;
    if (broken_) throw Error(status_, message_);
    // A missing member that has left its callback will never come.
    for (size_t r = 0; r < identity_.devices.size(); ++r) {
      if (here_[r]) continue;
      spmd_status st;
      std::string msg;
      if (!session_.departed(identity_.devices[r], st, msg)) continue;
      if (st == SPMD_OK)
        break_locked(SPMD_ERR_TIMEOUT,
                     cat(what, ": device ", identity_.devices[r],
                         " returned from its callback without reaching it (group: devices ",
                         device_list(false), ")"));
      break_locked(st, cat(what, ": device ", identity_.devices[r], " failed before reaching it: ", msg));
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && generation_ == mine &&
        !broken_) {
      const auto ms = session_.timeout().count();
      break_locked(SPMD_ERR_TIMEOUT,
                   cat(what, ": timed out after ", ms, " ms waiting for device(s) ",
                       device_list(true), " (group: devices ", device_list(false),
                       "); they never reached it"));
    }
  }
}

void Group::exchange(size_t rank, CollSlot slot, std::string signature, const std::string &what) {
  std::unique_lock<std::mutex> lock(mu_);
  if (broken_) throw Error(status_, message_);
  const size_t table = exchanges_[rank]++ & 1;
  slots_[table][rank] = std::move(slot);
  signatures_[table][rank] = std::move(signature);
  arrive(lock, rank, what);
}

void Group::barrier(size_t rank, const std::string &what) {
  std::unique_lock<std::mutex> lock(mu_);
  if (broken_) throw Error(status_, message_);
  arrive(lock, rank, what);
}

// ---- Session ----

Session::Session(std::shared_ptr<const Mesh> mesh, std::chrono::milliseconds timeout)
    : mesh_(std::move(mesh)), timeout_(timeout),
      left_(new std::atomic<int>[mesh_->size()]), left_status_(mesh_->size(), SPMD_OK),
      left_message_(mesh_->size()), waiting_(mesh_->size()), to_wake_(mesh_->size()) {
  for (size_t p = 0; p < mesh_->size(); ++p) left_[p].store(0);
}

Session::GroupSet &Session::set_of(const std::vector<int> &axes) {
  auto it = sets_.find(axes);
  if (it != sets_.end()) return it->second;
  // axes {-1}: every device of this process, one group.
  const bool process = axes.size() == 1 && axes[0] == -1;
  AxisGroups groups;
  if (process) {
    groups.members.emplace_back(mesh_->devices().begin(), mesh_->devices().end());
    groups.group_of.assign(mesh_->size(), 0);
    for (size_t p = 0; p < mesh_->size(); ++p) groups.rank_of.push_back(p);
  } else {
    groups = AxisGroups::of(*mesh_, axes);
  }
  const DeviceSet *devices = mesh_->device_set().get();
  GroupSet set;
  std::vector<std::vector<size_t>> local_rank(groups.members.size());
  for (size_t g = 0; g < groups.members.size(); ++g) {
    set.global.push_back(GroupIdentity{groups.members[g], axes, g});
    std::vector<int> here;
    for (int d : groups.members[g]) {
      local_rank[g].push_back(here.size());
      if (devices == nullptr || devices->is_local(d)) here.push_back(d);
    }
    set.across = set.across || (!here.empty() && here.size() != groups.members[g].size());
    std::unique_ptr<Group> group;
    if (!here.empty()) {
      GroupIdentity identity{std::move(here), axes, g};
      group = std::make_unique<Group>(*this, std::move(identity));
    }
    set.groups.push_back(std::move(group));
  }
  set.of_position.resize(mesh_->size());
  for (size_t p = 0; p < mesh_->size(); ++p) {
    const size_t g = groups.group_of[p], r = groups.rank_of[p];
    set.of_position[p] = {set.groups[g].get(), local_rank[g][r], nullptr, r};
  }
  // Room for depart() to list every group without allocating. A device
  // that has departed reads its list after the lock is released, and
  // departs only once a run, so its list is left alone. Everything that
  // can fail comes before the groups are listed, so a failure lists none.
  all_groups_.reserve(all_groups_.size() + set.groups.size());
  for (size_t p = 0; p < to_wake_.size(); ++p)
    if (left_[p].load(std::memory_order_relaxed) == 0)
      to_wake_[p].reserve(all_groups_.size() + set.groups.size());
  it = sets_.emplace(axes, std::move(set)).first;
  for (auto &g : it->second.groups)
    if (g) all_groups_.push_back(g.get());
  // The identities' addresses are final once the set is in the map.
  for (size_t p = 0; p < mesh_->size(); ++p)
    it->second.of_position[p].global = &it->second.global[groups.group_of[p]];
  return it->second;
}

Session::Member Session::member(size_t position, const std::vector<int> &axes) {
  std::lock_guard<std::mutex> lock(mu_);
  return set_of(axes).of_position.at(position);
}

bool Session::spans_processes(const std::vector<int> &axes) {
  std::lock_guard<std::mutex> lock(mu_);
  return set_of(axes).across;
}

Session::Member Session::process_member(size_t position) {
  std::lock_guard<std::mutex> lock(mu_);
  return set_of({-1}).of_position.at(position);
}

std::optional<Session::Deadlock> Session::start_waiting(int device, Group &group,
                                                        const std::string &call,
                                                        const std::vector<int> &missing) {
  std::lock_guard<std::mutex> lock(mu_);
  const int me = mesh_->position_of(device);
  waiting_[static_cast<size_t>(me)] = Waiting{&group, call, missing};
  // Depth-first from this device along "waits for" edges between waiting
  // devices; any cycle now runs through it (an older one was reported by
  // whoever closed it).
  std::vector<int> path{me};
  std::vector<char> seen(mesh_->size(), 0);
  seen[static_cast<size_t>(me)] = 1;
  std::vector<size_t> next{0};
  while (!path.empty()) {
    const Waiting &w = *waiting_[static_cast<size_t>(path.back())];
    if (next.back() == w.for_devices.size()) {
      path.pop_back();
      next.pop_back();
      continue;
    }
    const int q = mesh_->position_of(w.for_devices[next.back()++]);
    if (q < 0 || !waiting_[static_cast<size_t>(q)]) continue;
    if (q == me) {
      Deadlock d;
      d.message = "devices wait for each other in different collectives";
      for (int p : path) {
        const Waiting &pw = *waiting_[static_cast<size_t>(p)];
        std::string members;
        for (int d : pw.group->devices()) members += cat(members.empty() ? "" : ", ", d);
        d.message += cat(d.groups.empty() ? ": " : "; ", "device ",
                         mesh_->devices()[static_cast<size_t>(p)], " waits in ", pw.call,
                         " (group: devices ", members, ")");
        d.groups.push_back(pw.group);
      }
      d.message += " (every device of a group must make the same collective calls in the same order)";
      return d;
    }
    if (seen[static_cast<size_t>(q)]) continue;
    seen[static_cast<size_t>(q)] = 1;
    path.push_back(q);
    next.push_back(0);
  }
  return std::nullopt;
}

void Session::stop_waiting(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  waiting_[static_cast<size_t>(mesh_->position_of(device))].reset();
}

void Session::arrived(Group &group, int device) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto &w : waiting_)
    if (w && w->group == &group)
      w->for_devices.erase(std::remove(w->for_devices.begin(), w->for_devices.end(), device),
                           w->for_devices.end());
}

void Session::depart(size_t position, spmd_status status, const std::string &message) noexcept {
  // Groups lock themselves before asking departed(), so they are woken
  // after this lock is released (groups live as long as the session).
  // Nothing here may fail: a departure nobody hears of is a hang. The
  // list of groups to wake has its room reserved when groups are made.
  std::vector<Group *> &groups = to_wake_[position];
  {
    std::lock_guard<std::mutex> lock(mu_);
    left_status_[position] = status;
    try {
      left_message_[position] = message;
    } catch (const std::bad_alloc &) {
      left_message_[position].clear();  // the status still says what happened
    }
    left_[position].store(1, std::memory_order_release);
    groups.assign(all_groups_.begin(), all_groups_.end());
  }
  for (Group *g : groups) g->wake();
}

bool Session::departed(int device, spmd_status &status, std::string &message) const {
  const int p = mesh_->position_of(device);
  if (p < 0 || left_[static_cast<size_t>(p)].load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  status = left_status_[static_cast<size_t>(p)];
  message = left_message_[static_cast<size_t>(p)];
  return true;
}

void Session::reset_departures() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto &w : to_wake_) w.reserve(all_groups_.size());
  for (size_t p = 0; p < mesh_->size(); ++p) {
    left_[p].store(0);
    left_status_[p] = SPMD_OK;
    left_message_[p].clear();
  }
}

}  // namespace spmd
