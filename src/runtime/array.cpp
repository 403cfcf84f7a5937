#include "runtime/array.hpp"

#include <cstring>

#include "base/checked.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/redistribute.hpp"

namespace spmd {

Array::Array(ShardingPtr sharding, spmd_dtype dtype, Shape shape)
    : Array(std::move(sharding), dtype, std::move(shape), Adopt{}) {
  buffers_.reserve(shards_.size());
  const auto &backend = runtime_->backend_ptr();
  for (const auto &s : shards_)
    buffers_.push_back(std::make_shared<Buffer>(
        backend, s.device, static_cast<size_t>(s.box.elements()) * elem_size_));
}

Array::Array(ShardingPtr sharding, spmd_dtype dtype, Shape shape, Adopt)
    : sharding_(std::move(sharding)), runtime_(&Runtime::of(*sharding_)), dtype_(dtype),
      elem_size_(dtype_size(dtype)), shape_(std::move(shape)),
      nbytes_(byte_size("shape", shape_, dtype)) {
  // Until arrays hold only their addressable shards (docs/distributed.md).
  runtime_->require_local(sharding_->mesh()->devices(),
                          "arrays over several processes are not supported yet");
  shards_ = sharding_->layout(shape_);
}

ArrayPtr Array::from_buffers(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                             std::vector<BufferPtr> buffers) {
  ArrayPtr a(new Array(std::move(sharding), dtype, std::move(shape), Adopt{}));
  if (buffers.size() != a->shards_.size())
    fail(SPMD_ERR_INTERNAL, "from_buffers: ", buffers.size(), " buffers for ", a->shards_.size(),
         " shards");
  for (size_t i = 0; i < buffers.size(); ++i)
    if (!buffers[i] || buffers[i]->bytes() != a->shard_bytes(i) ||
        buffers[i]->device() != a->shards_[i].device ||
        buffers[i]->kind() != MemoryKind::Device)
      fail(SPMD_ERR_INTERNAL, "from_buffers: buffer ", i, " does not fit shard ", i);
  a->buffers_ = std::move(buffers);
  return a;
}

size_t Array::shard_bytes(size_t i) const {
  return static_cast<size_t>(shards_.at(i).box.elements()) * elem_size_;
}

namespace {
void check_nbytes(const char *what, size_t given, size_t expected, const std::string &of) {
  if (given != expected)
    invalid(what, ": ", given, " bytes given, ", of, " needs exactly ", expected);
}

std::string describe(spmd_dtype dtype, const Shape &shape) {
  return cat(dtype_name(dtype), shape_to_string(shape));
}
}  // namespace

EventList Array::before_read() const {
  EventList e;
  for (const auto &b : buffers_) e.add(b->before_read());
  return e;
}

void Array::add_read(const EventPtr &done) const noexcept {
  if (!done) return;
  for (const auto &b : buffers_) b->add_read(done);
}

void Array::write_shards(std::vector<std::pair<size_t, Kernel>> writes) {
  if (writes.empty()) return;
  EventList after;
  std::vector<Kernel> kernels;
  kernels.reserve(writes.size());
  for (auto &[i, k] : writes) {
    after.add(buffers_.at(i)->before_write());
    kernels.push_back(std::move(k));
  }
  const EventPtr done = runtime_->backend().launch(kernels, after);
  for (const auto &w : writes) buffers_[w.first]->set_written(done);
}

ArrayPtr Array::from_host(ShardingPtr sharding, spmd_dtype dtype, Shape shape, const void *data,
                          size_t nbytes) {
  sharding->check_rank(shape);
  const size_t expected = byte_size("shape", shape, dtype);
  check_nbytes("nbytes", nbytes, expected, describe(dtype, shape));
  if (data == nullptr && expected > 0) invalid("data: NULL host buffer for ", expected, " bytes");
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  std::vector<BoxCopy> copies;
  for (size_t i = 0; i < a->shards_.size(); ++i) {
    const ShardLayout &s = a->shards_[i];
    if (s.box.empty()) continue;
    copies.push_back({{Place::host(data), a->shape_, s.box.start},
                      {a->buffers_[i]->place(), s.box.extent(), Shape(s.box.ndim(), 0)},
                      s.box.extent(),
                      a->elem_size_});
  }
  const EventPtr done = a->runtime().backend().copy_boxes(copies, {});
  for (const auto &b : a->buffers_) b->set_written(done);
  // The caller may reuse its buffer as soon as this returns.
  if (done) done->wait();
  return a;
}

ArrayPtr Array::full(ShardingPtr sharding, spmd_dtype dtype, Shape shape, double value) {
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  unsigned char element[8] = {0};
  store_from_double(dtype, value, element);
  std::vector<std::pair<size_t, Kernel>> writes;
  for (size_t i = 0; i < a->shards_.size(); ++i) {
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
  for (size_t i = 0; i < a->shards_.size(); ++i) {
    const Buffer &b = *a->buffers_[i];
    if (b.bytes())
      writes.emplace_back(
          i, Kernel::arange(b.place(), dtype, a->shape_, a->shards_[i].box, start, step));
  }
  a->write_shards(std::move(writes));
  return a;
}

void Array::to_host(void *data, size_t nbytes) const {
  check_nbytes("nbytes", nbytes, this->nbytes(), cat("the array ", describe(dtype_, shape_)));
  if (data == nullptr && nbytes > 0) invalid("data: NULL host buffer for ", nbytes, " bytes");
  // Each block once, from its first replica.
  std::vector<BoxCopy> copies;
  EventList after;
  for (size_t i = 0; i < shards_.size(); ++i) {
    const ShardLayout &s = shards_[i];
    if (s.replica_id != 0 || s.box.empty()) continue;
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

// Checks a host transfer of shard i; returns false when there is nothing to move.
bool Array::check_shard_transfer(size_t i, const void *data, size_t nbytes) const {
  if (i >= shards_.size())
    fail(SPMD_ERR_OUT_OF_RANGE, "index: shard ", i, " does not exist (the array has ",
         shards_.size(), " shards)");
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
  const Shape ext = shards_[i].box.extent(), origin(ext.size(), 0);
  const BoxCopy copy{{b.place(), ext, origin}, {Place::host(data), ext, origin}, ext, elem_size_};
  b.wait();
  const EventPtr done = runtime_->backend().copy_boxes({&copy, 1}, b.before_read());
  b.add_read(done);
  if (done) done->wait();
}

void Array::shard_write(size_t i, const void *data, size_t nbytes) {
  if (!check_shard_transfer(i, data, nbytes)) return;
  Buffer &b = *buffers_[i];
  const Shape ext = shards_[i].box.extent(), origin(ext.size(), 0);
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
  const auto moves = plan_redistribution(shards_, out->shards_);
  std::vector<BoxCopy> copies;
  copies.reserve(moves.size());
  EventList after;
  for (const auto &m : moves) {
    const ShardLayout &s = shards_[m.src];
    const ShardLayout &d = out->shards_[m.dst];
    Shape soff(shape_.size()), doff(shape_.size());
    for (size_t k = 0; k < shape_.size(); ++k) {
      soff[k] = m.box.start[k] - s.box.start[k];
      doff[k] = m.box.start[k] - d.box.start[k];
    }
    after.add(buffers_[m.src]->before_read());
    copies.push_back({{buffers_[m.src]->place(), s.box.extent(), soff},
                      {out->buffers_[m.dst]->place(), d.box.extent(), doff},
                      m.box.extent(),
                      elem_size_});
  }
  const EventPtr done = runtime_->backend().copy_boxes(copies, after);
  add_read(done);
  for (const auto &b : out->buffers_) b->set_written(done);
  return out;
}

void Array::block_until_ready() const {
  for (const auto &b : buffers_) b->wait();
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

}  // namespace spmd
