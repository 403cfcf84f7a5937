#include "runtime/array.hpp"

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/redistribute.hpp"
#include "runtime/copy_runner.hpp"

namespace spmd {

Array::Array(ShardingPtr sharding, spmd_dtype dtype, Shape shape)
    : sharding_(std::move(sharding)), dtype_(dtype), elem_size_(dtype_size(dtype)),
      shape_(std::move(shape)) {
  shards_ = sharding_->layout(shape_);
  buffers_.reserve(shards_.size());
  const auto &backend = Runtime::of(*sharding_).backend_ptr();
  for (const auto &s : shards_)
    buffers_.push_back(std::make_shared<Buffer>(
        backend, s.device, static_cast<size_t>(s.box.elements()) * elem_size_));
}

Array::Array(ShardingPtr sharding, spmd_dtype dtype, Shape shape, Adopt)
    : sharding_(std::move(sharding)), dtype_(dtype), elem_size_(dtype_size(dtype)),
      shape_(std::move(shape)) {
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
        buffers[i]->device() != a->shards_[i].device)
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

ArrayPtr Array::from_host(ShardingPtr sharding, spmd_dtype dtype, Shape shape, const void *data,
                          size_t nbytes) {
  sharding->check_rank(shape);
  const size_t expected = static_cast<size_t>(shape_elements(shape)) * dtype_size(dtype);
  check_nbytes("nbytes", nbytes, expected, describe(dtype, shape));
  if (data == nullptr && expected > 0) invalid("data: NULL host buffer for ", expected, " bytes");
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  std::vector<BoxCopy> copies;
  for (size_t i = 0; i < a->shards_.size(); ++i) {
    const ShardLayout &s = a->shards_[i];
    if (s.box.empty()) continue;
    copies.push_back({{kHostDevice, const_cast<void *>(data), a->shape_, s.box.start},
                      {s.device, a->buffers_[i]->data(), s.box.extent(), Shape(s.box.ndim(), 0)},
                      s.box.extent(),
                      a->elem_size_});
  }
  Runtime &rt = a->runtime();
  run_box_copies(rt.backend(), rt.pool(), std::move(copies));
  return a;
}

ArrayPtr Array::full(ShardingPtr sharding, spmd_dtype dtype, Shape shape, double value) {
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  unsigned char pattern[8] = {0};
  store_from_double(dtype, value, pattern);
  Runtime &rt = a->runtime();
  rt.pool().parallel_for(a->shards_.size(), [&](size_t i) {
    const Buffer &b = *a->buffers_[i];
    if (b.bytes())
      rt.backend().fill(b.device(), b.data(), b.bytes() / a->elem_size_, pattern, a->elem_size_);
  });
  return a;
}

ArrayPtr Array::arange(ShardingPtr sharding, spmd_dtype dtype, Shape shape, double start,
                       double step) {
  auto a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  Runtime &rt = a->runtime();
  rt.pool().parallel_for(a->shards_.size(), [&](size_t i) {
    const Buffer &b = *a->buffers_[i];
    if (b.bytes())
      rt.backend().fill_arange(b.device(), b.data(), dtype, a->shape_, a->shards_[i].box, start,
                               step);
  });
  return a;
}

void Array::to_host(void *data, size_t nbytes) const {
  check_nbytes("nbytes", nbytes, this->nbytes(), cat("the array ", describe(dtype_, shape_)));
  if (data == nullptr && nbytes > 0) invalid("data: NULL host buffer for ", nbytes, " bytes");
  block_until_ready();
  // Each block once, from its first replica.
  std::vector<BoxCopy> copies;
  for (size_t i = 0; i < shards_.size(); ++i) {
    const ShardLayout &s = shards_[i];
    if (s.replica_id != 0 || s.box.empty()) continue;
    copies.push_back({{s.device, buffers_[i]->data(), s.box.extent(), Shape(s.box.ndim(), 0)},
                      {kHostDevice, data, shape_, s.box.start},
                      s.box.extent(),
                      elem_size_});
  }
  Runtime &rt = runtime();
  run_box_copies(rt.backend(), rt.pool(), std::move(copies));
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
  if (!check_shard_transfer(i, data, nbytes)) return;
  const ShardLayout &s = shards_[i];
  runtime().backend().synchronize(s.device);
  const Shape ext = s.box.extent(), origin(ext.size(), 0);
  runtime().backend().copy_box(
      {{s.device, buffers_[i]->data(), ext, origin}, {kHostDevice, data, ext, origin}, ext,
       elem_size_});
}

void Array::shard_write(size_t i, const void *data, size_t nbytes) {
  if (!check_shard_transfer(i, data, nbytes)) return;
  const ShardLayout &s = shards_[i];
  const Shape ext = s.box.extent(), origin(ext.size(), 0);
  runtime().backend().copy_box({{kHostDevice, const_cast<void *>(data), ext, origin},
                                {s.device, buffers_[i]->data(), ext, origin}, ext, elem_size_});
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
  for (const auto &m : moves) {
    const ShardLayout &s = shards_[m.src];
    const ShardLayout &d = out->shards_[m.dst];
    Shape soff(shape_.size()), doff(shape_.size());
    for (size_t k = 0; k < shape_.size(); ++k) {
      soff[k] = m.box.start[k] - s.box.start[k];
      doff[k] = m.box.start[k] - d.box.start[k];
    }
    copies.push_back({{s.device, buffers_[m.src]->data(), s.box.extent(), soff},
                      {d.device, out->buffers_[m.dst]->data(), d.box.extent(), doff},
                      m.box.extent(),
                      elem_size_});
  }
  block_until_ready();
  Runtime &rt = runtime();
  run_box_copies(rt.backend(), rt.pool(), std::move(copies));
  return out;
}

void Array::block_until_ready() const {
  Backend &b = runtime().backend();
  for (const auto &s : shards_) b.synchronize(s.device);
}

}  // namespace spmd
