#include "core/propagation.hpp"

#include <algorithm>

namespace spmd::propagate {

Dims padded(const PartitionSpec &spec, size_t ndim) {
  Dims d = spec.dims();
  d.resize(std::max(ndim, d.size()));
  d.resize(ndim);
  return d;
}

namespace {
bool is_prefix(const Dim &a, const Dim &b) {  // a is a prefix of b
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}
bool uses(const Dim &d, const std::string &axis) {
  return std::find(d.begin(), d.end(), axis) != d.end();
}
bool shares_axis(const Dim &a, const Dim &b) {
  for (const auto &x : a)
    if (uses(b, x)) return true;
  return false;
}
}  // namespace

Dim meet(const Dim &a, const Dim &b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (is_prefix(a, b)) return b;
  if (is_prefix(b, a)) return a;
  return {};
}

void drop_repeated_axes(Dims &dims) {
  for (size_t d = 0; d < dims.size(); ++d)
    for (size_t e = 0; e < d; ++e)
      if (shares_axis(dims[d], dims[e])) {
        dims[d].clear();
        break;
      }
}

namespace {
// Two operands' splits of one dimension: the finer of a refinement, else
// their common prefix (empty when they part at once).
Dim merge_splits(const Dim &a, const Dim &b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i == a.size()) return b;
  if (i == b.size()) return a;
  return Dim(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(i));
}
}  // namespace

namespace {
// A claim on position `pos` of result dimension `dim`'s split: by operand
// `op`, weighing `weight`.
struct Claim {
  int64_t weight;
  size_t op, dim, pos;
};

// Hands out the axes of `splits` by claim: heavier claims first, then the
// earlier operand's, then the earlier dimension's, then the earlier
// position's. A dimension takes its positions in order and stops for good
// at an axis already given out (or a position claimed before the one
// before it).
Dims hand_out(const Dims &splits, std::vector<Claim> claims) {
  std::stable_sort(claims.begin(), claims.end(), [](const Claim &a, const Claim &b) {
    if (a.weight != b.weight) return a.weight > b.weight;
    if (a.op != b.op) return a.op < b.op;
    return a.dim != b.dim ? a.dim < b.dim : a.pos < b.pos;
  });
  Dims result(splits.size());
  std::vector<bool> stopped(splits.size(), false);
  std::vector<std::string> used;
  for (const Claim &c : claims) {
    if (stopped[c.dim]) continue;
    const std::string &a = splits[c.dim][c.pos];
    if (result[c.dim].size() != c.pos || std::find(used.begin(), used.end(), a) != used.end()) {
      stopped[c.dim] = true;
      continue;
    }
    result[c.dim].push_back(a);
    used.push_back(a);
  }
  return result;
}
}  // namespace

Dims concatenate(const std::vector<Dims> &operands, size_t axis) {
  const size_t n = operands.empty() ? 0 : operands[0].size();
  Dims merged(n);
  for (size_t d = 0; d < n; ++d) {
    Dim acc;
    for (const Dims &op : operands) {
      if (op[d].empty()) continue;
      const bool first = acc.empty();
      acc = merge_splits(acc, op[d]);
      if (!first && acc.empty()) break;  // a conflict is final
    }
    merged[d] = acc;
  }
  // Each position is claimed by the earliest operand whose split reaches
  // it; the concatenated dimension's positions come last.
  std::vector<Claim> claims;
  for (size_t d = 0; d < n; ++d)
    for (size_t i = 0; i < merged[d].size(); ++i) {
      size_t k = 0;
      for (; k < operands.size(); ++k) {
        const Dim &o = operands[k][d];
        if (o.size() > i && std::equal(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                       merged[d].begin()))
          break;
      }
      claims.push_back({d == axis ? -1 : 0, k, d, i});
    }
  return hand_out(merged, std::move(claims));
}

Dims elementwise(const std::vector<Dims> &operands, const std::vector<Shape> &shapes,
                 const Shape &out) {
  const size_t n = out.size();
  // Operand i's split of result dimension d; null when it does not vote
  // (no such dimension, broadcast from size 1, or not split).
  auto vote = [&](size_t i, size_t d) -> const Dim * {
    const size_t r = shapes[i].size();
    if (d + r < n) return nullptr;
    const size_t od = d + r - n;
    if (shapes[i][od] == 1 && out[d] != 1) return nullptr;
    return operands[i][od].empty() ? nullptr : &operands[i][od];
  };
  auto compatible = [](const Dim &a, const Dim &b) { return is_prefix(a, b) || is_prefix(b, a); };
  // jax.jit broadcasts a smaller operand to the result's shape before the
  // op, and Shardy propagates through broadcasts only after elementwise ops:
  // the operands with the result's element count decide first, the smaller
  // ones only refine what they left (all of them decide when none is full).
  const int64_t total = shape_elements(out);
  std::vector<size_t> full, smaller;
  for (size_t i = 0; i < operands.size(); ++i)
    (shape_elements(shapes[i]) == total ? full : smaller).push_back(i);
  if (full.empty()) full.swap(smaller);

  // Each dimension takes the finest of the deciding operands' splits when
  // they agree (each a prefix of the finest), else it is gathered; first[d]
  // is the earliest operand whose split is that finest one.
  Dims merged(n);
  std::vector<size_t> first(n, operands.size());
  std::vector<bool> conflict(n, false);
  for (size_t d = 0; d < n; ++d) {
    for (size_t i : full)
      if (const Dim *v = vote(i, d)) {
        if (!merged[d].empty() && !compatible(merged[d], *v)) conflict[d] = true;
        merged[d] = meet(merged[d], *v);
      }
    if (conflict[d]) merged[d].clear();
    for (size_t i : full)
      if (const Dim *v = vote(i, d); v && !merged[d].empty() && *v == merged[d]) {
        first[d] = i;
        break;
      }
  }
  // An axis several dimensions name stays with one: dimensions split over
  // more axes first, then the one an earlier operand splits whole (the
  // first operand's layout wins a tie in jax.jit), then the earlier; each
  // takes its axes in order and stops at one given out.
  std::vector<size_t> order(n);
  auto order_dims = [&] {
    for (size_t d = 0; d < n; ++d) order[d] = d;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (merged[a].size() != merged[b].size()) return merged[a].size() > merged[b].size();
      return first[a] < first[b];
    });
  };
  order_dims();
  Dims result(n);
  std::vector<std::string> used;
  auto take = [&](size_t d, const Dim &split) {
    for (size_t p = result[d].size(); p < split.size(); ++p) {
      if (std::find(used.begin(), used.end(), split[p]) != used.end()) break;
      result[d].push_back(split[p]);
      used.push_back(split[p]);
    }
  };
  for (size_t d : order) take(d, merged[d]);
  if (smaller.empty()) return result;

  // The smaller operands' splits, each cut at the first axis the result
  // gives another dimension, refine a dimension whose deciding split they
  // agree with; not one the deciding operands disagreed on, nor one where
  // they disagree among themselves.
  const Dims decided = result;
  for (size_t d = 0; d < n; ++d) {
    if (conflict[d]) continue;
    Dim refined = merged[d];
    bool disagree = false;
    size_t earliest = first[d];
    for (size_t i : smaller) {
      const Dim *v = vote(i, d);
      if (!v) continue;
      Dim cut;
      for (const auto &a : *v) {
        bool elsewhere = false;
        for (size_t e = 0; e < n && !elsewhere; ++e) elsewhere = e != d && uses(decided[e], a);
        if (elsewhere) break;
        cut.push_back(a);
      }
      if (cut.empty() || !compatible(merged[d], cut)) continue;
      if (!compatible(refined, cut)) disagree = true;
      refined = meet(refined, cut);
      earliest = std::min(earliest, i);
    }
    if (!disagree) {
      merged[d] = refined;
      first[d] = earliest;
    }
  }
  // The new axes are handed out as before, by the refined splits.
  order_dims();
  for (size_t d : order) take(d, merged[d]);
  return result;
}

Dims operand_layout(const Dims &out, const Shape &shape, const Shape &out_shape) {
  const size_t n = out_shape.size(), r = shape.size();
  Dims layout(r);
  for (size_t od = 0; od < r; ++od) {
    const size_t d = od + n - r;
    if (shape[od] == out_shape[d]) layout[od] = out[d];
  }
  return layout;
}

Reduction reduce(const Dims &in, const std::vector<bool> &reduced, bool keepdims) {
  Reduction r;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) {
      r.out.push_back(in[d]);
      continue;
    }
    for (const auto &a : in[d]) r.summed.push_back(a);
    if (keepdims) r.out.push_back({});
  }
  return r;
}

Dims transpose(const Dims &in, const std::vector<int64_t> &perm) {
  Dims out;
  for (int64_t p : perm) out.push_back(in[static_cast<size_t>(p)]);
  return out;
}

std::vector<int64_t> free_dims(size_t rank, const std::vector<int64_t> &batch,
                               const std::vector<int64_t> &contract) {
  std::vector<int64_t> f;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end())
      f.push_back(d);
  return f;
}

Contraction dot_general(const Dims &lhs, const Dims &rhs, const DotDims &dd,
                        int64_t lhs_elements, int64_t rhs_elements) {
  const auto lf = free_dims(lhs.size(), dd.lhs_batch, dd.lhs_contract);
  const auto rf = free_dims(rhs.size(), dd.rhs_batch, dd.rhs_contract);
  Contraction c;
  c.lhs.assign(lhs.size(), {});
  c.rhs.assign(rhs.size(), {});
  // The result: batch dimensions met, then the free dimensions of each side.
  // Each position of a split is claimed by the operands whose split reaches
  // it: weighed by the larger, owned by the first (0 lhs, 1 rhs).
  std::vector<Claim> claims;
  auto claim = [&](size_t dim, const Dim &split, const Dim &side, size_t op, int64_t elements) {
    for (size_t p = 0; p < split.size() && p < side.size() && side[p] == split[p]; ++p) {
      bool found = false;
      for (auto &c : claims)
        if (c.dim == dim && c.pos == p) {
          c.weight = std::max(c.weight, elements);
          found = true;
        }
      if (!found) claims.push_back({elements, op, dim, p});
    }
  };
  for (size_t i = 0; i < dd.lhs_batch.size(); ++i) {
    const Dim &l = lhs[static_cast<size_t>(dd.lhs_batch[i])];
    const Dim &r = rhs[static_cast<size_t>(dd.rhs_batch[i])];
    c.out.push_back(meet(l, r));
    claim(i, c.out.back(), l, 0, lhs_elements);
    claim(i, c.out.back(), r, 1, rhs_elements);
  }
  for (int64_t d : lf) {
    c.out.push_back(lhs[static_cast<size_t>(d)]);
    claim(c.out.size() - 1, c.out.back(), c.out.back(), 0, lhs_elements);
  }
  for (int64_t d : rf) {
    c.out.push_back(rhs[static_cast<size_t>(d)]);
    claim(c.out.size() - 1, c.out.back(), c.out.back(), 1, rhs_elements);
  }
  // An axis two result dimensions name stays with the heavier claim, then
  // the lhs's, then the earlier dimension.
  c.out = hand_out(c.out, std::move(claims));
  const size_t nb = dd.lhs_batch.size();
  for (size_t i = 0; i < nb; ++i) {
    c.lhs[static_cast<size_t>(dd.lhs_batch[i])] = c.out[i];
    c.rhs[static_cast<size_t>(dd.rhs_batch[i])] = c.out[i];
  }
  for (size_t i = 0; i < lf.size(); ++i) c.lhs[static_cast<size_t>(lf[i])] = c.out[nb + i];
  for (size_t i = 0; i < rf.size(); ++i)
    c.rhs[static_cast<size_t>(rf[i])] = c.out[nb + lf.size() + i];
  // Contracting dimensions: alike, or one side's sharding, unless taken.
  Dims taken = c.out;
  for (size_t i = 0; i < dd.lhs_contract.size(); ++i) {
    const Dim &l = lhs[static_cast<size_t>(dd.lhs_contract[i])];
    const Dim &r = rhs[static_cast<size_t>(dd.rhs_contract[i])];
    Dim k = l.empty() ? r : r.empty() ? l : (l == r ? l : Dim{});
    for (const auto &t : taken)
      if (shares_axis(k, t)) k.clear();
    c.lhs[static_cast<size_t>(dd.lhs_contract[i])] = k;
    c.rhs[static_cast<size_t>(dd.rhs_contract[i])] = k;
    for (const auto &a : k) c.summed.push_back(a);
    taken.push_back(k);
  }
  return c;
}

namespace {
// The older rule: per run of dimensions, the first input dimension's split
// when it divides both sides.
Reshape reshape_by_runs(const Dims &in, const Shape &in_shape, const Shape &out_shape,
                        const std::vector<std::string> &axis_names, const Shape &axis_sizes) {
  auto shards = [&](const Dim &d) {
    int64_t n = 1;
    for (const auto &a : d)
      for (size_t k = 0; k < axis_names.size(); ++k)
        if (axis_names[k] == a) n *= axis_sizes[k];
    return n;
  };
  Reshape r;
  r.in.assign(in_shape.size(), {});
  r.out.assign(out_shape.size(), {});
  size_t i = 0, o = 0;
  while (i < in_shape.size() || o < out_shape.size()) {
    // One run: input dimensions [i0, i) and output dimensions [o0, o) of
    // equal products (unit dimensions join the run they meet).
    const size_t i0 = i, o0 = o;
    int64_t pi = 1, po = 1;
    if (i < in_shape.size()) pi *= in_shape[i++];
    if (o < out_shape.size()) po *= out_shape[o++];
    while (pi != po) {
      if (pi < po && i < in_shape.size()) pi *= in_shape[i++];
      else if (o < out_shape.size()) po *= out_shape[o++];
      else break;
    }
    while (i < in_shape.size() && in_shape[i] == 1 && pi == po) ++i;
    while (o < out_shape.size() && out_shape[o] == 1 && pi == po) ++o;
    size_t a = i0, b = o0;
    while (a < i && in_shape[a] == 1) ++a;
    while (b < o && out_shape[b] == 1) ++b;
    if (a == i || b == o) continue;
    const Dim &d = in[a];
    const int64_t n = shards(d);
    if (!d.empty() && in_shape[a] % n == 0 && out_shape[b] % n == 0) {
      r.in[a] = d;
      r.out[b] = d;
    } else if (!d.empty() && i - i0 == 1 && o - o0 == 1) {
      r.in[a] = d;  // the same dimension: any split carries over
      r.out[b] = d;
    }
  }
  return r;
}

// JAX's layout by the factor stream (see the header).
enum class FactorPlan { Local, Holes, Unplanned };
FactorPlan reshape_by_factors(const Dims &in, const Shape &in_shape, const Shape &out_shape,
                        const std::vector<std::string> &axis_names, const Shape &axis_sizes,
                        Reshape &r) {
  auto size_of = [&](const std::string &a) {
    for (size_t k = 0; k < axis_names.size(); ++k)
      if (axis_names[k] == a) return axis_sizes[k];
    return int64_t{1};
  };
  // Empty arrays keep the older rule (no factors to read), as do uneven ones.
  for (int64_t n : in_shape)
    if (n <= 0) return FactorPlan::Unplanned;
  for (int64_t n : out_shape)
    if (n <= 0) return FactorPlan::Unplanned;
  struct Factor {
    int64_t size;
    std::string axis;  // empty: unsplit
    size_t dim;
  };
  std::vector<Factor> stream;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    int64_t split = 1;
    for (const auto &a : in[d]) {
      stream.push_back({size_of(a), a, d});
      split *= size_of(a);
    }
    // An uneven input (a split not dividing its dimension) keeps the older rule.
    if (split <= 0 || in_shape[d] % split != 0) return FactorPlan::Unplanned;
    stream.push_back({in_shape[d] / split, "", d});
  }
  r.in.assign(in_shape.size(), {});
  r.result.assign(out_shape.size(), {});
  std::vector<bool> dropped_in(in_shape.size(), false);
  bool holes = false;
  size_t k = 0;
  for (size_t o = 0; o < out_shape.size(); ++o) {
    int64_t need = out_shape[o];
    bool unsplit_seen = false;
    while (k < stream.size()) {
      Factor &f = stream[k];
      if (f.size == 1) {
        ++k;
        continue;
      }
      if (need == 1) break;
      if (f.size <= 0) return FactorPlan::Unplanned;
      if (f.axis.empty()) {
        if (f.size <= need) {
          if (need % f.size != 0) return FactorPlan::Unplanned;
          need /= f.size;
          ++k;
        } else {
          if (f.size % need != 0) return FactorPlan::Unplanned;
          f.size /= need;
          need = 1;
        }
        unsplit_seen = true;
        continue;
      }
      if (!unsplit_seen && f.size <= need && need % f.size == 0) {
        r.result[o].push_back(f.axis);
        if (dropped_in[f.dim]) holes = true;
        r.in[f.dim].push_back(f.axis);
        need /= f.size;
        ++k;
      } else {
        dropped_in[f.dim] = true;  // the axis becomes unsplit data
        f.axis.clear();
      }
    }
    if (need != 1) return FactorPlan::Unplanned;
  }
  r.out = r.result;
  return holes ? FactorPlan::Holes : FactorPlan::Local;
}
}  // namespace

Reshape reshape(const Dims &in, const Shape &in_shape, const Shape &out_shape,
                const std::vector<std::string> &axis_names, const Shape &axis_sizes) {
  Reshape r;
  const FactorPlan plan = reshape_by_factors(in, in_shape, out_shape, axis_names, axis_sizes, r);
  if (plan == FactorPlan::Local) return r;
  const Dims result = r.result;
  r = reshape_by_runs(in, in_shape, out_shape, axis_names, axis_sizes);
  // Uneven or empty inputs the stream cannot read keep the older rule's.
  r.result = plan == FactorPlan::Holes ? result : r.out;
  return r;
}

namespace {
// The longest prefix of `dim` whose axes `used` lacks, added to `used`.
Dim claim_prefix(const Dim &dim, std::vector<std::string> &used) {
  Dim kept;
  for (const std::string &name : dim) {
    if (std::find(used.begin(), used.end(), name) != used.end()) break;
    kept.push_back(name);
    used.push_back(name);
  }
  return kept;
}
}  // namespace

Dims take(const Dims &a, size_t axis, const Dims &indices) {
  std::vector<std::string> used;
  for (size_t d = 0; d < a.size(); ++d)
    if (d != axis) used.insert(used.end(), a[d].begin(), a[d].end());
  Dims out(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(axis));
  for (const Dim &dim : indices) out.push_back(claim_prefix(dim, used));
  out.insert(out.end(), a.begin() + static_cast<std::ptrdiff_t>(axis) + 1, a.end());
  return out;
}

Dims scatter_add(const Dims &x, size_t axis, const Dims &updates, size_t index_dims,
                 bool updates_larger) {
  Dims merged(x.size());
  std::vector<bool> from_updates(x.size(), false);
  for (size_t d = 0; d < x.size(); ++d) {
    if (d == axis) {
      merged[d] = x[d];
      continue;
    }
    const Dim &a = x[d], &b = updates[d < axis ? d : d - 1 + index_dims];
    const size_t common = static_cast<size_t>(
        std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
    from_updates[d] = common == a.size() && b.size() > a.size();
    if (from_updates[d]) merged[d] = b;          // the updates refine x's split
    else if (common == b.size()) merged[d] = a;  // x's refines or equals theirs
    else merged[d].assign(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(common));
  }
  Dims out(x.size());
  std::vector<std::string> used;
  for (const bool first : {true, false})
    for (size_t d = 0; d < x.size(); ++d) {
      if ((from_updates[d] == updates_larger) != first) continue;
      out[d] = claim_prefix(merged[d], used);
    }
  return out;
}

}  // namespace spmd::propagate
