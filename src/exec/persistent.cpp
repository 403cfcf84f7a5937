#include "exec/persistent.hpp"

#include <cstdlib>
#include <cstring>
#include <map>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/axis_groups.hpp"
#include "runtime/device_threads.hpp"
#include "exec/shard_map.hpp"

namespace spmd {

namespace {
// Input plus output bytes (all devices) up to which a persistent collective
// runs on the calling thread.
constexpr size_t kInlineBytes = 256 * 1024;
}  // namespace

PersistentCollective::PersistentCollective(ShardingPtr input_sharding, Collective op,
                                           spmd_dtype dtype, Shape global,
                                           std::chrono::milliseconds timeout)
    : in_sharding_(std::move(input_sharding)), op_(std::move(op)), dtype_(dtype),
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

  // The pool path's plan.
  std::map<const Group *, size_t> index;
  for (size_t p = 0; p < m.size(); ++p) {
    const Session::Member mem = session_->member(p, op_.axes());
    auto it = index.find(mem.group);
    if (it == index.end()) {
      it = index.emplace(mem.group, groups_.size()).first;
      groups_.emplace_back();
      groups_.back().calls.resize(mem.group->size());
      groups_.back().slots.resize(mem.group->size());
    }
    places_.push_back({it->second, mem.rank});
    CollectiveCall &c = groups_[it->second].calls[mem.rank];
    c.kind = op_.transport();
    c.op = op_.traits().reduce;
    c.dtype = sum_dtype_;
    c.device = m.devices()[p];
    c.out_shape = out_local[p];
    c.axis = op_.params().axis;
    c.concat_axis = op_.params().concat_axis;
    c.tiled = op_.params().tiled;
    c.source = op_.source_of(mem.rank);
    groups_[it->second].slots[mem.rank].in_shape = in_local_[p];
  }
}

void *PersistentCollective::scratch(size_t position, int slot, size_t bytes) {
  BufferPtr &b = scratch_[position][static_cast<size_t>(slot)];
  if (!b || b->bytes() < bytes) {
    const Mesh &m = *in_sharding_->mesh();
    b = std::make_shared<Buffer>(Runtime::of(*m.device_set()).backend_ptr(), m.devices()[position], bytes);
  }
  return b->data();
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
  input.block_until_ready();
  // SPMD_COLLECTIVE_THREADS=device runs every member on its device's thread
  // with barriers, as inside shard_map (for comparing the two paths).
  const char *mode = std::getenv("SPMD_COLLECTIVE_THREADS");
  const bool device_threads = mode != nullptr && std::strcmp(mode, "device") == 0;
  if (device_threads || !run_on_pool(input, output)) run_on_device_threads(input, output);
}

bool PersistentCollective::run_on_pool(const Array &input, const Array &output) {
  const Mesh &m = *in_sharding_->mesh();
  Runtime &rt = Runtime::of(*m.device_set());
  const size_t n = m.size();
  // Small collectives run on the calling thread alone: waking a worker
  // costs more than the copies.
  const bool inline_run = input.nbytes() + output.nbytes() <= kInlineBytes;
  auto parallel_for = [&](size_t count, const std::function<void(size_t)> &fn) {
    if (inline_run)
      for (size_t i = 0; i < count; ++i) fn(i);
    else
      rt.pool().parallel_for(count, fn);
  };
  // JAX's promotions: bool sums in int32; a pmean of integers sums in their
  // own arithmetic, then becomes float.
  const bool promote_in = sum_dtype_ != dtype_;
  const bool promote_out = sum_dtype_ != out_dtype_;
  if (promote_in)
    parallel_for(n, [&](size_t p) {
      const size_t count = static_cast<size_t>(shape_elements(in_local_[p]));
      convert_elements(input.buffer(p).data(), dtype_,
                       scratch(p, 0, count * dtype_size(sum_dtype_)), sum_dtype_, count);
    });
  for (size_t p = 0; p < n; ++p) {
    GroupCall &g = groups_[places_[p].group];
    const size_t r = places_[p].rank;
    void *out = output.buffer(p).data();
    if (promote_out)
      out = scratch(p, 1, static_cast<size_t>(shape_elements(g.calls[r].out_shape)) *
                              dtype_size(sum_dtype_));
    g.slots[r].in = promote_in ? scratch_[p][0]->data() : input.buffer(p).data();
    g.slots[r].out = out;
    g.calls[r].out = out;
  }
  if (!rt.backend().run_collective_groups(groups_, parallel_for)) return false;
  if (op_.traits().mean)
    parallel_for(n, [&](size_t p) {
      const GroupCall &g = groups_[places_[p].group];
      const CollectiveCall &c = g.calls[places_[p].rank];
      const size_t count = static_cast<size_t>(shape_elements(c.out_shape));
      if (promote_out)
        convert_elements(c.out, sum_dtype_, output.buffer(p).data(), out_dtype_, count);
      divide_elements(output.buffer(p).data(), out_dtype_, count,
                      static_cast<double>(g.calls.size()));
    });
  return true;
}

void PersistentCollective::run_on_device_threads(const Array &input, const Array &output) {
  const Mesh &m = *in_sharding_->mesh();
  Backend &backend = Runtime::of(*m.device_set()).backend();
  if (session_->broken())
    session_ = std::make_unique<Session>(in_sharding_->mesh(), timeout_);
  else
    session_->reset_departures();
  std::vector<spmd_status> status(m.size(), SPMD_OK);
  std::vector<std::string> message(m.size());
  Runtime::of(*m.device_set()).device_threads().run(m.devices(), [&](size_t p) {
    try {
      const LocalBlock in{input.buffer(p).data(), dtype_, in_local_[p]};
      OpMemory mem;
      mem.output = [&](size_t bytes) -> void * {
        if (bytes != output.shard_bytes(p))
          fail(SPMD_ERR_INTERNAL, "persistent collective: planned ", output.shard_bytes(p),
               " bytes for device ", m.devices()[p], " but the op needs ", bytes);
        return output.buffer(p).data();
      };
      mem.scratch = [&](size_t bytes, int slot) { return scratch(p, slot, bytes); };
      run_collective_op(*session_, p, backend, op_, in, mem);
      session_->depart(p, SPMD_OK, "");
    } catch (const Error &e) {
      status[p] = e.status();
      message[p] = e.what();
      session_->depart(p, e.status(), e.what());
    } catch (const std::bad_alloc &) {
      status[p] = SPMD_ERR_OUT_OF_MEMORY;
      message[p] = "out of memory";
      session_->depart(p, status[p], message[p]);
    }
  });
  for (size_t p = 0; p < m.size(); ++p)
    if (status[p] != SPMD_OK) fail(status[p], "device ", m.devices()[p], ": ", message[p]);
}

ArrayPtr PersistentCollective::execute(const ArrayPtr &input) {
  std::lock_guard<std::mutex> lock(mu_);
  const ArrayPtr in = prepare(input);
  auto out = std::make_shared<Array>(out_sharding_, out_dtype_, out_global_);
  run(*in, *out);
  return out;
}

void PersistentCollective::execute_into(const ArrayPtr &input, Array &output) {
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
