/* The autoparallelism notebook's data-parallel training; see seed_train.h.
 *
 * One step is one shard_map over the trainer's mesh: inputs x, y split as
 * P(batch_axes) and the parameters and both Adam moments replicated (P());
 * every device runs the forward and the hand-written backward pass on its
 * rows, one psum over batch_axes adds up the gradients together with the
 * squared errors, and every device applies the same Adam update to the same
 * summed gradient, so the outputs (P(), checked with check_rep) are equal on
 * every device. Arithmetic follows what JAX computes for the notebook, in
 * float32:
 *
 *   z = x @ W0^T + b0, h = relu(z), pred = h @ W1^T + b1
 *   loss = sum((y - pred)^2) / N                  N = batch * 4 (jnp.mean)
 *   dpred = -((2 (y - pred)) * (1 / N))           (d/dpred of the mean)
 *   gW1 = dpred^T @ h, gb1 = sum_rows(dpred), dh = dpred @ W1
 *   dz = dh where z > 0 else 0                    (jax.nn.relu's derivative)
 *   gW0 = dz^T @ x, gb0 = sum_rows(dz)
 *
 * and optax.adam (scale_by_adam, then scale by -learning_rate, then
 * apply_updates), operation by operation as optax writes it:
 *
 *   mu = 0.1 g + 0.9 mu;  nu = 0.001 (g g) + 0.999 nu;  t = t + 1
 *   mu_hat = mu / (1 - 0.9^t);  nu_hat = nu / (1 - 0.999^t)
 *   p = p + (-lr) * (mu_hat / (sqrt(nu_hat) + 1e-8))
 *
 * (1 - b^t is computed once per step, in float32, with powf, which gives
 * the bits XLA's pow gives for every t the reference run reaches.) */
#include "seed_train.h"

#include "seed_error.h"
#include "seed_kernels.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY_LIB(call, doing)                                    \
  do {                                                          \
    spmd_status st_ = (call);                                   \
    if (st_ != SPMD_OK) return seed_lib_fail(st_, __func__, doing);  \
  } while (0)

/* Inside a callback: the context records the message. */
#define TRY(call)                       \
  do {                                  \
    spmd_status st_ = (call);           \
    if (st_ != SPMD_OK) return st_;     \
  } while (0)

/* Offsets of the four tensors in the flat parameter vector. */
enum {
  OFF_W0 = 0,
  OFF_B0 = OFF_W0 + SEED_MLP_HIDDEN * SEED_MLP_IN,
  OFF_W1 = OFF_B0 + SEED_MLP_HIDDEN,
  OFF_B1 = OFF_W1 + SEED_MLP_OUT * SEED_MLP_HIDDEN
};

/* ---- initial parameters ---- */

/* One tensor of jax.random.uniform(key, shape, float32, -lim, lim). */
static spmd_status uniform_into(const spmd_sharding *rep, const spmd_key *key, size_t ndim,
                                const int64_t *shape, int64_t in_features, float *dst,
                                size_t count) {
  const double lim = 1.0 / sqrt((double)in_features); /* 1 / math.sqrt(in) */
  spmd_array *a = NULL;
  spmd_status st = spmd_random_uniform(rep, key, SPMD_F32, ndim, shape, -lim, lim, &a);
  if (st != SPMD_OK) return seed_lib_fail(st, "seed_mlp_init", "spmd_random_uniform");
  st = spmd_array_to_host(a, dst, count * sizeof(float));
  spmd_array_destroy(a);
  if (st != SPMD_OK) return seed_lib_fail(st, "seed_mlp_init", "spmd_array_to_host");
  return SPMD_OK;
}

spmd_status seed_mlp_init(const spmd_mesh *mesh, const spmd_key *key, float *params) {
  if (key == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, __func__, "key is NULL");
  if (params == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, __func__, "params is NULL");
  spmd_sharding *rep = NULL;
  TRY_LIB(spmd_sharding_replicated(mesh, &rep), "mesh");
  /* eqx.nn.MLP: keys = split(key, depth + 1); layer i is Linear(key=keys[i]),
   * which splits its key into (weight key, bias key). */
  spmd_key layer_keys[2], wb[2];
  float tmp[SEED_MLP_PARAMS];
  spmd_status st = spmd_random_split(key, 2, layer_keys);
  if (st != SPMD_OK) st = seed_lib_fail(st, __func__, "spmd_random_split");
  if (st == SPMD_OK && (st = spmd_random_split(&layer_keys[0], 2, wb)) != SPMD_OK)
    st = seed_lib_fail(st, __func__, "spmd_random_split");
  if (st == SPMD_OK) {
    const int64_t w_shape[2] = {SEED_MLP_HIDDEN, SEED_MLP_IN}, b_shape[1] = {SEED_MLP_HIDDEN};
    st = uniform_into(rep, &wb[0], 2, w_shape, SEED_MLP_IN, tmp + OFF_W0,
                      SEED_MLP_HIDDEN * SEED_MLP_IN);
    if (st == SPMD_OK)
      st = uniform_into(rep, &wb[1], 1, b_shape, SEED_MLP_IN, tmp + OFF_B0, SEED_MLP_HIDDEN);
  }
  if (st == SPMD_OK && (st = spmd_random_split(&layer_keys[1], 2, wb)) != SPMD_OK)
    st = seed_lib_fail(st, __func__, "spmd_random_split");
  if (st == SPMD_OK) {
    const int64_t w_shape[2] = {SEED_MLP_OUT, SEED_MLP_HIDDEN}, b_shape[1] = {SEED_MLP_OUT};
    st = uniform_into(rep, &wb[0], 2, w_shape, SEED_MLP_HIDDEN, tmp + OFF_W1,
                      SEED_MLP_OUT * SEED_MLP_HIDDEN);
    if (st == SPMD_OK)
      st = uniform_into(rep, &wb[1], 1, b_shape, SEED_MLP_HIDDEN, tmp + OFF_B1, SEED_MLP_OUT);
  }
  spmd_sharding_destroy(rep);
  if (st == SPMD_OK) memcpy(params, tmp, sizeof tmp); /* written only on success */
  return st;
}

/* ---- the trainer ---- */

struct seed_trainer {
  spmd_mesh *mesh;     /* our own handle on the caller's mesh */
  char axes[256];      /* the batch axes for psum: "x" or "x,y" */
  char x_spec[272];    /* in_spec of x and y: "(x,y)" */
  int64_t devices;     /* devices along the batch axes */
  float learning_rate;
  int64_t count;       /* steps taken (optax's ScaleByAdamState.count) */
  spmd_array *params, *mu, *nu; /* (SEED_MLP_PARAMS,) float32, P() */
};

/* Reads "x", "x,y", "(x, y)" or "('x', 'y')" into comma-joined names and
 * counts the devices along them; every axis must be on the mesh. */
static spmd_status parse_axes(const spmd_mesh *mesh, const char *text, seed_trainer *t) {
  const char *fn = "seed_trainer_create";
  if (strlen(text) >= 200)
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "batch_axes '%.40s...': too long", text);
  /* The spec "(<axes>)" names one dimension split over the tuple; nested
   * parentheses are stripped first so "(x, y)" reads as the same tuple. */
  const char *s = text, *e = text + strlen(text);
  while (*s == ' ') ++s;
  while (e > s && e[-1] == ' ') --e;
  if (e - s >= 2 && *s == '(' && e[-1] == ')') ++s, --e;
  char doing[240];
  snprintf(doing, sizeof doing, "batch_axes '%s'", text);
  char spec_text[208];
  snprintf(spec_text, sizeof spec_text, "(%.*s)", (int)(e - s), s);
  spmd_spec *spec = NULL;
  spmd_status st = spmd_spec_parse(spec_text, &spec);
  if (st != SPMD_OK) return seed_lib_fail(st, fn, doing);
  size_t ndim = 0, naxes = 0;
  st = spmd_spec_ndim(spec, &ndim);
  if (st == SPMD_OK && ndim == 1) st = spmd_spec_dim_size(spec, 0, &naxes);
  if (st != SPMD_OK) {
    spmd_spec_destroy(spec);
    return seed_lib_fail(st, fn, doing);
  }
  if (ndim != 1 || naxes == 0) {
    spmd_spec_destroy(spec);
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn,
                     "batch_axes '%s': expected one mesh axis or a tuple of axes", text);
  }
  t->axes[0] = '\0';
  t->devices = 1;
  for (size_t i = 0; i < naxes; ++i) {
    const char *name = NULL;
    size_t index = 0;
    int64_t size = 0;
    st = spmd_spec_dim_axis(spec, 0, i, &name);
    if (st == SPMD_OK) st = spmd_mesh_axis_index(mesh, name, &index);
    if (st == SPMD_OK) st = spmd_mesh_axis_size(mesh, index, &size);
    if (st != SPMD_OK) {
      spmd_spec_destroy(spec);
      return seed_lib_fail(st, fn, doing);
    }
    if (i) strcat(t->axes, ",");
    strcat(t->axes, name);
    t->devices *= size;
  }
  spmd_spec_destroy(spec);
  snprintf(t->x_spec, sizeof t->x_spec, "(%s)", t->axes);
  /* Repeated axes and the like: the sharding of x says what is wrong. */
  spmd_sharding *x_sharding = NULL;
  st = spmd_sharding_named_text(mesh, t->x_spec, &x_sharding);
  if (st != SPMD_OK) return seed_lib_fail(st, fn, doing);
  spmd_sharding_destroy(x_sharding);
  return SPMD_OK;
}

void seed_trainer_destroy(seed_trainer *trainer) {
  if (trainer == NULL) return;
  spmd_array_destroy(trainer->params);
  spmd_array_destroy(trainer->mu);
  spmd_array_destroy(trainer->nu);
  spmd_mesh_destroy(trainer->mesh);
  free(trainer);
}

spmd_status seed_trainer_create(const spmd_mesh *mesh, const char *batch_axes,
                                const float *params, double learning_rate,
                                seed_trainer **out) {
  const char *fn = __func__;
  if (out == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "out is NULL");
  if (batch_axes == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "batch_axes is NULL");
  if (params == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "params is NULL");
  if (!(learning_rate > 0) || !isfinite(learning_rate))
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn,
                     "learning_rate %g: expected a finite positive number", learning_rate);
  spmd_sharding *rep = NULL;
  TRY_LIB(spmd_sharding_replicated(mesh, &rep), "mesh");
  seed_trainer *t = calloc(1, sizeof *t);
  if (t == NULL) {
    spmd_sharding_destroy(rep);
    return seed_fail(SPMD_ERR_OUT_OF_MEMORY, fn, "out of memory");
  }
  t->learning_rate = (float)learning_rate;
  const int64_t shape[1] = {SEED_MLP_PARAMS};
  spmd_status st = spmd_sharding_mesh(rep, &t->mesh);
  if (st != SPMD_OK) st = seed_lib_fail(st, fn, "mesh");
  if (st == SPMD_OK) st = parse_axes(t->mesh, batch_axes, t);
  if (st == SPMD_OK &&
      (st = spmd_array_from_host(rep, SPMD_F32, 1, shape, params,
                                 SEED_MLP_PARAMS * sizeof(float), &t->params)) != SPMD_OK)
    st = seed_lib_fail(st, fn, "params");
  if (st == SPMD_OK && (st = spmd_array_zeros(rep, SPMD_F32, 1, shape, &t->mu)) != SPMD_OK)
    st = seed_lib_fail(st, fn, "Adam mu");
  if (st == SPMD_OK && (st = spmd_array_zeros(rep, SPMD_F32, 1, shape, &t->nu)) != SPMD_OK)
    st = seed_lib_fail(st, fn, "Adam nu");
  spmd_sharding_destroy(rep);
  if (st != SPMD_OK) {
    seed_trainer_destroy(t);
    return st;
  }
  *out = t;
  return SPMD_OK;
}

spmd_status seed_trainer_params(const seed_trainer *trainer, float *params) {
  if (trainer == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, __func__, "trainer is NULL");
  if (params == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, __func__, "params is NULL");
  TRY_LIB(spmd_array_to_host(trainer->params, params, SEED_MLP_PARAMS * sizeof(float)),
          "spmd_array_to_host");
  return SPMD_OK;
}

/* x and y must be float32 (batch, 4), the same batch, divisible over the
 * batch axes. */
static spmd_status check_batch(const seed_trainer *t, spmd_array *x, spmd_array *y,
                               const float *loss, const char *fn, int64_t *batch) {
  if (t == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "trainer is NULL");
  if (x == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "x is NULL");
  if (y == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "y is NULL");
  if (loss == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "loss is NULL");
  spmd_array *const arrays[2] = {x, y};
  const char *const names[2] = {"x", "y"};
  int64_t shapes[2][SPMD_MAX_NDIM];
  for (int k = 0; k < 2; ++k) {
    spmd_dtype dtype;
    size_t ndim;
    spmd_status st = spmd_array_dtype(arrays[k], &dtype);
    if (st == SPMD_OK) st = spmd_array_ndim(arrays[k], &ndim);
    if (st == SPMD_OK) st = spmd_array_shape(arrays[k], sizeof shapes[k] / sizeof shapes[k][0], shapes[k], NULL);
    if (st != SPMD_OK) return seed_lib_fail(st, fn, names[k]);
    if (dtype != SPMD_F32) {
      const char *name = spmd_dtype_name(dtype);
      return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "%s: expected float32, got %s", names[k],
                       name ? name : "an invalid dtype");
    }
    if (ndim != 2 || shapes[k][1] != SEED_MLP_IN) {
      char text[160] = "(";
      for (size_t d = 0; d < ndim && d < SPMD_MAX_NDIM; ++d)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%lld", d ? ", " : "",
                 (long long)shapes[k][d]);
      snprintf(text + strlen(text), sizeof text - strlen(text), ndim == 1 ? ",)" : ")");
      return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "%s: expected shape (batch, %d), got %s",
                       names[k], SEED_MLP_IN, text);
    }
  }
  if (shapes[0][0] != shapes[1][0])
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "x has %lld rows but y has %lld",
                     (long long)shapes[0][0], (long long)shapes[1][0]);
  if (shapes[0][0] == 0 || shapes[0][0] % t->devices != 0)
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn,
                     "batch of %lld rows: must be a positive multiple of the %lld devices along "
                     "'%s'",
                     (long long)shapes[0][0], (long long)t->devices, t->axes);
  *batch = shapes[0][0];
  return SPMD_OK;
}

/* What every device of a step or an evaluation needs besides its blocks. */
typedef struct step_args {
  const char *axes;
  int64_t total;   /* elements of the whole batch's prediction: batch * 4 */
  int update;      /* 0: loss only (seed_trainer_loss) */
  float learning_rate, bc1, bc2;
} step_args;

/* Forward pass on one device's rows: z (rows, 32) before relu, h after,
 * pred (rows, 4); returns the block's sum of squared errors. */
static float forward(const float *p, const float *x, const float *y, int64_t rows, float *z,
                     float *h, float *pred, float *diff) {
  seed_matmul_bt(x, p + OFF_W0, z, rows, SEED_MLP_IN, SEED_MLP_HIDDEN);
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < SEED_MLP_HIDDEN; ++j) {
      const int64_t i = r * SEED_MLP_HIDDEN + j;
      z[i] += p[OFF_B0 + j];
      h[i] = z[i] > 0.0f ? z[i] : 0.0f;
    }
  seed_matmul_bt(h, p + OFF_W1, pred, rows, SEED_MLP_HIDDEN, SEED_MLP_OUT);
  float sq = 0.0f;
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < SEED_MLP_OUT; ++j) {
      const int64_t i = r * SEED_MLP_OUT + j;
      pred[i] += p[OFF_B1 + j];
      diff[i] = y[i] - pred[i];
      sq += diff[i] * diff[i];
    }
  return sq;
}

static spmd_status expect_block(spmd_ctx *ctx, const spmd_block *b, size_t ndim, int64_t d0,
                                int64_t d1, const char *name) {
  if (b->dtype != SPMD_F32 || b->ndim != ndim || b->shape[0] != d0 ||
      (ndim == 2 && b->shape[1] != d1)) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s: unexpected local block", name);
    return spmd_ctx_error(ctx, SPMD_ERR_INTERNAL, msg);
  }
  return SPMD_OK;
}

static spmd_status train_device(spmd_ctx *ctx, void *ud) {
  const step_args *a = ud;
  spmd_block xb = SPMD_BLOCK_INIT, yb = SPMD_BLOCK_INIT, pb = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 0, &xb));
  TRY(spmd_ctx_input(ctx, 1, &yb));
  TRY(spmd_ctx_input(ctx, 2, &pb));
  const int64_t rows = xb.shape[0];
  TRY(expect_block(ctx, &xb, 2, rows, SEED_MLP_IN, "x"));
  TRY(expect_block(ctx, &yb, 2, rows, SEED_MLP_OUT, "y"));
  TRY(expect_block(ctx, &pb, 1, SEED_MLP_PARAMS, 0, "params"));
  const float *x = xb.data, *y = yb.data, *p = pb.data;

  /* Scratch on the device, released by the shard_map. */
  spmd_block zb = SPMD_BLOCK_INIT, hb = SPMD_BLOCK_INIT, predb = SPMD_BLOCK_INIT,
             diffb = SPMD_BLOCK_INIT;
  const int64_t hid_shape[2] = {rows, SEED_MLP_HIDDEN}, out_shape[2] = {rows, SEED_MLP_OUT};
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 2, hid_shape, &zb));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 2, hid_shape, &hb));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 2, out_shape, &predb));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 2, out_shape, &diffb));
  float *z = zb.data, *h = hb.data, *pred = predb.data, *diff = diffb.data;
  const float sq = forward(p, x, y, rows, z, h, pred, diff);
  const float n = (float)a->total;

  if (!a->update) {
    const int64_t one[1] = {1};
    spmd_block s = SPMD_BLOCK_INIT, total = SPMD_BLOCK_INIT;
    TRY(spmd_ctx_alloc(ctx, SPMD_F32, 0, one, &s));
    *(float *)s.data = sq;
    TRY(spmd_ctx_psum(ctx, &s, a->axes, &total));
    *(float *)total.data /= n;
    return spmd_ctx_set_output(ctx, 0, &total);
  }

  /* Backward, into one block: the gradient in parameter order, then the
   * squared errors, so a single psum sums both. */
  spmd_block gb = SPMD_BLOCK_INIT, dhb = SPMD_BLOCK_INIT;
  const int64_t g_shape[1] = {SEED_MLP_PARAMS + 1};
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 1, g_shape, &gb));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 2, hid_shape, &dhb));
  float *g = gb.data, *dh = dhb.data;
  float *dpred = diff; /* reused in place */
  const float ct = 1.0f / n;
  for (int64_t i = 0; i < rows * SEED_MLP_OUT; ++i) dpred[i] = -((2.0f * diff[i]) * ct);
  seed_matmul_at(dpred, h, g + OFF_W1, SEED_MLP_OUT, rows, SEED_MLP_HIDDEN);
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < SEED_MLP_OUT; ++j) g[OFF_B1 + j] += dpred[r * SEED_MLP_OUT + j];
  seed_matmul(dpred, p + OFF_W1, dh, rows, SEED_MLP_OUT, SEED_MLP_HIDDEN);
  for (int64_t i = 0; i < rows * SEED_MLP_HIDDEN; ++i)
    if (!(z[i] > 0.0f)) dh[i] = 0.0f;
  seed_matmul_at(dh, x, g + OFF_W0, SEED_MLP_HIDDEN, rows, SEED_MLP_IN);
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < SEED_MLP_HIDDEN; ++j) g[OFF_B0 + j] += dh[r * SEED_MLP_HIDDEN + j];
  g[SEED_MLP_PARAMS] = sq;

  spmd_block sum = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_psum(ctx, &gb, a->axes, &sum));
  const float *grad = sum.data;

  spmd_block mub = SPMD_BLOCK_INIT, nub = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_input(ctx, 3, &mub));
  TRY(spmd_ctx_input(ctx, 4, &nub));
  TRY(expect_block(ctx, &mub, 1, SEED_MLP_PARAMS, 0, "mu"));
  TRY(expect_block(ctx, &nub, 1, SEED_MLP_PARAMS, 0, "nu"));
  const int64_t p_shape[1] = {SEED_MLP_PARAMS}, one[1] = {1};
  spmd_block np = SPMD_BLOCK_INIT, nmu = SPMD_BLOCK_INIT, nnu = SPMD_BLOCK_INIT,
             lossb = SPMD_BLOCK_INIT;
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 1, p_shape, &np));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 1, p_shape, &nmu));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 1, p_shape, &nnu));
  TRY(spmd_ctx_alloc(ctx, SPMD_F32, 0, one, &lossb));
  const float *mu = mub.data, *nu = nub.data;
  float *po = np.data, *muo = nmu.data, *nuo = nnu.data;
  /* (1 - b1) and (1 - b2) are Python floats that JAX rounds to float32. */
  const float b1 = 0.9f, b2 = 0.999f, one_b1 = (float)(1.0 - 0.9), one_b2 = (float)(1.0 - 0.999);
  const float eps = 1e-8f, step = -a->learning_rate;
  for (int i = 0; i < SEED_MLP_PARAMS; ++i) {
    const float gi = grad[i];
    const float m = one_b1 * gi + b1 * mu[i];
    const float v = one_b2 * (gi * gi) + b2 * nu[i];
    const float m_hat = m / a->bc1, v_hat = v / a->bc2;
    const float update = step * (m_hat / (sqrtf(v_hat) + eps));
    muo[i] = m;
    nuo[i] = v;
    po[i] = p[i] + update;
  }
  *(float *)lossb.data = grad[SEED_MLP_PARAMS] / n;
  TRY(spmd_ctx_set_output(ctx, 0, &np));
  TRY(spmd_ctx_set_output(ctx, 1, &nmu));
  TRY(spmd_ctx_set_output(ctx, 2, &nnu));
  return spmd_ctx_set_output(ctx, 3, &lossb);
}

/* Runs the step (update) or the evaluation on x, y. */
static spmd_status run(seed_trainer *t, spmd_array *x, spmd_array *y, float *loss, int update,
                       const char *fn) {
  int64_t batch = 0;
  spmd_status st = check_batch(t, x, y, loss, fn, &batch);
  if (st != SPMD_OK) return st;
  step_args a;
  a.axes = t->axes;
  a.total = batch * SEED_MLP_OUT;
  a.update = update;
  a.learning_rate = t->learning_rate;
  /* optax: count_inc = count + 1; bias_correction = 1 - decay ** count_inc. */
  const float t1 = (float)(t->count + 1);
  a.bc1 = 1.0f - powf(0.9f, t1);
  a.bc2 = 1.0f - powf(0.999f, t1);

  spmd_array *inputs[5] = {x, y, t->params, t->mu, t->nu};
  const char *in_specs[5] = {t->x_spec, t->x_spec, "", "", ""};
  const char *out_specs[4] = {"", "", "", ""};
  spmd_array *outs[4] = {NULL, NULL, NULL, NULL};
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = 1;
  const size_t n_in = update ? 5 : 3, n_out = update ? 4 : 1;
  st = spmd_shard_map_text(t->mesh, train_device, &a, n_in, inputs, in_specs, n_out, out_specs,
                           &o, outs);
  if (st != SPMD_OK) return seed_lib_fail(st, fn, "shard_map");
  float value = 0.0f;
  st = spmd_array_to_host(outs[n_out - 1], &value, sizeof value);
  if (st != SPMD_OK) {
    st = seed_lib_fail(st, fn, "reading the loss");
    for (size_t k = 0; k < n_out; ++k) spmd_array_destroy(outs[k]);
    return st;
  }
  spmd_array_destroy(outs[n_out - 1]);
  if (update) {
    /* The step's outputs replace the parameters and the Adam state. */
    spmd_array_destroy(t->params);
    spmd_array_destroy(t->mu);
    spmd_array_destroy(t->nu);
    t->params = outs[0];
    t->mu = outs[1];
    t->nu = outs[2];
    t->count++;
  }
  *loss = value;
  return SPMD_OK;
}

spmd_status seed_trainer_step(seed_trainer *trainer, spmd_array *x, spmd_array *y,
                              float *loss) {
  return run(trainer, x, y, loss, 1, __func__);
}

spmd_status seed_trainer_loss(seed_trainer *trainer, spmd_array *x, spmd_array *y,
                              float *loss) {
  return run(trainer, x, y, loss, 0, __func__);
}
