#include "exec/persistent.hpp"

#include <cstdlib>
#include <cstring>
#include <map>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/axis_groups.hpp"
#include "runtime/device_threads.hpp"
#include "runtime/recording.hpp"
#include "exec/across_processes.hpp"
#include "exec/shard_map.hpp"

namespace spmd {

PersistentCollective::PersistentCollective(ShardingPtr input_sharding, Collective op,
                                           spmd_dtype dtype, Shape global,
                                           std::chrono::milliseconds timeout)
    : in_sharding_(std::move(input_sharding)), runtime_(&Runtime::of(*in_sharding_)),
      op_(std::move(op)), dtype_(dtype),
      global_(std::move(global)), timeout_(timeout) {
  const MeshPtr &mesh = in_sharding_->mesh();
  const Mesh &m = *mesh;
  in_sharding_->check_rank(global_);
  const std::string what = op_.label(m);
  op_.check_spec_describable(what);
  const AxisGroups groups = AxisGroups::of(m, op_.axes());
  op_ = op_.normalized(dtype_, global_, groups.group_size(), what,
                       cat("shape ", shape_to_string(global_)), "options->");
  out_sharding_ = Sharding::named(mesh, op_.output_spec(in_sharding_->spec(), global_.size(), m, what));
  out_dtype_ = op_.output_dtype(dtype_);
  sum_dtype_ = op_.transport_dtype(dtype_);

  // Block shapes of every device, and the global shape they tile. Members
  // of a group may differ only in the collective's free dimension.
  const auto in_layout = in_sharding_->layout(global_);
  for (const auto &s : in_layout) in_local_.push_back(s.box.extent());
  const int64_t free_dim = op_.free_dimension();
  std::vector<Shape> out_local(m.size());
  for (const auto &members : groups.members) {
    std::vector<Shape> inputs;
    for (int d : members) inputs.push_back(in_local_[static_cast<size_t>(m.position_of(d))]);
    for (size_t r = 1; r < inputs.size(); ++r)
      for (size_t d = 0; d < inputs[r].size(); ++d)
        if (static_cast<int64_t>(d) != free_dim && inputs[r][d] != inputs[0][d])
          invalid(what, ": the input's blocks differ in shape within a group (device ",
                  members[0], " holds ", shape_to_string(inputs[0]), ", device ", members[r],
                  " holds ", shape_to_string(inputs[r]),
                  "); uneven shards only work along the gathered or concatenated dimension");
    for (size_t r = 0; r < members.size(); ++r)
      out_local[static_cast<size_t>(m.position_of(members[r]))] = op_.output_block(inputs, r);
  }
  out_global_ = assemble_global(*out_sharding_, out_local, what + ": result");
  session_ = std::make_unique<Session>(mesh, timeout_);
  scratch_.resize(m.size());

  // The pool path's plan; a runtime over several processes runs its own
  // (run_across_processes).
  out_local_ = out_local;
  if (runtime_->process_count() > 1) return;
  std::map<const Group *, size_t> index;
  for (size_t p = 0; p < m.size(); ++p) {
    const Session::Member mem = session_->member(p, op_.axes());
    auto it = index.find(mem.group);
    if (it == index.end()) {
      it = index.emplace(mem.group, groups_.size()).first;
      groups_.emplace_back();
      groups_.back().identity = mem.group->identity();
      groups_.back().calls.resize(mem.group->size());
      groups_.back().slots.resize(mem.group->size());
    }
    members_.push_back({it->second, mem.rank});
    CollectiveCall &c = groups_[it->second].calls[mem.rank];
    c = collective_call(op_, sum_dtype_, m.devices()[p], mem.rank);
    c.out_shape = out_local[p];
    groups_[it->second].slots[mem.rank].in_shape = in_local_[p];
  }
}

Buffer &PersistentCollective::scratch(size_t position, int slot, size_t bytes) {
  BufferPtr &b = scratch_[position][static_cast<size_t>(slot)];
  if (!b || b->bytes() < bytes) {
    const Mesh &m = *in_sharding_->mesh();
    b = std::make_shared<Buffer>(runtime_->backend_ptr(), m.devices()[position], bytes);
  }
  return *b;
}

ArrayPtr PersistentCollective::prepare(const ArrayPtr &input) const {
  if (input->dtype() != dtype_)
    invalid("input: dtype ", dtype_name(input->dtype()), " but the collective was planned for ",
            dtype_name(dtype_));
  if (input->shape() != global_)
    invalid("input: shape ", shape_to_string(input->shape()),
            " but the collective was planned for ", shape_to_string(global_));
  if (input->sharding()->device_set() != in_sharding_->device_set())
    invalid("input: lives on another runtime than the collective's mesh");
  if (input->sharding()->equivalent(*in_sharding_) &&
      *input->sharding()->mesh() == *in_sharding_->mesh())
    return input;
  return input->reshard(in_sharding_);
}

void PersistentCollective::run(const Array &input, const Array &output) {
  // SPMD_COLLECTIVE_THREADS=device runs every member on its device's thread
  // with barriers, as inside shard_map (for comparing the two paths).
  const char *mode = std::getenv("SPMD_COLLECTIVE_THREADS");
  const bool device_threads = mode != nullptr && std::strcmp(mode, "device") == 0;
  // Over several processes, groups that span them go through one exchange;
  // groups all of one process meet on the device threads as in one.
  if (runtime_->process_count() > 1 && !device_threads && session_->spans_processes(op_.axes()))
    return run_across_processes(input, output);
  if (runtime_->process_count() > 1) return run_on_device_threads(input, output);
  if (device_threads || !run_grouped(input, output)) run_on_device_threads(input, output);
}

bool PersistentCollective::run_grouped(const Array &input, const Array &output) {
  const Mesh &m = *in_sharding_->mesh();
  Backend &backend = runtime_->backend();
  const size_t n = m.size();
  // JAX's promotions: bool sums in int32; a pmean of integers sums in their
  // own arithmetic, then becomes float.
  const bool promote_in = sum_dtype_ != dtype_;
  const bool promote_out = sum_dtype_ != out_dtype_;
  EventPtr converted;
  if (promote_in) {
    std::vector<Kernel> kernels;
    EventList after = input.before_read();
    for (size_t p = 0; p < n; ++p) {
      const size_t count = static_cast<size_t>(shape_elements(in_local_[p]));
      Buffer &s = scratch(p, 0, count * dtype_size(sum_dtype_));
      after.add(s.before_write());
      kernels.push_back(Kernel::convert(s.place(), sum_dtype_, input.buffer(p).place(), dtype_, count));
    }
    converted = backend.launch(kernels, after);
    input.add_read(converted);
    for (size_t p = 0; p < n; ++p) scratch_[p][0]->set_written(converted);
  }
  for (size_t p = 0; p < n; ++p) {
    GroupCall &g = groups_[members_[p].group];
    const size_t r = members_[p].rank;
    Buffer &out = promote_out ? scratch(p, 1, static_cast<size_t>(shape_elements(g.calls[r].out_shape)) *
                                                  dtype_size(sum_dtype_))
                              : output.buffer(p);
    Buffer &in = promote_in ? *scratch_[p][0] : input.buffer(p);
    g.slots[r].in = in.place();
    g.slots[r].out = out.place();
    g.calls[r].out = out.place();
    g.calls[r].after = in.before_read();
    g.calls[r].after.add(out.before_write());
  }
  EventPtr done;
  if (!backend.run_collective_groups(groups_, done)) return false;
  for (size_t p = 0; p < n; ++p) {
    (promote_in ? *scratch_[p][0] : input.buffer(p)).add_read(done);
    (promote_out ? *scratch_[p][1] : output.buffer(p)).set_written(done);
  }
  if (op_.traits().mean) {
    std::vector<size_t> positions(n);
    for (size_t p = 0; p < n; ++p) positions[p] = p;
    finish_means(output, positions, done);
  }
  return true;
}

void PersistentCollective::finish_means(const Array &output, const std::vector<size_t> &positions,
                                        EventPtr done) {
  // pmean: the sums, converted to float where the input was not, divided
  // by the group size (as XLA does: times its reciprocal).
  Backend &backend = runtime_->backend();
  const bool promote_out = sum_dtype_ != out_dtype_;
  const size_t group_size = AxisGroups::of(*in_sharding_->mesh(), op_.axes()).group_size();
  std::vector<Kernel> converts, divides;
  EventList after{done};
  for (size_t p : positions) {
    const size_t count = static_cast<size_t>(shape_elements(out_local_[p]));
    const Place out = output.buffer(p).place();
    after.add(output.buffer(p).before_write());
    if (promote_out)
      converts.push_back(
          Kernel::convert(out, out_dtype_, scratch_[p][1]->place(), sum_dtype_, count));
    divides.push_back(Kernel::scale_by_reciprocal(out, out, out_dtype_, count,
                                                  static_cast<double>(group_size)));
  }
  if (promote_out) {
    const EventPtr converted_out = backend.launch(converts, after);
    for (size_t p : positions) {
      scratch_[p][1]->add_read(converted_out);
      output.buffer(p).set_written(converted_out);
    }
    after = EventList{converted_out};
  }
  const EventPtr scaled = backend.launch(divides, after);
  for (size_t p : positions) output.buffer(p).set_written(scaled);
}

void PersistentCollective::run_across_processes(const Array &input, const Array &output) {
  const Mesh &m = *in_sharding_->mesh();
  Runtime &rt = *runtime_;
  Backend &backend = rt.backend();
  const std::string what = op_.label(m);
  const bool promote_in = sum_dtype_ != dtype_;
  const bool promote_out = sum_dtype_ != out_dtype_;
  const size_t es = dtype_size(sum_dtype_);
  std::vector<size_t> positions;
  for (size_t p = 0; p < m.size(); ++p)
    if (rt.is_local(m.devices()[p])) positions.push_back(p);

  // JAX's promotions first (bool sums in int32, integer means in their
  // own type), then every block must be ready: the host reads them.
  if (promote_in) {
    std::vector<Kernel> kernels;
    EventList after = input.before_read();
    for (size_t p : positions) {
      const size_t count = static_cast<size_t>(shape_elements(in_local_[p]));
      Buffer &s = scratch(p, 0, count * es);
      after.add(s.before_write());
      kernels.push_back(Kernel::convert(s.place(), sum_dtype_, input.buffer(p).place(), dtype_, count));
    }
    const EventPtr converted = backend.launch(kernels, after);
    input.add_read(converted);
    for (size_t p : positions) scratch_[p][0]->set_written(converted);
  }
  auto in_buffer = [&](size_t p) -> Buffer & { return promote_in ? *scratch_[p][0] : input.buffer(p); };
  for (size_t p : positions) in_buffer(p).wait();

  const std::string signature = op_.signature(dtype_, in_local_[positions.empty() ? 0 : positions[0]]);
  std::vector<across::LocalMember> locals;
  for (size_t p : positions) {
    const Session::Member mem = session_->member(p, op_.axes());
    locals.push_back({mem.global, mem.global_rank, in_buffer(p).place(), in_local_[p], &signature});
  }
  const across::Combine combine{op_.traits().reduce, sum_dtype_};
  const bool partials = op_.transport() == Transport::AllReduce && !rt.exact_reductions();
  void *storage = across::exchange(
      rt, rt.processes_of(m.devices()), locals, es, deadline_after(timeout_), what,
      [&](size_t bytes) {
        if (exchanged_.size() < bytes) exchanged_.resize(bytes);
        return static_cast<void *>(exchanged_.data());
      },
      partials ? &combine : nullptr);

  // Each member's result, from its group's blocks, into its output (or
  // the sum's scratch of a pmean that changes type).
  for (size_t k = 0; k < positions.size(); ++k) {
    const size_t p = positions[k];
    CollectiveCall call = collective_call(op_, sum_dtype_, m.devices()[p], locals[k].rank);
    call.out_shape = out_local_[p];
    const size_t bytes = static_cast<size_t>(shape_elements(call.out_shape)) * es;
    Buffer &out = promote_out ? scratch(p, 1, bytes) : output.buffer(p);
    across::write_result(rt, call, across::group_blocks(storage, k), locals[k].rank, out);
  }
  // Every result is written by now (computed here, or its copy waited for).
  if (op_.traits().mean) finish_means(output, positions, nullptr);
}

void PersistentCollective::run_on_device_threads(const Array &input, const Array &output) {
  const Mesh &m = *in_sharding_->mesh();
  Runtime &rt = *runtime_;
  if (session_->broken())
    session_ = std::make_unique<Session>(in_sharding_->mesh(), timeout_);
  else
    session_->reset_departures();
  std::vector<spmd_status> status(m.size(), SPMD_OK);
  std::vector<std::string> message(m.size());
  // This process's devices (all of them in a runtime of one process).
  std::vector<int> devices;
  std::vector<size_t> positions;
  for (size_t p = 0; p < m.size(); ++p)
    if (rt.is_local(m.devices()[p])) {
      devices.push_back(m.devices()[p]);
      positions.push_back(p);
    }
  rt.device_threads().run(devices, [&](size_t i) {
    const size_t p = positions[i];
    try {
      Buffer &in_buffer = input.buffer(p);
      const LocalBlock in{in_buffer.place(), dtype_, in_local_[p]};
      OpMemory mem;
      mem.output = [&](size_t bytes) -> Buffer & {
        if (bytes != output.shard_bytes(p))
          fail(SPMD_ERR_INTERNAL, "persistent collective: planned ", output.shard_bytes(p),
               " bytes for device ", m.devices()[p], " but the op needs ", bytes);
        return output.buffer(p);
      };
      mem.scratch = [&](size_t bytes, int slot) -> Buffer & { return scratch(p, slot, bytes); };
      const OpResult r =
          run_collective_op(*session_, p, rt.backend(), op_, in, in_buffer.before_read(), mem);
      in_buffer.add_read(r.done);
    } catch (const Error &e) {
      status[p] = e.status();
      try {
        message[p] = e.what();
      } catch (const std::bad_alloc &) {
      }
    } catch (const std::bad_alloc &) {
      status[p] = SPMD_ERR_OUT_OF_MEMORY;
    }
    // Whatever happened, the device departs: its peers must hear of it.
    session_->depart(p, status[p], message[p]);
  });
  for (size_t p = 0; p < m.size(); ++p)
    if (status[p] != SPMD_OK)
      fail(status[p], "device ", m.devices()[p], ": ",
           message[p].empty() && status[p] == SPMD_ERR_OUT_OF_MEMORY ? "out of memory" : message[p]);
}

ArrayPtr PersistentCollective::execute(const ArrayPtr &input) {
  WorkLog *log = note_device_work();
  std::lock_guard<std::mutex> lock(mu_);
  const ArrayPtr in = prepare(input);
  auto out = std::make_shared<Array>(out_sharding_, out_dtype_, out_global_);
  run(*in, *out);
  // A program learning its ops keeps the call, to run it again into
  // arrays of its own (execute_into).
  if (log)
    log->add_rerun(*in, *out, [self = shared_from_this()](const ArrayPtr &x, Array &y) { self->execute_into(x, y); },
                   WorkLog::Rerun::Collective);
  return out;
}

void PersistentCollective::execute_into(const ArrayPtr &input, Array &output) {
  note_device_work();
  std::lock_guard<std::mutex> lock(mu_);
  if (output.dtype() != out_dtype_ || output.shape() != out_global_ ||
      !output.sharding()->equivalent(*out_sharding_) ||
      !(*output.sharding()->mesh() == *out_sharding_->mesh()))
    invalid("output: ", dtype_name(output.dtype()), shape_to_string(output.shape()), " laid out by ",
            output.sharding()->to_string(), ", but the collective gives ", dtype_name(out_dtype_),
            shape_to_string(out_global_), " laid out by ", out_sharding_->to_string());
  if (&output == input.get()) invalid("output: is the input; give a separate array");
  const ArrayPtr in = prepare(input);
  run(*in, output);
}

}  // namespace spmd
