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

// Whether every factor of a reshape runs over a dimension of both its
// tensors (none is the operand's or the result's alone).
bool shares_every_factor(const ProgramOp &op) {
  std::vector<int> seen(op.factor_sizes.size(), 0);
  for (const DimFactors &tensor : op.operand_factors)
    for (const std::vector<int> &dim : tensor)
      for (int f : dim) seen[static_cast<size_t>(f)] |= 1;
  for (const DimFactors &tensor : op.result_factors)
    for (const std::vector<int> &dim : tensor)
      for (int f : dim) seen[static_cast<size_t>(f)] |= 2;
  return std::all_of(seen.begin(), seen.end(), [](int s) { return s == 3; });
}

Direction direction_of(const ProgramGraph &g, const ProgramOp &op, size_t factor, int priority) {
  if (op.kind == ProgramOp::Kind::Broadcast)
    return priority >= 4 ? kBoth : priority >= 2 ? kBackward : kNone;
  if (priority >= 3) return kBoth;
  const bool permuted = !op.permuted.empty() && op.permuted[factor];
  if (priority >= 2 && !op.summed[factor] && !permuted) return kBoth;
  // The ops that only move elements pass along at the first levels, as
  // elementwise ops do.
  const bool passes_through = op.kind == ProgramOp::Kind::Elementwise || op.kind == ProgramOp::Kind::Transpose ||
                              (op.kind == ProgramOp::Kind::Reshape && shares_every_factor(op));
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

// Where a factor stands in a tensor: its dimension and its place among
// that dimension's factors; dim -1 where no dimension runs over it.
struct Place {
  int dim = -1;
  size_t index = 0;
};

Place place_of(const DimFactors &factors, size_t factor) {
  for (size_t d = 0; d < factors.size(); ++d)
    for (size_t k = 0; k < factors[d].size(); ++k)
      if (factors[d][k] == static_cast<int>(factor)) return {static_cast<int>(d), k};
  return {};
}

// Part of a mesh axis: the axis of `size` devices seen as the digits of a
// mixed-radix number, this part its digits from `pre` (the product of the
// parts before it) on, `size` of them. A reshape that splits an axis
// between two factors gives each a part, named "x:(pre)size" as Shardy
// writes it; a whole axis is just its name.
struct AxisPart {
  std::string axis;
  int64_t pre = 1, size = 1;
};

AxisPart part_of(const std::string &name, const std::map<std::string, int64_t> &axis_sizes) {
  const size_t colon = name.find(":(");
  if (colon == std::string::npos) return {name, 1, axis_sizes.at(name)};
  const size_t close = name.find(')', colon);
  return {name.substr(0, colon), std::stoll(name.substr(colon + 2, close - colon - 2)),
          std::stoll(name.substr(close + 1))};
}

std::string name_of(const AxisPart &p, const std::map<std::string, int64_t> &axis_sizes) {
  if (p.pre == 1 && p.size == axis_sizes.at(p.axis)) return p.axis;
  return p.axis + ":(" + std::to_string(p.pre) + ")" + std::to_string(p.size);
}

// Whether two axes (or parts) share devices' digits.
bool overlaps(const std::string &a, const std::string &b, const std::map<std::string, int64_t> &axis_sizes) {
  const AxisPart p = part_of(a, axis_sizes), q = part_of(b, axis_sizes);
  return p.axis == q.axis && std::max(p.pre, q.pre) < std::min(p.pre * p.size, q.pre * q.size);
}

// Neighbouring parts of one axis joined (into the axis where they make it
// whole).
Dim joined(const Dim &axes, const std::map<std::string, int64_t> &axis_sizes) {
  Dim out;
  for (const std::string &a : axes) {
    if (!out.empty()) {
      const AxisPart p = part_of(out.back(), axis_sizes), q = part_of(a, axis_sizes);
      if (p.axis == q.axis && p.pre * p.size == q.pre) {
        out.back() = name_of({p.axis, p.pre, p.size * q.size}, axis_sizes);
        continue;
      }
    }
    out.push_back(a);
  }
  return out;
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
    const DimFactors *factors;
  };

  const ProgramTensor &tensor(const Member &m) const { return g_.tensors[static_cast<size_t>(m.tensor)]; }

  // A dimension's axes, factor by factor: each takes axes in turn while
  // they divide what is left of it, the next only once it is full; the
  // axes past the first that would not divide reach no factor. A
  // dimension of one factor gives it all its axes.
  std::vector<Dim> split_axes(const Member &m, size_t d) const {
    const std::vector<int> &factors = (*m.factors)[d];
    const Dim &axes = tensor(m).dims[d];
    std::vector<Dim> parts(factors.size());
    if (factors.size() == 1) {
      parts[0] = axes;
      return parts;
    }
    // An axis larger than what is left of a factor, sharing a divisor
    // with it, is split: its first part there, the rest to the next factor.
    size_t next = 0;
    AxisPart rest;
    bool split = false;
    for (size_t k = 0; k < factors.size() && (split || next < axes.size()); ++k) {
      int64_t left = op_.factor_sizes[static_cast<size_t>(factors[k])];
      while ((split || next < axes.size()) && left > 1) {
        AxisPart a = split ? rest : part_of(axes[next], g_.axis_sizes);
        const int64_t common = std::gcd(left, a.size);
        if (common == 1) return parts;
        parts[k].push_back(name_of({a.axis, a.pre, common}, g_.axis_sizes));
        left /= common;
        split = common < a.size;
        if (split) rest = {a.axis, a.pre * common, a.size / common};
        else ++next;
        if (split && left > 1) return parts;  // the rest would not follow it
      }
      if (left > 1) break;
    }
    return parts;
  }

  // Member m's axes for a factor; false where no dimension of it runs over it.
  bool axes_of(const Member &m, size_t factor, Dim &axes) const {
    const Place p = place_of(*m.factors, factor);
    if (p.dim < 0) return false;
    axes = split_axes(m, static_cast<size_t>(p.dim))[p.index];
    return true;
  }

  // The axes a factor's tensors agree on.
  Dim agreed_axes(size_t f, Direction dir) const {
    Dim agreed;
    if (dir == kNone) return agreed;
    const size_t n_operands = op_.operands.size();
    Dim axes;
    auto fold = [&](bool operands, bool can_expand) {
      for (size_t m = operands ? 0 : n_operands; m < (operands ? n_operands : members_.size()); ++m)
        if (axes_of(members_[m], f, axes)) can_expand = agree(agreed, axes, can_expand);
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
    for (const std::vector<int> &dim : *m.factors)
      for (int f : dim) n *= op_.factor_sizes[static_cast<size_t>(f)];
    return n;
  }

  int64_t axes_size(const Dim &axes) const {
    int64_t n = 1;
    for (const std::string &a : axes) n *= part_of(a, g_.axis_sizes).size;
    return n;
  }

  // Factors in the order they take axes: that of the largest tensor whose
  // axes they already are first, then (elementwise) the most split, then
  // the earlier tensor, then the earlier factor.
  std::vector<size_t> factor_order() const {
    const size_t nf = op_.factor_sizes.size();
    std::vector<int64_t> source_size(nf, -1), source_index(nf, -1), split(nf, 0);
    Dim axes;
    for (size_t m = 0; m < members_.size(); ++m) {
      const int64_t size = elements(members_[m]);
      for (size_t f = 0; f < nf; ++f) {
        if (agreed_[f].empty() || !axes_of(members_[m], f, axes) || !is_prefix_of(agreed_[f], axes)) continue;
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
      const Place p = place_of(*members_[m].factors, f);
      if (p.dim < 0 || agreed_[f].empty()) continue;
      const size_t d = static_cast<size_t>(p.dim);
      const std::vector<int> &factors = (*members_[m].factors)[d];
      // Of a dimension of several factors, only the first not yet full
      // takes more, and only where its axes account for all the dimension's.
      const std::vector<Dim> parts = split_axes(members_[m], d);
      Dim before;
      bool earlier_full = true;
      for (size_t k = 0; k < p.index; ++k) {
        earlier_full &= axes_size(parts[k]) == op_.factor_sizes[static_cast<size_t>(factors[k])];
        before.insert(before.end(), parts[k].begin(), parts[k].end());
      }
      Dim all = before;
      for (size_t k = p.index; k < parts.size(); ++k) all.insert(all.end(), parts[k].begin(), parts[k].end());
      if (!earlier_full || joined(all, g_.axis_sizes) != t.dims[d]) continue;
      bool later = false;
      for (size_t k = p.index + 1; k < parts.size(); ++k) later |= !parts[k].empty();
      if (later) continue;
      const Dim &cur = parts[p.index];
      Dim want = agreed_[f];
      // Within the factor: an axis the dimension lacks is added only where
      // the split still divides it.
      const int64_t room = factors.size() == 1 ? t.shape[d] : op_.factor_sizes[f];
      int64_t split = 1;
      size_t keep = 0;
      for (; keep < want.size(); ++keep) {
        const std::string &a = want[keep];
        const int64_t size = part_of(a, g_.axis_sizes).size;
        if (std::find(cur.begin(), cur.end(), a) == cur.end() && room % (split * size) != 0) break;
        split *= size;
      }
      want.resize(keep);
      if (!(cur.size() < want.size() && is_prefix_of(cur, want))) continue;
      // Across factors: an axis another dimension (or factor) holds stops it.
      for (size_t k = cur.size(); k < want.size(); ++k) {
        auto holds = [&](const Dim &axes) {
          return std::any_of(axes.begin(), axes.end(),
                             [&](const std::string &a) { return overlaps(a, want[k], g_.axis_sizes); });
        };
        bool taken = holds(before);
        for (size_t e = 0; e < t.dims.size(); ++e) taken |= e != d && holds(t.dims[e]);
        if (taken) {
          want.resize(k);
          break;
        }
      }
      // An elementwise op's operand takes no more than a result that
      // already holds part of the axes (it would only be gathered again).
      Dim axes;
      if (operand && op_.kind == ProgramOp::Kind::Elementwise)
        for (size_t r = op_.operands.size(); r < members_.size(); ++r)
          if (axes_of(members_[r], f, axes) && axes.size() < want.size() && is_prefix_of(axes, want)) want = axes;
      if (want.size() > cur.size() && is_prefix_of(cur, want)) {
        before.insert(before.end(), want.begin(), want.end());
        t.dims[d] = joined(before, g_.axis_sizes);
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

Dims without_parts(const Dims &dims) {
  Dims out = dims;
  for (Dim &axes : out)
    for (size_t k = 0; k < axes.size(); ++k)
      if (axes[k].find(":(") != std::string::npos) {
        axes.resize(k);
        break;
      }
  return out;
}

DimFactors one_each(const std::vector<int> &factors) {
  DimFactors dims(factors.size());
  for (size_t d = 0; d < factors.size(); ++d)
    if (factors[d] >= 0) dims[d] = {factors[d]};
  return dims;
}

ProgramOp reshape_op(const Shape &in, const Shape &out, int operand, int result) {
  ProgramOp op;
  op.kind = ProgramOp::Kind::Reshape;
  op.operands = {operand};
  op.results = {result};
  DimFactors fin(in.size()), fout(out.size());
  size_t i = 0, o = 0;
  auto skip_ones = [](const Shape &shape, size_t &d) {
    while (d < shape.size() && shape[d] == 1) ++d;
  };
  skip_ones(in, i);
  skip_ones(out, o);
  int64_t left_in = i < in.size() ? in[i] : 1, left_out = o < out.size() ? out[o] : 1;
  // The products of the factors each side has so far: a factor is shared
  // only while they are equal (the elements before it are the same ones).
  int64_t done_in = 1, done_out = 1;
  auto add = [&](int64_t size, bool to_in, bool to_out) {
    const int id = static_cast<int>(op.factor_sizes.size());
    op.factor_sizes.push_back(size);
    op.summed.push_back(false);
    if (to_in) {
      fin[i].push_back(id);
      done_in *= size;
      left_in /= size;
    }
    if (to_out) {
      fout[o].push_back(id);
      done_out *= size;
      left_out /= size;
    }
  };
  // (Both sides have as many elements: one side runs out first only where
  // they have parted, and then the other side's factors are its own.)
  while (i < in.size() || o < out.size()) {
    const int64_t common = done_in == done_out ? std::gcd(left_in, left_out) : 1;
    if (common > 1) add(common, true, true);
    else if (done_in <= done_out) add(left_in, true, false);
    else add(left_out, false, true);
    if (left_in == 1) {
      ++i;
      skip_ones(in, i);
      left_in = i < in.size() ? in[i] : 1;
    }
    if (left_out == 1) {
      ++o;
      skip_ones(out, o);
      left_out = o < out.size() ? out[o] : 1;
    }
  }
  op.operand_factors = {std::move(fin)};
  op.result_factors = {std::move(fout)};
  return op;
}

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
