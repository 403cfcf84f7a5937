#include "exec/ops/elementwise.hpp"

#include <cstring>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "base/promotion.hpp"
#include "exec/ops/table.hpp"

namespace spmd::ops {

spmd_dtype compute_type(spmd_dtype d) {
  if (d == SPMD_F64) return SPMD_F64;
  if (dtype_is_float(d)) return SPMD_F32;
  return SPMD_I64;
}

Shape broadcast_shapes(const Shape &a, const char *an, const Shape &b, const char *bn) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t d = 0; d < n; ++d) {
    const int64_t x = d + a.size() >= n ? a[d + a.size() - n] : 1;
    const int64_t y = d + b.size() >= n ? b[d + b.size() - n] : 1;
    if (x != y && x != 1 && y != 1)
      invalid(an, " and ", bn, ": shapes ", shape_to_string(a), " and ", shape_to_string(b),
              " do not broadcast (dimension ", static_cast<int64_t>(d) - static_cast<int64_t>(n),
              ": ", x, " against ", y, ")");
    out[d] = x == 1 ? y : x;
  }
  return out;
}

namespace {

struct Input {
  ArrayPtr array;  // null for a scalar
  const char *name = "";
  double value = 0;
  spmd_dtype dtype = SPMD_F32;
};

// Dense strides of a block, right-aligned to the result's rank, 0 where
// the block broadcasts.
Shape strides_for(const Shape &local, const Shape &out_local) {
  const size_t n = out_local.size(), r = local.size();
  Shape st(n, 0);
  int64_t s = 1;
  for (size_t od = r; od-- > 0;) {
    const size_t d = od + n - r;
    st[d] = (local[od] == 1 && out_local[d] != 1) ? 0 : s;
    s *= local[od];
  }
  return st;
}

// Tells the recording what this pass would compute (fusion reads it).
void note_step(ew::Op op, const std::vector<Input> &in, const std::vector<ArrayPtr> &laid,
               const Array &out, spmd_dtype compute) {
  Recording::ElementwiseStep step;
  step.params.op = op;
  step.params.out = out.dtype();
  step.params.compute = compute;
  step.params.shape = out.shape();
  step.params.nin = static_cast<int>(in.size());
  step.out = &out;
  for (size_t k = 0; k < in.size(); ++k) {
    step.params.in[k].dtype = in[k].dtype;
    if (!laid[k]) {
      step.params.in[k].scalar = true;
      step.params.in[k].value = in[k].value;
      continue;
    }
    step.in[k] = laid[k].get();
    if (laid[k] != in[k].array || laid[k]->shape() != out.shape()) step.direct = false;
  }
  current_recording()->note_elementwise(step);
}

ArrayPtr run(ew::Op op, std::vector<Input> in, spmd_dtype compute, spmd_dtype out_dtype,
             const Shape *target, const OpOptions &options) {
  std::vector<Operand> arrays;
  for (const auto &i : in)
    if (i.array) arrays.push_back({i.array, i.name});
  const MeshPtr mesh = common_mesh(arrays);
  Shape out_shape;
  if (target) {
    out_shape = *target;
    for (const auto &a : arrays)
      if (broadcast_shapes(a.array->shape(), a.name, out_shape, "shape") != out_shape)
        invalid(a.name, ": shape ", shape_to_string(a.array->shape()), " cannot be broadcast to ",
                shape_to_string(out_shape));
  } else {
    out_shape = arrays[0].array->shape();
    const char *first = arrays[0].name;
    for (size_t k = 1; k < arrays.size(); ++k)
      out_shape = broadcast_shapes(out_shape, first, arrays[k].array->shape(), arrays[k].name);
  }
  std::string operands;
  for (const auto &a : arrays) operands += cat(operands.empty() ? "" : " and ", a.name);
  check_result(target ? "shape" : operands.c_str(), out_shape, out_dtype);
  const size_t n = out_shape.size();
  const ShardingPtr requested = requested_sharding(options, mesh, n);
  propagate::Dims out_dims;
  if (on_mesh(requested, mesh)) {
    out_dims = propagate::padded(requested->spec(), n);
  } else {
    std::vector<propagate::Dims> dims;
    std::vector<Shape> shapes;
    for (const auto &a : arrays) {
      dims.push_back(propagate::padded(a.array->sharding()->spec(), a.array->shape().size()));
      shapes.push_back(a.array->shape());
    }
    out_dims = propagate::elementwise(dims, shapes, out_shape);
  }
  const ShardingPtr out_sharding =
      on_mesh(requested, mesh) ? requested : sharding_of(mesh, out_dims, *arrays[0].array);

  std::vector<ArrayPtr> laid(in.size());
  std::vector<const Array *> reads;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!in[k].array) continue;
    laid[k] = laid_out(in[k].array, mesh,
                       propagate::operand_layout(out_dims, in[k].array->shape(), out_shape));
    reads.push_back(laid[k].get());
  }
  // A donated operand of the result's shape, type and layout gives its
  // buffers to the result, which the kernel then writes in place. Not when
  // a reshard must follow (an output sharding on another mesh): nothing
  // that can fail may come after the operand's values are overwritten. Nor
  // when another library views its memory (a DLPack export), nor when
  // another array shares its buffers (a reshape's view): the operand is
  // consumed all the same, its memory left as the others see it.
  ArrayPtr out;
  const bool last_step = !requested || on_mesh(requested, mesh);
  for (size_t k = 0; k < in.size() && k < 3 && !out && last_step; ++k) {
    if (!options.donate[k] || !laid[k] || laid[k] != in[k].array) continue;
    const Array &a = *laid[k];
    if (a.shape() != out_shape || a.dtype() != out_dtype || !take_donated(options, k) ||
        !a.writable_in_place())
      continue;
    std::vector<BufferPtr> buffers;
    for (size_t i = 0; i < a.shard_count(); ++i) buffers.push_back(a.buffer_ptr(i));
    out = Array::from_buffers(out_sharding, out_dtype, out_shape, std::move(buffers));
  }
  if (!out) out = std::make_shared<Array>(out_sharding, out_dtype, out_shape);
  if (out->abstract()) note_step(op, in, laid, *out, compute);

  std::vector<std::pair<size_t, Kernel>> kernels;
  kernels.reserve(out->shard_count());
  for (size_t i = 0; i < out->shard_count(); ++i) {
    const ShardLayout &s = out->shard(i);
    if (s.box.empty() || !out->addressable(i)) continue;
    ew::Params p;
    p.op = op;
    p.out = out_dtype;
    p.compute = compute;
    p.shape = s.box.extent();
    p.nin = static_cast<int>(in.size());
    Place places[3];
    for (size_t k = 0; k < in.size(); ++k) {
      p.in[k].dtype = in[k].dtype;
      if (!laid[k]) {
        p.in[k].scalar = true;
        p.in[k].value = in[k].value;
        p.in[k].strides.assign(n, 0);
        continue;
      }
      p.in[k].strides = strides_for(laid[k]->shard(i).box.extent(), p.shape);
      places[k] = laid[k]->buffer(i).place();
    }
    kernels.emplace_back(i, Kernel::elementwise_op(out->buffer(i).place(), places, std::move(p), s.device));
  }
  launch_per_shard(*out, reads, std::move(kernels));
  return honour(out, requested);
}

// The scalar as JAX rounds a weakly typed Python number to the array's type:
// floats round, integers wrap (300 as int8 is 44; scalar_promotion has
// bounded it to int64).
double rounded_to(spmd_dtype d, double v) {
  unsigned char bytes[8];
  if (dtype_is_integer(d)) {
    const auto i = static_cast<int64_t>(v);
    // Little-endian: the low bytes of the int64 are the narrower value.
    std::memcpy(bytes, &i, sizeof i);
    return load_as_double(d, bytes);
  }
  store_from_double(d, v, bytes);
  return load_as_double(d, bytes);
}

// How an op's result type follows from its operands' (the op table).
table::Result result_of(ew::Op op) {
  const table::Elementwise *row = table::find_kernel(op);
  return row ? row->result : table::Result::Same;
}

// The functions whose result is a float whatever the operand (sin of an
// int32 is a float32).
bool is_transcendental(ew::Op op) {
  const table::Result r = result_of(op);
  return r == table::Result::Float || r == table::Result::FloatOnly;
}

// The result type and the type computed in for a binary op on `t` (the
// operands' promoted type); refuses what JAX refuses.
std::pair<spmd_dtype, spmd_dtype> binary_types(ew::Op op, spmd_dtype t) {
  if (t == SPMD_BOOL && op == ew::Op::Sub)
    invalid("op: sub is not defined for bool operands (JAX raises TypeError); use ne or where");
  const table::Result r = result_of(op);
  if (r == table::Result::Float) t = float_result(t);
  if (op == ew::Op::Pow && t == SPMD_BOOL) t = SPMD_I32;  // jnp.power(bool, bool) is int32
  const spmd_dtype compute = compute_type(t);
  if (r == table::Result::Bool) return {SPMD_BOOL, compute};
  return {t, compute};
}

// An operand as JAX converts it to the operands' promoted type `t` before
// the op: only integers of 16 bits or more meeting a 16-bit float change
// (int32 2049 is 2048 in float16, uint16 257 is 256 in bfloat16); every
// other conversion the kernel does in its compute type is exact.
ArrayPtr in_promoted(const ArrayPtr &a, spmd_dtype t, const char *arg) {
  const bool wide_int = dtype_is_integer(a->dtype()) && dtype_size(a->dtype()) >= 2;
  if (wide_int && (t == SPMD_F16 || t == SPMD_BF16)) return converted(a, t, arg);
  return a;
}

// Bool arithmetic as JAX's: add is or, mul is and (max and min of 0 and 1).
ew::Op bool_form(ew::Op op, spmd_dtype t) {
  if (t != SPMD_BOOL) return op;
  if (op == ew::Op::Add) return ew::Op::Max;
  if (op == ew::Op::Mul) return ew::Op::Min;
  return op;
}

}  // namespace

ArrayPtr unary(ew::Op op, const ArrayPtr &x, const OpOptions &options) {
  spmd_dtype t = x->dtype();
  // lax.rsqrt and lax.logistic take floats only (jnp's other functions
  // convert integers to a float first).
  if (result_of(op) == table::Result::FloatOnly && !dtype_is_float(t))
    invalid("op: ", ew::op_name(op), " is not defined for ", dtype_name(t),
            " operands (JAX raises TypeError); convert x to a float type first");
  if (t == SPMD_BOOL && !is_transcendental(op)) {
    // jnp.abs of bools is the identity; jax.nn.relu's max(x, 0) is int32.
    if (op == ew::Op::Abs) return run(ew::Op::Copy, {{x, "x", 0, t}}, compute_type(t), t, nullptr, options);
    if (op == ew::Op::Relu) return astype(x, SPMD_I32, options);
    if (op != ew::Op::Copy)
      invalid("op: ", ew::op_name(op), " is not defined for bool operands (JAX raises TypeError)");
  }
  if (is_transcendental(op)) t = float_result(t);
  return run(op, {{x, "x", 0, x->dtype()}}, compute_type(t), t, nullptr, options);
}

ArrayPtr converted(const ArrayPtr &x, spmd_dtype dtype, const char *arg) {
  if (x->dtype() == dtype) return x;
  try {
    return astype(x, dtype, {});
  } catch (const Error &e) {
    // An empty operand whose wider type would pass the shape bound (a
    // (0, 2^62) bool as int32) is used as it is: no element of it is ever
    // read, and the op's result type is already the promoted one.
    if (x->size() == 0 && e.status() == SPMD_ERR_INVALID_ARGUMENT) return x;
    std::string why = e.what();
    if (why.rfind("x: ", 0) == 0) why.erase(0, 3);
    fail(e.status(), arg, ": converted to ", dtype_name(dtype), " first, as JAX converts it: ",
         why);
  }
}

ArrayPtr astype(const ArrayPtr &x, spmd_dtype dtype, const OpOptions &options) {
  // Floats convert through their own precision; a float to an integer
  // goes through f64 (exact for every float type) and then as jnp.astype.
  spmd_dtype compute = compute_type(dtype);
  if (!dtype_is_float(dtype) && dtype_is_float(x->dtype())) compute = SPMD_F64;
  if (dtype_is_float(dtype) && x->dtype() == SPMD_F64) compute = SPMD_F64;
  return run(ew::Op::Copy, {{x, "x", 0, x->dtype()}}, compute, dtype, nullptr, options);
}

ArrayPtr binary(ew::Op op, const ArrayPtr &x, const ArrayPtr &y, const OpOptions &options) {
  const spmd_dtype t = promote_types(x->dtype(), y->dtype());
  const auto [out, compute] = binary_types(op, t);
  const ArrayPtr xs = in_promoted(x, t, "x"), ys = in_promoted(y, t, "y");
  return run(bool_form(op, t), {{xs, "x", 0, xs->dtype()}, {ys, "y", 0, ys->dtype()}}, compute,
             out, nullptr, options);
}

ArrayPtr binary_scalar(ew::Op op, const ArrayPtr &x, double s, bool scalar_first,
                       const OpOptions &options) {
  const spmd_dtype t = scalar_promotion(x->dtype(), s, "scalar");
  const auto [out, compute] = binary_types(op, t);
  Input a{x, "x", 0, x->dtype()};
  Input b{nullptr, "scalar", rounded_to(t, s), t};
  std::vector<Input> in = scalar_first ? std::vector<Input>{b, a} : std::vector<Input>{a, b};
  OpOptions o = options;
  if (scalar_first) std::swap(o.donate[0], o.donate[1]);
  return run(bool_form(op, t), std::move(in), compute, out, nullptr, o);
}

ArrayPtr where(const ArrayPtr &cond_in, const ArrayPtr &x, const ArrayPtr &y,
               const OpOptions &options) {
  const spmd_dtype t = promote_types(x->dtype(), y->dtype());
  // Any non-zero condition is true, NaN included, as jnp.where reads it:
  // the kernel compares in the result's type, which would truncate 0.5 to
  // an integer 0.
  const ArrayPtr cond =
      converted(cond_in, SPMD_BOOL, "cond");
  const ArrayPtr xs = in_promoted(x, t, "x"), ys = in_promoted(y, t, "y");
  return run(ew::Op::Select,
             {{cond, "cond", 0, cond->dtype()}, {xs, "x", 0, xs->dtype()}, {ys, "y", 0, ys->dtype()}},
             compute_type(t), t, nullptr, options);
}

ArrayPtr broadcast_to(const ArrayPtr &x, const Shape &shape, const OpOptions &options) {
  if (shape.size() < x->shape().size())
    invalid("shape: ", shape_to_string(shape), " has fewer dimensions than x's ",
            shape_to_string(x->shape()));
  if (Recording *rec = current_recording()) {
    // One factor per result dimension; x's dimensions (right-aligned) run
    // over those they equal, a dimension of 1 stretched over none.
    Recording::Factors f;
    f.kind = propagate::ProgramOp::Kind::Broadcast;
    f.operands = {x.get()};
    f.sizes = shape;
    f.summed.assign(shape.size(), false);
    const size_t lead = shape.size() - x->shape().size();
    f.operand_factors = {std::vector<int>(x->shape().size(), -1)};
    for (size_t d = 0; d < x->shape().size(); ++d)
      if (x->shape()[d] == shape[lead + d]) f.operand_factors[0][d] = static_cast<int>(lead + d);
    for (size_t d = 0; d < shape.size(); ++d) f.result_factors.push_back(static_cast<int>(d));
    rec->note_factors(std::move(f));
  }
  return run(ew::Op::Copy, {{x, "x", 0, x->dtype()}}, compute_type(x->dtype()), x->dtype(), &shape,
             options);
}

}  // namespace spmd::ops
