// Recording: inputs, ops and outputs of a program (exec/program/program.hpp).
#include <algorithm>
#include <optional>
#include <string_view>

#include "base/error.hpp"
#include "exec/program/program.hpp"

namespace spmd {

Program::Program(std::shared_ptr<Runtime> runtime) : runtime_(std::move(runtime)) {}

int Program::value_of(const Array *a) const {
  const auto it = value_ids_.find(a);
  return it == value_ids_.end() ? -1 : it->second;
}

int Program::add_value(ArrayPtr abstract, int producer) {
  const int id = static_cast<int>(values_.size());
  Value v;
  v.producer = producer;
  value_ids_.emplace(abstract.get(), id);
  v.abstract = std::move(abstract);
  values_.push_back(std::move(v));
  return id;
}

ArrayPtr Program::add_input(ShardingPtr sharding, spmd_dtype dtype, Shape shape) {
  if (compiled_) invalid("program: is compiled; inputs are added while recording");
  if (&Runtime::of(*sharding) != runtime_.get())
    invalid("sharding: belongs to another runtime than the program");
  ArrayPtr a;
  {
    RecordingScope scope(shared_from_this());
    a = std::make_shared<Array>(std::move(sharding), dtype, std::move(shape));
  }
  inputs_.push_back(add_value(a, -1));
  return a;
}

std::shared_ptr<Program> Program::of(const std::vector<ArrayPtr> &operands,
                                     const std::vector<std::string> &names) {
  std::shared_ptr<Program> found;
  size_t first = 0;
  for (size_t k = 0; k < operands.size(); ++k) {
    const Array &a = *operands[k];
    if (!a.abstract()) continue;
    const std::string name = k < names.size() ? names[k] : "an operand";
    auto p = std::dynamic_pointer_cast<Program>(a.recording());
    if (!p) invalid(name, ": a value of a program that has been destroyed");
    if (found && found != p)
      invalid(first < names.size() ? names[first] : "an operand", " and ", name,
              ": values of two different programs; an op records into one program");
    if (!found) {
      found = std::move(p);
      first = k;
    }
  }
  return found;
}

// A node for the call `fn` ("sin" for spmd_sin) on `operands`: values of
// this program, or concrete arrays it keeps as constants.
Program::Node Program::new_node(const char *fn, const std::vector<ArrayPtr> &operands) const {
  Node n;
  n.name = std::string_view(fn).rfind("spmd_", 0) == 0 ? fn + 5 : fn;
  for (const ArrayPtr &a : operands) {
    Source s;
    s.value = value_of(a.get());
    if (s.value < 0) s.constant = a;
    n.operands.push_back(std::move(s));
  }
  return n;
}

ArrayPtr Program::record(const char *fn, const std::vector<ArrayPtr> &operands,
                         const ops::OpOptions &options, Replay replay) {
  if (compiled_)
    invalid(fn, ": its operands are values of a compiled program; record ops before "
                "spmd_x_program_compile, or record a new program");
  // A donated value is consumed as an eager op consumes it (the caller's
  // entry point retires its handle), but the recorded op gets no donation:
  // a value has no buffers to give, and the plan decides reuse itself. So
  // a function written for eager arrays, donations and all, records as it is.
  Node n = new_node(fn, operands);
  if (options.label) n.name = options.label;
  n.options.out_sharding = options.out_sharding;
  n.options.function = fn;
  n.constraint = std::string_view(fn) == "spmd_array_reshard";
  n.asked = options.out_sharding != nullptr;
  ArrayPtr result = trace(n, operands, n.options, replay);
  // An op that hands back an operand as it is (astype to its own type,
  // einsum "ij->ij") records nothing: the result is that value.
  if (value_of(result.get()) >= 0 || !result->abstract()) return result;
  if (n.steps.size() == 1 && n.steps[0].params.op != ew::Op::Copy)
    n.name = ew::op_name(n.steps[0].params.op);
  n.replay = std::move(replay);
  const int node = static_cast<int>(nodes_.size());
  n.result = add_value(result, node);
  for (const Source &s : n.operands) {
    if (s.value < 0) continue;
    Value &v = values_[static_cast<size_t>(s.value)];
    ++v.uses;
  }
  nodes_.push_back(std::move(n));
  return result;
}

std::vector<ArrayPtr> Program::record_multi(const char *fn, const std::vector<ArrayPtr> &operands,
                                            const std::vector<ArrayPtr> &examples, MultiReplay replay,
                                            const char *label) {
  if (compiled_)
    invalid(fn, ": its inputs are values of a compiled program; record steps before "
                "spmd_x_program_compile, or record a new program");
  if (examples.empty()) invalid(fn, ": a step recorded into a program needs at least one output");
  Node n = new_node(fn, operands);
  if (label) n.name = label;
  n.options.function = fn;
  n.asked = true;  // its results' layouts are its own (out_specs)
  std::vector<ArrayPtr> results;
  {
    RecordingScope scope(shared_from_this());
    for (const ArrayPtr &e : examples) results.push_back(std::make_shared<Array>(e->sharding(), e->dtype(), e->shape()));
  }
  n.multi = [replay = std::move(replay), want = results, fn = n.name](const std::vector<ArrayPtr> &xs) {
    std::vector<ArrayPtr> got = replay(xs);
    for (size_t k = 0; k < want.size() && k < got.size(); ++k) {
      const Array &w = *want[k], &g = *got[k];
      if (g.dtype() != w.dtype() || g.shape() != w.shape() || !g.sharding()->equivalent(*w.sharding()))
        invalid(fn, ": output ", k, " is ", type_text(g), " laid out as ", g.sharding()->spec().to_string(),
                " where recording gave ", type_text(w), " laid out as ", w.sharding()->spec().to_string(),
                "; a recorded step gives outputs of the same types at every run");
    }
    if (got.size() != want.size())
      fail(SPMD_ERR_INTERNAL, fn, ": ", got.size(), " outputs where recording gave ", want.size());
    return got;
  };
  const int node = static_cast<int>(nodes_.size());
  n.result = add_value(results[0], node);
  for (size_t k = 1; k < results.size(); ++k) n.more_results.push_back(add_value(results[k], node));
  for (const Source &s : n.operands)
    if (s.value >= 0) ++values_[static_cast<size_t>(s.value)].uses;
  nodes_.push_back(std::move(n));
  return results;
}

ArrayPtr Program::trace(Node &n, const std::vector<ArrayPtr> &operands, const ops::OpOptions &options,
                        const Replay &replay) {
  n.steps.clear();
  n.transfers.clear();
  n.flops = 0;
  n.rule.reset();
  n.factors_noted = false;
  n.pending = {};
  ArrayPtr result;
  recording_ = &n;
  try {
    RecordingScope scope(shared_from_this());
    result = replay(operands, options);
  } catch (...) {
    recording_ = nullptr;
    throw;
  }
  recording_ = nullptr;
  if (!n.pending.products.empty()) products_rule(n);
  else if (!n.factors_noted && result->abstract()) elementwise_rule(n, *result);
  n.pending = {};  // its arrays were the op's own, gone with it
  return result;
}

// Elementwise ops (the ops whose one pass is an elementwise kernel, not a
// copy, perhaps after converting operands): one factor per result
// dimension, read by each operand along the dimensions it has
// (right-aligned; one of size 1 against a larger one is broadcast). An operand of fewer elements is marked broadcast: jax.jit
// broadcasts it by an op of its own, which placement visits late (one of
// as many elements, only short of leading 1s, is reshaped there, an op
// placement passes through as early as the elementwise one).
void Program::elementwise_rule(Node &n, const Array &result) const {
  static const std::string_view elementwise[] = {"spmd_unary", "spmd_binary", "spmd_binary_scalar",
                                                  "spmd_scalar_binary", "spmd_where", "spmd_astype"};
  const std::string_view fn = n.options.function ? n.options.function : "";
  if (std::find(std::begin(elementwise), std::end(elementwise), fn) == std::end(elementwise)) return;
  // One pass, after the conversions of operands to the type it computes
  // in (jax.jit's convert_element_type: elementwise too).
  if (n.steps.empty() || n.steps.back().params.op == ew::Op::Copy) return;
  for (size_t k = 0; k + 1 < n.steps.size(); ++k)
    if (n.steps[k].params.op != ew::Op::Copy) return;
  Rule r;
  const size_t nd = result.shape().size();
  r.sizes = result.shape();
  r.summed.assign(nd, false);
  for (size_t d = 0; d < nd; ++d) r.result_factors.push_back(static_cast<int>(d));
  for (const Source &s : n.operands) {
    const Shape &shape = array_of(s)->shape();
    std::vector<int> factors(shape.size(), -1);
    for (size_t d = 0; d < shape.size() && shape.size() <= nd; ++d) {
      const size_t out = d + nd - shape.size();
      if (shape[d] == result.shape()[out]) factors[d] = static_cast<int>(out);
    }
    r.operand_factors.push_back(std::move(factors));
    r.broadcast.push_back(shape_elements(shape) != shape_elements(result.shape()));
  }
  n.rule = std::move(r);
}

void Program::donate(size_t k) {
  if (compiled_) invalid("program: is compiled; inputs are donated while recording");
  if (k >= inputs_.size())
    invalid("input: ", k, " for a program of ", inputs_.size(), inputs_.size() == 1 ? " input" : " inputs");
  donated_.resize(inputs_.size(), false);
  donated_[k] = true;
}

void Program::add_output(const ArrayPtr &value, ShardingPtr sharding, const char *arg) {
  if (compiled_) invalid("program: is compiled; outputs are added while recording");
  const int id = value_of(value.get());
  if (id < 0)
    invalid(arg, value->abstract() ? ": a value of another program"
                                   : ": an array with values, not a value of this program; "
                                     "a program's outputs are values it records");
  if (sharding) {
    if (sharding->device_set() != value->sharding()->device_set())
      invalid("sharding: its devices are not the value's; an output is resharded among "
              "the devices of the program's values");
    sharding->check_rank(value->shape());
  }
  values_[static_cast<size_t>(id)].output = true;
  outputs_.push_back({id, std::move(sharding)});
}

void Program::note_elementwise(const ElementwiseStep &step) {
  if (!recording_) return;
  Node &n = *recording_;
  Step s;
  s.params = step.params;
  s.out = step.out->sharding();
  s.direct = step.direct;
  for (int k = 0; k < step.params.nin; ++k) {
    if (!step.in[k]) continue;
    for (size_t j = 0; j < n.operands.size(); ++j) {
      const Source &o = n.operands[j];
      const Array *a = o.value >= 0 ? values_[static_cast<size_t>(o.value)].abstract.get() : o.constant.get();
      if (a == step.in[k]) s.operand[k] = static_cast<int>(j);
    }
    if (s.operand[k] < 0) s.direct = false;
  }
  n.steps.push_back(std::move(s));
}

void Program::note_transfer(std::string what, int64_t bytes) {
  if (recording_) recording_->transfers.push_back({std::move(what), bytes});
}

void Program::note_flops(int64_t flops) {
  if (recording_) recording_->flops += flops;
}

void Program::note_factors(Factors factors) {
  if (!recording_) return;
  Node &n = *recording_;
  const std::string_view fn = n.options.function ? n.options.function : "";
  if (fn == "spmd_einsum_n") {
    note_product(n, std::move(factors));
    return;
  }
  // The recorded op's own factors: the first note, over its own operands
  // (an op made of others notes theirs later, or over arrays of its own).
  if (n.factors_noted) return;
  n.factors_noted = true;
  // Only the ops that are themselves one op of jax.jit's placement (an
  // einsum of two operands is one product there, whatever transposes come
  // with it), or a softmax, which placement expands into the ops jax.jit
  // makes of it.
  using Kind = propagate::ProgramOp::Kind;
  bool own = false;
  switch (factors.kind) {
    case Kind::Transpose: own = fn == "spmd_transpose"; break;
    case Kind::Reduction: own = fn == "spmd_reduce" || fn == "spmd_argmax" || fn == "spmd_argmin"; break;
    case Kind::Contraction: own = fn == "spmd_matmul" || fn == "spmd_dot_general" || fn == "spmd_einsum"; break;
    case Kind::Reshape: own = fn == "spmd_reshape"; break;
    case Kind::Slice:
      own = fn == "spmd_slice" || fn == "spmd_slice_strided" || fn == "spmd_dynamic_slice" || fn == "spmd_cumsum";
      break;
    case Kind::Softmax: own = fn == "spmd_softmax"; break;
    case Kind::Broadcast: own = fn == "spmd_broadcast_to" || fn == "spmd_one_hot"; break;
    case Kind::Concatenate: own = fn == "spmd_concatenate"; break;
    case Kind::Gather: own = fn == "spmd_take" || fn == "spmd_scatter_add"; break;
    case Kind::Elementwise: break;
  }
  if (!own) return;
  Rule r;
  r.kind = factors.kind;
  r.operand_factors.assign(n.operands.size(), {});
  for (size_t k = 0; k < factors.operands.size(); ++k) {
    size_t j = 0;
    while (j < n.operands.size() && array_of(n.operands[j]).get() != factors.operands[k]) ++j;
    if (j == n.operands.size() || !r.operand_factors[j].empty()) return;  // placed as eager
    r.operand_factors[j] = std::move(factors.operand_factors[k]);
  }
  r.sizes = std::move(factors.sizes);
  r.summed = std::move(factors.summed);
  r.permuted = std::move(factors.permuted);
  r.result_factors = std::move(factors.result_factors);
  r.logarithm = factors.logarithm;
  n.rule = std::move(r);
}

void Program::note_product(Node &n, Factors factors) {
  // A product's own note comes first; the ops inside it (its dot_general,
  // transposes) note theirs while it is open.
  PendingProducts &p = n.pending;
  if (p.open || p.broken) return;
  if (factors.kind != propagate::ProgramOp::Kind::Contraction) {
    p.broken = true;
    return;
  }
  Rule::Product product;
  for (const Array *a : factors.operands) {
    std::optional<int> source;
    for (size_t j = 0; j < n.operands.size() && !source; ++j)
      if (array_of(n.operands[j]).get() == a) source = static_cast<int>(j);
    for (size_t q = 0; q < p.made.size() && !source; ++q)
      if (p.made[q] == a) source = -1 - static_cast<int>(q);
    if (!source) {
      p.broken = true;  // a converted operand: placed as the eager op
      return;
    }
    product.sources.push_back(*source);
  }
  product.sizes = std::move(factors.sizes);
  product.summed = std::move(factors.summed);
  product.operand_factors = std::move(factors.operand_factors);
  product.result_factors = std::move(factors.result_factors);
  p.products.push_back(std::move(product));
  p.open = true;
}

void Program::note_part_made(const Array &result) {
  if (!recording_ || !recording_->pending.open) return;
  recording_->pending.made.push_back(&result);
  recording_->pending.open = false;
}

void Program::products_rule(Node &n) const {
  // Every operand read once, every product but the last read once later.
  PendingProducts &p = n.pending;
  if (p.broken) return;
  std::vector<int> reads(n.operands.size() + p.products.size(), 0);
  for (const Rule::Product &product : p.products)
    for (int s : product.sources) ++reads[s >= 0 ? static_cast<size_t>(s) : n.operands.size() + static_cast<size_t>(-1 - s)];
  for (size_t k = 0; k < reads.size(); ++k)
    if (reads[k] != (k + 1 < reads.size() ? 1 : 0)) return;
  Rule r;
  r.kind = propagate::ProgramOp::Kind::Contraction;
  r.products = std::move(p.products);
  n.rule = std::move(r);
}

}  // namespace spmd
