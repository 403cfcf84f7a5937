// Compiling a program: which elementwise ops run fused, as one chain kernel
// per shard (exec/program/program.hpp).
#include <algorithm>

#include "base/error.hpp"
#include "exec/program/program.hpp"

namespace spmd {

void Program::compile() {
  if (compiled_) invalid("program: is compiled already");
  if (outputs_.empty()) invalid("program: has no output; add one with spmd_x_program_output");
  place();
  plan_groups();
  // Each value is dropped after the last op reading it; an op of a fused
  // group reads at the group's last op, where the chain runs.
  std::vector<int> last(values_.size(), -1);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &n = nodes_[i];
    const int at = n.group >= 0 ? groups_[static_cast<size_t>(n.group)].nodes.back() : static_cast<int>(i);
    for (const Source &s : n.operands)
      if (s.value >= 0) last[static_cast<size_t>(s.value)] = std::max(last[static_cast<size_t>(s.value)], at);
  }
  drops_.assign(nodes_.size(), {});
  collectives_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) collectives_.push_back(std::make_unique<CollectiveCache>());
  for (size_t v = 0; v < values_.size(); ++v)
    if (last[v] >= 0 && !values_[v].output) drops_[static_cast<size_t>(last[v])].push_back(static_cast<int>(v));
  donated_.resize(inputs_.size(), false);
  plan_donations();
  compiled_ = true;
}

// A donated input's buffers may hold the result of the op that reads it
// last (an elementwise op of its shape, type and layout, or a fused pass):
// the op writes each element where it has just read it. An input that is
// an output, or is read again later, keeps its buffers.
void Program::plan_donations() {
  donations_.assign(nodes_.size(), {});
  for (size_t k = 0; k < inputs_.size(); ++k) {
    if (!donated_[k]) continue;
    const int v = inputs_[k];
    if (values_[static_cast<size_t>(v)].output) continue;
    int last = -1, operand = -1;
    for (size_t i = 0; i < nodes_.size(); ++i)
      for (size_t j = 0; j < nodes_[i].operands.size(); ++j)
        if (nodes_[i].operands[j].value == v) {
          last = static_cast<int>(i);
          operand = static_cast<int>(j);
        }
    if (last < 0) continue;
    const Node &n = nodes_[static_cast<size_t>(last)];
    if (n.group >= 0) {
      last = groups_[static_cast<size_t>(n.group)].nodes.back();
      operand = -1;
    } else if (n.multi || n.steps.size() != 1 || operand >= 3) {
      continue;  // not one elementwise pass of at most 3 operands: nothing to write in place
    }
    // Only a result of the input's type and layout can take its buffers.
    const Array &in = *values_[static_cast<size_t>(v)].abstract;
    const Array &r = *values_[static_cast<size_t>(nodes_[static_cast<size_t>(last)].result)].abstract;
    if (in.dtype() != r.dtype() || in.shape() != r.shape() || !in.sharding()->equivalent(*r.sharding())) continue;
    Donation &d = donations_[static_cast<size_t>(last)];
    if (d.input >= 0) continue;  // one donation per op
    d = {operand, static_cast<int>(k)};
  }
}

// An op that is one elementwise pass over its operands as they are, all
// of its result's shape and layout.
bool Program::fusable(const Node &n) const {
  if (n.steps.size() != 1 || !n.steps[0].direct) return false;
  const Step &s = n.steps[0];
  const Array &r = *values_[static_cast<size_t>(n.result)].abstract;
  return r.shape() == s.params.shape && r.sharding()->equivalent(*s.out);
}

void Program::plan_groups() {
  const size_t max_steps = runtime_->backend().max_chain_steps();
  if (max_steps == 0) return;
  // The sources a set of nodes reads from outside itself.
  auto external = [&](const std::vector<int> &members) {
    std::vector<Source> out;
    for (int m : members) {
      const Node &n = nodes_[static_cast<size_t>(m)];
      const Step &s = n.steps[0];
      for (int k = 0; k < s.params.nin; ++k) {
        if (s.params.in[k].scalar) continue;
        const Source &src = n.operands[static_cast<size_t>(s.operand[k])];
        if (src.value >= 0) {
          const int p = values_[static_cast<size_t>(src.value)].producer;
          if (std::find(members.begin(), members.end(), p) != members.end()) continue;
        }
        const bool seen = std::any_of(out.begin(), out.end(), [&](const Source &o) {
          return src.value >= 0 ? o.value == src.value : o.constant == src.constant;
        });
        if (!seen) out.push_back(src);
      }
    }
    return out;
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node &n = nodes_[i];
    if (!fusable(n)) continue;
    const Array &r = *values_[static_cast<size_t>(n.result)].abstract;
    std::vector<int> members{static_cast<int>(i)};
    std::vector<int> absorbed;
    for (const Source &src : n.operands) {
      if (src.value < 0) continue;
      const Value &v = values_[static_cast<size_t>(src.value)];
      if (v.producer < 0 || v.output) continue;
      const int g = nodes_[static_cast<size_t>(v.producer)].group;
      if (g < 0 || std::find(absorbed.begin(), absorbed.end(), g) != absorbed.end()) continue;
      // Only this op reads the value, and it is the group's result.
      const auto reads = std::count_if(n.operands.begin(), n.operands.end(),
                                       [&](const Source &o) { return o.value == src.value; });
      const Group &group = groups_[static_cast<size_t>(g)];
      if (reads != v.uses || group.nodes.back() != v.producer) continue;
      if (v.abstract->shape() != r.shape() || !v.abstract->sharding()->equivalent(*r.sharding()))
        continue;
      std::vector<int> merged = group.nodes;
      merged.insert(merged.end(), members.begin(), members.end());
      std::sort(merged.begin(), merged.end());
      if (merged.size() > max_steps || external(merged).size() > 3) continue;
      members = std::move(merged);
      absorbed.push_back(g);
    }
    // The absorbed groups empty out; the op's own group holds them all.
    for (int g : absorbed) groups_[static_cast<size_t>(g)].nodes.clear();
    Group group;
    group.nodes = members;
    group.inputs = external(members);
    if (group.inputs.size() > 3) continue;
    const int id = static_cast<int>(groups_.size());
    for (int m : members) nodes_[static_cast<size_t>(m)].group = id;
    groups_.push_back(std::move(group));
    groups_.back().chain = chain_of(groups_.back());
  }
}

std::shared_ptr<const ew::Chain> Program::chain_of(Group &g) const {
  auto chain = std::make_shared<ew::Chain>();
  chain->nin = static_cast<int>(g.inputs.size());
  for (size_t m = 0; m < g.nodes.size(); ++m) {
    const Node &n = nodes_[static_cast<size_t>(g.nodes[m])];
    const Step &s = n.steps[0];
    ew::ChainStep step;
    step.params = s.params;
    for (int k = 0; k < s.params.nin; ++k) {
      if (s.params.in[k].scalar) continue;
      const Source &src = n.operands[static_cast<size_t>(s.operand[k])];
      const int p = src.value >= 0 ? values_[static_cast<size_t>(src.value)].producer : -1;
      const auto at = std::find(g.nodes.begin(), g.nodes.end(), p);
      if (p >= 0 && at != g.nodes.end()) {
        step.from[k] = -static_cast<int>(at - g.nodes.begin()) - 1;
        continue;
      }
      for (size_t e = 0; e < g.inputs.size(); ++e) {
        const Source &in = g.inputs[e];
        if (src.value >= 0 ? in.value == src.value : in.constant == src.constant) {
          step.from[k] = static_cast<int>(e);
          chain->in_dtype[e] = s.params.in[k].dtype;
        }
      }
    }
    chain->steps.push_back(std::move(step));
  }
  return chain;
}

}  // namespace spmd
