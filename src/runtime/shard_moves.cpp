#include "runtime/shard_moves.hpp"

#include <memory>
#include <mutex>

#include "base/error.hpp"
#include "dist/transport.hpp"
#include "runtime/rendezvous.hpp"

namespace spmd {

namespace {

BoxCopy box_copy(const Array &src, const ShardMove &m, Place dst_place, const Shape &dst_shape,
                 const Shape &dst_offset) {
  return {{src.buffer(m.src).place(), src.shard(m.src).box.extent(), m.src_offset},
          {dst_place, dst_shape, dst_offset},
          m.extent,
          src.elem_size()};
}

// A block on its way between processes, in host memory of its own.
struct Staged {
  const ShardMove *move;
  int peer;
  std::vector<std::byte> bytes;
  std::unique_ptr<dist::Transfer> transfer;
};

// The processes owning the devices of the two arrays.
std::vector<int> processes_of(const Runtime &rt, const Array &src, const Array &dst) {
  std::vector<int> devices;
  for (const Array *a : {&src, &dst})
    for (const ShardLayout &s : a->shards()) devices.push_back(s.device);
  return rt.processes_of(devices);
}

}  // namespace

void move_shards(const Array &src, Array &dst, const std::vector<ShardMove> &moves,
                 const char *what) {
  // A program learning its ops keeps the moves, to make them again
  // between arrays of its own.
  if (WorkLog *log = note_device_work())
    log->add_rerun(src, dst, [moves, what](const ArrayPtr &x, Array &y) { move_shards(*x, y, moves, what); },
                   WorkLog::Rerun::Copy);
  Runtime &rt = dst.runtime();
  Backend &backend = rt.backend();
  std::vector<BoxCopy> local;
  std::vector<Staged> sends, receives;
  EventList after;
  for (const ShardMove &m : moves) {
    const bool from_here = src.addressable(m.src), to_here = dst.addressable(m.dst);
    if (from_here && to_here) {
      after.add(src.buffer(m.src).before_read());
      local.push_back(box_copy(src, m, dst.buffer(m.dst).place(),
                               dst.shard(m.dst).box.extent(), m.dst_offset));
    } else if (from_here) {
      sends.push_back({&m, rt.process_of(dst.shard(m.dst).device), {}, nullptr});
    } else if (to_here) {
      receives.push_back({&m, rt.process_of(src.shard(m.src).device), {}, nullptr});
    }
  }
  // Every process draws the same tag, whether or not it has moves across,
  // when the two arrays' devices lie in several processes; a call on one
  // process's devices alone draws none (the others need not make it).
  const std::vector<int> processes =
      rt.process_count() > 1 ? processes_of(rt, src, dst) : std::vector<int>{};
  const int tag = processes.size() > 1 ? rt.next_exchange_tag(processes) : 0;

  std::vector<Buffer *> written;
  for (size_t j = 0; j < dst.shard_count(); ++j)
    if (dst.addressable(j)) written.push_back(&dst.buffer(j));
  for (Buffer *b : written) after.add(b->before_write());
  const EventPtr done = local.empty() ? nullptr : backend.copy_boxes(local, after);
  if (done) src.add_read(done);
  if (sends.empty() && receives.empty()) {
    for (Buffer *b : written) b->set_written(done);
    return;
  }

  // Across processes: every receive is posted before any send waits for its
  // data, so two processes sending to each other never wait on each other.
  // Messages between two processes match in the order of `moves`, the same
  // in both (MPI lets no message overtake another of the same tag).
  dist::Transport &transport = *rt.transport();
  const auto deadline = deadline_after(collective_timeout(0, "SPMD_COLLECTIVE_TIMEOUT_MS"));
  const size_t es = src.elem_size();
  EventPtr landed;
  try {
    for (Staged &r : receives) {
      r.bytes.resize(static_cast<size_t>(shape_elements(r.move->extent)) * es);
      r.transfer = transport.receive(r.bytes.data(), r.bytes.size(), r.peer, tag);
    }
    if (!sends.empty()) {
      std::vector<BoxCopy> packs;
      EventList packs_after;
      for (Staged &s : sends) {
        s.bytes.resize(static_cast<size_t>(shape_elements(s.move->extent)) * es);
        packs_after.add(src.buffer(s.move->src).before_read());
        packs.push_back(box_copy(src, *s.move, Place::host(s.bytes.data()), s.move->extent,
                                 Shape(s.move->extent.size(), 0)));
      }
      const EventPtr packed = backend.copy_boxes(packs, packs_after);
      src.add_read(packed);
      if (packed) packed->wait();
      for (Staged &s : sends)
        s.transfer = transport.send(s.bytes.data(), s.bytes.size(), s.peer, tag);
    }
    for (Staged &r : receives) r.transfer->wait(deadline);
    for (Staged &s : sends) s.transfer->wait(deadline);

    // The blocks that came in land after the local copies (they may share a
    // destination shard); the staging is freed on return, so wait for them.
    std::vector<BoxCopy> unpacks;
    for (Staged &r : receives) {
      const ShardMove &m = *r.move;
      unpacks.push_back({{Place::host(r.bytes.data()), m.extent, Shape(m.extent.size(), 0)},
                         {dst.buffer(m.dst).place(), dst.shard(m.dst).box.extent(), m.dst_offset},
                         m.extent,
                         es});
    }
    EventList unpack_after = after;
    if (done) unpack_after.add(done);
    landed = backend.copy_boxes(unpacks, unpack_after);
    if (landed) landed->wait();
  } catch (const Error &e) {
    // A failed receive may leave a destination incomplete: the array is not
    // handed out (the caller made it for this call).
    for (Buffer *b : written) b->set_written(done);
    for (Staged &s : sends) {
      bool finished = s.transfer == nullptr;
      try {
        finished = finished || s.transfer->done();
      } catch (const Error &) {
      }
      if (!finished)
        dist::keep_until_exit(std::make_shared<std::vector<std::byte>>(std::move(s.bytes)));
    }
    fail(e.status(), what, ": moving blocks between processes: ", e.what());
  }
  for (Buffer *b : written) b->set_written(landed ? landed : done);
}

}  // namespace spmd
