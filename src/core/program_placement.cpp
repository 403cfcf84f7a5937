// jax.jit's placement of a whole program (core/program_placement.hpp).
#include "core/program_placement.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace spmd::propagate {

namespace {

// Which way a factor propagates at an op: not at all, from its results to
// its operands only, or every way.
enum Direction { kNone, kBackward, kBoth };

// The last priority level: every op along every factor, either way.
constexpr int kLastPriority = 4;

Direction direction_of(const ProgramGraph &g, const ProgramOp &op, size_t factor, int priority) {
  if (op.kind == ProgramOp::Kind::Broadcast)
    return priority >= 4 ? kBoth : priority >= 2 ? kBackward : kNone;
  if (priority >= 3) return kBoth;
  if (priority >= 2 && !op.summed[factor]) return kBoth;
  const bool passes_through = op.kind == ProgramOp::Kind::Elementwise || op.kind == ProgramOp::Kind::Transpose;
  if (!passes_through) return kNone;
  if (priority >= 1) return kBoth;
  // Level 0 leaves an op alone while an operand has other readers: each of
  // them could want another layout (a scalar operand has none).
  for (int t : op.operands) {
    const ProgramTensor &x = g.tensors[static_cast<size_t>(t)];
    if (x.uses > 1 && !x.shape.empty()) return kNone;
  }
  return kBoth;
}

// Folds a tensor's axes for a factor into those agreed so far: their
// common prefix, then the rest of the agreed ones, then (while expanding is
// allowed) the rest of the tensor's. A conflict stops expanding.
bool agree(Dim &agreed, const Dim &next, bool can_expand) {
  size_t i = 0;
  for (; i < agreed.size() && i < next.size(); ++i)
    if (agreed[i] != next[i]) {
      agreed.resize(i);
      return false;
    }
  if (can_expand) agreed.insert(agreed.end(), next.begin() + static_cast<std::ptrdiff_t>(i), next.end());
  return can_expand;
}

bool is_prefix_of(const Dim &a, const Dim &b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// The dimension of a tensor that runs over `factor`, or -1.
int dim_of(const std::vector<int> &factors, size_t factor) {
  for (size_t d = 0; d < factors.size(); ++d)
    if (factors[d] == static_cast<int>(factor)) return static_cast<int>(d);
  return -1;
}

class OpVisit {
 public:
  OpVisit(ProgramGraph &g, const ProgramOp &op) : g_(g), op_(op) {
    for (size_t k = 0; k < op.operands.size(); ++k) members_.push_back({op.operands[k], &op.operand_factors[k]});
    for (size_t k = 0; k < op.results.size(); ++k) members_.push_back({op.results[k], &op.result_factors[k]});
  }

  bool run(int priority) {
    const size_t nf = op_.factor_sizes.size();
    agreed_.assign(nf, Dim{});
    bool any = false;
    for (size_t f = 0; f < nf; ++f) {
      agreed_[f] = agreed_axes(f, direction_of(g_, op_, f, priority));
      any |= !agreed_[f].empty();
    }
    if (!any) return false;
    const std::vector<size_t> order = factor_order();
    bool changed = false;
    const size_t n_operands = op_.operands.size();
    for (size_t m = n_operands; m < members_.size(); ++m) changed |= widen(m, order, false);
    for (size_t m = 0; m < n_operands; ++m) changed |= widen(m, order, true);
    return changed;
  }

 private:
  struct Member {
    int tensor;
    const std::vector<int> *factors;
  };

  const Dim *axes_of(const Member &m, size_t factor) const {
    const int d = dim_of(*m.factors, factor);
    return d < 0 ? nullptr : &g_.tensors[static_cast<size_t>(m.tensor)].dims[static_cast<size_t>(d)];
  }

  // The axes a factor's tensors agree on.
  Dim agreed_axes(size_t f, Direction dir) const {
    Dim agreed;
    if (dir == kNone) return agreed;
    const size_t n_operands = op_.operands.size();
    auto fold = [&](bool operands, bool can_expand) {
      for (size_t m = operands ? 0 : n_operands; m < (operands ? n_operands : members_.size()); ++m)
        if (const Dim *axes = axes_of(members_[m], f)) can_expand = agree(agreed, *axes, can_expand);
      return can_expand;
    };
    // Going backward, the results may extend the list and the operands only
    // stop it; going every way, operands then results all extend it.
    const bool backward = dir == kBackward;
    const bool can_expand = fold(!backward, true);
    fold(backward, !backward && can_expand);
    return agreed;
  }

  int64_t elements(const Member &m) const {
    int64_t n = 1;
    for (int f : *m.factors)
      if (f >= 0) n *= op_.factor_sizes[static_cast<size_t>(f)];
    return n;
  }

  int64_t axes_size(const Dim &axes) const {
    int64_t n = 1;
    for (const std::string &a : axes) n *= g_.axis_sizes.at(a);
    return n;
  }

  // Factors in the order they take axes: that of the largest tensor whose
  // axes they already are first, then (elementwise) the most split, then
  // the earlier tensor, then the earlier factor.
  std::vector<size_t> factor_order() const {
    const size_t nf = op_.factor_sizes.size();
    std::vector<int64_t> source_size(nf, -1), source_index(nf, -1), split(nf, 0);
    for (size_t m = 0; m < members_.size(); ++m) {
      const int64_t size = elements(members_[m]);
      for (size_t f = 0; f < nf; ++f) {
        const Dim *axes = axes_of(members_[m], f);
        if (!axes || agreed_[f].empty() || !is_prefix_of(agreed_[f], *axes)) continue;
        if (size > source_size[f]) {
          source_size[f] = size;
          source_index[f] = static_cast<int64_t>(m);
        }
      }
    }
    if (op_.kind == ProgramOp::Kind::Elementwise)
      for (size_t f = 0; f < nf; ++f) split[f] = axes_size(agreed_[f]);
    std::vector<size_t> order(nf);
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t i, size_t j) {
      return std::make_tuple(-source_size[i], -split[i], source_index[i], i) <
             std::make_tuple(-source_size[j], -split[j], source_index[j], j);
    });
    return order;
  }

  // Extends member m's dimensions toward the agreed axes, factor by factor.
  bool widen(size_t m, const std::vector<size_t> &order, bool operand) {
    ProgramTensor &t = g_.tensors[static_cast<size_t>(members_[m].tensor)];
    if (t.closed) return false;
    bool changed = false;
    for (size_t f : order) {
      const int d = dim_of(*members_[m].factors, f);
      if (d < 0 || agreed_[f].empty()) continue;
      Dim &cur = t.dims[static_cast<size_t>(d)];
      Dim want = agreed_[f];
      // Within the factor: an axis the dimension lacks is added only where
      // the split still divides it.
      int64_t split = 1;
      size_t keep = 0;
      for (; keep < want.size(); ++keep) {
        const std::string &a = want[keep];
        const int64_t size = g_.axis_sizes.at(a);
        if (std::find(cur.begin(), cur.end(), a) == cur.end() && t.shape[static_cast<size_t>(d)] % (split * size) != 0)
          break;
        split *= size;
      }
      want.resize(keep);
      if (!(cur.size() < want.size() && is_prefix_of(cur, want))) continue;
      // Across factors: an axis another dimension holds stops it.
      for (size_t k = cur.size(); k < want.size(); ++k) {
        bool taken = false;
        for (size_t e = 0; e < t.dims.size(); ++e)
          if (static_cast<int>(e) != d && std::find(t.dims[e].begin(), t.dims[e].end(), want[k]) != t.dims[e].end())
            taken = true;
        if (taken) {
          want.resize(k);
          break;
        }
      }
      // An elementwise op's operand takes no more than a result that
      // already holds part of the axes (it would only be gathered again).
      if (operand && op_.kind == ProgramOp::Kind::Elementwise)
        for (size_t r = op_.operands.size(); r < members_.size(); ++r)
          if (const Dim *axes = axes_of(members_[r], f); axes && axes->size() < want.size() && is_prefix_of(*axes, want))
            want = *axes;
      if (want.size() > cur.size() && is_prefix_of(cur, want)) {
        cur = want;
        changed = true;
      }
    }
    return changed;
  }

  ProgramGraph &g_;
  const ProgramOp &op_;
  std::vector<Member> members_;  // operands, then results
  std::vector<Dim> agreed_;      // per factor
};

}  // namespace

void place_program(ProgramGraph &g) {
  for (int priority = 0; priority <= kLastPriority; ++priority) {
    // Each level until nothing changes (tensors only grow, so it ends).
    for (bool changed = true; changed;) {
      changed = false;
      for (const ProgramOp &op : g.ops) changed |= OpVisit(g, op).run(priority);
    }
  }
}

}  // namespace spmd::propagate
