#include "exec/ops/contraction.hpp"

#include <algorithm>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "base/promotion.hpp"
#include "runtime/recording.hpp"
#include "exec/ops/einsum_path.hpp"
#include "exec/ops/elementwise.hpp"
#include "exec/ops/partial_sums.hpp"
#include "exec/ops/reduction.hpp"
#include "exec/ops/shape_ops.hpp"
#include "kernels/gemm.hpp"
#include "spmd/sharding.h"

namespace spmd::ops {

namespace {

void check_dims(const char *what, std::vector<int64_t> &dims, size_t rank, std::vector<bool> &used) {
  for (size_t k = 0; k < dims.size(); ++k) {
    dims[k] = static_cast<int64_t>(checked_axis(dims[k], rank, cat("dims->", what, "[", k, "]").c_str()));
    if (used[static_cast<size_t>(dims[k])])
      invalid("dims->", what, "[", k, "]: dimension ", dims[k], " is named twice");
    used[static_cast<size_t>(dims[k])] = true;
  }
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t> &b,
                            const std::vector<int64_t> &c) {
  a.insert(a.end(), b.begin(), b.end());
  a.insert(a.end(), c.begin(), c.end());
  return a;
}

bool is_identity(const std::vector<int64_t> &p) {
  for (size_t k = 0; k < p.size(); ++k)
    if (p[k] != static_cast<int64_t>(k)) return false;
  return true;
}

int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= s[d];
  return n;
}

}  // namespace

namespace {
// One term of an einsum equation: its letters, spaces dropped; anything
// else, or a letter twice, refused.
std::string einsum_letters(const std::string &subscripts, std::string s, const std::string &part) {
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  for (char ch : s)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
      invalid("subscripts: '", subscripts, "': the ", part, " has '", std::string(1, ch),
              "'; only letters name dimensions (no ellipsis)");
  for (size_t k = 0; k < s.size(); ++k)
    if (s.find(s[k], k + 1) != std::string::npos)
      invalid("subscripts: '", subscripts, "': '", std::string(1, s[k]), "' repeats in the ", part,
              " (traces and diagonals are not supported)");
  return s;
}
}  // namespace

namespace {
// Sums x over the dimensions whose letters (`letters`, one per dimension)
// `keep` lacks, in x's own type, and leaves in `letters` those kept.
// jnp.sum widens bool and uint8 to int32: back to x's type, a count then
// whether it is non-zero for bool (an empty dimension gives false).
void sum_letters_not_in(ArrayPtr &x, std::string &letters, const std::string &keep) {
  std::vector<int64_t> axes;
  std::string kept;
  for (size_t k = 0; k < letters.size(); ++k)
    if (keep.find(letters[k]) == std::string::npos) axes.push_back(static_cast<int64_t>(k));
    else kept += letters[k];
  if (axes.empty()) return;
  const spmd_dtype t = x->dtype();
  x = reduce(ReduceKind::Sum, x, axes, false, false, {});
  if (x->dtype() != t) x = astype(x, t, {});
  letters = kept;
}
}  // namespace

ArrayPtr dot_general(const ArrayPtr &lhs_in, const ArrayPtr &rhs_in, propagate::DotDims dd,
                     const OpOptions &options, OperandNames names) {
  const MeshPtr mesh = common_mesh({{lhs_in, names.lhs}, {rhs_in, names.rhs}});
  const size_t lr = lhs_in->shape().size(), rr = rhs_in->shape().size();
  if (dd.lhs_batch.size() != dd.rhs_batch.size())
    invalid("dims: ", dd.lhs_batch.size(), " ", names.lhs, " batch dimensions but ",
            dd.rhs_batch.size(), " ", names.rhs, " ones");
  if (dd.lhs_contract.size() != dd.rhs_contract.size())
    invalid("dims: ", dd.lhs_contract.size(), " ", names.lhs, " contracting dimensions but ",
            dd.rhs_contract.size(), " ", names.rhs, " ones");
  std::vector<bool> lu(lr, false), ru(rr, false);
  check_dims("lhs_batch", dd.lhs_batch, lr, lu);
  check_dims("lhs_contract", dd.lhs_contract, lr, lu);
  check_dims("rhs_batch", dd.rhs_batch, rr, ru);
  check_dims("rhs_contract", dd.rhs_contract, rr, ru);
  const Shape &ls = lhs_in->shape(), &rs = rhs_in->shape();
  auto check_sizes = [&](const std::vector<int64_t> &l, const std::vector<int64_t> &r, const char *kind) {
    for (size_t k = 0; k < l.size(); ++k)
      if (ls[static_cast<size_t>(l[k])] != rs[static_cast<size_t>(r[k])])
        invalid(names.lhs, " and ", names.rhs, ": ", kind, " dimensions differ in size: ",
                names.lhs, " dimension ", l[k], " is ", ls[static_cast<size_t>(l[k])], " and ",
                names.rhs, " dimension ", r[k], " is ", rs[static_cast<size_t>(r[k])],
                " (shapes ", shape_to_string(ls), " and ", shape_to_string(rs), ")");
  };
  check_sizes(dd.lhs_batch, dd.rhs_batch, "batch");
  check_sizes(dd.lhs_contract, dd.rhs_contract, "contracting");
  // The result's shape, and the output sharding checked, before any data moves.
  const auto lf = propagate::free_dims(lr, dd.lhs_batch, dd.lhs_contract);
  const auto rf = propagate::free_dims(rr, dd.rhs_batch, dd.rhs_contract);
  Shape out_shape;
  for (int64_t d : dd.lhs_batch) out_shape.push_back(ls[static_cast<size_t>(d)]);
  for (int64_t d : lf) out_shape.push_back(ls[static_cast<size_t>(d)]);
  for (int64_t d : rf) out_shape.push_back(rs[static_cast<size_t>(d)]);
  const spmd_dtype dtype = promote_types(lhs_in->dtype(), rhs_in->dtype());
  check_result(names.result, out_shape, dtype);
  const ShardingPtr requested = requested_sharding(options, mesh, out_shape.size());
  if (Recording *r = current_recording()) {
    // Factors: batch, lhs free, rhs free (the result's dimensions in
    // order), then the contracting ones, which reach no result dimension.
    Recording::Factors f;
    f.kind = propagate::ProgramOp::Kind::Contraction;
    f.operands = {lhs_in.get(), rhs_in.get()};
    f.operand_factors = {std::vector<int>(lr, -1), std::vector<int>(rr, -1)};
    auto add = [&](int64_t l, int64_t rd, bool summed) {
      const int id = static_cast<int>(f.sizes.size());
      f.sizes.push_back(l >= 0 ? ls[static_cast<size_t>(l)] : rs[static_cast<size_t>(rd)]);
      f.summed.push_back(summed);
      if (l >= 0) f.operand_factors[0][static_cast<size_t>(l)] = id;
      if (rd >= 0) f.operand_factors[1][static_cast<size_t>(rd)] = id;
      if (!summed) f.result_factors.push_back(id);
    };
    for (size_t k = 0; k < dd.lhs_batch.size(); ++k) add(dd.lhs_batch[k], dd.rhs_batch[k], false);
    for (int64_t d : lf) add(d, -1, false);
    for (int64_t d : rf) add(-1, d, false);
    for (size_t k = 0; k < dd.lhs_contract.size(); ++k) add(dd.lhs_contract[k], dd.rhs_contract[k], true);
    r->note_factors(std::move(f));
  }

  ArrayPtr lhs = converted(lhs_in, dtype, names.lhs);
  ArrayPtr rhs = converted(rhs_in, dtype, names.rhs);
  const propagate::Contraction c = propagate::dot_general(
      propagate::padded(lhs->sharding()->spec(), lr), propagate::padded(rhs->sharding()->spec(), rr), dd,
      lhs->size(), rhs->size());
  lhs = laid_out(lhs, mesh, c.lhs);
  rhs = laid_out(rhs, mesh, c.rhs);

  // Bring each operand's dimensions to (batch, free, contracting) for the
  // lhs and (batch, contracting, free) for the rhs; the other order of the
  // last two is a transposed operand BLAS reads as it is.
  bool ta = false, tb = false;
  auto arrange = [&](ArrayPtr &a, const std::vector<int64_t> &want, const std::vector<int64_t> &swapped,
                     bool &trans) {
    if (is_identity(want)) return;
    if (is_identity(swapped)) {
      trans = true;
      return;
    }
    a = transpose(a, want, {});
  };
  arrange(lhs, concat(dd.lhs_batch, lf, dd.lhs_contract), concat(dd.lhs_batch, dd.lhs_contract, lf), ta);
  arrange(rhs, concat(dd.rhs_batch, dd.rhs_contract, rf), concat(dd.rhs_batch, rf, dd.rhs_contract), tb);

  auto out = std::make_shared<Array>(sharding_of(mesh, c.out), dtype, out_shape);
  const size_t nb = dd.lhs_batch.size(), nk = dd.lhs_contract.size();
  if (out->abstract()) {
    int64_t k = 1;
    for (int64_t d : dd.lhs_contract) k *= lhs_in->shape()[static_cast<size_t>(d)];
    current_recording()->note_flops(2 * out->size() * k);
  }
  std::vector<std::pair<size_t, Kernel>> kernels;
  kernels.reserve(out->shard_count());
  for (size_t i = 0; i < out->shard_count(); ++i) {
    const ShardLayout &s = out->shard(i);
    if (s.box.empty() || !out->addressable(i)) continue;
    const Shape lb = lhs->shard(i).box.extent();  // (batch, free, contract) or (batch, contract, free)
    const Shape ob = s.box.extent();               // (batch, lhs free, rhs free)
    gemm::Params p;
    p.dtype = dtype;
    p.batch = product(ob, 0, nb);
    p.m = product(ob, nb, nb + lf.size());
    p.n = product(ob, nb + lf.size(), ob.size());
    p.k = ta ? product(lb, nb, nb + nk) : product(lb, lr - nk, lr);
    p.trans_a = ta;
    p.trans_b = tb;
    kernels.emplace_back(i, Kernel::matmul(out->buffer(i).place(), lhs->buffer(i).place(),
                                           rhs->buffer(i).place(), p, s.device));
  }
  launch_per_shard(*out, {lhs.get(), rhs.get()}, std::move(kernels));
  // Partial products over split contracting dimensions are summed; bool
  // partials (ORs of ANDs) are ORed, so the result stays bool whatever the
  // sharding, as JAX's.
  const bool any = dtype == SPMD_BOOL;
  const int64_t scatter =
      on_mesh(requested, mesh) && !any
          ? scatter_dimension(c.out, propagate::padded(requested->spec(), out_shape.size()),
                              c.summed, out_shape, *mesh)
          : -1;
  out = combine_partials(mesh, out, out_shape, c.out, c.summed, any ? Combine::Max : Combine::Sum,
                         scatter);
  return honour(out, requested);
}

ArrayPtr matmul(const ArrayPtr &a, const ArrayPtr &b, const OpOptions &options) {
  const size_t ar = a->shape().size(), br = b->shape().size();
  if (ar == 0 || br == 0) invalid(ar == 0 ? "a" : "b", ": matmul needs at least one dimension");
  propagate::DotDims dd;
  if (ar == 1 || br == 1 || ar == 2 || br == 2) {
    if (ar > 2 || br > 2) {
      if (!(ar > 2 && br <= 2))
        invalid("a and b: matmul of shapes ", shape_to_string(a->shape()), " and ",
                shape_to_string(b->shape()), " needs equal batch dimensions; broadcast_to first");
    }
    dd.lhs_contract = {static_cast<int64_t>(ar) - 1};
    dd.rhs_contract = {br == 1 ? 0 : static_cast<int64_t>(br) - 2};
  } else {
    if (ar != br)
      invalid("a and b: matmul of shapes ", shape_to_string(a->shape()), " and ",
              shape_to_string(b->shape()), " needs equal batch dimensions; broadcast_to first");
    for (size_t d = 0; d + 2 < ar; ++d) {
      dd.lhs_batch.push_back(static_cast<int64_t>(d));
      dd.rhs_batch.push_back(static_cast<int64_t>(d));
    }
    dd.lhs_contract = {static_cast<int64_t>(ar) - 1};
    dd.rhs_contract = {static_cast<int64_t>(br) - 2};
  }
  const int64_t ka = a->shape()[static_cast<size_t>(dd.lhs_contract[0])];
  const int64_t kb = b->shape()[static_cast<size_t>(dd.rhs_contract[0])];
  if (ka != kb)
    invalid("a and b: matmul of shapes ", shape_to_string(a->shape()), " and ",
            shape_to_string(b->shape()), ": inner dimensions differ (", ka, " and ", kb, ")");
  return dot_general(a, b, dd, options, {"a", "b", "a and b"});
}

namespace {

// Which operand of an einsum of two jnp.einsum's dot_general takes first:
// its lhs is the operand of the higher id (b of a lone einsum, a of a step
// of an einsum of several), and it puts the rhs first where that order
// gives the output's letters without a transpose. True: a first.
bool a_first_in_jax(const std::string &sa, const std::string &sb, const std::string &so, bool a_is_lhs) {
  auto remaining = [&](const std::string &x, const std::string &other) {
    std::string r;
    for (char ch : x)
      if (so.find(ch) != std::string::npos && other.find(ch) == std::string::npos) r += ch;
    return r;
  };
  std::string batch;
  for (char ch : so)
    if (sa.find(ch) != std::string::npos && sb.find(ch) != std::string::npos) batch += ch;
  const std::string &lhs = a_is_lhs ? sa : sb, &rhs = a_is_lhs ? sb : sa;
  const bool rhs_first = batch + remaining(rhs, lhs) + remaining(lhs, rhs) == so;
  return rhs_first != a_is_lhs;
}

}  // namespace

ArrayPtr einsum(const std::string &subscripts, const ArrayPtr &a_in, const ArrayPtr &b_in,
                const OpOptions &options) {
  return einsum_pair(subscripts, a_in, b_in, options, false);
}

ArrayPtr einsum_pair(const std::string &subscripts, const ArrayPtr &a_in, const ArrayPtr &b_in,
                     const OpOptions &options, bool a_is_lhs) {
  const auto arrow = subscripts.find("->");
  const auto comma = subscripts.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow)
    invalid("subscripts: '", subscripts, "' is not of the form 'ab,bc->ac' (two operands and an "
            "explicit output)");
  auto clean = [&](const std::string &part_text, const char *part) {
    return einsum_letters(subscripts, part_text, part);
  };
  const std::string sa = clean(subscripts.substr(0, comma), "first operand");
  const std::string sb = clean(subscripts.substr(comma + 1, arrow - comma - 1), "second operand");
  const std::string so = clean(subscripts.substr(arrow + 2), "output");
  if (sa.size() != a_in->shape().size())
    invalid("subscripts: '", sa, "' names ", sa.size(), " dimensions but a has ",
            a_in->shape().size());
  if (sb.size() != b_in->shape().size())
    invalid("subscripts: '", sb, "' names ", sb.size(), " dimensions but b has ",
            b_in->shape().size());
  for (char ch : so)
    if (sa.find(ch) == std::string::npos && sb.find(ch) == std::string::npos)
      invalid("subscripts: output dimension '", std::string(1, ch), "' names no operand dimension");
  if (so.size() > SPMD_MAX_NDIM)
    invalid("subscripts: '", subscripts, "': the result would have ", so.size(),
            " dimensions; arrays have at most ", SPMD_MAX_NDIM, " (SPMD_MAX_NDIM)");
  // A letter in both operands names one dimension: its sizes must agree.
  for (size_t k = 0; k < sa.size(); ++k) {
    const auto j = sb.find(sa[k]);
    if (j == std::string::npos) continue;
    const int64_t na = a_in->shape()[k], nb = b_in->shape()[j];
    if (na != nb)
      invalid("subscripts: '", subscripts, "': '", std::string(1, sa[k]), "' is ", na,
              " long in a (dimension ", k, ") but ", nb, " in b (dimension ", j, ")");
  }
  // The result's size is known before anything runs.
  const spmd_dtype t = promote_types(a_in->dtype(), b_in->dtype());
  {
    Shape out_shape;
    for (char ch : so) {
      const auto i = sa.find(ch);
      out_shape.push_back(i != std::string::npos ? a_in->shape()[i] : b_in->shape()[sb.find(ch)]);
    }
    check_result("subscripts", out_shape, t);
  }
  if (Recording *r = current_recording()) {
    // One factor per letter; those the output lacks are summed over. The
    // operands in the order of jnp.einsum's dot_general (which placement
    // tells apart where two factors would take one axis).
    const bool a_first = a_first_in_jax(sa, sb, so, a_is_lhs);
    const std::string &s1 = a_first ? sa : sb, &s2 = a_first ? sb : sa;
    const Array &x1 = a_first ? *a_in : *b_in, &x2 = a_first ? *b_in : *a_in;
    Recording::Factors f;
    f.kind = propagate::ProgramOp::Kind::Contraction;
    f.operands = {&x1, &x2};
    std::string letters;
    auto factor = [&](char ch, int64_t size) {
      const auto at = letters.find(ch);
      if (at != std::string::npos) return static_cast<int>(at);
      letters += ch;
      f.sizes.push_back(size);
      f.summed.push_back(so.find(ch) == std::string::npos);
      return static_cast<int>(letters.size() - 1);
    };
    f.operand_factors.resize(2);
    for (size_t k = 0; k < s1.size(); ++k) f.operand_factors[0].push_back(factor(s1[k], x1.shape()[k]));
    for (size_t k = 0; k < s2.size(); ++k) f.operand_factors[1].push_back(factor(s2[k], x2.shape()[k]));
    for (char ch : so) f.result_factors.push_back(factor(ch, 0));
    r->note_factors(std::move(f));
  }
  // Both operands in their promoted type first, as jnp.einsum converts
  // them; then letters only one operand has and the output lacks are
  // summed in that type (uint8 wraps, bool ORs, as lax.reduce_sum does).
  ArrayPtr a = converted(a_in, t, "a");
  ArrayPtr b = converted(b_in, t, "b");
  std::string la = sa, lb = sb;
  sum_letters_not_in(a, la, lb + so);
  sum_letters_not_in(b, lb, la + so);
  propagate::DotDims dd;
  std::string order;  // the letters of dot_general's result
  for (size_t k = 0; k < la.size(); ++k) {
    const auto j = lb.find(la[k]);
    if (j == std::string::npos) continue;
    if (so.find(la[k]) != std::string::npos) {
      dd.lhs_batch.push_back(static_cast<int64_t>(k));
      dd.rhs_batch.push_back(static_cast<int64_t>(j));
      order += la[k];
    } else {
      dd.lhs_contract.push_back(static_cast<int64_t>(k));
      dd.rhs_contract.push_back(static_cast<int64_t>(j));
    }
  }
  for (char ch : la)
    if (lb.find(ch) == std::string::npos) order += ch;
  for (char ch : lb)
    if (la.find(ch) == std::string::npos) order += ch;
  if (order.size() != so.size())
    invalid("subscripts: '", subscripts, "': the output must name every dimension that is not summed");
  std::vector<int64_t> perm;
  for (char ch : so) perm.push_back(static_cast<int64_t>(order.find(ch)));
  if (is_identity(perm)) return dot_general(a, b, dd, options, {"a", "b", "subscripts"});
  return transpose(dot_general(a, b, dd, {}, {"a", "b", "subscripts"}), perm, options);
}

ArrayPtr einsum(const std::string &subscripts, const std::vector<ArrayPtr> &xs, const OpOptions &options) {
  if (xs.empty()) invalid("n: einsum needs at least one operand");
  if (xs.size() == 2) return einsum(subscripts, xs[0], xs[1], options);
  if (xs.size() > einsum_path::kMaxOperands)
    invalid("n: ", xs.size(), " operands; einsum takes at most ", einsum_path::kMaxOperands,
            " (the operands whose contraction order jnp.einsum finds by its optimal search): "
            "contract the rest in a second einsum");
  const auto arrow = subscripts.find("->");
  if (arrow == std::string::npos)
    invalid("subscripts: '", subscripts, "' has no '->': name the output explicitly");
  std::vector<std::string> terms;
  for (size_t from = 0;;) {
    const size_t comma = subscripts.find(',', from);
    const size_t end = comma == std::string::npos || comma > arrow ? arrow : comma;
    terms.push_back(einsum_letters(subscripts, subscripts.substr(from, end - from),
                                   cat("term of operand ", terms.size())));
    if (end == arrow) break;
    from = comma + 1;
  }
  if (terms.size() != xs.size())
    invalid("subscripts: '", subscripts, "' has ", terms.size(), " operand terms for ", xs.size(),
            " operands");
  const std::string so = einsum_letters(subscripts, subscripts.substr(arrow + 2), "output");
  std::vector<std::pair<char, int64_t>> sizes;
  auto size_of = [&](char ch) -> const int64_t * {
    for (const auto &[c, n] : sizes)
      if (c == ch) return &n;
    return nullptr;
  };
  spmd_dtype t = xs[0]->dtype();
  for (size_t k = 0; k < xs.size(); ++k) {
    const Shape &shape = xs[k]->shape();
    if (terms[k].size() != shape.size())
      invalid("subscripts: '", terms[k], "' names ", terms[k].size(), " dimensions but xs[", k, "] has ",
              shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t *n = size_of(terms[k][d]);
      if (n == nullptr) sizes.push_back({terms[k][d], shape[d]});
      else if (*n != shape[d])
        invalid("subscripts: '", subscripts, "': '", std::string(1, terms[k][d]), "' is ", *n,
                " long in an earlier operand but ", shape[d], " in xs[", k, "] (dimension ", d, ")");
    }
    t = promote_types(t, xs[k]->dtype());
  }
  Shape out_shape;
  for (char ch : so) {
    const int64_t *n = size_of(ch);
    if (n == nullptr) invalid("subscripts: output dimension '", std::string(1, ch), "' names no operand dimension");
    out_shape.push_back(*n);
  }
  check_result("subscripts", out_shape, t);
  // Every operand in the common type first, as jnp.einsum promotes them.
  std::vector<ArrayPtr> held;
  std::vector<std::string> names = terms;
  for (size_t k = 0; k < xs.size(); ++k) held.push_back(converted(xs[k], t, cat("xs[", k, "]").c_str()));
  if (xs.size() == 1) {
    // Letters the output lacks summed, then the output's order.
    ArrayPtr x = held[0];
    std::string kept = names[0];
    sum_letters_not_in(x, kept, so);
    std::vector<int64_t> perm;
    for (char ch : so) perm.push_back(static_cast<int64_t>(kept.find(ch)));
    if (is_identity(perm)) return honour(x, requested_sharding(options, x->sharding()->mesh(), so.size()));
    return transpose(x, perm, options);
  }
  // Pairs in opt_einsum's order. As jnp.einsum, the operand of the higher
  // id is the left one, and an intermediate's letters are the left's then
  // the right's new ones (tensordot's order); the last step makes the
  // output's.
  const std::vector<einsum_path::Step> path = einsum_path::optimal(terms, so, sizes);
  for (size_t s = 0; s < path.size(); ++s) {
    const size_t lhs = std::max(path[s].first, path[s].second), rhs = std::min(path[s].first, path[s].second);
    const bool last = s + 1 == path.size();
    std::string result;
    if (last) {
      result = so;
    } else {
      std::string keep = so;  // letters some later step or the output needs
      for (size_t k = 0; k < held.size(); ++k)
        if (held[k] && k != lhs && k != rhs) keep += names[k];
      for (char ch : names[lhs] + names[rhs])
        if (keep.find(ch) != std::string::npos && result.find(ch) == std::string::npos) result += ch;
    }
    const std::string step = names[lhs] + "," + names[rhs] + "->" + result;
    held.push_back(einsum_pair(step, held[lhs], held[rhs], last ? options : OpOptions{}, true));
    if (Recording *r = current_recording()) r->note_part_made(*held.back());
    names.push_back(result);
    held[lhs] = held[rhs] = nullptr;
  }
  return held.back();
}

}  // namespace spmd::ops
