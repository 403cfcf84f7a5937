// Placing a whole program as jax.jit does (exec/program/program.hpp).
//
// Recording places each op as the eager op would, from its operands
// forward. Compiling places the program as a whole: the values are the
// tensors of core/program_placement.hpp, the ops with factors (elementwise
// ops, transposes, reductions, contractions) its ops, and a layout
// constraint fixes the value it constrains, as Shardy applies a
// constraint to its operand, and an output's asked layout is where its
// value starts; the graph is first simplified as jax.jit simplifies
// (transposes of transposes folded, ops nothing reads left out). Each op
// is then recorded again on its operands' new layouts, asked for its
// result's placed layout where its own rule would give another. Ops without factors keep the eager op's
// placement from their (new) operands, and act as fixed points; when one
// of them comes out differently the whole placement runs again.
#include <map>

#include "base/error.hpp"
#include "core/program_placement.hpp"
#include "exec/program/program.hpp"

namespace spmd {

namespace {

const Mesh *named_mesh(const Array &a) {
  const Sharding &s = *a.sharding();
  return s.kind() == Sharding::Kind::Named ? s.mesh().get() : nullptr;
}

}  // namespace

void Program::place() {
  // Placement only moves layouts; should re-recording an op fail, the
  // program keeps the layouts recording gave it, which compute the same
  // values.
  const std::vector<Node> nodes = nodes_;
  const std::vector<Value> values = values_;
  const std::unordered_map<const Array *, int> ids = value_ids_;
  try {
    for (int round = 0; round < 4; ++round)
      if (!place_once()) return;
  } catch (const Error &) {
    nodes_ = nodes;
    values_ = values;
    value_ids_ = ids;
  }
}

// What one round of placement works on: the graph over the values (and
// the tensors it adds), and per value whether placement may lay it out
// (open) or a constraint fixed it; per node, a folded transpose's source
// and permutation, and whether nothing reads its result.
struct Program::PlaceState {
  propagate::ProgramGraph g;
  std::vector<bool> open;
  std::vector<ShardingPtr> fixed;
  std::vector<int> reads;
  std::vector<std::vector<int>> perms;
  std::vector<bool> dead;
};

bool Program::place_once() {
  PlaceState st;
  if (!seed_values(st)) return false;
  fix_constraints(st);
  seed_outputs(st);
  simplify(st);
  add_ops(st);
  propagate::place_program(st.g);
  return rerecord(st);
}

bool Program::seed_values(PlaceState &st) const {
  auto &g = st.g;
  auto &open = st.open;
  // Every value's axes, by name; a program over meshes that name one axis
  // with two sizes is left as recorded.
  for (const Value &v : values_) {
    const Mesh *m = named_mesh(*v.abstract);
    if (!m) continue;
    for (size_t a = 0; a < m->axis_names().size(); ++a) {
      const auto [it, added] = g.axis_sizes.emplace(m->axis_names()[a], m->shape()[a]);
      if (!added && it->second != m->shape()[a]) return false;
    }
  }
  // The values, as recorded: closed unless an op with factors makes them
  // and nothing asked for their layout.
  g.tensors.resize(values_.size());
  open.assign(values_.size(), false);
  for (size_t v = 0; v < values_.size(); ++v) {
    const Array &a = *values_[v].abstract;
    propagate::ProgramTensor &t = g.tensors[v];
    t.shape = a.shape();
    t.uses = values_[v].uses;
    t.dims = named_mesh(a) ? propagate::padded(a.sharding()->spec(), a.shape().size())
                           : propagate::Dims(a.shape().size());
    const int p = values_[v].producer;
    if (p >= 0) {
      const Node &n = nodes_[static_cast<size_t>(p)];
      open[v] = n.rule && !n.asked && named_mesh(a);
    }
    t.closed = !open[v];
    if (open[v]) t.dims.assign(a.shape().size(), {});
  }
  for (const Output &o : outputs_) ++g.tensors[static_cast<size_t>(o.value)].uses;
  return true;
}

void Program::fix_constraints(PlaceState &st) const {
  auto &g = st.g;
  auto &open = st.open;
  auto &fixed = st.fixed;
  // A constraint fixes the value it constrains (made by an op, not an
  // input) unless another constraint asks another layout of it.
  fixed.assign(values_.size(), nullptr);
  std::vector<bool> refused(values_.size(), false);
  auto fix = [&](int value, const ShardingPtr &c) {
    if (value < 0) return;
    const size_t v = static_cast<size_t>(value);
    const int p = values_[v].producer;
    if (p < 0 || nodes_[static_cast<size_t>(p)].asked) return;
    if (fixed[v] && !fixed[v]->equivalent(*c)) refused[v] = true;
    if (!fixed[v]) fixed[v] = c;
  };
  for (const Node &n : nodes_)
    if (n.constraint) fix(n.operands[0].value, values_[static_cast<size_t>(n.result)].abstract->sharding());
  for (size_t v = 0; v < values_.size(); ++v) {
    if (refused[v]) fixed[v].reset();
    if (!fixed[v] || !named_mesh(*values_[v].abstract) || fixed[v]->kind() != Sharding::Kind::Named) {
      fixed[v].reset();
      continue;
    }
    g.tensors[v].dims = propagate::padded(fixed[v]->spec(), g.tensors[v].shape.size());
    g.tensors[v].closed = true;
    open[v] = false;
  }
}

void Program::seed_outputs(PlaceState &st) const {
  auto &g = st.g;
  const auto &open = st.open;
  // An output's asked layout (jax.jit's out_shardings) is where its open
  // value starts, not a layout it must keep: what propagates back into the
  // program from it, and the output is resharded to it afterwards when the
  // value ends up otherwise. Two outputs of one value asking two layouts
  // start it from neither.
  // (Only a layout over axes the program's meshes name alike.)
  std::vector<ShardingPtr> start(values_.size());
  std::vector<bool> torn(values_.size(), false);
  auto same_axes = [&](const Mesh &m) {
    for (size_t a = 0; a < m.axis_names().size(); ++a) {
      const auto it = g.axis_sizes.find(m.axis_names()[a]);
      if (it == g.axis_sizes.end() || it->second != m.shape()[a]) return false;
    }
    return true;
  };
  for (const Output &o : outputs_) {
    const size_t v = static_cast<size_t>(o.value);
    if (!o.sharding || !open[v] || o.sharding->kind() != Sharding::Kind::Named || !same_axes(*o.sharding->mesh()))
      continue;
    if (start[v] && !start[v]->equivalent(*o.sharding)) torn[v] = true;
    if (!start[v]) start[v] = o.sharding;
  }
  for (size_t v = 0; v < values_.size(); ++v)
    if (start[v] && !torn[v]) g.tensors[v].dims = propagate::padded(start[v]->spec(), g.tensors[v].shape.size());
}

void Program::simplify(PlaceState &st) const {
  auto &g = st.g;
  auto &open = st.open;
  auto &reads = st.reads;
  auto &perms = st.perms;
  auto &dead = st.dead;
  // As jax.jit simplifies a program before placing it: a transpose of a
  // transpose reads the first one's operand, the permutations composed
  // (when they cancel, its result is that operand itself); and an op whose
  // result nothing reads is gone, and so are its reads.
  using Kind = propagate::ProgramOp::Kind;
  auto is_transpose = [&](int node) {
    const Node &m = nodes_[static_cast<size_t>(node)];
    return m.rule && m.rule->kind == Kind::Transpose && !m.asked && !m.multi;
  };
  reads.assign(nodes_.size(), -1);
  perms.assign(nodes_.size(), {});
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &n = nodes_[i];
    if (!is_transpose(static_cast<int>(i)) || n.operands[0].value < 0) continue;
    int src = n.operands[0].value;
    std::vector<int> perm = n.rule->result_factors;
    for (int p; (p = values_[static_cast<size_t>(src)].producer) >= 0 && is_transpose(p);) {
      const Node &m = nodes_[static_cast<size_t>(p)];
      if (m.operands[0].value < 0) break;
      for (int &k : perm) k = m.rule->result_factors[static_cast<size_t>(k)];
      src = m.operands[0].value;
    }
    if (src == n.operands[0].value) continue;
    reads[i] = src;
    perms[i] = std::move(perm);
    --g.tensors[static_cast<size_t>(n.operands[0].value)].uses;
    ++g.tensors[static_cast<size_t>(src)].uses;
  }
  dead.assign(nodes_.size(), false);
  for (size_t i = nodes_.size(); i-- > 0;) {
    const Node &n = nodes_[i];
    const size_t v = static_cast<size_t>(n.result);
    if (n.multi || g.tensors[v].uses > 0) continue;
    dead[i] = true;
    open[v] = false;  // placed as the eager op places it
    if (reads[i] >= 0) {
      --g.tensors[static_cast<size_t>(reads[i])].uses;
      continue;
    }
    for (const Source &s : n.operands)
      if (s.value >= 0) --g.tensors[static_cast<size_t>(s.value)].uses;
  }
}

void Program::add_ops(PlaceState &st) const {
  using Kind = propagate::ProgramOp::Kind;
  auto &g = st.g;
  auto &open = st.open;
  auto &fixed = st.fixed;
  const auto &reads = st.reads;
  const auto &perms = st.perms;
  const auto &dead = st.dead;
  // The ops with factors; constants are closed tensors of their own.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &n = nodes_[i];
    if (!n.rule || dead[i]) continue;
    if (reads[i] >= 0) {
      // A folded transpose, from its source; the identity is the source
      // itself: a closed source fixes it (a constraint on it then
      // constrains the source, and makes a value of its own).
      const size_t v = static_cast<size_t>(n.result), src = static_cast<size_t>(reads[i]);
      const std::vector<int> &perm = perms[i];
      bool identity = true;
      for (size_t k = 0; k < perm.size(); ++k) identity = identity && perm[k] == static_cast<int>(k);
      if (identity && g.tensors[src].closed && (open[v] || fixed[v])) {
        fixed[v] = values_[src].abstract->sharding();
        g.tensors[v].closed = true;
        g.tensors[v].dims = g.tensors[src].dims;
        open[v] = false;
        continue;
      }
      propagate::ProgramOp op;
      op.kind = Kind::Transpose;
      op.factor_sizes = values_[src].abstract->shape();
      op.summed.assign(op.factor_sizes.size(), false);
      std::vector<int> in(op.factor_sizes.size());
      for (size_t d = 0; d < in.size(); ++d) in[d] = static_cast<int>(d);
      op.operands = {reads[i]};
      op.operand_factors = {propagate::one_each(in)};
      op.results = {n.result};
      op.result_factors = {propagate::one_each(perm)};
      g.ops.push_back(std::move(op));
      continue;
    }
    if (!n.rule->products.empty()) {
      add_products(st, n);
      continue;
    }
    if (n.rule->kind == Kind::Reshape || n.rule->kind == Kind::Softmax) {
      const int x = operand_tensor(st, n.operands[0]);
      if (n.rule->kind == Kind::Reshape)
        g.ops.push_back(propagate::reshape_op(array_of(n.operands[0])->shape(),
                                              values_[static_cast<size_t>(n.result)].abstract->shape(), x,
                                              n.result));
      else
        add_softmax(st, *n.rule, x, n.result);
      continue;
    }
    propagate::ProgramOp op;
    op.kind = n.rule->kind;
    op.factor_sizes = n.rule->sizes;
    op.summed = n.rule->summed;
    op.permuted = n.rule->permuted;
    for (size_t j = 0; j < n.operands.size(); ++j) {
      if (n.rule->operand_factors[j].empty()) continue;
      int id = operand_tensor(st, n.operands[j]);
      if (!n.rule->broadcast.empty() && n.rule->broadcast[j]) {
        // Broadcast first, by an op of its own, to an open tensor of the
        // result's shape that the elementwise op reads along every factor.
        id = add_broadcast(st, *n.rule, n.rule->operand_factors[j], id,
                           values_[static_cast<size_t>(n.result)].abstract->shape());
        op.operand_factors.push_back(propagate::one_each(n.rule->result_factors));
      } else {
        op.operand_factors.push_back(propagate::one_each(n.rule->operand_factors[j]));
      }
      op.operands.push_back(id);
    }
    op.results = {n.result};
    op.result_factors = {propagate::one_each(n.rule->result_factors)};
    g.ops.push_back(std::move(op));
  }
}

int Program::operand_tensor(PlaceState &st, const Source &s) const {
  // A value is its own tensor; a constant a closed tensor of its own.
  if (s.value >= 0) return s.value;
  propagate::ProgramTensor t;
  t.shape = s.constant->shape();
  t.dims = named_mesh(*s.constant) ? propagate::padded(s.constant->sharding()->spec(), t.shape.size())
                                   : propagate::Dims(t.shape.size());
  t.closed = true;
  t.uses = 1;
  st.g.tensors.push_back(std::move(t));
  return static_cast<int>(st.g.tensors.size()) - 1;
}

int Program::add_tensor(PlaceState &st, const Shape &shape, int uses) const {
  propagate::ProgramTensor t;
  t.shape = shape;
  t.dims.assign(shape.size(), {});
  t.uses = uses;
  st.g.tensors.push_back(std::move(t));
  return static_cast<int>(st.g.tensors.size()) - 1;
}

int Program::add_broadcast(PlaceState &st, const Rule &r, const std::vector<int> &from, int operand,
                           const Shape &shape) const {
  propagate::ProgramOp b;
  b.kind = propagate::ProgramOp::Kind::Broadcast;
  b.factor_sizes = r.sizes;
  b.summed.assign(r.sizes.size(), false);
  b.operands = {operand};
  b.operand_factors = {propagate::one_each(from)};
  const int result = add_tensor(st, shape, 1);
  b.results = {result};
  b.result_factors = {propagate::one_each(r.result_factors)};
  st.g.ops.push_back(std::move(b));
  return result;
}

void Program::add_products(PlaceState &st, const Node &n) const {
  // Each product a contraction, into a tensor of its own but the last.
  std::vector<int> made;
  const auto &products = n.rule->products;
  for (size_t p = 0; p < products.size(); ++p) {
    const Rule::Product &product = products[p];
    propagate::ProgramOp op;
    op.kind = propagate::ProgramOp::Kind::Contraction;
    op.factor_sizes = product.sizes;
    op.summed = product.summed;
    for (size_t k = 0; k < product.sources.size(); ++k) {
      const int s = product.sources[k];
      op.operands.push_back(s >= 0 ? operand_tensor(st, n.operands[static_cast<size_t>(s)])
                                   : made[static_cast<size_t>(-1 - s)]);
      op.operand_factors.push_back(propagate::one_each(product.operand_factors[k]));
    }
    int result = n.result;
    if (p + 1 < products.size()) {
      Shape shape;
      for (int f : product.result_factors) shape.push_back(product.sizes[static_cast<size_t>(f)]);
      result = add_tensor(st, shape, 1);
    }
    op.results = {result};
    op.result_factors = {propagate::one_each(product.result_factors)};
    made.push_back(result);
    st.g.ops.push_back(std::move(op));
  }
}

void Program::add_softmax(PlaceState &st, const Rule &r, int x, int result) const {
  // As jax.nn.softmax is under jax.jit: m = max(x) along the axis,
  // broadcast back; s = x - m; e = exp(s); t = sum(e), broadcast back;
  // e / t. x and e are read twice. jax.nn.log_softmax ends s - log(t)
  // instead (log on the reduced t, then broadcast): s is read twice, e
  // once.
  using Kind = propagate::ProgramOp::Kind;
  const Shape &shape = r.sizes;
  std::vector<int> all(shape.size()), kept;
  Shape reduced;
  for (size_t d = 0; d < shape.size(); ++d) {
    all[d] = static_cast<int>(d);
    if (!r.summed[d]) {
      kept.push_back(static_cast<int>(d));
      reduced.push_back(shape[d]);
    }
  }
  auto op = [&](Kind kind, std::vector<int> operands, const std::vector<int> &in_factors, int out,
                const std::vector<int> &out_factors) {
    propagate::ProgramOp o;
    o.kind = kind;
    o.factor_sizes = r.sizes;
    o.summed = kind == Kind::Reduction ? r.summed : std::vector<bool>(r.sizes.size(), false);
    o.operand_factors.assign(operands.size(), propagate::one_each(in_factors));
    o.operands = std::move(operands);
    o.results = {out};
    o.result_factors = {propagate::one_each(out_factors)};
    st.g.ops.push_back(std::move(o));
  };
  ++st.g.tensors[static_cast<size_t>(x)].uses;
  const int m = add_tensor(st, reduced, 1);
  op(Kind::Reduction, {x}, all, m, kept);
  const int m_full = add_broadcast(st, r, kept, m, shape);
  const int shifted = add_tensor(st, shape, r.logarithm ? 2 : 1);
  op(Kind::Elementwise, {x, m_full}, all, shifted, all);
  const int e = add_tensor(st, shape, r.logarithm ? 1 : 2);
  op(Kind::Elementwise, {shifted}, all, e, all);
  const int t = add_tensor(st, reduced, 1);
  op(Kind::Reduction, {e}, all, t, kept);
  if (r.logarithm) {
    const int log_t = add_tensor(st, reduced, 1);
    op(Kind::Elementwise, {t}, kept, log_t, kept);
    op(Kind::Elementwise, {shifted, add_broadcast(st, r, kept, log_t, shape)}, all, result, all);
    return;
  }
  const int t_full = add_broadcast(st, r, kept, t, shape);
  op(Kind::Elementwise, {e, t_full}, all, result, all);
}

bool Program::rerecord(const PlaceState &st) {
  const auto &g = st.g;
  const auto &open = st.open;
  const auto &fixed = st.fixed;
  // Each op again, on its operands' new layouts, asked for the placed one
  // where its own rule gives another.
  bool eager_moved = false;
  std::vector<ArrayPtr> operands;
  for (Node &n : nodes_) {
    if (n.multi) continue;  // its layouts are its own
    const size_t v = static_cast<size_t>(n.result);
    const ArrayPtr before = values_[v].abstract;
    ShardingPtr target = fixed[v];
    if (open[v]) target = ops::sharding_of(before->sharding()->mesh(), propagate::without_parts(g.tensors[v].dims));
    operands.clear();
    for (const Source &s : n.operands) operands.push_back(array_of(s));
    if (!n.asked) n.options.out_sharding = nullptr;
    ArrayPtr r = trace(n, operands, n.options, n.replay);
    values_[v].placed_for_uses = false;
    if (target && !r->sharding()->equivalent(*target)) {
      n.options.out_sharding = target;
      r = trace(n, operands, n.options, n.replay);
      values_[v].placed_for_uses = true;
    }
    if (!n.rule && !n.constraint && !fixed[v] && !r->sharding()->equivalent(*before->sharding()))
      eager_moved = true;
    // A value is an array of its own, even where the op hands back its
    // operand (a constraint already met).
    if (value_of(r.get()) >= 0) r = r->relabeled(r->sharding());
    value_ids_.erase(before.get());
    value_ids_.emplace(r.get(), static_cast<int>(v));
    values_[v].abstract = std::move(r);
  }
  return eager_moved;
}

}  // namespace spmd
