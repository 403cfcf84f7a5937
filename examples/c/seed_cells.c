/* The seed notebooks' shard_map programs; see seed_cells.h. Local compute is
 * plain C: libspmd hands each device its blocks and moves data between them
 * with the collectives. */
#include "seed_cells.h"

#include "seed_kernels.h"

#include <math.h>
#include <stddef.h>

#define TRY(call)                       \
  do {                                  \
    spmd_status st_ = (call);           \
    if (st_ != SPMD_OK) return st_;     \
  } while (0)

/* A new (rows, cols) float32 block holding a @ b. */
static spmd_status matmul_block(spmd_ctx *ctx, const spmd_block *a, const spmd_block *b,
                                spmd_block *out) {
  if (a->dtype != SPMD_F32 || b->dtype != SPMD_F32 || a->ndim < 1 || b->ndim != 2 ||
      a->shape[a->ndim - 1] != b->shape[0])
    return spmd_ctx_error(ctx, SPMD_ERR_INVALID_ARGUMENT,
                          "matmul: expected float32 (..., k) @ (k, n) blocks");
  const int64_t k = b->shape[0], n = b->shape[1];
  int64_t m = 1;
  for (size_t d = 0; d + 1 < a->ndim; ++d) m *= a->shape[d];
  int64_t shape[SPMD_MAX_NDIM];
  for (size_t d = 0; d + 1 < a->ndim; ++d) shape[d] = a->shape[d];
  shape[a->ndim - 1] = n;
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, a->ndim, shape, out));
  seed_matmul(a->data, b->data, out->data, m, k, n);
  return SPMD_OK;
}

static int64_t block_elements(const spmd_block *b) {
  int64_t n = 1;
  for (size_t d = 0; d < b->ndim; ++d) n *= b->shape[d];
  return n;
}

static spmd_status run1(const spmd_mesh *mesh, spmd_shard_fn fn, size_t n_in,
                        spmd_array *const *inputs, const char *const *in_specs,
                        const char *out_spec, const spmd_shard_map_options *options,
                        spmd_array **out) {
  return spmd_shard_map_text(mesh, fn, NULL, n_in, inputs, in_specs, 1, &out_spec, options, out);
}

/* ---- 2 * sin(x) + 1 ---- */

/* The elementwise program; prints the local shape of a 1-D block when
 * user_data is non-NULL (the notebook's jax.debug.print). */
static spmd_status elementwise_sin(spmd_ctx *ctx, void *print_shape) {
  spmd_block x = SPMD_BLOCK_INIT, y = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &x));
  if (print_shape) TRY(spmd_ctx_printf(ctx, "(%lld,)", (long long)x.shape[0]));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, x.ndim, x.shape, &y));
  float *out = y.data;
  const int64_t n = block_elements(&x);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x.dtype == SPMD_I32 ? (float)((const int32_t *)x.data)[i]
                                        : ((const float *)x.data)[i];
    out[i] = 2.0f * sinf(v) + 1.0f;
  }
  return spmd_ctx_set_output(ctx, 0, &y);
}

spmd_status seed_elementwise_sin(const spmd_mesh *mesh, spmd_array *x,
                                 const spmd_shard_map_options *options, spmd_array **y) {
  const char *spec = "x";
  static const int print_shape = 1;
  return spmd_shard_map_text(mesh, elementwise_sin, (void *)&print_shape, 1, &x, &spec, 1, &spec,
                             options, y);
}

spmd_status seed_elementwise_sin_quiet(const spmd_mesh *mesh, spmd_array *x, spmd_array **y) {
  const char *spec = "x";
  return spmd_shard_map_text(mesh, elementwise_sin, NULL, 1, &x, &spec, 1, &spec, NULL, y);
}

/* f_elementwise as jit runs it: three global ops; each keeps x's sharding. */
spmd_status seed_f_elementwise(spmd_array *x, spmd_array **y) {
  spmd_array *s = NULL, *t = NULL;
  spmd_status st = spmd_unary(SPMD_UNARY_SIN, x, NULL, &s);
  if (st == SPMD_OK) st = spmd_scalar_binary(SPMD_BINARY_MUL, 2.0, s, NULL, &t);
  if (st == SPMD_OK) st = spmd_binary_scalar(SPMD_BINARY_ADD, t, 1.0, NULL, y);
  spmd_array_destroy(t);
  spmd_array_destroy(s);
  return st;
}

/* ---- sums ---- */

/* A scalar (ndim 0) block of the block's sum, in its own dtype. */
static spmd_status local_sum(spmd_ctx *ctx, const spmd_block *x, size_t ndim, spmd_block *out) {
  const int64_t one[1] = {1};
  TRY(spmd_ctx_alloc(ctx, x->dtype, ndim, one, out));
  const int64_t n = block_elements(x);
  if (x->dtype == SPMD_I32) {
    int32_t s = 0;
    for (int64_t i = 0; i < n; ++i) s += ((const int32_t *)x->data)[i];
    *(int32_t *)out->data = s;
  } else if (x->dtype == SPMD_F32) {
    float s = 0;
    for (int64_t i = 0; i < n; ++i) s += ((const float *)x->data)[i];
    *(float *)out->data = s;
  } else {
    return spmd_ctx_error(ctx, SPMD_ERR_INVALID_ARGUMENT, "sum: expected int32 or float32");
  }
  return SPMD_OK;
}

static spmd_status psum_of_sums(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block x = SPMD_BLOCK_INIT, s = SPMD_BLOCK_INIT, total = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &x));
  TRY(local_sum(ctx, &x, 0, &s));
  TRY(spmd_ctx_psum(ctx, &s, "x", &total));
  return spmd_ctx_set_output(ctx, 0, &total);
}

spmd_status seed_psum_of_shard_sums(const spmd_mesh *mesh, spmd_array *x, spmd_array **total) {
  const char *in_spec = "x";
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = 1;
  return run1(mesh, psum_of_sums, 1, &x, &in_spec, "", &o, total);
}

static spmd_status shard_sum(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block x = SPMD_BLOCK_INIT, s = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &x));
  TRY(local_sum(ctx, &x, 1, &s));
  return spmd_ctx_set_output(ctx, 0, &s);
}

spmd_status seed_shard_sums(const spmd_mesh *mesh, spmd_array *x, spmd_array **sums) {
  const char *in_spec = "x";
  return run1(mesh, shard_sum, 1, &x, &in_spec, "x", NULL, sums);
}

/* ---- x * 2, printing the local shape ---- */

/* The notebook prints with Python's print, which runs once, while JAX
 * traces f: the first device prints here. */
static spmd_status double_block(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block x = SPMD_BLOCK_INIT, y = SPMD_BLOCK_INIT;
  int device = 0;
  int64_t index = 0;
  TRY(spmd_ctx_input(ctx, 0, &x));
  TRY(spmd_ctx_device_id(ctx, &device));
  TRY(spmd_ctx_axis_index(ctx, "x", &index));
  if (x.dtype != SPMD_I32 || x.ndim != 1)
    return spmd_ctx_error(ctx, SPMD_ERR_INVALID_ARGUMENT, "double: expected an int32 vector");
  if (index == 0)
    TRY(spmd_ctx_printf(ctx, "device local shape: x.shape=(%lld,)", (long long)x.shape[0]));
  TRY(spmd_ctx_alloc(ctx, SPMD_I32, 1, x.shape, &y));
  for (int64_t i = 0; i < x.shape[0]; ++i)
    ((int32_t *)y.data)[i] = 2 * ((const int32_t *)x.data)[i];
  return spmd_ctx_set_output(ctx, 0, &y);
}

spmd_status seed_double(const spmd_mesh *mesh, spmd_array *x,
                        const spmd_shard_map_options *options, spmd_array **y) {
  const char *in_spec = "x";
  return run1(mesh, double_block, 1, &x, &in_spec, "x", options, y);
}

/* ---- x.sum(axis=0) under jit ---- */

/* The reduction over the dimension split by 'x': each device sums its
 * rows, a psum over 'x' completes the sums, the result is P('y'). */
spmd_status seed_f_contract(const spmd_mesh *mesh, spmd_array *x, spmd_array **out) {
  (void)mesh;
  const int64_t axis0[1] = {0};
  return spmd_reduce(SPMD_REDUCE_SUM, x, 1, axis0, 0, NULL, out);
}

/* The constraint on the 1-D mesh: the sums laid out P('x') over mesh8. */
spmd_status seed_f_contract_2(const spmd_mesh *mesh, const spmd_mesh *mesh8, spmd_array *x,
                              spmd_array **out) {
  (void)mesh;
  spmd_sharding *constraint = NULL;
  TRY(spmd_sharding_named_text(mesh8, "x", &constraint));
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.out_sharding = constraint;
  const int64_t axis0[1] = {0};
  const spmd_status st = spmd_reduce(SPMD_REDUCE_SUM, x, 1, axis0, 0, &o, out);
  spmd_sharding_destroy(constraint);
  return st;
}

/* ---- layer ---- */

/* psum(x @ weights, 'x') + bias on each device. The sigmoid follows as a
 * global op on the replicated result: libspmd's logistic kernel is the one
 * that gives XLA's bits (the C library's expf can differ in the last
 * place), and applied to a replicated block it is what each device would
 * compute. */
static spmd_status layer_sharded(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block x = SPMD_BLOCK_INIT, w = SPMD_BLOCK_INIT, b = SPMD_BLOCK_INIT;
  spmd_block xw = SPMD_BLOCK_INIT, sum = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &x));
  TRY(spmd_ctx_input(ctx, 1, &w));
  TRY(spmd_ctx_input(ctx, 2, &b));
  TRY(matmul_block(ctx, &x, &w, &xw));
  TRY(spmd_ctx_psum(ctx, &xw, "x", &sum));
  float *out = sum.data;
  const float *bias = b.data;
  for (int64_t j = 0; j < sum.shape[0]; ++j) out[j] += bias[j];
  return spmd_ctx_set_output(ctx, 0, &sum);
}

spmd_status seed_layer_sharded(const spmd_mesh *mesh, spmd_array *x, spmd_array *weights,
                               spmd_array *bias, spmd_array **out) {
  spmd_array *inputs[3] = {x, weights, bias};
  const char *in_specs[3] = {"x", "x, None", "None"};
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = 1;
  spmd_array *z = NULL;
  TRY(run1(mesh, layer_sharded, 3, inputs, in_specs, "None", &o, &z));
  const spmd_status st = spmd_unary(SPMD_UNARY_SIGMOID, z, NULL, out);
  spmd_array_destroy(z);
  return st;
}

/* ---- FSDP and tensor parallelism ---- */

static spmd_status fsdp(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block x = SPMD_BLOCK_INIT, a = SPMD_BLOCK_INIT, full = SPMD_BLOCK_INIT;
  spmd_block b = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &x));
  TRY(spmd_ctx_input(ctx, 1, &a));
  TRY(spmd_ctx_all_gather(ctx, &a, "data", 0, 1, &full));
  TRY(matmul_block(ctx, &x, &full, &b));
  return spmd_ctx_set_output(ctx, 0, &b);
}

spmd_status seed_fsdp_matmul(const spmd_mesh *mesh, spmd_array *x, spmd_array *a,
                             spmd_array **b) {
  spmd_array *inputs[2] = {x, a};
  const char *in_specs[2] = {"data, None", "data, None"};
  return run1(mesh, fsdp, 2, inputs, in_specs, "data, None", NULL, b);
}

/* The shared tail of both MLPs: x @ W1 @ W2, reduce-scattered over 'model'. */
static spmd_status mlp_tail(spmd_ctx *ctx, const spmd_block *x, const spmd_block *w1,
                            const spmd_block *w2) {
  spmd_block h = SPMD_BLOCK_INIT, y = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  TRY(matmul_block(ctx, x, w1, &h));
  TRY(matmul_block(ctx, &h, w2, &y));
  TRY(spmd_ctx_psum_scatter(ctx, &y, "model", 1, 1, &out));
  return spmd_ctx_set_output(ctx, 0, &out);
}

static spmd_status tp_mlp(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block x = SPMD_BLOCK_INIT, w1 = SPMD_BLOCK_INIT, w2 = SPMD_BLOCK_INIT;
  spmd_block xg = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &x));
  TRY(spmd_ctx_input(ctx, 1, &w1));
  TRY(spmd_ctx_input(ctx, 2, &w2));
  TRY(spmd_ctx_all_gather(ctx, &x, "model", 1, 1, &xg));
  return mlp_tail(ctx, &xg, &w1, &w2);
}

spmd_status seed_tp_mlp(const spmd_mesh *mesh, spmd_array *x, spmd_array *w1, spmd_array *w2,
                        spmd_array **b) {
  spmd_array *inputs[3] = {x, w1, w2};
  const char *in_specs[3] = {"None, model", "None, model", "model, None"};
  return run1(mesh, tp_mlp, 3, inputs, in_specs, "None, model", NULL, b);
}

static spmd_status fsdp_tp(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block x = SPMD_BLOCK_INIT, w1 = SPMD_BLOCK_INIT, w2 = SPMD_BLOCK_INIT;
  spmd_block xg = SPMD_BLOCK_INIT, w1g = SPMD_BLOCK_INIT, w2g = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &x));
  TRY(spmd_ctx_input(ctx, 1, &w1));
  TRY(spmd_ctx_input(ctx, 2, &w2));
  TRY(spmd_ctx_all_gather(ctx, &x, "model", 1, 1, &xg));   /* TP gathers activations */
  TRY(spmd_ctx_all_gather(ctx, &w1, "data", 0, 1, &w1g));  /* FSDP gathers weights */
  TRY(spmd_ctx_all_gather(ctx, &w2, "data", 1, 1, &w2g));
  return mlp_tail(ctx, &xg, &w1g, &w2g);
}

spmd_status seed_fsdp_tp(const spmd_mesh *mesh, spmd_array *x, spmd_array *w1, spmd_array *w2,
                         spmd_array **b) {
  spmd_array *inputs[3] = {x, w1, w2};
  const char *in_specs[3] = {"data, model", "data, model", "model, data"};
  return run1(mesh, fsdp_tp, 3, inputs, in_specs, "data, model", NULL, b);
}

/* ---- the same models, the automatic way ---- */

/* `a` placed with NamedSharding(mesh, spec): jax.device_put. */
static spmd_status place(const spmd_mesh *mesh, spmd_array *a, const char *spec, spmd_array **out) {
  spmd_sharding *s = NULL;
  TRY(spmd_sharding_named_text(mesh, spec, &s));
  const spmd_status st = spmd_array_reshard(a, s, out);
  spmd_sharding_destroy(s);
  return st;
}

/* a @ b, its result laid out by `out_spec` on `mesh` (NULL: propagated). */
static spmd_status matmul_to(const spmd_mesh *mesh, spmd_array *a, spmd_array *b,
                             const char *out_spec, spmd_array **out) {
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  spmd_sharding *s = NULL;
  if (out_spec) TRY(spmd_sharding_named_text(mesh, out_spec, &s));
  o.out_sharding = s;
  const spmd_status st = spmd_matmul(a, b, &o, out);
  spmd_sharding_destroy(s);
  return st;
}

spmd_status seed_layer_auto(const spmd_mesh *mesh, spmd_array *x, spmd_array *weights,
                            spmd_array *bias, spmd_array **out) {
  spmd_array *xs = NULL, *ws = NULL, *bs = NULL, *xw = NULL, *z = NULL;
  spmd_status st = place(mesh, x, "x", &xs);
  if (st == SPMD_OK) st = place(mesh, weights, "x, None", &ws);
  if (st == SPMD_OK) st = place(mesh, bias, "", &bs);
  if (st == SPMD_OK) st = spmd_matmul(xs, ws, NULL, &xw); /* psum over 'x' by propagation */
  if (st == SPMD_OK) st = spmd_binary(SPMD_BINARY_ADD, xw, bs, NULL, &z);
  if (st == SPMD_OK) st = spmd_unary(SPMD_UNARY_SIGMOID, z, NULL, out);
  spmd_array_destroy(z);
  spmd_array_destroy(bs);
  spmd_array_destroy(xw);
  spmd_array_destroy(ws);
  spmd_array_destroy(xs);
  return st;
}

spmd_status seed_fsdp_auto(const spmd_mesh *mesh, spmd_array *x, spmd_array *a, spmd_array **b) {
  spmd_array *xs = NULL, *as = NULL;
  spmd_status st = place(mesh, x, "data, None", &xs);
  if (st == SPMD_OK) st = place(mesh, a, "data, None", &as);
  if (st == SPMD_OK) st = matmul_to(mesh, xs, as, "data, None", b);
  spmd_array_destroy(as);
  spmd_array_destroy(xs);
  return st;
}

static spmd_status mlp_auto(const spmd_mesh *mesh, spmd_array *x, spmd_array *w1, spmd_array *w2,
                            const char *const specs[4], spmd_array **b) {
  spmd_array *xs = NULL, *w1s = NULL, *w2s = NULL, *h = NULL;
  spmd_status st = place(mesh, x, specs[0], &xs);
  if (st == SPMD_OK) st = place(mesh, w1, specs[1], &w1s);
  if (st == SPMD_OK) st = place(mesh, w2, specs[2], &w2s);
  if (st == SPMD_OK) st = spmd_matmul(xs, w1s, NULL, &h);
  if (st == SPMD_OK) st = matmul_to(mesh, h, w2s, specs[3], b);
  spmd_array_destroy(h);
  spmd_array_destroy(w2s);
  spmd_array_destroy(w1s);
  spmd_array_destroy(xs);
  return st;
}

spmd_status seed_tp_mlp_auto(const spmd_mesh *mesh, spmd_array *x, spmd_array *w1,
                             spmd_array *w2, spmd_array **b) {
  static const char *const specs[4] = {"None, model", "None, model", "model, None", "None, model"};
  return mlp_auto(mesh, x, w1, w2, specs, b);
}

spmd_status seed_fsdp_tp_auto(const spmd_mesh *mesh, spmd_array *x, spmd_array *w1,
                              spmd_array *w2, spmd_array **b) {
  static const char *const specs[4] = {"data, model", "data, model", "model, data", "data, model"};
  return mlp_auto(mesh, x, w1, w2, specs, b);
}

/* ---- the benchmarking section's collectives ---- */

enum bench_op { BENCH_ALL_GATHER, BENCH_ALL_REDUCE, BENCH_REDUCE_SCATTER, BENCH_ALL_TO_ALL };

static spmd_status bench_collective(spmd_ctx *ctx, void *ud) {
  const enum bench_op op = *(const enum bench_op *)ud;
  spmd_block x = SPMD_BLOCK_INIT, y = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &x));
  switch (op) {
    case BENCH_ALL_GATHER: TRY(spmd_ctx_all_gather(ctx, &x, "data", 0, 1, &y)); break;
    case BENCH_ALL_REDUCE: TRY(spmd_ctx_psum(ctx, &x, "data", &y)); break;
    case BENCH_REDUCE_SCATTER: TRY(spmd_ctx_psum_scatter(ctx, &x, "data", 0, 1, &y)); break;
    case BENCH_ALL_TO_ALL: TRY(spmd_ctx_all_to_all(ctx, &x, "data", 1, 0, 1, &y)); break;
  }
  return spmd_ctx_set_output(ctx, 0, &y);
}

static spmd_status run_bench(const spmd_mesh *mesh, enum bench_op op, spmd_array *x,
                             const char *in_spec, const char *out_spec, spmd_array **out) {
  return spmd_shard_map_text(mesh, bench_collective, &op, 1, &x, &in_spec, 1, &out_spec, NULL,
                             out);
}

spmd_status seed_all_gather(const spmd_mesh *mesh, spmd_array *x, spmd_array **out) {
  return run_bench(mesh, BENCH_ALL_GATHER, x, "data, None", "None, None", out);
}

spmd_status seed_all_reduce(const spmd_mesh *mesh, spmd_array *x, spmd_array **out) {
  return run_bench(mesh, BENCH_ALL_REDUCE, x, "None, None", "None, None", out);
}

spmd_status seed_reduce_scatter(const spmd_mesh *mesh, spmd_array *x, spmd_array **out) {
  return run_bench(mesh, BENCH_REDUCE_SCATTER, x, "None, None", "data, None", out);
}

spmd_status seed_all_to_all(const spmd_mesh *mesh, spmd_array *x, spmd_array **out) {
  return run_bench(mesh, BENCH_ALL_TO_ALL, x, "data, None", "None, data", out);
}
