#include "exec/across_processes.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "backend/host/collective_phases.hpp"
#include "backend/host/reduce.hpp"
#include "base/checked.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "dist/transport.hpp"
#include "spmd/sharding.h"

namespace spmd::across {

namespace {

constexpr size_t kNone = static_cast<size_t>(-1);
constexpr size_t kAlign = 64;

size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

uint64_t fnv1a(const std::string &text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// What travels ahead of each block.
struct Head {
  uint64_t signature;
  uint64_t ndim;
  int64_t dims[SPMD_MAX_NDIM];
};

// A block's entry in the storage's table of its group.
struct Entry {
  uint64_t ndim;
  int64_t dims[SPMD_MAX_NDIM];
  uint64_t address;  // in the storage, or a local device's own block
};

Head head_of(const LocalMember &m) {
  Head h{};
  h.signature = fnv1a(*m.signature);
  h.ndim = m.shape.size();
  for (size_t k = 0; k < m.shape.size(); ++k) h.dims[k] = m.shape[k];
  return h;
}

Shape shape_of(uint64_t ndim, const int64_t *dims) { return Shape(dims, dims + ndim); }

// One group of the collective with members here: where each rank's block
// comes from.
struct GroupPlan {
  const GroupIdentity *identity;
  std::vector<size_t> local;  // per rank: index in locals, or kNone
  std::vector<int> process;   // per rank
};

// What goes to one other process: a header per block, then each block
// (or partial result) as a message of its own, read where it lies.
struct Peer {
  std::vector<Head> heads;
  std::vector<std::pair<const std::byte *, size_t>> blocks;
};

}  // namespace

bool reads_in_place(const Runtime &rt) {
  // Only the CPU platform's device memory is host memory; a GPU's device
  // memory (which CUDA callbacks may also be given) is not.
  return rt.platform() == SPMD_PLATFORM_CPU;
}

namespace {

// The blocks process p sends, in order, from its headers: one per member
// of p in each group shared with it, or one per group when combining.
std::vector<Block> incoming_blocks(const std::map<size_t, GroupPlan> &groups,
                                   const std::vector<Head> &heads, int p, bool combined) {
  std::vector<Block> blocks;
  size_t h = 0;
  for (const auto &[index, plan] : groups) {
    size_t members = 0;
    for (int q : plan.process) members += q == p;
    if (members == 0) continue;
    if (h + members > heads.size())
      fail(SPMD_ERR_INTERNAL, "process ", p, " sent fewer headers than it has members");
    if (combined) {
      blocks.push_back({nullptr, shape_of(heads[h].ndim, heads[h].dims)});
    } else {
      for (size_t k = 0; k < members; ++k)
        blocks.push_back({nullptr, shape_of(heads[h + k].ndim, heads[h + k].dims)});
    }
    h += members;
  }
  return blocks;
}

// "2 and 3": the devices of process p in the groups of this collective.
std::string devices_of(const Runtime &rt, const std::map<size_t, GroupPlan> &groups, int p) {
  std::vector<int> devices;
  for (const auto &[index, plan] : groups)
    for (int d : plan.identity->devices)
      if (rt.process_of(d) == p && std::find(devices.begin(), devices.end(), d) == devices.end())
        devices.push_back(d);
  std::sort(devices.begin(), devices.end());
  std::string text;
  for (size_t i = 0; i < devices.size(); ++i)
    text += cat(i == 0 ? "" : i + 1 == devices.size() ? " and " : ", ", devices[i]);
  return text;
}

constexpr size_t kSignatureText = 160;

// Every member elsewhere must call what the members here call. Where a
// process's hashes differ, the two exchange their calls' texts (both see
// the difference, so both do), and the error names both calls.
void check_signatures(const Runtime &rt, dist::Transport &transport,
                      const std::map<size_t, GroupPlan> &groups,
                      const std::vector<LocalMember> &locals,
                      const std::map<int, std::vector<Head>> &in_heads,
                      const std::map<int, Peer> &peers, int tag,
                      std::chrono::steady_clock::time_point deadline) {
  struct Mismatch {
    int device;    // elsewhere
    int process;
    size_t order;  // its place among what that process sent
    const LocalMember *here;
  };
  std::vector<Mismatch> mismatches;
  std::map<int, size_t> cursor;
  for (const auto &[index, plan] : groups) {
    const LocalMember &here = locals[*std::find_if(plan.local.begin(), plan.local.end(),
                                                   [](size_t i) { return i != kNone; })];
    const uint64_t sig = fnv1a(*here.signature);
    for (size_t r = 0; r < plan.local.size(); ++r) {
      if (plan.local[r] != kNone) continue;
      const int p = plan.process[r];
      const size_t order = cursor[p]++;
      if (in_heads.at(p)[order].signature != sig)
        mismatches.push_back({plan.identity->devices[r], p, order, &here});
    }
  }
  if (mismatches.empty()) return;
  // The texts, with each process that differs: one per block sent to it.
  std::map<int, std::vector<char>> out_text, in_text;
  for (const Mismatch &m : mismatches) {
    if (out_text.count(m.process)) continue;
    const Peer &peer = peers.at(m.process);
    std::vector<char> &text = out_text[m.process];
    text.assign(peer.heads.size() * kSignatureText, '\0');
    // The devices here agree (checked before), so one text serves all.
    for (size_t k = 0; k < peer.heads.size(); ++k)
      std::snprintf(text.data() + k * kSignatureText, kSignatureText, "%s",
                    m.here->signature->c_str());
    in_text[m.process].assign(in_heads.at(m.process).size() * kSignatureText, '\0');
  }
  std::vector<std::unique_ptr<dist::Transfer>> transfers;
  // On a tag of their own, half the tag space away: the blocks, already on
  // their way under `tag`, stay unread.
  const int text_tag = static_cast<int>(
      (static_cast<int64_t>(tag) + (static_cast<int64_t>(transport.max_tag()) + 1) / 2) %
      (static_cast<int64_t>(transport.max_tag()) + 1));
  for (auto &[p, text] : in_text)
    transfers.push_back(transport.receive(text.data(), text.size(), p, text_tag));
  for (auto &[p, text] : out_text)
    transfers.push_back(transport.send(text.data(), text.size(), p, text_tag));
  for (auto &t : transfers) t->wait(deadline);
  const Mismatch &m = mismatches.front();
  const char *theirs = in_text[m.process].data() + m.order * kSignatureText;
  invalid("the devices of the group disagree: device ", m.device, " of process ", m.process,
          " calls ", std::string(theirs, strnlen(theirs, kSignatureText)), " but device ",
          m.here->group->devices[m.here->rank], " of this process (", rt.process_index(),
          ") calls ", *m.here->signature);
}

}  // namespace

void *exchange(Runtime &rt, const std::vector<int> &processes,
               const std::vector<LocalMember> &locals, size_t es,
               std::chrono::steady_clock::time_point deadline, const std::string &what,
               const std::function<void *(size_t)> &storage, const Combine *combine) {
  dist::Transport &transport = *rt.transport();
  const int me = rt.process_index();
  const int tag = rt.next_exchange_tag(processes);
  const bool direct = reads_in_place(rt);

  // This process's blocks in host memory: in place where device memory is
  // host memory, else staged.
  auto staged = std::make_shared<std::vector<std::vector<std::byte>>>(locals.size());
  std::vector<const std::byte *> mine(locals.size());
  std::vector<BoxCopy> stage;
  for (size_t i = 0; i < locals.size(); ++i) {
    const int64_t n = shape_elements(locals[i].shape);
    if (direct) {
      mine[i] = reinterpret_cast<const std::byte *>(locals[i].in.ptr.bits);
      continue;
    }
    (*staged)[i].resize(static_cast<size_t>(n) * es);
    mine[i] = (*staged)[i].data();
    if (n == 0) continue;
    const Shape origin(locals[i].shape.size(), 0);
    stage.push_back({{locals[i].in, locals[i].shape, origin},
                     {Place::host((*staged)[i].data()), locals[i].shape, origin},
                     locals[i].shape,
                     es});
  }
  if (const EventPtr done = rt.backend().copy_boxes(stage, {})) done->wait();

  // The groups in order of their index: every process walks them alike.
  std::map<size_t, GroupPlan> groups;
  for (size_t i = 0; i < locals.size(); ++i) {
    const GroupIdentity &g = *locals[i].group;
    auto [it, fresh] = groups.try_emplace(g.index);
    if (fresh) {
      it->second.identity = &g;
      it->second.local.assign(g.devices.size(), kNone);
      for (int d : g.devices) it->second.process.push_back(rt.process_of(d));
    }
    it->second.local.at(locals[i].rank) = i;
  }

  // Combining: this process's partial result of each group, its members'
  // blocks reduced in rank order (their shapes agree: the signatures say so).
  auto partial = std::make_shared<std::map<size_t, std::vector<std::byte>>>();
  if (combine)
    for (auto &[index, plan] : groups) {
      std::vector<const void *> srcs;
      size_t count = 0;
      for (size_t i : plan.local)
        if (i != kNone) {
          srcs.push_back(mine[i]);
          count = static_cast<size_t>(shape_elements(locals[i].shape));
        }
      std::vector<std::byte> &out = (*partial)[index];
      out.resize(count * es);
      if (count)
        host::reduce_buffers(combine->dtype, combine->op, out.data(), srcs.data(), srcs.size(),
                             count);
    }

  // What goes to each other process: a header per member of this process
  // in every group it shares with it, and their blocks (or the group's
  // partial result); what comes from it, counted alike.
  std::map<int, Peer> peers;
  std::map<int, size_t> expected;
  for (auto &[index, plan] : groups) {
    std::map<int, bool> in_group;
    for (int p : plan.process)
      if (p != me) in_group[p] = true;
    for (auto &[p, unused] : in_group) {
      Peer &peer = peers[p];
      for (size_t r = 0; r < plan.local.size(); ++r) {
        if (plan.process[r] == p) ++expected[p];
        const size_t i = plan.local[r];
        if (i == kNone) continue;
        peer.heads.push_back(head_of(locals[i]));
        if (!combine)
          peer.blocks.emplace_back(
              mine[i], static_cast<size_t>(shape_elements(locals[i].shape)) * es);
      }
      if (combine) peer.blocks.emplace_back((*partial)[index].data(), (*partial)[index].size());
    }
  }

  // Headers first everywhere, then the blocks, whose sizes the headers
  // give: they land in the storage, which the headers size.
  std::map<int, std::vector<Head>> in_heads;
  std::vector<std::pair<int, std::unique_ptr<dist::Transfer>>> receives;
  std::vector<std::unique_ptr<dist::Transfer>> sends;
  auto wait_all = [&] {
    for (auto &[p, r] : receives) {
      try {
        r->wait(deadline);
      } catch (const Error &e) {
        if (e.status() != SPMD_ERR_TIMEOUT) throw;
        fail(SPMD_ERR_TIMEOUT, "process ", p, " (devices ", devices_of(rt, groups, p),
             ") did not take part before the collective timeout (", e.what(), ")");
      }
    }
    receives.clear();
  };
  std::byte *base = nullptr;
  try {
    for (auto &[p, n] : expected) {
      in_heads[p].resize(n);
      receives.emplace_back(p, transport.receive(in_heads[p].data(), n * sizeof(Head), p, tag));
    }
    for (auto &[p, peer] : peers) {
      sends.push_back(transport.send(peer.heads.data(), peer.heads.size() * sizeof(Head), p, tag));
      for (const auto &[data, bytes] : peer.blocks) sends.push_back(transport.send(data, bytes, p, tag));
    }
    wait_all();
    for (auto &[p, heads] : in_heads)
      for (const Head &h : heads)
        if (h.ndim > SPMD_MAX_NDIM)
          fail(SPMD_ERR_INTERNAL, "process ", p, " sent a block header of ", h.ndim, " dimensions");
    check_signatures(rt, transport, groups, locals, in_heads, peers, tag, deadline);

    // Each group's blocks in table order: a member's block, or with
    // `combine` a process's partial result, per entry.
    struct Source {
      Shape shape;
      const std::byte *here;  // this process's, or null: it comes from `from`
      int from;
    };
    std::map<size_t, std::vector<Source>> tables;
    std::map<int, std::vector<Block>> incoming;
    std::map<int, size_t> next;
    for (auto &[p, heads] : in_heads) incoming[p] = incoming_blocks(groups, heads, p, combine != nullptr);
    for (auto &[index, plan] : groups) {
      std::vector<Source> &t = tables[index];
      std::map<int, bool> seen;
      for (size_t r = 0; r < plan.local.size(); ++r) {
        const int p = plan.process[r];
        if (combine && seen[p]) continue;
        seen[p] = true;
        if (p == me) {
          const size_t i = plan.local[r];
          t.push_back({locals[i].shape, combine ? (*partial)[index].data() : mine[i], me});
        } else {
          t.push_back({incoming[p][next[p]++].shape, nullptr, p});
        }
      }
    }

    // The layout: a table offset per local member, a table per group, then
    // the blocks that are not read in place (those of other processes,
    // partial results, staged blocks). With `combine`, one more block per
    // group: the reduction of the partials, which the table then lists
    // alone.
    const bool in_place = direct && !combine;
    size_t bytes = sizeof(uint64_t) * (1 + locals.size());
    std::map<size_t, size_t> table_at;
    for (auto &[index, t] : tables) {
      table_at[index] = bytes;
      bytes += sizeof(uint64_t) + t.size() * sizeof(Entry);
    }
    bytes = aligned(bytes);
    const size_t tables_end = bytes;
    for (auto &[index, t] : tables) {
      for (const Source &src : t)
        if (!(src.here && in_place))
          bytes += aligned(static_cast<size_t>(shape_elements(src.shape)) * es);
      if (combine) bytes += aligned(static_cast<size_t>(shape_elements(t[0].shape)) * es);
    }
    base = static_cast<std::byte *>(storage(bytes));
    auto *offsets = reinterpret_cast<uint64_t *>(base);
    offsets[0] = locals.size();
    for (size_t i = 0; i < locals.size(); ++i) offsets[1 + i] = table_at[locals[i].group->index];
    size_t data_at = tables_end;
    std::map<size_t, std::vector<Entry>> entries;
    for (auto &[index, t] : tables)
      for (const Source &src : t) {
        const size_t block = static_cast<size_t>(shape_elements(src.shape)) * es;
        Entry e{};
        e.ndim = src.shape.size();
        for (size_t k = 0; k < src.shape.size(); ++k) e.dims[k] = src.shape[k];
        if (src.here && in_place) {
          e.address = reinterpret_cast<uint64_t>(src.here);
        } else {
          e.address = reinterpret_cast<uint64_t>(base + data_at);
          if (src.here) {
            if (block) std::memcpy(base + data_at, src.here, block);
          } else {
            receives.emplace_back(src.from, transport.receive(base + data_at, block, src.from, tag));
          }
          data_at += aligned(block);
        }
        entries[index].push_back(e);
      }
    wait_all();
    for (auto &s : sends) s->wait(deadline);
    sends.clear();

    for (auto &[index, t] : tables) {
      std::vector<Entry> &list = entries[index];
      if (combine) {
        // Reduced once here for every device of the process.
        std::vector<const void *> srcs;
        for (const Entry &e : list) srcs.push_back(reinterpret_cast<const void *>(e.address));
        Entry total = list[0];
        total.address = reinterpret_cast<uint64_t>(base + data_at);
        const size_t count = static_cast<size_t>(shape_elements(t[0].shape));
        if (count)
          host::reduce_buffers(combine->dtype, combine->op, base + data_at, srcs.data(),
                               srcs.size(), count);
        data_at += aligned(count * es);
        list.assign(1, total);
      }
      std::byte *table = base + table_at[index];
      const uint64_t n = list.size();
      std::memcpy(table, &n, sizeof n);
      std::memcpy(table + sizeof(uint64_t), list.data(), list.size() * sizeof(Entry));
    }
  } catch (const Error &e) {
    // The messages are abandoned; what they may still read stays alive.
    dist::keep_until_exit(staged);
    dist::keep_until_exit(partial);
    dist::keep_until_exit(std::make_shared<std::map<int, Peer>>(std::move(peers)));
    fail(e.status(), what, ": ", e.what());
  }
  return base;
}

std::vector<Block> group_blocks(const void *storage, size_t index) {
  const auto *base = static_cast<const std::byte *>(storage);
  const auto *offsets = reinterpret_cast<const uint64_t *>(base);
  if (index >= offsets[0]) fail(SPMD_ERR_INTERNAL, "group_blocks: no local member ", index);
  const std::byte *table = base + offsets[1 + index];
  uint64_t n = 0;
  std::memcpy(&n, table, sizeof n);
  const auto *entries = reinterpret_cast<const Entry *>(table + sizeof(uint64_t));
  std::vector<Block> blocks;
  blocks.reserve(n);
  for (size_t r = 0; r < n; ++r)
    blocks.push_back({reinterpret_cast<const void *>(entries[r].address),
                      shape_of(entries[r].ndim, entries[r].dims)});
  return blocks;
}

void compute(const CollectiveCall &call, const std::vector<Block> &blocks, size_t rank,
             void *out) {
  std::vector<host::HostSlot> slots(blocks.size());
  for (size_t r = 0; r < blocks.size(); ++r) {
    slots[r].in = shape_elements(blocks[r].shape) ? blocks[r].data : nullptr;
    slots[r].in_shape = &blocks[r].shape;
  }
  host::run_phase(call, out, host::HostGroup(slots, rank), 0, /*reduce_whole=*/true);
}

void write_result(Runtime &rt, const CollectiveCall &call, const std::vector<Block> &blocks,
                  size_t rank, Buffer &out) {
  const size_t es = dtype_size(call.dtype);
  const size_t bytes = static_cast<size_t>(shape_elements(call.out_shape)) * es;
  EventPtr done;
  if (bytes && reads_in_place(rt)) {
    out.before_write().wait();
    compute(call, blocks, rank, reinterpret_cast<void *>(out.place().ptr.bits));
  } else if (bytes) {
    std::vector<std::byte> result(bytes);
    compute(call, blocks, rank, result.data());
    const Shape origin(call.out_shape.size(), 0);
    const BoxCopy copy{{Place::host(result.data()), call.out_shape, origin},
                       {out.place(), call.out_shape, origin},
                       call.out_shape,
                       es};
    done = rt.backend().copy_boxes({&copy, 1}, out.before_write());
    if (done) done->wait();  // the result's host memory is freed on return
  }
  out.set_written(done);
}

}  // namespace spmd::across
