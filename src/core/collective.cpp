#include "core/collective.hpp"

#include <algorithm>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/axis_groups.hpp"

namespace spmd {

namespace {

// One row per collective. Adding a collective starts here.
constexpr CollectiveTraits kTraits[] = {
    {CollectiveKind::Psum, "psum", Transport::AllReduce, ReduceOp::Sum, false, "axis"},
    {CollectiveKind::Pmean, "pmean", Transport::AllReduce, ReduceOp::Sum, true, "axis"},
    {CollectiveKind::Pmax, "pmax", Transport::AllReduce, ReduceOp::Max, false, "axis"},
    {CollectiveKind::Pmin, "pmin", Transport::AllReduce, ReduceOp::Min, false, "axis"},
    {CollectiveKind::AllGather, "all_gather", Transport::AllGather, ReduceOp::Sum, false, "axis"},
    {CollectiveKind::PsumScatter, "psum_scatter", Transport::ReduceScatter, ReduceOp::Sum, false,
     "scatter_dimension"},
    {CollectiveKind::AllToAll, "all_to_all", Transport::AllToAll, ReduceOp::Sum, false,
     "split_axis"},
    {CollectiveKind::Ppermute, "ppermute", Transport::Permute, ReduceOp::Sum, false, "axis"},
};

// The rows over the empty tuple of axes, where every device is a group of
// one and JAX moves nothing: psum, pmean, pmax, pmin, all_gather and
// psum_scatter return their input as it is (no sum from +0, no new or
// removed dimension; only pmean turns integers into floats), all_to_all
// moves its split dimension of size 1 to concat_axis, which keeps the
// element order, and ppermute permutes the group of one. Each is a copy
// from the member itself.
constexpr CollectiveTraits kTraitsOverNoAxes[] = {
    {CollectiveKind::Psum, "psum", Transport::Permute, ReduceOp::Sum, false, "axis"},
    {CollectiveKind::Pmean, "pmean", Transport::Permute, ReduceOp::Sum, false, "axis"},
    {CollectiveKind::Pmax, "pmax", Transport::Permute, ReduceOp::Max, false, "axis"},
    {CollectiveKind::Pmin, "pmin", Transport::Permute, ReduceOp::Min, false, "axis"},
    {CollectiveKind::AllGather, "all_gather", Transport::Permute, ReduceOp::Sum, false, "axis"},
    {CollectiveKind::PsumScatter, "psum_scatter", Transport::Permute, ReduceOp::Sum, false,
     "scatter_dimension"},
    {CollectiveKind::AllToAll, "all_to_all", Transport::Permute, ReduceOp::Sum, false,
     "split_axis"},
    {CollectiveKind::Ppermute, "ppermute", Transport::Permute, ReduceOp::Sum, false, "axis"},
};

bool is_float(spmd_dtype t) {
  return t == SPMD_F32 || t == SPMD_F64 || t == SPMD_F16 || t == SPMD_BF16;
}

std::string shape_signature(const Shape &s, int64_t masked) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += cat(i ? "," : "", static_cast<int64_t>(i) == masked ? std::string("*") : cat(s[i]));
  return r + "]";
}

const char *py_bool(bool b) { return b ? "True" : "False"; }

}  // namespace

const CollectiveTraits &collective_traits(CollectiveKind kind, bool over_no_axes) {
  for (const auto &t : over_no_axes ? kTraitsOverNoAxes : kTraits)
    if (t.kind == kind) return t;
  fail(SPMD_ERR_INTERNAL, "collective kind ", static_cast<int>(kind), " has no descriptor");
}

std::pair<int64_t, int64_t> chunk_of(int64_t size, int64_t n, int64_t index) {
  const int64_t chunk = (size + n - 1) / n;
  const int64_t start = std::min(size, index * chunk);
  return {start, std::min(size, start + chunk) - start};
}

Collective::Collective(CollectiveKind kind, std::vector<int> axes, CollectiveParams params)
    : traits_(&collective_traits(kind, axes.empty())),
      axes_(std::move(axes)),
      params_(std::move(params)) {}

std::string Collective::label(const Mesh &mesh) const {
  return cat(name(), " over ", axes_label(mesh, axes_));
}

Collective Collective::normalized(spmd_dtype dtype, const Shape &shape, size_t group_size,
                                  const std::string &what, const std::string &shape_desc,
                                  const std::string &param_prefix) const {
  Collective c = *this;
  CollectiveParams &p = c.params_;
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t n = static_cast<int64_t>(group_size);
  // Parameters are named as the caller knows them: jax's names inside a
  // shard_map, the options struct's fields for a persistent collective.
  const bool options = !param_prefix.empty();
  auto param = [&](const char *jax_name) {
    return cat(param_prefix, options && std::string(jax_name) != "concat_axis" ? "axis" : jax_name);
  };
  auto norm = [&](int64_t axis, int64_t limit, const char *jax_name) {
    const int64_t a = axis < 0 ? axis + limit : axis;
    if (a < 0 || a >= limit)
      invalid(what, ": ", param(jax_name), " ", axis, " is out of range for ", shape_desc, " (",
              limit == 0 ? 0 : -limit, " to ", limit - 1, ")");
    return a;
  };
  auto must_match_group = [&](int64_t axis, const char *jax_name) {
    const int64_t size = shape[static_cast<size_t>(axis)];
    if (!p.tiled && size != n)
      invalid(what, ": ", param(jax_name), " ", axis, " has size ", size,
              " but the axis size is ", n, "; without tiled they must be equal");
  };
  // Over () JAX returns the input of all_gather and psum_scatter before
  // looking at their parameters or dtype; all_to_all and ppermute check
  // theirs against a group of one.
  const bool no_axes = axes_.empty();
  switch (kind()) {
    case CollectiveKind::Psum:
    case CollectiveKind::Pmean:
    case CollectiveKind::Pmax:
    case CollectiveKind::Pmin:
      break;
    case CollectiveKind::AllGather:
      if (no_axes) break;
      p.axis = norm(p.axis, p.tiled ? nd : nd + 1, "axis");
      break;
    case CollectiveKind::PsumScatter:
      if (no_axes) break;
      if (dtype == SPMD_BOOL)
        invalid(what, ": bool has no sum to scatter (jax.lax.psum_scatter refuses bool too); "
                "convert to int32 first");
      p.axis = norm(p.axis, nd, "scatter_dimension");
      must_match_group(p.axis, "scatter_dimension");
      break;
    case CollectiveKind::AllToAll:
      p.axis = norm(p.axis, nd, "split_axis");
      p.concat_axis = norm(p.concat_axis, nd, "concat_axis");
      must_match_group(p.axis, "split_axis");
      break;
    case CollectiveKind::Ppermute: {
      const std::string pairs = cat(param_prefix, "pairs: ");
      std::vector<char> seen_src(group_size, 0), seen_dst(group_size, 0);
      for (const auto &[s, d] : p.pairs) {
        if (s < 0 || d < 0 || s >= n || d >= n)
          invalid(what, ": ", pairs, "pair (", s, ", ", d, ") names an index outside 0..", n - 1);
        if (seen_src[static_cast<size_t>(s)]++)
          invalid(what, ": ", pairs, "index ", s, " is a source in more than one pair");
        if (seen_dst[static_cast<size_t>(d)]++)
          invalid(what, ": ", pairs, "index ", d, " is a destination in more than one pair");
      }
      break;
    }
  }
  return c;
}

namespace {

// pmean's result type for an integer or bool input, as JAX's x / n gives it.
spmd_dtype mean_dtype(spmd_dtype input) {
  if (is_float(input)) return input;
  return input == SPMD_I64 ? SPMD_F64 : SPMD_F32;
}

}  // namespace

spmd_dtype Collective::transport_dtype(spmd_dtype input) const {
  // Over (), pmean's only work is the conversion to float, done before the copy.
  if (axes_.empty()) return kind() == CollectiveKind::Pmean ? mean_dtype(input) : input;
  if (transport() == Transport::AllReduce && traits_->reduce == ReduceOp::Sum &&
      input == SPMD_BOOL)
    return SPMD_I32;
  return input;
}

spmd_dtype Collective::output_dtype(spmd_dtype input) const {
  if (axes_.empty()) return transport_dtype(input);
  if (transport() != Transport::AllReduce) return input;
  if (traits_->mean) return mean_dtype(input);
  return transport_dtype(input);
}

int64_t Collective::free_dimension() const {
  if (!params_.tiled || axes_.empty()) return -1;
  if (kind() == CollectiveKind::AllGather) return params_.axis;
  if (kind() == CollectiveKind::AllToAll) return params_.concat_axis;
  return -1;
}

std::string Collective::signature(spmd_dtype dtype, const Shape &block) const {
  std::string sig = cat(name(), "(", dtype_name(dtype), shape_signature(block, free_dimension()));
  const CollectiveParams &p = params_;
  switch (kind()) {
    case CollectiveKind::AllGather:
      sig += cat(", axis=", p.axis, ", tiled=", py_bool(p.tiled));
      break;
    case CollectiveKind::PsumScatter:
      sig += cat(", scatter_dimension=", p.axis, ", tiled=", py_bool(p.tiled));
      break;
    case CollectiveKind::AllToAll:
      sig += cat(", split_axis=", p.axis, ", concat_axis=", p.concat_axis,
                 ", tiled=", py_bool(p.tiled));
      break;
    case CollectiveKind::Ppermute:
      sig += ", perm=[";
      for (size_t i = 0; i < p.pairs.size(); ++i)
        sig += cat(i ? ", " : "", "(", p.pairs[i].first, ", ", p.pairs[i].second, ")");
      sig += "]";
      break;
    default:
      break;
  }
  return sig + ")";
}

Shape Collective::output_block(const std::vector<Shape> &inputs, size_t rank) const {
  const CollectiveParams &p = params_;
  const int64_t n = static_cast<int64_t>(inputs.size());
  const int64_t me = static_cast<int64_t>(rank);
  Shape out = inputs.at(rank);
  const size_t a = static_cast<size_t>(p.axis);
  if (axes_.empty()) {
    if (kind() == CollectiveKind::AllToAll && !p.tiled) {
      out.erase(out.begin() + p.axis);
      out.insert(out.begin() + p.concat_axis, 1);
    }
    return out;
  }
  switch (transport()) {
    case Transport::AllReduce:
    case Transport::Permute:
      return out;
    case Transport::AllGather:
      if (!p.tiled) {
        out.insert(out.begin() + p.axis, n);
        return out;
      }
      out[a] = 0;
      for (const Shape &in : inputs) out[a] += in[a];
      return out;
    case Transport::ReduceScatter:
      if (!p.tiled) {
        out.erase(out.begin() + p.axis);
        return out;
      }
      out[a] = chunk_of(out[a], n, me).second;
      return out;
    case Transport::AllToAll: {
      if (!p.tiled) {
        out.erase(out.begin() + p.axis);
        out.insert(out.begin() + p.concat_axis, n);
        return out;
      }
      // Member `me` receives chunk `me` of every member's split axis and
      // concatenates them along the concat axis in member order.
      const size_t c = static_cast<size_t>(p.concat_axis);
      out[a] = chunk_of(out[a], n, me).second;
      int64_t total = 0;
      for (const Shape &in : inputs) total += a == c ? chunk_of(in[a], n, me).second : in[c];
      out[c] = total;
      return out;
    }
  }
  fail(SPMD_ERR_INTERNAL, name(), ": unknown transport");
}

int64_t Collective::source_of(size_t rank) const {
  // Over () every kind but ppermute copies the member's own block.
  if (axes_.empty() && kind() != CollectiveKind::Ppermute) return static_cast<int64_t>(rank);
  for (const auto &[s, d] : params_.pairs)
    if (d == static_cast<int64_t>(rank)) return s;
  return -1;
}

void Collective::check_spec_describable(const std::string &what) const {
  const Transport t = transport();
  if ((t == Transport::ReduceScatter || t == Transport::AllToAll) && !params_.tiled)
    fail(SPMD_ERR_UNSUPPORTED, what,
         ": without tiled the result differs along the axes but has no dimension a spec "
         "could split; use tiled, or call it inside spmd_shard_map");
}

PartitionSpec Collective::output_spec(const PartitionSpec &in, size_t ndim, const Mesh &mesh,
                                      const std::string &what) const {
  check_spec_describable(what);
  const Transport t = transport();
  std::vector<PartitionSpec::Dim> dims = in.dims();
  dims.resize(ndim);
  if (axes_.empty()) {
    // Every device keeps its own block, so the input's spec holds, except
    // that a non-tiled all_to_all moves its split dimension (of size 1 in
    // each block) to concat_axis.
    if (kind() == CollectiveKind::AllToAll && !params_.tiled) {
      const size_t split = static_cast<size_t>(params_.axis);
      if (!dims[split].empty())
        fail(SPMD_ERR_UNSUPPORTED, what, ": the input's spec splits split_axis ", params_.axis,
             ", which the result no longer has, so no spec can place it; call it inside "
             "spmd_shard_map");
      dims.erase(dims.begin() + params_.axis);
      dims.insert(dims.begin() + params_.concat_axis, PartitionSpec::Dim{});
    }
    return PartitionSpec(dims);
  }
  std::vector<std::string> names;
  for (int a : axes_) names.push_back(mesh.axis_names()[static_cast<size_t>(a)]);
  // ppermute moves blocks between devices but keeps them where the spec
  // says: its result varies along the axes just as the input does. Every
  // other result is the same along the axes except where the collective
  // itself splits.
  if (t != Transport::Permute)
    for (auto &d : dims)
      d.erase(std::remove_if(d.begin(), d.end(),
                             [&](const std::string &s) {
                               return std::find(names.begin(), names.end(), s) != names.end();
                             }),
              d.end());
  switch (t) {
    case Transport::AllReduce:
    case Transport::Permute:
      break;
    case Transport::AllGather:
      if (!params_.tiled) dims.insert(dims.begin() + params_.axis, PartitionSpec::Dim{});
      break;
    case Transport::ReduceScatter:
    case Transport::AllToAll:
      for (const auto &n : names) dims[static_cast<size_t>(params_.axis)].push_back(n);
      break;
  }
  return PartitionSpec(dims);
}

}  // namespace spmd
