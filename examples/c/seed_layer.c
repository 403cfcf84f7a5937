/* The Attention + MLP layer of the tensor-parallelism notebook; see
 * seed_layer.h. Each device holds its 'data' rows of x and its 'model'
 * share of every weight: whole heads of Wq/Wk/Wv (columns) and the matching
 * rows of Wo, a slice of W1's columns and of W2's rows. Attention and the
 * MLP then run locally and each ends in a partial product that one psum
 * over 'model' completes, as in Megatron-LM. */
#include "seed_layer.h"

#include "seed_error.h"
#include "seed_temps.h"
#include "seed_kernels.h"

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

typedef struct layer_dims {
  int64_t batch, seq, hidden; /* the local x: (batch, seq, hidden) */
  int64_t local_heads, head_dim;
} layer_dims;

/* Local attention over this device's heads: q, k, v are (batch * seq,
 * local_heads * head_dim); out receives softmax(q k^T / sqrt(hidden)) v per
 * (batch, head), in the same layout (the notebook's transposes and
 * reshapes are only this indexing). */
static spmd_status local_attention(spmd_ctx *ctx, const layer_dims *d, const float *q,
                                   const float *k, const float *v, float *out) {
  const int64_t s = d->seq, dh = d->head_dim, width = d->local_heads * dh;
  const float scale = 1.0f / sqrtf((float)d->hidden);
  spmd_block scratch = SPMD_BLOCK_INIT;
  const int64_t scratch_shape[1] = {4 * s * dh + s * s};
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 1, scratch_shape, &scratch));
  float *qh = scratch.data, *kh = qh + s * dh, *vh = kh + s * dh, *oh = vh + s * dh;
  float *scores = oh + s * dh;
  for (int64_t b = 0; b < d->batch; ++b) {
    for (int64_t h = 0; h < d->local_heads; ++h) {
      const int64_t base = b * s * width + h * dh;
      for (int64_t i = 0; i < s; ++i) {
        const int64_t at = base + i * width;
        for (int64_t j = 0; j < dh; ++j) {
          qh[i * dh + j] = q[at + j] * scale;
          kh[i * dh + j] = k[at + j];
          vh[i * dh + j] = v[at + j];
        }
      }
      seed_matmul_bt(qh, kh, scores, s, dh, s);
      seed_softmax_rows(scores, s, s);
      seed_matmul(scores, vh, oh, s, s, dh);
      for (int64_t i = 0; i < s; ++i) memcpy(out + base + i * width, oh + i * dh, (size_t)dh * 4);
    }
  }
  return SPMD_OK;
}

/* A new float32 block (rows, cols) holding a @ w for a (rows, k). */
static spmd_status project(spmd_ctx *ctx, const float *a, int64_t rows, const spmd_block *w,
                           spmd_block *out) {
  const int64_t shape[2] = {rows, w->shape[1]};
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 2, shape, out));
  seed_matmul(a, w->data, out->data, rows, w->shape[0], w->shape[1]);
  return SPMD_OK;
}

/* x += psum(partial, 'model'). */
static spmd_status add_psum(spmd_ctx *ctx, const spmd_block *partial, float *x) {
  spmd_block total = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_psum(ctx, partial, "model", &total));
  const int64_t n = partial->shape[0] * partial->shape[1];
  const float *t = total.data;
  for (int64_t i = 0; i < n; ++i) x[i] += t[i];
  return SPMD_OK;
}

static spmd_status layer_program(spmd_ctx *ctx, void *user_data) {
  const seed_layer *layer = user_data;
  spmd_block x = SPMD_BLOCK_INIT, w[N_WEIGHTS];
  TRY(spmd_ctx_input(ctx, 0, &x));
  for (int i = 0; i < N_WEIGHTS; ++i) {
    spmd_block_init(&w[i], sizeof w[i]);
    TRY(spmd_ctx_input(ctx, (size_t)i + 1, &w[i]));
  }
  if (x.dtype != SPMD_F32 || x.ndim != 3 || x.shape[2] != layer->hidden) {
    char why[96];
    snprintf(why, sizeof why, "seed_layer_apply: x must be float32 (batch, seq, %lld)",
             (long long)layer->hidden);
    return spmd_ctx_error(ctx, SPMD_ERR_INVALID_ARGUMENT, why);
  }
  int64_t model = 0;
  TRY(spmd_ctx_axis_size(ctx, "model", &model));
  const layer_dims d = {x.shape[0], x.shape[1], x.shape[2], layer->heads / model,
                        layer->hidden / layer->heads};
  const int64_t rows = d.batch * d.seq;

  /* y starts as x; both residual branches add into it. */
  spmd_block y = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, x.ndim, x.shape, &y));
  float *yv = y.data;
  memcpy(yv, x.data, (size_t)(rows * d.hidden) * sizeof(float));

  spmd_block q = SPMD_BLOCK_INIT, k = SPMD_BLOCK_INIT, v = SPMD_BLOCK_INIT;
  spmd_block heads = SPMD_BLOCK_INIT, partial = SPMD_BLOCK_INIT;
  TRY(project(ctx, yv, rows, &w[0], &q));
  TRY(project(ctx, yv, rows, &w[1], &k));
  TRY(project(ctx, yv, rows, &w[2], &v));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 2, q.shape, &heads));
  TRY(local_attention(ctx, &d, q.data, k.data, v.data, heads.data));
  TRY(project(ctx, heads.data, rows, &w[3], &partial));
  TRY(add_psum(ctx, &partial, yv));

  spmd_block hidden = SPMD_BLOCK_INIT, partial2 = SPMD_BLOCK_INIT;
  TRY(project(ctx, yv, rows, &w[4], &hidden));
  float *hv = hidden.data;
  const int64_t nh = hidden.shape[0] * hidden.shape[1];
  for (int64_t i = 0; i < nh; ++i) hv[i] = hv[i] > 0.0f ? hv[i] : 0.0f;
  TRY(project(ctx, hv, rows, &w[5], &partial2));
  TRY(add_psum(ctx, &partial2, yv));
  return spmd_ctx_set_output(ctx, 0, &y);
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

static spmd_status layer_auto(const seed_layer *layer, spmd_array *x, seed_temps *t, spmd_array **y) {
  spmd_array **q = seed_slot(t), **k = seed_slot(t), **v = seed_slot(t);
  TRY(spmd_einsum("bsh,hk->bsk", x, layer->wq, NULL, q));
  TRY(spmd_einsum("bsh,hk->bsk", x, layer->wk, NULL, k));
  TRY(spmd_einsum("bsh,hk->bsk", x, layer->wv, NULL, v));
  spmd_array **qs = seed_slot(t), **qh = seed_slot(t), **kh = seed_slot(t), **vh = seed_slot(t);
  TRY(spmd_binary_scalar(SPMD_BINARY_MUL, *q, 1.0 / sqrt((double)layer->hidden), NULL, qs));
  TRY(split_heads(*qs, layer->heads, t, qh));
  TRY(split_heads(*k, layer->heads, t, kh));
  TRY(split_heads(*v, layer->heads, t, vh));
  spmd_array **scores = seed_slot(t), **p = seed_slot(t), **o = seed_slot(t), **merged = seed_slot(t);
  TRY(spmd_einsum("bhqd,bhkd->bhqk", *qh, *kh, NULL, scores));
  TRY(spmd_softmax(*scores, -1, 0, NULL, p));
  TRY(spmd_einsum("bhqk,bhkd->bhqd", *p, *vh, NULL, o));
  TRY(merge_heads(*o, t, merged));
  /* Wo is split by rows over 'model': the contraction ends in a psum. */
  spmd_array **attn = seed_slot(t), **y1 = seed_slot(t);
  TRY(spmd_einsum("bsh,hk->bsk", *merged, layer->wo, NULL, attn));
  TRY(spmd_binary(SPMD_BINARY_ADD, x, *attn, NULL, y1));
  spmd_array **h = seed_slot(t), **r = seed_slot(t), **mlp = seed_slot(t);
  TRY(spmd_einsum("bsh,hk->bsk", *y1, layer->w1, NULL, h));
  TRY(spmd_unary(SPMD_UNARY_RELU, *h, NULL, r));
  TRY(spmd_einsum("bsh,hk->bsk", *r, layer->w2, NULL, mlp));
  return spmd_binary(SPMD_BINARY_ADD, *y1, *mlp, NULL, y);
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
