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
  here_[rank] = 1;
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
  const auto deadline = std::chrono::steady_clock::now() + session_.timeout();
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
      left_message_(mesh_->size()) {
  for (size_t p = 0; p < mesh_->size(); ++p) left_[p].store(0);
}

Session::Member Session::member(size_t position, const std::vector<int> &axes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(axes);
  if (it == sets_.end()) {
    const AxisGroups groups = AxisGroups::of(*mesh_, axes);
    GroupSet set;
    for (size_t g = 0; g < groups.members.size(); ++g)
      set.groups.push_back(
          std::make_unique<Group>(*this, GroupIdentity{groups.members[g], axes, g}));
    set.of_position.resize(mesh_->size());
    for (size_t p = 0; p < mesh_->size(); ++p)
      set.of_position[p] = {set.groups[groups.group_of[p]].get(), groups.rank_of[p]};
    it = sets_.emplace(axes, std::move(set)).first;
  }
  return it->second.of_position.at(position);
}

void Session::depart(size_t position, spmd_status status, const std::string &message) {
  // Groups lock themselves before asking departed(), so they are woken
  // after this lock is released (groups live as long as the session).
  std::vector<Group *> groups;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left_status_[position] = status;
    left_message_[position] = message;
    left_[position].store(1, std::memory_order_release);
    for (auto &[axes, set] : sets_)
      for (auto &g : set.groups) groups.push_back(g.get());
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
  for (size_t p = 0; p < mesh_->size(); ++p) {
    left_[p].store(0);
    left_status_[p] = SPMD_OK;
    left_message_[p].clear();
  }
}

}  // namespace spmd
