/* The Attention + MLP layer of the tensor-parallelism notebook; see
 * seed_layer.h. Each device holds its 'data' rows of x and its 'model'
 * share of every weight: whole heads of Wq/Wk/Wv (columns) and the matching
 * rows of Wo, a slice of W1's columns and of W2's rows. Attention and the
 * MLP then run locally and each ends in a partial product that one psum
 * over 'model' completes, as in Megatron-LM. */
#include "seed_layer.h"

#include "seed_error.h"
#include "seed_temps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(call)                   \
  do {                              \
    spmd_status st_ = (call);       \
    if (st_ != SPMD_OK) return st_; \
  } while (0)

enum { N_WEIGHTS = 6 };

static spmd_array **weight_slot(seed_layer *layer, int i) {
  spmd_array **slots[N_WEIGHTS] = {&layer->wq, &layer->wk, &layer->wv,
                                   &layer->wo, &layer->w1, &layer->w2};
  return slots[i];
}

/* ---- initialisation: nnx.Rngs(0) with kaiming_normal ---- */

static spmd_status scale_block(spmd_ctx *ctx, void *user_data) {
  const float factor = *(const float *)user_data;
  spmd_block w = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &w));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, w.ndim, w.shape, &out));
  int64_t n = 1;
  for (size_t d = 0; d < w.ndim; ++d) n *= w.shape[d];
  const float *src = w.data;
  float *dst = out.data;
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
  return spmd_ctx_set_output(ctx, 0, &out);
}

/* kaiming_normal()(fold_in(PRNGKey(0), index), (fan_in, fan_out)), laid
 * out by `spec`. The scale is computed in float32, as JAX's
 * variance_scaling does. */
static spmd_status kaiming_normal(const spmd_mesh *mesh, uint32_t index, int64_t fan_in,
                                  int64_t fan_out, const char *spec, spmd_array **out) {
  spmd_key root, key;
  TRY(spmd_random_key(0, &root));
  TRY(spmd_random_fold_in(&root, index, &key));
  spmd_sharding *sharding = NULL;
  TRY(spmd_sharding_named_text(mesh, spec, &sharding));
  const int64_t shape[2] = {fan_in, fan_out};
  spmd_array *unit = NULL;
  spmd_status st =
      spmd_random_truncated_normal(sharding, &key, SPMD_F32, 2, shape, -2.0, 2.0, &unit);
  if (st == SPMD_OK) {
    float stddev = sqrtf((float)(2.0 / (double)fan_in)) / 0.87962566103423978f;
    st = spmd_shard_map_text(mesh, scale_block, &stddev, 1, &unit, &spec, 1, &spec, NULL, out);
  }
  spmd_array_destroy(unit);
  spmd_sharding_destroy(sharding);
  return st;
}

spmd_status seed_layer_init(const spmd_mesh *mesh, int64_t hidden, int64_t heads,
                            seed_layer *layer) {
  if (layer == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, __func__, "layer: NULL");
  memset(layer, 0, sizeof *layer);
  size_t model_axis = 0;
  int64_t model = 0;
  spmd_status st = spmd_mesh_axis_index(mesh, "model", &model_axis);
  if (st == SPMD_OK) st = spmd_mesh_axis_size(mesh, model_axis, &model);
  if (st != SPMD_OK) return seed_lib_fail(st, __func__, "mesh: needs a 'model' axis");
  if (hidden <= 0 || heads <= 0 || hidden % heads != 0 || heads % model != 0)
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, __func__,
                     "hidden %lld, heads %lld: heads must divide hidden and the 'model' axis "
                     "(%lld devices) must divide heads",
                     (long long)hidden, (long long)heads, (long long)model);
  layer->hidden = hidden;
  layer->heads = heads;
  const int64_t fan_in[N_WEIGHTS] = {hidden, hidden, hidden, hidden, hidden, 4 * hidden};
  const int64_t fan_out[N_WEIGHTS] = {hidden, hidden, hidden, hidden, 4 * hidden, hidden};
  const char *specs[N_WEIGHTS] = {"None, model", "None, model", "None, model",
                                  "model, None", "None, model", "model, None"};
  for (int i = 0; i < N_WEIGHTS; ++i) {
    st = kaiming_normal(mesh, (uint32_t)i, fan_in[i], fan_out[i], specs[i], weight_slot(layer, i));
    if (st != SPMD_OK) {
      seed_layer_destroy(layer);
      return seed_lib_fail(st, __func__, "drawing the weights");
    }
  }
  return SPMD_OK;
}

void seed_layer_destroy(seed_layer *layer) {
  if (layer == NULL) return;
  for (int i = 0; i < N_WEIGHTS; ++i) {
    spmd_array_destroy(*weight_slot(layer, i));
    *weight_slot(layer, i) = NULL;
  }
}

/* ---- the per-device program ---- */

/* ---- the Layer's ops, for global arrays and for one device's blocks ---- */

/* The arrays a step makes, released together: each op's result goes into
 * the next free slot. */

/* (batch, seq, hidden) -> (batch, heads, seq, head_dim), and back. */
static spmd_status split_heads(spmd_array *x, int64_t heads, seed_temps *t, spmd_array **out) {
  int64_t s[3];
  TRY(spmd_array_shape(x, 3, s, NULL));
  const int64_t four[4] = {s[0], s[1], heads, s[2] / heads}, perm[4] = {0, 2, 1, 3};
  spmd_array **r = seed_slot(t);
  TRY(spmd_reshape(x, 4, four, NULL, r));
  return spmd_transpose(*r, 4, perm, NULL, out);
}

static spmd_status merge_heads(spmd_array *x, seed_temps *t, spmd_array **out) {
  int64_t s[4];
  TRY(spmd_array_shape(x, 4, s, NULL));
  const int64_t perm[4] = {0, 2, 1, 3}, three[3] = {s[0], s[2], s[1] * s[3]};
  spmd_array **r = seed_slot(t);
  TRY(spmd_transpose(x, 4, perm, NULL, r));
  return spmd_reshape(*r, 3, three, NULL, out);
}

/* Completes a row-parallel product (Wo, W2): the psum over 'model' of a
 * shard_map body, or nothing for global arrays (the einsum's own psum). */
typedef struct model_sum {
  spmd_ctx *ctx; /* NULL: global arrays */
} model_sum;

static spmd_status sum_over_model(const model_sum *m, spmd_array *partial, seed_temps *t,
                                  spmd_array **out) {
  if (m->ctx == NULL) {
    *out = partial;
    return SPMD_OK;
  }
  spmd_block b = SPMD_BLOCK_INIT, total = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_block(m->ctx, partial, &b));
  TRY(spmd_ctx_psum(m->ctx, &b, "model", &total));
  spmd_array **r = seed_slot(t);
  TRY(spmd_ctx_array(m->ctx, &total, r));
  *out = *r;
  return SPMD_OK;
}

/* y = x + attention(x), then y + mlp(y), with `heads` heads of `hidden`'s
 * width each hidden / all_heads: w holds Wq, Wk, Wv, Wo, W1, W2. */
static spmd_status layer_ops(spmd_array *x, spmd_array *const w[N_WEIGHTS], int64_t hidden,
                             int64_t heads, const model_sum *sum, seed_temps *t, spmd_array **y) {
  spmd_array **q = seed_slot(t), **k = seed_slot(t), **v = seed_slot(t);
  TRY(spmd_einsum("bsh,hk->bsk", x, w[0], NULL, q));
  TRY(spmd_einsum("bsh,hk->bsk", x, w[1], NULL, k));
  TRY(spmd_einsum("bsh,hk->bsk", x, w[2], NULL, v));
  spmd_array **qs = seed_slot(t), **qh = seed_slot(t), **kh = seed_slot(t), **vh = seed_slot(t);
  TRY(spmd_binary_scalar(SPMD_BINARY_MUL, *q, 1.0 / sqrt((double)hidden), NULL, qs));
  TRY(split_heads(*qs, heads, t, qh));
  TRY(split_heads(*k, heads, t, kh));
  TRY(split_heads(*v, heads, t, vh));
  spmd_array **scores = seed_slot(t), **p = seed_slot(t), **o = seed_slot(t), **merged = seed_slot(t);
  TRY(spmd_einsum("bhqd,bhkd->bhqk", *qh, *kh, NULL, scores));
  TRY(spmd_softmax(*scores, -1, 0, NULL, p));
  TRY(spmd_einsum("bhqk,bhkd->bhqd", *p, *vh, NULL, o));
  TRY(merge_heads(*o, t, merged));
  spmd_array **attn = seed_slot(t), *attn_total = NULL, **y1 = seed_slot(t);
  TRY(spmd_einsum("bsh,hk->bsk", *merged, w[3], NULL, attn));
  TRY(sum_over_model(sum, *attn, t, &attn_total));
  TRY(spmd_binary(SPMD_BINARY_ADD, x, attn_total, NULL, y1));
  spmd_array **h = seed_slot(t), **r = seed_slot(t), **mlp = seed_slot(t), *mlp_total = NULL;
  TRY(spmd_einsum("bsh,hk->bsk", *y1, w[4], NULL, h));
  TRY(spmd_unary(SPMD_UNARY_RELU, *h, NULL, r));
  TRY(spmd_einsum("bsh,hk->bsk", *r, w[5], NULL, mlp));
  TRY(sum_over_model(sum, *mlp, t, &mlp_total));
  return spmd_binary(SPMD_BINARY_ADD, *y1, mlp_total, NULL, y);
}

/* ---- the Layer as one shard_map ---- */

/* The body: this device's blocks as arrays (spmd_ctx_array), the Layer's
 * ops on them with this device's heads (each op runs the device's own
 * kernels), the two psums over 'model' on blocks. */
static spmd_status layer_body(spmd_ctx *ctx, const seed_layer *layer, seed_temps *t) {
  spmd_block x = SPMD_BLOCK_INIT, w[N_WEIGHTS];
  TRY(spmd_ctx_input(ctx, 0, &x));
  if (x.dtype != SPMD_F32 || x.ndim != 3 || x.shape[2] != layer->hidden) {
    char why[96];
    snprintf(why, sizeof why, "seed_layer_apply: x must be float32 (batch, seq, %lld)",
             (long long)layer->hidden);
    return spmd_ctx_error(ctx, SPMD_ERR_INVALID_ARGUMENT, why);
  }
  spmd_array **xa = seed_slot(t), *wa[N_WEIGHTS];
  TRY(spmd_ctx_array(ctx, &x, xa));
  for (int i = 0; i < N_WEIGHTS; ++i) {
    spmd_block_init(&w[i], sizeof w[i]);
    TRY(spmd_ctx_input(ctx, (size_t)i + 1, &w[i]));
    spmd_array **slot = seed_slot(t);
    TRY(spmd_ctx_array(ctx, &w[i], slot));
    wa[i] = *slot;
  }
  int64_t model = 0;
  TRY(spmd_ctx_axis_size(ctx, "model", &model));
  const model_sum sum = {ctx};
  spmd_array **y = seed_slot(t);
  TRY(layer_ops(*xa, wa, layer->hidden, layer->heads / model, &sum, t, y));
  spmd_block out = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_block(ctx, *y, &out));
  return spmd_ctx_set_output(ctx, 0, &out);
}

static spmd_status layer_program(spmd_ctx *ctx, void *user_data) {
  seed_temps t = {{NULL}, 0};
  const spmd_status st = layer_body(ctx, user_data, &t);
  seed_temps_free(&t);
  return st;
}

spmd_status seed_layer_apply(const spmd_mesh *mesh, const seed_layer *layer, spmd_array *x,
                             spmd_array **y) {
  if (layer == NULL || layer->wq == NULL)
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, __func__, "layer: NULL or not initialised");
  spmd_array *inputs[1 + N_WEIGHTS] = {x, layer->wq, layer->wk, layer->wv,
                                       layer->wo, layer->w1, layer->w2};
  const char *in_specs[1 + N_WEIGHTS] = {"data, None",  "None, model", "None, model",
                                         "None, model", "model, None", "None, model",
                                         "model, None"};
  const char *out_spec = "data, None";
  const spmd_status st = spmd_shard_map_text(mesh, layer_program, (void *)layer, 1 + N_WEIGHTS,
                                             inputs, in_specs, 1, &out_spec, NULL, y);
  return st == SPMD_OK ? st : seed_lib_fail(st, __func__, "running the layer");
}

/* ---- the same Layer written with the global ops ---- */

static spmd_status layer_auto(const seed_layer *layer, spmd_array *x, seed_temps *t, spmd_array **y) {
  spmd_array *const w[N_WEIGHTS] = {layer->wq, layer->wk, layer->wv, layer->wo, layer->w1, layer->w2};
  const model_sum none = {NULL};
  return layer_ops(x, w, layer->hidden, layer->heads, &none, t, y);
}

spmd_status seed_layer_apply_auto(const spmd_mesh *mesh, const seed_layer *layer, spmd_array *x,
                                  spmd_array **y) {
  if (layer == NULL || layer->wq == NULL)
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, __func__, "layer: NULL or not initialised");
  seed_temps t = {{NULL}, 0};
  spmd_sharding *data = NULL;
  spmd_array **xs = seed_slot(&t);
  spmd_status st = spmd_sharding_named_text(mesh, "data, None, None", &data);
  if (st == SPMD_OK) st = spmd_array_reshard(x, data, xs);
  if (st == SPMD_OK) st = layer_auto(layer, *xs, &t, y);
  spmd_sharding_destroy(data);
  seed_temps_free(&t);
  return st;
}
