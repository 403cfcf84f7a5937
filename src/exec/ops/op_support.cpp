#include "exec/ops/op_support.hpp"

#include <algorithm>

#include "base/checked.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "spmd/sharding.h"

namespace spmd::ops {

std::string describe(const Array &a) {
  return cat(dtype_name(a.dtype()), shape_to_string(a.shape()));
}

void check_result(const char *what, const Shape &shape, spmd_dtype dtype) {
  if (shape.size() > SPMD_MAX_NDIM)
    invalid(what, ": the result would have ", shape.size(), " dimensions ",
            shape_to_string(shape), "; arrays have at most ", SPMD_MAX_NDIM,
            " (SPMD_MAX_NDIM)");
  byte_size(cat(what, ": the result's shape").c_str(), shape, dtype);
}

size_t checked_axis(int64_t axis, size_t ndim, const char *what) {
  const auto n = static_cast<int64_t>(ndim);
  if (axis < -n || axis >= n)
    invalid(what, ": ", axis, " is out of range for an array of ", ndim, " dimensions");
  return static_cast<size_t>(axis < 0 ? axis + n : axis);
}

MeshPtr common_mesh(const std::vector<Operand> &operands) {
  const MeshPtr &mesh = operands.at(0).array->sharding()->mesh();
  for (size_t i = 1; i < operands.size(); ++i) {
    const MeshPtr &m = operands[i].array->sharding()->mesh();
    if (m == mesh || *m == *mesh) continue;
    if (m->device_set() != mesh->device_set())
      invalid(operands[i].name, ": lives on another runtime than ", operands[0].name);
    invalid(operands[0].name, " and ", operands[i].name, ": laid out on different meshes (",
            mesh->to_string(), " and ", m->to_string(),
            "); reshard one onto the other's mesh first");
  }
  return mesh;
}

namespace {
std::string device_ids_text(const std::vector<int> &ids) {
  std::string t = "[";
  for (size_t i = 0; i < ids.size(); ++i) t += cat(i ? ", " : "", ids[i]);
  return t + "]";
}
}  // namespace

ShardingPtr requested_sharding(const OpOptions &options, const MeshPtr &mesh, size_t ndim) {
  const ShardingPtr &s = options.out_sharding;
  if (!s) return nullptr;
  if (s->device_set() != mesh->device_set())
    invalid("options->out_sharding: belongs to another runtime than the operands");
  // Another mesh over the same devices in the same order (row-major) is a
  // layout the result can be resharded to (the notebook's f_contract_2);
  // other devices, or the same in another order, JAX refuses ("incompatible
  // devices for jitted computation").
  if (!(*s->mesh() == *mesh) && s->mesh()->devices() != mesh->devices())
    invalid("options->out_sharding: is on ", s->mesh()->to_string(), " with device ids ",
            device_ids_text(s->mesh()->devices()), " but the operands' mesh ", mesh->to_string(),
            " has ", device_ids_text(mesh->devices()),
            "; an output sharding must name the operands' devices in the same order, as "
            "jax.jit requires");
  if (s->spec().ndim() > ndim)
    invalid("options->out_sharding: its spec (", s->spec().short_string(), ") names ",
            s->spec().ndim(), " dimensions but the result has ", ndim);
  return s;
}

bool on_mesh(const ShardingPtr &s, const MeshPtr &mesh) {
  return s && (s->mesh() == mesh || *s->mesh() == *mesh);
}

ShardingPtr sharding_of(const MeshPtr &mesh, const propagate::Dims &dims) {
  return Sharding::named(mesh, PartitionSpec(dims, PartitionSpec::Unchecked{}));
}

ShardingPtr sharding_of(const MeshPtr &mesh, const propagate::Dims &dims, const Array &first) {
  const Sharding &f = *first.sharding();
  if (f.kind() == Sharding::Kind::Named && first.shape().size() == dims.size() &&
      (f.mesh() == mesh || *f.mesh() == *mesh) &&
      f.spec().same_layout(PartitionSpec(dims, PartitionSpec::Unchecked{})))
    return first.sharding();
  return sharding_of(mesh, dims);
}

ShardingPtr result_sharding(const MeshPtr &mesh, propagate::Dims dims, const Shape &shape) {
  const Mesh &m = *mesh;
  propagate::keep_dividing_axes(dims, shape, [&](const std::string &axis) {
    return m.shape()[static_cast<size_t>(m.axis_index(axis))];
  });
  return sharding_of(mesh, dims);
}

namespace {

// Whether two shardings place an array of `shape` alike: each shard on the
// same device with the same box under both, so its buffers serve either.
bool placed_alike(const Sharding &a, const Sharding &b, const Shape &shape) {
  if (a.device_set() != b.device_set()) return false;
  const auto la = a.shared_layout(shape), lb = b.shared_layout(shape);
  if (la->size() != lb->size()) return false;
  for (size_t i = 0; i < la->size(); ++i)
    if ((*la)[i].device != (*lb)[i].device || (*la)[i].box != (*lb)[i].box) return false;
  return true;
}

}  // namespace

ArrayPtr laid_out(const ArrayPtr &a, const MeshPtr &mesh, const propagate::Dims &dims) {
  const Sharding &s = *a->sharding();
  if (s.kind() == Sharding::Kind::Named && (s.mesh() == mesh || *s.mesh() == *mesh) &&
      propagate::padded(s.spec(), a->shape().size()) == dims)
    return a;
  ShardingPtr target = sharding_of(mesh, dims);
  // Laid out so already under another name (a single-device array, as the
  // ops inside a shard_map body make, on its one-device mesh): the same
  // buffers under the new one, not a copy.
  if (!a->abstract() && placed_alike(s, *target, a->shape())) {
    std::vector<BufferPtr> buffers;
    buffers.reserve(a->shard_count());
    for (size_t i = 0; i < a->shard_count(); ++i) buffers.push_back(a->buffer_ptr(i));
    return Array::from_buffers(std::move(target), a->dtype(), a->shape(), std::move(buffers));
  }
  return a->reshard(target);
}

ArrayPtr honour(const ArrayPtr &result, const ShardingPtr &requested) {
  if (!requested) return result;
  const Sharding &s = *result->sharding();
  if (s.equivalent(*requested) && *s.mesh() == *requested->mesh()) return result;
  return result->reshard(requested);
}

ArrayPtr as_jit_returns(const ArrayPtr &result, const OpOptions &options, const Array *first_operand) {
  const Sharding &s = *result->sharding();
  if (!options.out_sharding && result->size() == 0 && !s.fully_replicated())
    return result->reshard(sharding_of(s.mesh(), propagate::Dims(result->shape().size())));
  if (s.kind() != Sharding::Kind::Named) return result;
  // The result under `name` when that lays it out as it is (the same
  // object included: nothing to do).
  const auto named_by = [&](const ShardingPtr &name) -> ArrayPtr {
    if (name == result->sharding()) return result;
    return name->equivalent(s) ? result->relabeled(name) : nullptr;
  };
  if (options.out_sharding) {
    const ArrayPtr r = named_by(options.out_sharding);
    return r ? r : result;
  }
  if (first_operand != nullptr && first_operand->shape().size() == result->shape().size())
    if (const ArrayPtr r = named_by(first_operand->sharding())) return r;
  const auto &dims = s.spec().dims();
  if (dims.empty() || !dims.back().empty()) return result;
  return result->relabeled(Sharding::named(s.mesh(), PartitionSpec(s.spec().normalized(),
                                                                     PartitionSpec::Unchecked{})));
}

bool take_donated(const OpOptions &options, size_t k) {
  return k < 3 && options.donate[k] != nullptr && options.donate[k]->consume(options.function);
}

namespace {
void note_launch(WorkLog &log, const Array &out, std::vector<std::pair<size_t, Kernel>> kernels) {
  WorkLog::Launch l;
  for (size_t i = 0; i < out.shard_count(); ++i) l.out.push_back(out.buffer_ptr(i));
  l.kernels = std::move(kernels);
  l.sharding = out.sharding();
  l.dtype = out.dtype();
  l.shape = out.shape();
  log.add_launch(std::move(l));
}
}  // namespace

void launch_per_shard(Array &out, const std::vector<const Array *> &inputs,
                      std::vector<std::pair<size_t, Kernel>> kernels) {
  if (WorkLog *log = note_device_work()) note_launch(*log, out, kernels);
  if (kernels.empty()) return;
  std::vector<Kernel> batch;
  std::vector<size_t> shards;
  batch.reserve(kernels.size());
  shards.reserve(kernels.size());
  for (auto &[i, k] : kernels) {
    shards.push_back(i);
    batch.push_back(std::move(k));
  }
  launch_batch(out, inputs, batch, shards);
}

namespace {

// The input block a kernel's operand lies in, or null.
Buffer *block_of(const Place &p, const std::vector<const Array *> &inputs) {
  for (const Array *a : inputs)
    for (size_t j = 0; j < a->shard_count(); ++j)
      if (a->addressable(j) && a->buffer(j).holds(p)) return &a->buffer(j);
  return nullptr;
}

// launch_batch on a backend whose devices queue work apart: one launch per
// device, waiting for the blocks its kernels read and write alone. One
// launch over every device would make each device's queue wait for every
// block of every operand, every device's queue for every other's. Returns
// false, launching nothing, when no device has anything to wait for.
bool launch_device_by_device(Array &out, const std::vector<const Array *> &inputs,
                             std::span<const Kernel> batch, std::span<const size_t> shards) {
  struct Part {
    size_t first = 0, end = 0;  // its kernels: order[first, end)
    EventList after;
    std::vector<Buffer *> read;
    bool unknown_operand = false;  // an operand in no input's block
  };
  std::vector<size_t> order(batch.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return batch[a].device < batch[b].device; });
  std::vector<Part> parts;
  bool pending = false;
  for (size_t first = 0; first < order.size();) {
    Part &part = parts.emplace_back();
    part.first = first;
    const int device = batch[order[first]].device;
    for (part.end = first; part.end < order.size() && batch[order[part.end]].device == device; ++part.end) {
      const Kernel &k = batch[order[part.end]];
      part.after.add(out.buffer(shards[order[part.end]]).before_write());
      for (const Place *p : {&k.in0, &k.in1, &k.in2}) {
        if (!p->ptr) continue;
        Buffer *b = block_of(*p, inputs);
        if (b == nullptr) {
          part.unknown_operand = true;
        } else if (std::find(part.read.begin(), part.read.end(), b) == part.read.end()) {
          part.read.push_back(b);
          part.after.add(b->before_read());
        }
      }
    }
    // An operand in no input's block (none is known today) waits for all.
    if (part.unknown_operand)
      for (const Array *a : inputs) part.after.add(a->before_read());
    pending = pending || !part.after.empty();
    first = part.end;
  }
  if (!pending) return false;
  Backend &backend = out.runtime().backend();
  // The batch as given where it is already grouped by device (no copies).
  const bool grouped = std::is_sorted(order.begin(), order.end());
  std::vector<Kernel> copied;
  for (const Part &part : parts) {
    std::span<const Kernel> kernels = batch.subspan(part.first, part.end - part.first);
    if (!grouped) {
      copied.clear();
      for (size_t i = part.first; i < part.end; ++i) copied.push_back(batch[order[i]]);
      kernels = copied;
    }
    const EventPtr done = backend.launch(kernels, part.after);
    if (part.unknown_operand)
      for (const Array *a : inputs) a->add_read(done);
    else
      for (Buffer *b : part.read) b->add_read(done);
    for (size_t i = part.first; i < part.end; ++i) out.buffer(shards[order[i]]).set_written(done);
  }
  return true;
}

}  // namespace

void launch_batch_noted(Array &out, const std::vector<const Array *> &inputs,
                        std::span<const Kernel> batch, std::span<const size_t> shards) {
  if (WorkLog *log = note_device_work()) {
    std::vector<std::pair<size_t, Kernel>> kernels;
    for (size_t k = 0; k < batch.size(); ++k) kernels.emplace_back(shards[k], batch[k]);
    note_launch(*log, out, std::move(kernels));
  }
  launch_batch(out, inputs, batch, shards);
}

void launch_batch(Array &out, const std::vector<const Array *> &inputs,
                  std::span<const Kernel> batch, std::span<const size_t> shards) {
  if (batch.empty()) return;
  Backend &backend = out.runtime().backend();
  // Where no device has anything to wait for, one launch (one call's
  // bookkeeping) serves.
  EventList after;
  if (backend.queues_per_device() && batch.size() > 1) {
    if (launch_device_by_device(out, inputs, batch, shards)) return;
  } else {
    for (const Array *a : inputs) after.add(a->before_read());
    for (size_t i : shards) after.add(out.buffer(i).before_write());
  }
  const EventPtr done = backend.launch(batch, after);
  // Each input block is read by the kernels whose operands lie in it: it
  // waits for those devices' parts of the work alone. A backend whose
  // events have no parts (the cpu and sim platforms) records the whole
  // event on every block, without the search.
  if (!done || backend.part_on(done, batch.front().device) == done) {
    for (const Array *a : inputs) a->add_read(done);
    for (size_t i : shards) out.buffer(i).set_written(done);
    return;
  }
  for (const Kernel &k : batch)
    for (const Place *p : {&k.in0, &k.in1, &k.in2})
      if (Buffer *b = p->ptr ? block_of(*p, inputs) : nullptr) b->add_read(backend.part_on(done, k.device));
  // Each kernel wrote its own device's block: the block waits for that
  // device's part of the work alone.
  for (size_t k = 0; k < shards.size(); ++k)
    out.buffer(shards[k]).set_written(backend.part_on(done, batch[k].device));
}

}  // namespace spmd::ops
