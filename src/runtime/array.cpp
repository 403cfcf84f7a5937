#include "runtime/array.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "backend/host/copy.hpp"
#include "base/checked.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/redistribute.hpp"
#include "runtime/rendezvous.hpp"
#include "runtime/shard_moves.hpp"

namespace spmd {

Array::Array(ShardingPtr sharding, spmd_dtype dtype, Shape shape)
    : Array(std::move(sharding), dtype, std::move(shape), Adopt{}) {
  if (const auto &r = RecordingScope::current_owner()) {
    abstract_ = true;
    recording_ = r;
    buffers_.assign(shards_->size(), nullptr);
    return;
  }
  buffers_.reserve(shards_->size());
  const auto &backend = runtime_->backend_ptr();
  for (const auto &s : *shards_)
    buffers_.push_back(runtime_->is_local(s.device)
                           ? std::make_shared<Buffer>(
                                 backend, s.device,
                                 static_cast<size_t>(s.box.elements()) * elem_size_)
                           : nullptr);
}

Array::Array(ShardingPtr sharding, spmd_dtype dtype, Shape shape, Adopt)
    : sharding_(std::move(sharding)), runtime_(&Runtime::of(*sharding_)), dtype_(dtype),
      elem_size_(dtype_size(dtype)), shape_(std::move(shape)),
      nbytes_(byte_size("shape", shape_, dtype)) {
  shards_ = sharding_->shared_layout(shape_);
}

ArrayPtr Array::from_buffers(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                             std::vector<BufferPtr> buffers) {
  ArrayPtr a(new Array(std::move(sharding), dtype, std::move(shape), Adopt{}));
  if (buffers.size() != a->shards_->size())
    fail(SPMD_ERR_INTERNAL, "from_buffers: ", buffers.size(), " buffers for ", a->shards_->size(),
         " shards");
  // The buffers of an abstract value (none) while recording: another view
  // of the value, abstract too.
  if (const auto &r = RecordingScope::current_owner();
      r && std::all_of(buffers.begin(), buffers.end(), [](const BufferPtr &b) { return !b; })) {
    a->abstract_ = true;
    a->recording_ = r;
    a->buffers_ = std::move(buffers);
    return a;
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    if (!a->runtime_->is_local(a->shards()[i].device) ? buffers[i] != nullptr
        : !buffers[i] || buffers[i]->bytes() != a->shard_bytes(i) ||
        buffers[i]->device() != a->shards()[i].device ||
        buffers[i]->kind() != MemoryKind::Device)
      fail(SPMD_ERR_INTERNAL, "from_buffers: buffer ", i, " does not fit shard ", i);
  a->buffers_ = std::move(buffers);
  return a;
}

size_t Array::shard_bytes(size_t i) const {
  return static_cast<size_t>(shards_->at(i).box.elements()) * elem_size_;
}

namespace {
void check_nbytes(const char *what, size_t given, size_t expected, const std::string &of) {
  if (given != expected)
    invalid(what, ": ", given, " bytes given, ", of, " needs exactly ", expected);
}

std::string describe(spmd_dtype dtype, const Shape &shape) {
  return cat(dtype_name(dtype), shape_to_string(shape));
}

// numpy's index of a box: "[0:4, 2:4]".
std::string box_text(const Box &box) {
  std::string text = "[";
  for (size_t k = 0; k < box.ndim(); ++k)
    text += cat(k ? ", " : "", box.start[k], ":", box.stop[k]);
  return text + "]";
}
}  // namespace

EventList Array::before_read() const {
  EventList e;
  for (const auto &b : buffers_)
    if (b) e.add(b->before_read());
  return e;
}

void Array::add_read(const EventPtr &done) const noexcept {
  if (!done) return;
  for (const auto &b : buffers_)
    if (b) b->add_read(done);
}

bool Array::viewed_externally() const {
  for (const auto &b : buffers_)
    if (b && b->viewed_externally()) return true;
  return false;
}

bool Array::shares_buffers() const {
  for (const auto &b : buffers_)
    if (b && array_holders(b) > 1) return true;
  return false;
}

bool Array::fully_addressable() const {
  for (const auto &b : buffers_)
    if (!b) return false;
  return true;
}

void Array::write_shards(std::vector<std::pair<size_t, Kernel>> writes) {
  note_device_work();
  if (writes.empty()) return;
  EventList after;
  std::vector<Kernel> kernels;
  kernels.reserve(writes.size());
  for (auto &[i, k] : writes) {
    after.add(buffers_.at(i)->before_write());
    kernels.push_back(std::move(k));
  }
  Backend &backend = runtime_->backend();
  const EventPtr done = backend.launch(kernels, after);
  for (size_t k = 0; k < writes.size(); ++k)
    buffers_[writes[k].first]->set_written(backend.part_on(done, kernels[k].device));
}

ArrayPtr Array::from_host(ShardingPtr sharding, spmd_dtype dtype, Shape shape, const void *data,
                          size_t nbytes) {
  sharding->check_rank(shape);
  const size_t expected = byte_size("shape", shape, dtype);
  check_nbytes("nbytes", nbytes, expected, describe(dtype, shape));
  if (data == nullptr && expected > 0) invalid("data: NULL host buffer for ", expected, " bytes");
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  a->write_from_host(data, Box{Shape(a->shape_.size(), 0), a->shape_});
  return a;
}

void Array::write_from_host(const void *data, const Box &part) {
  const Shape extent = part.extent();
  std::vector<BoxCopy> copies;
  for (size_t i = 0; i < shards_->size(); ++i) {
    const ShardLayout &s = (*shards_)[i];
    if (s.box.empty() || !addressable(i)) continue;
    Shape at(s.box.ndim());
    for (size_t k = 0; k < at.size(); ++k) at[k] = s.box.start[k] - part.start[k];
    copies.push_back({{Place::host(data), extent, at},
                      {buffers_[i]->place(), s.box.extent(), Shape(s.box.ndim(), 0)},
                      s.box.extent(),
                      elem_size_});
  }
  const EventPtr done = runtime_->backend().copy_boxes(copies, {});
  for (const auto &b : buffers_)
    if (b) b->set_written(done);
  // The caller may reuse its buffer as soon as this returns.
  if (done) done->wait();
}

Box Array::local_part(const Sharding &sharding, const Shape &shape) {
  const Runtime &rt = Runtime::of(sharding);
  const std::vector<ShardLayout> layout = sharding.layout(shape);
  Box part;
  std::vector<const Box *> blocks;
  for (const ShardLayout &s : layout) {
    if (!rt.is_local(s.device)) continue;
    bool seen = false;
    for (const Box *b : blocks) seen = seen || *b == s.box;
    if (seen) continue;
    blocks.push_back(&s.box);
    if (part.ndim() == 0 && blocks.size() == 1) {
      part = s.box;
      continue;
    }
    for (size_t k = 0; k < shape.size(); ++k) {
      part.start[k] = std::min(part.start[k], s.box.start[k]);
      part.stop[k] = std::max(part.stop[k], s.box.stop[k]);
    }
  }
  if (blocks.empty())
    invalid("sharding: its mesh has no device of this process (", rt.process_index(),
            "), which so holds no part of the array");
  int64_t covered = 0;
  for (const Box *b : blocks) covered += b->elements();
  if (covered != part.elements())
    invalid("sharding: the blocks of this process's devices do not fill a box (they cover ",
            covered, " of the ", part.elements(), " elements of ", box_text(part),
            "), so no process-local array can hold them; lay the array out so that each "
            "process's devices hold neighbouring blocks");
  return part;
}

ArrayPtr Array::from_process_local_data(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                                        const void *data, size_t nbytes) {
  sharding->check_rank(shape);
  byte_size("shape", shape, dtype);
  const Box part = local_part(*sharding, shape);
  const Shape extent = part.extent();
  const size_t expected = byte_size("the process's part", extent, dtype);
  check_nbytes("nbytes", nbytes, expected,
               cat("this process's part ", box_text(part), " of ", describe(dtype, shape)));
  if (data == nullptr && expected > 0) invalid("data: NULL host buffer for ", expected, " bytes");
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  a->write_from_host(data, part);
  return a;
}

ArrayPtr Array::from_single_device_arrays(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                                          const std::vector<const Array *> &blocks) {
  sharding->check_rank(shape);
  byte_size("shape", shape, dtype);
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  size_t here = 0;
  for (size_t i = 0; i < a->shards_->size(); ++i) here += a->addressable(i);
  if (blocks.size() != here)
    invalid("count: ", blocks.size(), " arrays given, but the mesh has ", here,
            " devices of this process (", a->runtime_->process_index(), "), one block each");
  std::vector<bool> taken(a->shards_->size(), false);
  std::vector<BoxCopy> copies;
  EventList after;
  std::vector<const Array *> read;
  for (size_t k = 0; k < blocks.size(); ++k) {
    const Array &b = *blocks[k];
    const std::string arg = cat("arrays[", k, "]");
    if (b.sharding()->device_set() != a->sharding_->device_set())
      invalid(arg, ": lives on another runtime than the sharding");
    if (b.shard_count() != 1)
      invalid(arg, ": spread over ", b.shard_count(), " devices; each array must be on one");
    const int device = b.shard(0).device;
    size_t i = 0;
    while (i < a->shards_->size() && a->shards()[i].device != device) ++i;
    if (i == a->shards_->size() || !a->addressable(i))
      invalid(arg, ": on device ", device, ", which is not a device of this process in the mesh");
    if (taken[i]) invalid(arg, ": a second array on device ", device);
    taken[i] = true;
    const ShardLayout &s = a->shards()[i];
    if (b.dtype() != dtype || b.shape() != s.box.extent())
      invalid(arg, ": ", describe(b.dtype(), b.shape()), " but device ", device, "'s block is ",
              describe(dtype, s.box.extent()));
    if (s.box.empty()) continue;
    after.add(b.buffer(0).before_read());
    after.add(a->buffers_[i]->before_write());
    read.push_back(&b);
    const Shape origin(s.box.ndim(), 0);
    copies.push_back({{b.buffer(0).place(), s.box.extent(), origin},
                      {a->buffers_[i]->place(), s.box.extent(), origin},
                      s.box.extent(),
                      a->elem_size_});
  }
  const EventPtr done = a->runtime().backend().copy_boxes(copies, after);
  for (const Array *b : read) b->add_read(done);
  for (const auto &b : a->buffers_)
    if (b) b->set_written(done);
  return a;
}

ArrayPtr Array::full(ShardingPtr sharding, spmd_dtype dtype, Shape shape, double value) {
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  unsigned char element[8] = {0};
  store_from_double(dtype, value, element);
  std::vector<std::pair<size_t, Kernel>> writes;
  writes.reserve(a->shards_->size());
  for (size_t i = 0; i < a->shards_->size(); ++i) {
    if (!a->addressable(i)) continue;
    const Buffer &b = *a->buffers_[i];
    if (b.bytes()) writes.emplace_back(i, Kernel::fill(b.place(), dtype, b.bytes() / a->elem_size_, element));
  }
  a->write_shards(std::move(writes));
  return a;
}

ArrayPtr Array::arange(ShardingPtr sharding, spmd_dtype dtype, Shape shape, double start,
                       double step) {
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  std::vector<std::pair<size_t, Kernel>> writes;
  writes.reserve(a->shards_->size());
  for (size_t i = 0; i < a->shards_->size(); ++i) {
    if (!a->addressable(i)) continue;
    const Buffer &b = *a->buffers_[i];
    if (b.bytes())
      writes.emplace_back(
          i, Kernel::arange(b.place(), dtype, a->shape_, a->shards()[i].box, start, step));
  }
  a->write_shards(std::move(writes));
  return a;
}

std::vector<size_t> Array::local_copy_of_each_block() const {
  std::vector<size_t> from;
  for (size_t i = 0; i < shards_->size(); ++i) {
    if ((*shards_)[i].replica_id != 0) continue;
    size_t local = std::string::npos;
    for (size_t k = 0; k < shards_->size() && local == std::string::npos; ++k)
      if (buffers_[k] && (*shards_)[k].box == (*shards_)[i].box) local = k;
    from.push_back(local);
  }
  return from;
}

void Array::to_host(void *data, size_t nbytes) const {
  check_nbytes("nbytes", nbytes, this->nbytes(), cat("the array ", describe(dtype_, shape_)));
  if (data == nullptr && nbytes > 0) invalid("data: NULL host buffer for ", nbytes, " bytes");
  // Each block once, from a replica of this process: over several
  // processes, only when this process holds every block (as JAX allows).
  const std::vector<size_t> from = local_copy_of_each_block();
  for (size_t k = 0, i = 0; i < shards_->size(); ++i) {
    if ((*shards_)[i].replica_id != 0) continue;
    if (from[k++] == std::string::npos && !(*shards_)[i].box.empty())
      fail(SPMD_ERR_UNSUPPORTED, "array: its block ", box_text((*shards_)[i].box),
           " is held only by device ", (*shards_)[i].device, " of process ",
           runtime_->process_of((*shards_)[i].device), ", and this process (",
           runtime_->process_index(),
           ") can read only its own devices; spmd_array_process_allgather gathers the array "
           "in every process");
  }
  std::vector<BoxCopy> copies;
  EventList after;
  for (size_t i : from) {
    if (i == std::string::npos) continue;
    const ShardLayout &s = (*shards_)[i];
    if (s.box.empty()) continue;
    after.add(buffers_[i]->before_read());
    copies.push_back({{buffers_[i]->place(), s.box.extent(), Shape(s.box.ndim(), 0)},
                      {Place::host(data), shape_, s.box.start},
                      s.box.extent(),
                      elem_size_});
  }
  // An error of pending work surfaces here even when no block moves.
  block_until_ready();
  const EventPtr done = runtime_->backend().copy_boxes(copies, after);
  add_read(done);
  if (done) done->wait();
}

void Array::process_allgather(void *data, size_t nbytes) const {
  check_nbytes("nbytes", nbytes, this->nbytes(), cat("the array ", describe(dtype_, shape_)));
  if (data == nullptr && nbytes > 0) invalid("data: NULL host buffer for ", nbytes, " bytes");
  dist::Transport *transport = runtime_->transport();
  if (transport == nullptr) return to_host(data, nbytes);
  // Each block is sent by the process of its first replica: every process
  // packs its blocks in shard order, padded to the longest process's part
  // (every process knows every layout, so all agree on the sizes).
  const int processes = runtime_->process_count();
  std::vector<size_t> part(static_cast<size_t>(processes), 0);
  for (const ShardLayout &s : *shards_)
    if (s.replica_id == 0)
      part[static_cast<size_t>(runtime_->process_of(s.device))] +=
          static_cast<size_t>(s.box.elements()) * elem_size_;
  size_t longest = 0;
  for (size_t b : part) longest = std::max(longest, b);
  std::vector<std::byte> mine(longest);
  block_until_ready();
  std::vector<BoxCopy> packs;
  EventList after;
  size_t at = 0;
  for (size_t i = 0; i < shards_->size(); ++i) {
    const ShardLayout &s = (*shards_)[i];
    if (s.replica_id != 0 || !addressable(i) || s.box.empty()) continue;
    after.add(buffers_[i]->before_read());
    packs.push_back({{buffers_[i]->place(), s.box.extent(), Shape(s.box.ndim(), 0)},
                     {Place::host(mine.data() + at), s.box.extent(), Shape(s.box.ndim(), 0)},
                     s.box.extent(),
                     elem_size_});
    at += static_cast<size_t>(s.box.elements()) * elem_size_;
  }
  const EventPtr packed = runtime_->backend().copy_boxes(packs, after);
  add_read(packed);
  if (packed) packed->wait();
  std::vector<std::byte> all;
  try {
    all = transport->all_gather(
        mine, deadline_after(collective_timeout(0, "SPMD_COLLECTIVE_TIMEOUT_MS")));
  } catch (const Error &e) {
    fail(e.status(), "process_allgather: ", e.what());
  }
  // Unpack every process's part in the same order.
  std::vector<size_t> offset(static_cast<size_t>(processes));
  for (size_t p = 0; p < offset.size(); ++p) offset[p] = p * longest;
  for (const ShardLayout &s : *shards_) {
    if (s.replica_id != 0 || s.box.empty()) continue;
    size_t &o = offset[static_cast<size_t>(runtime_->process_of(s.device))];
    const Shape ext = s.box.extent();
    host::copy_box(all.data() + o, ext, Shape(ext.size(), 0), data, shape_, s.box.start, ext,
                   elem_size_);
    o += static_cast<size_t>(s.box.elements()) * elem_size_;
  }
}

// Checks a host transfer of shard i; returns false when there is nothing to move.
bool Array::check_shard_transfer(size_t i, const void *data, size_t nbytes) const {
  if (i >= shards_->size())
    fail(SPMD_ERR_OUT_OF_RANGE, "index: shard ", i, " does not exist (the array has ",
         shards_->size(), " shards)");
  if (!addressable(i))
    fail(SPMD_ERR_UNSUPPORTED, "index: shard ", i, " is on device ", (*shards_)[i].device,
         " of process ", runtime_->process_of((*shards_)[i].device), "; this process (",
         runtime_->process_index(), ") reads and writes only its own devices' shards");
  check_nbytes("nbytes", nbytes, shard_bytes(i), cat("shard ", i));
  if (nbytes == 0) return false;
  if (data == nullptr) invalid("data: NULL host buffer");
  return true;
}

void Array::shard_read(size_t i, void *data, size_t nbytes) const {
  if (!check_shard_transfer(i, data, nbytes)) {
    if (i < buffers_.size()) buffers_[i]->wait();
    return;
  }
  Buffer &b = *buffers_[i];
  const Shape ext = (*shards_)[i].box.extent(), origin(ext.size(), 0);
  const BoxCopy copy{{b.place(), ext, origin}, {Place::host(data), ext, origin}, ext, elem_size_};
  b.wait();
  const EventPtr done = runtime_->backend().copy_boxes({&copy, 1}, b.before_read());
  b.add_read(done);
  if (done) done->wait();
}

void Array::shard_write(size_t i, const void *data, size_t nbytes) {
  if (!check_shard_transfer(i, data, nbytes)) return;
  if (const BufferPtr &held = buffers_[i]; array_holders(held) > 1)
    buffers_[i] = std::make_shared<Buffer>(runtime_->backend_ptr(), held->device(), held->bytes(), held->kind());
  Buffer &b = *buffers_[i];
  const Shape ext = (*shards_)[i].box.extent(), origin(ext.size(), 0);
  const BoxCopy copy{{Place::host(data), ext, origin}, {b.place(), ext, origin}, ext, elem_size_};
  const EventPtr done = runtime_->backend().copy_boxes({&copy, 1}, b.before_write());
  b.set_written(done);
  // The caller may reuse its buffer as soon as this returns.
  if (done) done->wait();
}

ArrayPtr Array::reshard(const ShardingPtr &target) const {
  if (target->device_set() != sharding_->device_set())
    invalid("sharding: belongs to another runtime than the array; reshard moves data between "
            "devices of one runtime");
  target->check_rank(shape_);
  auto out = std::make_shared<Array>(target, dtype_, shape_);
  if (out->abstract()) {
    // Recorded: what would cross between devices, for the program's text.
    int64_t bytes = 0;
    for (const auto &m : plan_redistribution(*shards_, *out->shards_))
      if ((*shards_)[m.src].device != out->shards()[m.dst].device)
        bytes += m.box.elements() * static_cast<int64_t>(elem_size_);
    if (bytes > 0) current_recording()->note_transfer("reshard to " + target->to_string(), bytes);
    return out;
  }
  std::vector<ShardMove> moves;
  for (const auto &m : plan_redistribution(*shards_, *out->shards_)) {
    const ShardLayout &s = (*shards_)[m.src];
    const ShardLayout &d = out->shards()[m.dst];
    ShardMove move{m.src, m.dst, Shape(shape_.size()), Shape(shape_.size()), m.box.extent()};
    for (size_t k = 0; k < shape_.size(); ++k) {
      move.src_offset[k] = m.box.start[k] - s.box.start[k];
      move.dst_offset[k] = m.box.start[k] - d.box.start[k];
    }
    moves.push_back(std::move(move));
  }
  move_shards(*this, *out, moves, "reshard");
  return out;
}

ArrayPtr Array::relabeled(ShardingPtr sharding) const {
  if (!sharding->equivalent(*sharding_))
    fail(SPMD_ERR_INTERNAL, "relabeled: ", sharding->to_string(), " does not lay out an array of ",
         sharding_->to_string());
  if (abstract_) {
    ArrayPtr a(new Array(std::move(sharding), dtype_, shape_, Adopt{}));
    a->abstract_ = true;
    a->recording_ = recording_;
    a->buffers_ = buffers_;
    return a;
  }
  return from_buffers(std::move(sharding), dtype_, shape_, buffers_);
}

ArrayPtr Array::laid_out_as(const ShardingPtr &target) const {
  return target->equivalent(*sharding_) ? relabeled(target) : reshard(target);
}

void Array::block_until_ready() const {
  for (const auto &b : buffers_)
    if (b) b->wait();
}

const char *ArraySlot::hold() noexcept {
  // Acquire: a refused hold reads the consumer's name, a granted one the
  // array as the last writer of the slot left it.
  uint64_t s = state_.load(std::memory_order_acquire);
  do {
    if (s & kConsumed) return consumer_.load(std::memory_order_acquire);
  } while (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                         std::memory_order_acquire));
  return nullptr;
}

void ArraySlot::release() noexcept {
  // Release: this call's reads of the array and its buffers come before a
  // consumer's writes into them and before the array is let go.
  if (state_.fetch_sub(1, std::memory_order_acq_rel) == (kConsumed | 1)) array_.reset();
}

bool ArraySlot::consume(const char *op) noexcept {
  // The name first, so that whoever sees kConsumed sees a name too.
  const char *none = nullptr;
  consumer_.compare_exchange_strong(none, op, std::memory_order_acq_rel);
  return state_.fetch_or(kConsumed, std::memory_order_acq_rel) == 1;
}

std::string type_text(const Array &a) {
  std::string s = cat(dtype_name(a.dtype()), "[");
  for (size_t d = 0; d < a.shape().size(); ++d) s += cat(d ? "," : "", a.shape()[d]);
  return s + "]";
}

}  // namespace spmd
