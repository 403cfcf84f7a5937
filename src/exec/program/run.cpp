// Running a compiled program (exec/program/program.hpp).
#include "base/error.hpp"
#include "exec/program/program.hpp"

namespace spmd {

namespace {

}  // namespace

ArrayPtr Program::run_group(const Group &g, const std::vector<ArrayPtr> &values) const {
  const Array &r = *values_[static_cast<size_t>(nodes_[static_cast<size_t>(g.nodes.back())].result)].abstract;
  std::vector<ArrayPtr> in;
  std::vector<const Array *> reads;
  for (const Source &s : g.inputs) {
    in.push_back(s.value >= 0 ? values[static_cast<size_t>(s.value)] : s.constant);
    reads.push_back(in.back().get());
  }
  auto out = std::make_shared<Array>(r.sharding(), r.dtype(), r.shape());
  std::vector<std::pair<size_t, Kernel>> kernels;
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
    kernels.emplace_back(i, Kernel::elementwise_chain(out->buffer(i).place(), places, g.chain,
                                                      r.dtype(), static_cast<size_t>(s.box.elements()),
                                                      s.device));
  }
  ops::launch_per_shard(*out, reads, std::move(kernels));
  return out;
}

std::vector<ArrayPtr> Program::run(const std::vector<ArrayPtr> &inputs) const {
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
    values[static_cast<size_t>(inputs_[k])] = inputs[k];
  }
  std::vector<ArrayPtr> operands;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &n = nodes_[i];
    if (n.group >= 0) {
      const Group &g = groups_[static_cast<size_t>(n.group)];
      if (g.nodes.back() == static_cast<int>(i)) values[static_cast<size_t>(n.result)] = run_group(g, values);
    } else {
      operands.clear();
      for (const Source &s : n.operands)
        operands.push_back(s.value >= 0 ? values[static_cast<size_t>(s.value)] : s.constant);
      values[static_cast<size_t>(n.result)] = n.replay(operands, n.options);
    }
    // Values read for the last time here let their buffers go (the
    // allocator's cache hands them to the next results).
    for (int v : drops_[i]) values[static_cast<size_t>(v)].reset();
  }
  std::vector<ArrayPtr> outs;
  outs.reserve(outputs_.size());
  for (const Output &o : outputs_) {
    ArrayPtr v = values[static_cast<size_t>(o.value)];
    if (o.sharding && v->sharding() != o.sharding)
      v = v->sharding()->equivalent(*o.sharding) ? v->relabeled(o.sharding) : v->reshard(o.sharding);
    outs.push_back(std::move(v));
  }
  return outs;
}

}  // namespace spmd
