/* The data-parallel training of seed_train.h written with global ops; see
 * seed_train_ops.h. The arithmetic is seed_train.c's, operation by
 * operation, so the losses track JAX's within the same tolerance:
 *
 *   z = einsum("bi,hi->bh", x, W0) + b0, h = relu(z)
 *   pred = einsum("bh,oh->bo", h, W1) + b1, loss = mean((y - pred)^2)
 *   dpred = -((2 (y - pred)) * (1 / N))
 *   gW1 = einsum("bo,bh->oh", dpred, h)   <- a psum over the batch axes
 *   gb1 = sum(dpred, 0)                   <- another
 *   dz = einsum("bo,oh->bh", dpred, W1) * (z > 0)
 *   gW0 = einsum("bh,bi->hi", dz, x), gb0 = sum(dz, 0)
 *   Adam as optax writes it, one op per operation. */
#include "seed_train_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seed_error.h"
#include "seed_temps.h"
#include "seed_train.h"

enum { N_PARAMS = 4 };

struct seed_ops_trainer {
  float learning_rate;
  int64_t count;
  /* W0 (32, 4), b0 (32), W1 (4, 32), b1 (4): replicated. */
  spmd_array *p[N_PARAMS], *mu[N_PARAMS], *nu[N_PARAMS];
};

static const int64_t kShapes[N_PARAMS][2] = {
    {SEED_MLP_HIDDEN, SEED_MLP_IN}, {SEED_MLP_HIDDEN, 0}, {SEED_MLP_OUT, SEED_MLP_HIDDEN},
    {SEED_MLP_OUT, 0}};

static size_t ndim_of(int i) { return kShapes[i][1] ? 2 : 1; }
static int64_t size_of(int i) { return kShapes[i][0] * (kShapes[i][1] ? kShapes[i][1] : 1); }

#define TRY(call)                                                     \
  do {                                                                \
    const spmd_status st_ = (call);                                   \
    if (st_ != SPMD_OK) return seed_lib_fail(st_, fn, #call);         \
  } while (0)


spmd_status seed_ops_trainer_create(const spmd_mesh *mesh, const float *params,
                                    double learning_rate, seed_ops_trainer **out) {
  const char *fn = __func__;
  if (mesh == NULL || params == NULL || out == NULL)
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "mesh, params and out must not be NULL");
  seed_ops_trainer *t = calloc(1, sizeof *t);
  if (t == NULL) return seed_fail(SPMD_ERR_OUT_OF_MEMORY, fn, "out of memory");
  t->learning_rate = (float)learning_rate;
  spmd_sharding *rep = NULL;
  spmd_status st = spmd_sharding_replicated(mesh, &rep);
  const float *at = params;
  for (int i = 0; st == SPMD_OK && i < N_PARAMS; ++i) {
    const size_t bytes = (size_t)size_of(i) * sizeof(float);
    st = spmd_array_from_host(rep, SPMD_F32, ndim_of(i), kShapes[i], at, bytes, &t->p[i]);
    if (st == SPMD_OK) st = spmd_array_zeros(rep, SPMD_F32, ndim_of(i), kShapes[i], &t->mu[i]);
    if (st == SPMD_OK) st = spmd_array_zeros(rep, SPMD_F32, ndim_of(i), kShapes[i], &t->nu[i]);
    at += size_of(i);
  }
  spmd_sharding_destroy(rep);
  if (st != SPMD_OK) {
    seed_ops_trainer_destroy(t);
    return seed_lib_fail(st, fn, "placing the parameters");
  }
  *out = t;
  return SPMD_OK;
}

void seed_ops_trainer_destroy(seed_ops_trainer *t) {
  if (t == NULL) return;
  for (int i = 0; i < N_PARAMS; ++i) {
    spmd_array_destroy(t->p[i]);
    spmd_array_destroy(t->mu[i]);
    spmd_array_destroy(t->nu[i]);
  }
  free(t);
}

/* The forward pass; keeps z, h, pred and y - pred for the backward one. */
typedef struct forward {
  spmd_array *z, *h, *diff, *loss;
} forward;

static spmd_status run_forward(const seed_ops_trainer *t, spmd_array *x, spmd_array *y,
                               seed_temps *tm, forward *f, const char *fn) {
  spmd_array **xw = seed_slot(tm), **hw = seed_slot(tm), **pred = seed_slot(tm), **sq = seed_slot(tm);
  f->z = NULL;
  TRY(spmd_einsum("bi,hi->bh", x, t->p[0], NULL, xw));
  spmd_array **z = seed_slot(tm), **h = seed_slot(tm), **diff = seed_slot(tm), **loss = seed_slot(tm);
  TRY(spmd_binary(SPMD_BINARY_ADD, *xw, t->p[1], NULL, z));
  TRY(spmd_unary(SPMD_UNARY_RELU, *z, NULL, h));
  TRY(spmd_einsum("bh,oh->bo", *h, t->p[2], NULL, hw));
  TRY(spmd_binary(SPMD_BINARY_ADD, *hw, t->p[3], NULL, pred));
  TRY(spmd_binary(SPMD_BINARY_SUB, y, *pred, NULL, diff));
  TRY(spmd_binary(SPMD_BINARY_MUL, *diff, *diff, NULL, sq));
  TRY(spmd_reduce(SPMD_REDUCE_MEAN, *sq, 0, NULL, 0, NULL, loss)); /* a psum by propagation */
  f->z = *z;
  f->h = *h;
  f->diff = *diff;
  f->loss = *loss;
  return SPMD_OK;
}

/* *p <- new_value, destroying the old handle (donated to the op that made
 * new_value, it is only a name by now). */
static void replace(spmd_array **p, spmd_array *new_value) {
  spmd_array_destroy(*p);
  *p = new_value;
}

/* optax.adam on one parameter: mu, nu and p updated in place (donated). */
static spmd_status adam(seed_ops_trainer *t, int i, spmd_array *g, float bc1, float bc2,
                        seed_temps *tm, const char *fn) {
  spmd_op_options donate0 = SPMD_OP_OPTIONS_INIT, donate1 = SPMD_OP_OPTIONS_INIT;
  donate0.donate = 1u;
  donate1.donate = 2u;
  spmd_array **g1 = seed_slot(tm), **mu0 = seed_slot(tm), **gg = seed_slot(tm), **g2 = seed_slot(tm), **nu0 = seed_slot(tm);
  spmd_array *mu = NULL, *nu = NULL, *p = NULL;
  /* mu = 0.1 g + 0.9 mu; nu = 0.001 (g g) + 0.999 nu. The old moments are
   * donated: their handles only wait to be destroyed. */
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, 1.0 - 0.9, g, NULL, g1));
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, 0.9, t->mu[i], &donate0, mu0));
  TRY(spmd_binary(SPMD_BINARY_ADD, *g1, *mu0, &donate1, &mu));
  replace(&t->mu[i], mu);
  TRY(spmd_binary(SPMD_BINARY_MUL, g, g, NULL, gg));
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, 1.0 - 0.999, *gg, NULL, g2));
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, 0.999, t->nu[i], &donate0, nu0));
  TRY(spmd_binary(SPMD_BINARY_ADD, *g2, *nu0, &donate1, &nu));
  replace(&t->nu[i], nu);
  /* p = p + (-lr) * (mu_hat / (sqrt(nu_hat) + eps)) */
  spmd_array **mh = seed_slot(tm), **nh = seed_slot(tm), **rt = seed_slot(tm), **den = seed_slot(tm), **q = seed_slot(tm),
             **step = seed_slot(tm);
  TRY(spmd_binary_scalar(SPMD_BINARY_DIV, mu, bc1, NULL, mh));
  TRY(spmd_binary_scalar(SPMD_BINARY_DIV, nu, bc2, NULL, nh));
  TRY(spmd_unary(SPMD_UNARY_SQRT, *nh, NULL, rt));
  TRY(spmd_binary_scalar(SPMD_BINARY_ADD, *rt, 1e-8, NULL, den));
  TRY(spmd_binary(SPMD_BINARY_DIV, *mh, *den, NULL, q));
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, -(double)t->learning_rate, *q, NULL, step));
  TRY(spmd_binary(SPMD_BINARY_ADD, t->p[i], *step, &donate0, &p));
  replace(&t->p[i], p);
  return SPMD_OK;
}

static spmd_status read_loss(spmd_array *loss, float *out, const char *fn) {
  TRY(spmd_array_to_host(loss, out, sizeof *out));
  return SPMD_OK;
}

spmd_status seed_ops_trainer_loss(seed_ops_trainer *t, spmd_array *x, spmd_array *y, float *loss) {
  const char *fn = __func__;
  if (t == NULL || loss == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "NULL argument");
  seed_temps tm = {{NULL}, 0};
  forward f;
  spmd_status st = run_forward(t, x, y, &tm, &f, fn);
  if (st == SPMD_OK) st = read_loss(f.loss, loss, fn);
  seed_temps_free(&tm);
  return st;
}

static spmd_status step(seed_ops_trainer *t, spmd_array *x, spmd_array *y, float *loss,
                        seed_temps *tm, const char *fn) {
  forward f;
  spmd_status st = run_forward(t, x, y, tm, &f, fn);
  if (st != SPMD_OK) return st;
  int64_t n;
  TRY(spmd_array_size(y, &n));
  /* dpred = -((2 (y - pred)) * (1 / N)) */
  spmd_array **d2 = seed_slot(tm), **dn = seed_slot(tm), **dpred = seed_slot(tm);
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, 2.0, f.diff, NULL, d2));
  TRY(spmd_binary_scalar(SPMD_BINARY_MUL, *d2, (double)(1.0f / (float)n), NULL, dn));
  TRY(spmd_unary(SPMD_UNARY_NEG, *dn, NULL, dpred));
  /* Gradients: every contraction or sum over the split batch dimension
   * ends in a psum over its axes, inserted by propagation. */
  spmd_array **g[N_PARAMS] = {seed_slot(tm), seed_slot(tm), seed_slot(tm), seed_slot(tm)};
  spmd_array **dh = seed_slot(tm), **pos = seed_slot(tm), **dz = seed_slot(tm);
  const int64_t rows[1] = {0};
  TRY(spmd_einsum("bo,bh->oh", *dpred, f.h, NULL, g[2]));
  TRY(spmd_reduce(SPMD_REDUCE_SUM, *dpred, 1, rows, 0, NULL, g[3]));
  TRY(spmd_einsum("bo,oh->bh", *dpred, t->p[2], NULL, dh));
  TRY(spmd_binary_scalar(SPMD_BINARY_GT, f.z, 0.0, NULL, pos));
  /* relu's derivative: dh where z > 0, else 0 (dh times the bool mask) */
  TRY(spmd_binary(SPMD_BINARY_MUL, *dh, *pos, NULL, dz));
  TRY(spmd_einsum("bh,bi->hi", *dz, x, NULL, g[0]));
  TRY(spmd_reduce(SPMD_REDUCE_SUM, *dz, 1, rows, 0, NULL, g[1]));
  TRY(read_loss(f.loss, loss, fn));
  /* optax: count_inc = count + 1; bias_correction = 1 - decay ** count_inc */
  const float t1 = (float)(t->count + 1);
  const float bc1 = 1.0f - powf(0.9f, t1), bc2 = 1.0f - powf(0.999f, t1);
  for (int i = 0; i < N_PARAMS; ++i) TRY(adam(t, i, *g[i], bc1, bc2, tm, fn));
  t->count++;
  return SPMD_OK;
}

spmd_status seed_ops_trainer_step(seed_ops_trainer *t, spmd_array *x, spmd_array *y, float *loss) {
  const char *fn = __func__;
  if (t == NULL || loss == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "NULL argument");
  seed_temps tm = {{NULL}, 0};
  const spmd_status st = step(t, x, y, loss, &tm, fn);
  seed_temps_free(&tm);
  return st;
}

spmd_status seed_ops_trainer_params(const seed_ops_trainer *t, float *params) {
  const char *fn = __func__;
  if (t == NULL || params == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "NULL argument");
  float *at = params;
  for (int i = 0; i < N_PARAMS; ++i) {
    TRY(spmd_array_to_host(t->p[i], at, (size_t)size_of(i) * sizeof(float)));
    at += size_of(i);
  }
  return SPMD_OK;
}
