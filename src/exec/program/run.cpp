// Running a compiled program (exec/program/program.hpp).
#include <algorithm>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "exec/program/program.hpp"

namespace spmd {

namespace {

// Whether the run alone holds `v` and its blocks: not a caller's array, not
// one another value or view shares (a relabeled or reshaped one), not one
// another library views. Its blocks may then be written over.
bool held_by_the_run_alone(const ArrayPtr &v) {
  return v && v.use_count() == 1 && !v->abstract() && v->writable_in_place();
}

}  // namespace

// ---- SpareBlocks ----

void Program::SpareBlocks::keep(ArrayPtr v) {
  if (!held_by_the_run_alone(v)) return;
  if (kept_.size() == kKept) kept_.erase(kept_.begin());
  kept_.push_back(std::move(v));
}

ArrayPtr Program::SpareBlocks::array(const std::vector<ShardLayout> &layout, const ShardingPtr &sharding,
                                     spmd_dtype dtype, const Shape &shape) {
  const size_t elem = dtype_size(dtype);
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
    const Array &a = **it;
    // The same layout object (the same sharding and shape) fits whatever
    // the dtype's size; otherwise block by block.
    bool fits = &a.shards() == &layout && a.elem_size() == elem;
    if (!fits && a.shard_count() == layout.size()) {
      fits = true;
      for (size_t i = 0; fits && i < layout.size(); ++i)
        fits = a.shard(i).device == layout[i].device &&
               (!a.addressable(i) ||
                a.buffer(i).bytes() == static_cast<size_t>(layout[i].box.elements()) * elem);
    }
    if (!fits) continue;
    std::vector<BufferPtr> buffers;
    buffers.reserve(a.shard_count());
    for (size_t i = 0; i < a.shard_count(); ++i) buffers.push_back(a.buffer_ptr(i));
    kept_.erase(std::next(it).base());
    return Array::from_buffers(sharding, dtype, shape, std::move(buffers));
  }
  return std::make_shared<Array>(sharding, dtype, shape);
}

namespace {

// Whether the pass may write its result over `v` in place: held by the
// run alone, of the result's type and blocks. A pass reads each element
// before it writes it, so then it needs no blocks of its own: the Layer's
// relu, residual adds and scaling read the blocks of a product just
// written.
bool pass_may_write_over(const ArrayPtr &v, const Array &r) {
  if (!held_by_the_run_alone(v) || v->dtype() != r.dtype() || v->shape() != r.shape() ||
      v->shard_count() != r.shard_count())
    return false;
  for (size_t i = 0; i < r.shard_count(); ++i)
    if (v->shard(i).device != r.shard(i).device || v->shard(i).box != r.shard(i).box) return false;
  return true;
}

}  // namespace

ArrayPtr Program::run_group(const Group &g, const std::vector<ArrayPtr> &values, ArraySlot *reuse,
                            const std::vector<int> &dying, SpareBlocks &spare) const {
  const Array &r = *values_[static_cast<size_t>(nodes_[static_cast<size_t>(g.nodes.back())].result)].abstract;
  // A donated input the pass reads for the last time gives the result its
  // buffers (plan_donations chose one of the result's type and layout;
  // each element is read before it is written); not one another library
  // views, nor one whose buffers another array shares (a reshape's view).
  ArrayPtr out;
  if (reuse && reuse->array()->writable_in_place() && reuse->consume("spmd_x_program_run"))
    out = reuse->array()->relabeled(r.sharding());
  // (Chosen before the inputs are listed below, which hold them too.)
  for (size_t k = 0; k < g.inputs.size() && !out; ++k) {
    const int v = g.inputs[k].value;
    if (v >= 0 && std::find(dying.begin(), dying.end(), v) != dying.end() &&
        pass_may_write_over(values[static_cast<size_t>(v)], r))
      out = values[static_cast<size_t>(v)]->relabeled(r.sharding());
  }
  if (!out) out = spare.array(r.shards(), r.sharding(), r.dtype(), r.shape());
  std::vector<ArrayPtr> in;
  std::vector<const Array *> reads;
  for (const Source &s : g.inputs) {
    in.push_back(s.value >= 0 ? values[static_cast<size_t>(s.value)] : s.constant);
    reads.push_back(in.back().get());
  }
  Group::Kernels &made = *g.kernels;
  std::lock_guard<std::mutex> lock(made.mu);
  std::vector<Kernel> first;  // the first run's kernels
  std::vector<size_t> first_shards;
  size_t next = 0;  // later runs: the kernel of the next block written
  for (size_t i = 0; i < out->shard_count(); ++i) {
    const ShardLayout &s = out->shard(i);
    if (s.box.empty() || !out->addressable(i)) continue;
    Place places[3];
    for (size_t k = 0; k < in.size(); ++k) {
      if (in[k]->shard(i).device != s.device)
        fail(SPMD_ERR_INTERNAL, "program: fused input ", k, " shard ", i, " is on device ",
             in[k]->shard(i).device, ", the result's on ", s.device);
      places[k] = in[k]->buffer(i).place();
    }
    if (!made.made) {
      first.push_back(Kernel::elementwise_chain(out->buffer(i).place(), places, g.chain, r.dtype(),
                                                static_cast<size_t>(s.box.elements()), s.device));
      first_shards.push_back(i);
      continue;
    }
    if (next == made.kernels.size() || made.shards[next] != i)
      fail(SPMD_ERR_INTERNAL, "program: a fused pass's block ", i, " is not the one its first run wrote");
    Kernel &k = made.kernels[next++];
    k.out = out->buffer(i).place();
    k.in0 = places[0];
    k.in1 = places[1];
    k.in2 = places[2];
  }
  if (!made.made) {
    made.kernels = std::move(first);
    made.shards = std::move(first_shards);
    made.made = true;
  } else if (next != made.kernels.size()) {
    fail(SPMD_ERR_INTERNAL, "program: a fused pass wrote ", next, " blocks where its first run wrote ",
         made.kernels.size());
  }
  ops::launch_batch_noted(*out, reads, made.kernels, made.shards);
  return out;
}

std::shared_ptr<const Program::Launch> Program::learn_launch(const std::vector<ArrayPtr> &operands,
                                                            const ArrayPtr &result,
                                                            const WorkLog &work) {
  const auto &launches = work.launches();
  if (launches.empty() || work.count() != static_cast<int>(launches.size())) return nullptr;
  // The last launch wrote the result's own buffers.
  const auto &last = launches.back().out;
  if (last.size() != result->shard_count()) return nullptr;
  for (size_t i = 0; i < last.size(); ++i)
    if (last[i] != result->buffer_ptr(i)) return nullptr;
  auto l = std::make_shared<Launch>();
  // Steps that write an earlier step's whole array again (a concatenation's
  // copies after its first, a mean's division of its psum): the earliest
  // step that wrote it. The same buffers, one of them at least this
  // process's: two arrays with no shard here both read as all nulls.
  const auto same_array = [](const std::vector<BufferPtr> &a, const std::vector<BufferPtr> &b) {
    return a == b && std::any_of(a.begin(), a.end(), [](const BufferPtr &p) { return p != nullptr; });
  };
  std::vector<int> into(launches.size(), -1);
  for (size_t s = 1; s < launches.size(); ++s)
    for (size_t t = 0; t < s && into[s] < 0; ++t)
      if (same_array(launches[t].out, launches[s].out)) into[s] = static_cast<int>(t);
  // Where the last launch writes into an earlier step's array, the result
  // is that array relabeled.
  if (into.back() >= 0) {
    if (launches[static_cast<size_t>(into.back())].dtype != result->dtype()) return nullptr;
    l->in_place = into.back();
    l->result_sharding = result->sharding();
    l->result_shape = result->shape();
  }
  // Names a place by the array (operand, result or an earlier step's) and
  // shard whose buffer holds it; false when none does. The result's
  // buffers are the earlier step's where the last launch writes in place.
  const auto name = [&](const Place &p, size_t step, Launch::Slot &slot) {
    if (!p.ptr) return true;
    for (int a = l->in_place >= 0 ? 0 : Launch::kResult; a < static_cast<int>(operands.size()); ++a) {
      const Array &arr = a < 0 ? *result : *operands[static_cast<size_t>(a)];
      for (size_t j = 0; j < arr.shard_count(); ++j)
        if (arr.addressable(j) && arr.buffer(j).holds(p)) {
          slot = {a, j, static_cast<size_t>(p.ptr.bits - arr.buffer(j).ptr().bits)};
          return true;
        }
    }
    for (size_t s = 0; s <= step && s + 1 < launches.size(); ++s)
      for (size_t j = 0; j < launches[s].out.size(); ++j)
        if (const BufferPtr &b = launches[s].out[j]; b && b->holds(p)) {
          slot = {Launch::kFirstStep - static_cast<int>(s), j, static_cast<size_t>(p.ptr.bits - b->ptr().bits)};
          return true;
        }
    return false;
  };
  // Names a whole buffer a collective or copy reads by the operand or
  // earlier step whose shard it is; false when none is.
  const auto name_buffer = [&](const BufferPtr &b, size_t step, Launch::Slot &slot) {
    if (!b) return true;  // another process's shard
    for (size_t a = 0; a < operands.size(); ++a)
      for (size_t j = 0; j < operands[a]->shard_count(); ++j)
        if (operands[a]->buffer_ptr(j) == b) {
          slot = {static_cast<int>(a), j, 0};
          return true;
        }
    for (size_t s = 0; s < step; ++s)
      for (size_t j = 0; j < launches[s].out.size(); ++j)
        if (launches[s].out[j] == b) {
          slot = {Launch::kFirstStep - static_cast<int>(s), j, 0};
          return true;
        }
    return false;
  };
  for (size_t s = 0; s < launches.size(); ++s) {
    const WorkLog::Launch &w = launches[s];
    const bool final = s + 1 == launches.size();
    // The step whose array this one writes: its own, or an earlier one's.
    const int root = into[s] >= 0 ? into[s] : static_cast<int>(s);
    if (w.rerun) {
      // Its own array is laid out as the collective or copy gives it; as
      // the last step, its buffers are the result's relabeled. It writes
      // an array of its own or an earlier step's whole, none an operand has.
      for (const BufferPtr &b : w.out) {
        Launch::Slot held;
        if (into[s] < 0 && b && name_buffer(b, s, held)) return nullptr;
      }
      Launch::Step step;
      step.into = into[s];
      step.sharding = w.sharding;
      step.dtype = w.dtype;
      step.shape = w.shape;
      if (!step.sharding || (final && w.dtype != result->dtype())) return nullptr;
      step.layout = step.sharding->shared_layout(step.shape);
      if (step.layout->size() != w.out.size()) return nullptr;
      // Before the last step the result is not yet made (unless the last
      // step writes this one's array in place).
      if (!final && root != l->in_place)
        for (const BufferPtr &b : w.out)
          for (size_t j = 0; b && j < result->shard_count(); ++j)
            if (result->buffer_ptr(j) == b) return nullptr;
      step.in.resize(w.in.size());
      for (size_t j = 0; j < w.in.size(); ++j)
        if (!name_buffer(w.in[j], s, step.in[j])) return nullptr;
      step.rerun = w.rerun;
      step.kind = w.kind;
      step.in_sharding = w.in_sharding;
      step.in_dtype = w.in_dtype;
      step.in_shape = w.in_shape;
      if (final) {
        l->result_sharding = result->sharding();
        l->result_shape = result->shape();
      }
      l->steps.push_back(std::move(step));
      continue;
    }
    Launch::Step step;
    step.into = into[s];
    step.sharding = final ? result->sharding() : w.sharding;
    step.dtype = final ? result->dtype() : w.dtype;
    step.shape = final ? result->shape() : w.shape;
    if (!step.sharding) return nullptr;
    step.layout = step.sharding->shared_layout(step.shape);
    if (step.layout->size() != w.out.size()) return nullptr;
    const int writes = !final || l->in_place >= 0 ? Launch::kFirstStep - root : Launch::kResult;
    for (const auto &[i, k] : w.kernels) {
      std::array<Launch::Slot, 4> slots;
      const Place *places[4] = {&k.out, &k.in0, &k.in1, &k.in2};
      for (int q = 0; q < 4; ++q)
        if (!name(*places[q], s, slots[static_cast<size_t>(q)])) return nullptr;
      if (slots[0].array != writes) return nullptr;  // each kernel writes its step's array
      // Before the last step the result is not yet made.
      if (!final && std::any_of(slots.begin(), slots.end(),
                                [](const Launch::Slot &x) { return x.array == Launch::kResult; }))
        return nullptr;
      step.kernels.push_back(k);
      step.shards.push_back(i);
      step.slots.push_back(slots);
    }
    l->steps.push_back(std::move(step));
  }
  return l;
}

ArrayPtr Program::run_launch(const Launch &l, const std::vector<ArrayPtr> &operands, SpareBlocks &spare) {
  std::vector<ArrayPtr> made;  // each step's array; the last is the result
  made.reserve(l.steps.size());
  std::vector<const Array *> reads;
  std::lock_guard<std::mutex> lock(l.mu);
  for (const Launch::Step &step : l.steps) {
    if (step.into >= 0) {
      ArrayPtr earlier = made[static_cast<size_t>(step.into)];  // written again
      made.push_back(std::move(earlier));
    } else {
      made.push_back(spare.array(*step.layout, step.sharding, step.dtype, step.shape));
    }
    Array &out = *made.back();
    if (step.rerun) {
      std::vector<BufferPtr> in;
      in.reserve(step.in.size());
      for (const Launch::Slot &s : step.in) {
        const Array *a = s.array == Launch::kNone ? nullptr
                         : s.array <= Launch::kFirstStep
                             ? made[static_cast<size_t>(Launch::kFirstStep - s.array)].get()
                             : operands[static_cast<size_t>(s.array)].get();
        in.push_back(a ? a->buffer_ptr(s.shard) : nullptr);
      }
      step.rerun(Array::from_buffers(step.in_sharding, step.in_dtype, step.in_shape, std::move(in)), out);
      continue;
    }
    for (size_t k = 0; k < step.kernels.size(); ++k) {
      Kernel &kernel = step.kernels[k];
      Place *places[4] = {&kernel.out, &kernel.in0, &kernel.in1, &kernel.in2};
      for (size_t q = 0; q < 4; ++q) {
        const Launch::Slot &s = step.slots[k][q];
        if (s.array == Launch::kNone) continue;
        const Array &a = s.array == Launch::kResult ? out
                         : s.array <= Launch::kFirstStep
                             ? *made[static_cast<size_t>(Launch::kFirstStep - s.array)]
                             : *operands[static_cast<size_t>(s.array)];
        *places[q] = a.buffer(s.shard).place().offset(s.offset);
      }
    }
    // What the step reads: the operands and the earlier steps' arrays.
    reads.clear();
    for (const ArrayPtr &a : operands) reads.push_back(a.get());
    for (size_t j = 0; j + 1 < made.size(); ++j) reads.push_back(made[j].get());
    ops::launch_batch(out, reads, step.kernels, step.shards);
  }
  ArrayPtr result = std::move(made.back());
  made.pop_back();
  // Each step's own array, once, is kept for later results; not the result's.
  for (size_t j = 0; j < made.size(); ++j)
    if (l.steps[j].into < 0 && made[j] != result) spare.keep(std::move(made[j]));
  if (l.result_sharding) {  // a last collective or copy, or a write in place
    std::vector<BufferPtr> buffers;
    buffers.reserve(result->shard_count());
    for (size_t i = 0; i < result->shard_count(); ++i) buffers.push_back(result->buffer_ptr(i));
    result = Array::from_buffers(l.result_sharding, result->dtype(), l.result_shape, std::move(buffers));
  }
  return result;
}

std::vector<ArrayPtr> Program::run_nodes(std::vector<ArrayPtr> values, const std::vector<ArraySlot *> &slots,
                                         bool learn) const {
  std::vector<ArrayPtr> operands;
  SpareBlocks spare;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &n = nodes_[i];
    ArrayPtr &result = values[static_cast<size_t>(n.result)];
    const Donation &d = donations_[i];
    ArraySlot *donated = d.input >= 0 && static_cast<size_t>(d.input) < slots.size()
                             ? slots[static_cast<size_t>(d.input)]
                             : nullptr;
    if (n.group >= 0) {
      const Group &g = groups_[static_cast<size_t>(n.group)];
      if (g.nodes.back() == static_cast<int>(i)) result = run_group(g, values, donated, drops_[i], spare);
    } else {
      operands.clear();
      for (const Source &s : n.operands)
        operands.push_back(s.value >= 0 ? values[static_cast<size_t>(s.value)] : s.constant);
      if (n.multi) {
        std::vector<ArrayPtr> outs = n.multi(operands);
        result = std::move(outs[0]);
        for (size_t k = 0; k < n.more_results.size(); ++k)
          values[static_cast<size_t>(n.more_results[k])] = std::move(outs[k + 1]);
      } else if (!learn && launches_[i] && !donated) {
        result = run_launch(*launches_[i], operands, spare);
      } else {
        // A donation is the op's own, as an eager call given one takes it.
        ops::OpOptions donating;
        if (donated) {
          donating = n.options;
          donating.donate[static_cast<size_t>(d.operand)] = donated;
          donating.function = "spmd_x_program_run";  // whom later users of the input are told of
        }
        const ops::OpOptions &options = donated ? donating : n.options;
        CollectiveCacheScope collectives(*collectives_[i]);
        if (learn) {
          WorkLog work;
          result = n.replay(operands, options);
          launches_[i] = learn_launch(operands, result, work);
        } else {
          result = n.replay(operands, options);
        }
      }
    }
    // Values read for the last time here give their blocks to later
    // results of the same sizes, or let them go.
    operands.clear();
    for (int v : drops_[i]) spare.keep(std::move(values[static_cast<size_t>(v)]));
  }
  return values;
}

std::vector<ArrayPtr> Program::run(const std::vector<ArrayPtr> &inputs, const std::vector<ArraySlot *> &slots) const {
  if (!compiled_) invalid("program: is still recording; compile it before running it");
  if (inputs.size() != inputs_.size())
    invalid("n_inputs: ", inputs.size(), inputs.size() == 1 ? " input" : " inputs",
            " for a program of ", inputs_.size());
  std::vector<ArrayPtr> values(values_.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Array &want = *values_[static_cast<size_t>(inputs_[k])].abstract;
    const Array &got = *inputs[k];
    if (got.abstract()) invalid("inputs[", k, "]: a value being recorded, not an array with values");
    if (got.dtype() != want.dtype() || got.shape() != want.shape())
      invalid("inputs[", k, "]: ", type_text(got), " where the program was recorded with ",
              type_text(want));
    if (&got.runtime() != runtime_.get())
      invalid("inputs[", k, "]: an array of another runtime than the program's");
    if (!got.sharding()->equivalent(*want.sharding()))
      invalid("inputs[", k, "]: laid out as ", got.sharding()->to_string(),
              " where the program was recorded with ", want.sharding()->to_string(),
              "; reshard it first");
    if (donated(k))
      for (size_t j = 0; j < inputs.size(); ++j)
        if (j != k && inputs[j] == inputs[k])
          invalid("inputs[", std::max(j, k), "]: the array bound to donated inputs[", k, "] is also inputs[",
                  j, "]; a donated array is bound once");
    values[static_cast<size_t>(inputs_[k])] = inputs[k];
  }
  // The first run learns which ops are one launch; the others wait for it
  // rather than learn again.
  if (!learnt_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(learn_mu_);
    if (!learnt_.load(std::memory_order_relaxed)) {
      launches_.assign(nodes_.size(), nullptr);
      values = run_nodes(std::move(values), slots, true);
      learnt_.store(true, std::memory_order_release);
      return outputs_of(values);
    }
  }
  return outputs_of(run_nodes(std::move(values), slots, false));
}

std::vector<ArrayPtr> Program::outputs_of(const std::vector<ArrayPtr> &values) const {
  std::vector<ArrayPtr> outs;
  outs.reserve(outputs_.size());
  for (const Output &o : outputs_) {
    ArrayPtr v = values[static_cast<size_t>(o.value)];
    if (o.sharding && v->sharding() != o.sharding)
      v = v->laid_out_as(o.sharding);
    outs.push_back(std::move(v));
  }
  return outs;
}

}  // namespace spmd
