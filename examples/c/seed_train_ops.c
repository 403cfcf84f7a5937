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

#define SPMD_EXPERIMENTAL
#include <spmd/experimental/program.h>

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
  /* Steps run as one recorded program, recorded at the first step. */
  spmd_runtime *runtime;  /* non-NULL: steps are recorded */
  spmd_sharding *replicated;
  spmd_x_program *program;
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
  t->replicated = rep;
  if (st != SPMD_OK) {
    seed_ops_trainer_destroy(t);
    return seed_lib_fail(st, fn, "placing the parameters");
  }
  *out = t;
  return SPMD_OK;
}

spmd_status seed_ops_trainer_create_recorded(spmd_runtime *runtime, const spmd_mesh *mesh,
                                             const float *params, double learning_rate,
                                             seed_ops_trainer **out) {
  if (runtime == NULL)
    return seed_fail(SPMD_ERR_INVALID_ARGUMENT, __func__, "runtime must not be NULL");
  const spmd_status st = seed_ops_trainer_create(mesh, params, learning_rate, out);
  if (st == SPMD_OK) (*out)->runtime = runtime;
  return st;
}

void seed_ops_trainer_destroy(seed_ops_trainer *t) {
  if (t == NULL) return;
  for (int i = 0; i < N_PARAMS; ++i) {
    spmd_array_destroy(t->p[i]);
    spmd_array_destroy(t->mu[i]);
    spmd_array_destroy(t->nu[i]);
  }
  spmd_x_program_destroy(t->program);
  spmd_sharding_destroy(t->replicated);
  free(t);
}

/* The forward pass with parameters p; keeps z, h and y - pred for the
 * backward one. */
typedef struct forward {
  spmd_array *z, *h, *diff, *loss;
} forward;

static spmd_status run_forward(spmd_array *const p[N_PARAMS], spmd_array *x, spmd_array *y,
                               seed_temps *tm, forward *f, const char *fn) {
  spmd_array **xw = seed_slot(tm), **hw = seed_slot(tm), **pred = seed_slot(tm), **sq = seed_slot(tm);
  f->z = NULL;
  TRY(spmd_einsum("bi,hi->bh", x, p[0], NULL, xw));
  spmd_array **z = seed_slot(tm), **h = seed_slot(tm), **diff = seed_slot(tm), **loss = seed_slot(tm);
  TRY(spmd_binary(SPMD_BINARY_ADD, *xw, p[1], NULL, z));
  TRY(spmd_unary(SPMD_UNARY_RELU, *z, NULL, h));
  TRY(spmd_einsum("bh,oh->bo", *h, p[2], NULL, hw));
  TRY(spmd_binary(SPMD_BINARY_ADD, *hw, p[3], NULL, pred));
  TRY(spmd_binary(SPMD_BINARY_SUB, y, *pred, NULL, diff));
  TRY(spmd_binary(SPMD_BINARY_MUL, *diff, *diff, NULL, sq));
  TRY(spmd_reduce(SPMD_REDUCE_MEAN, *sq, 0, NULL, 0, NULL, loss)); /* a psum by propagation */
  f->z = *z;
  f->h = *h;
  f->diff = *diff;
  f->loss = *loss;
  return SPMD_OK;
}

/* The loss and the gradients g (in tm) with parameters p. */
static spmd_status gradients(spmd_array *const p[N_PARAMS], spmd_array *x, spmd_array *y,
                             seed_temps *tm, spmd_array **loss, spmd_array *g[N_PARAMS],
                             const char *fn) {
  forward f;
  spmd_status st = run_forward(p, x, y, tm, &f, fn);
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
  spmd_array **gs[N_PARAMS] = {seed_slot(tm), seed_slot(tm), seed_slot(tm), seed_slot(tm)};
  spmd_array **dh = seed_slot(tm), **pos = seed_slot(tm), **dz = seed_slot(tm);
  const int64_t rows[1] = {0};
  TRY(spmd_einsum("bo,bh->oh", *dpred, f.h, NULL, gs[2]));
  TRY(spmd_reduce(SPMD_REDUCE_SUM, *dpred, 1, rows, 0, NULL, gs[3]));
  TRY(spmd_einsum("bo,oh->bh", *dpred, p[2], NULL, dh));
  TRY(spmd_binary_scalar(SPMD_BINARY_GT, f.z, 0.0, NULL, pos));
  /* relu's derivative: dh where z > 0, else 0 (dh times the bool mask) */
  TRY(spmd_binary(SPMD_BINARY_MUL, *dh, *pos, NULL, dz));
  TRY(spmd_einsum("bh,bi->hi", *dz, x, NULL, gs[0]));
  TRY(spmd_reduce(SPMD_REDUCE_SUM, *dz, 1, rows, 0, NULL, gs[1]));
  for (int i = 0; i < N_PARAMS; ++i) g[i] = *gs[i];
  *loss = f.loss;
  return SPMD_OK;
}

/* optax's bias corrections 1 - decay ** count: numbers (eager steps), or
 * 0-d arrays (inputs of the recorded step, which change every step). */
typedef struct corrections {
  double bc1, bc2;
  spmd_array *bc1_array, *bc2_array;
} corrections;

static spmd_status divide(spmd_array *x, double by, spmd_array *by_array, spmd_array **out) {
  return by_array ? spmd_binary(SPMD_BINARY_DIV, x, by_array, NULL, out)
                  : spmd_binary_scalar(SPMD_BINARY_DIV, x, by, NULL, out);
}

/* optax.adam on one parameter: the new p, mu and nu, each made from the
 * old one, which is donated (its handle is then only a name). */
static spmd_status adam(float learning_rate, spmd_array *p_old, spmd_array *mu_old,
                        spmd_array *nu_old, spmd_array *g, const corrections *c, seed_temps *tm,
                        spmd_array **p, spmd_array **mu, spmd_array **nu, const char *fn) {
  spmd_op_options donate0 = SPMD_OP_OPTIONS_INIT, donate1 = SPMD_OP_OPTIONS_INIT;
  donate0.donate = 1u;
  donate1.donate = 2u;
  spmd_array **g1 = seed_slot(tm), **mu0 = seed_slot(tm), **gg = seed_slot(tm), **g2 = seed_slot(tm), **nu0 = seed_slot(tm);
  /* mu = 0.1 g + 0.9 mu; nu = 0.001 (g g) + 0.999 nu */
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, 1.0 - 0.9, g, NULL, g1));
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, 0.9, mu_old, &donate0, mu0));
  TRY(spmd_binary(SPMD_BINARY_ADD, *g1, *mu0, &donate1, mu));
  TRY(spmd_binary(SPMD_BINARY_MUL, g, g, NULL, gg));
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, 1.0 - 0.999, *gg, NULL, g2));
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, 0.999, nu_old, &donate0, nu0));
  TRY(spmd_binary(SPMD_BINARY_ADD, *g2, *nu0, &donate1, nu));
  /* p = p + (-lr) * (mu_hat / (sqrt(nu_hat) + eps)) */
  spmd_array **mh = seed_slot(tm), **nh = seed_slot(tm), **rt = seed_slot(tm), **den = seed_slot(tm), **q = seed_slot(tm),
             **step = seed_slot(tm);
  TRY(divide(*mu, c->bc1, c->bc1_array, mh));
  TRY(divide(*nu, c->bc2, c->bc2_array, nh));
  TRY(spmd_unary(SPMD_UNARY_SQRT, *nh, NULL, rt));
  TRY(spmd_binary_scalar(SPMD_BINARY_ADD, *rt, 1e-8, NULL, den));
  TRY(spmd_binary(SPMD_BINARY_DIV, *mh, *den, NULL, q));
  TRY(spmd_scalar_binary(SPMD_BINARY_MUL, -(double)learning_rate, *q, NULL, step));
  TRY(spmd_binary(SPMD_BINARY_ADD, p_old, *step, &donate0, p));
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
  spmd_status st = run_forward(t->p, x, y, &tm, &f, fn);
  if (st == SPMD_OK) st = read_loss(f.loss, loss, fn);
  seed_temps_free(&tm);
  return st;
}

/* *p <- new_value, destroying the old handle. */
static void replace(spmd_array **p, spmd_array *new_value) {
  spmd_array_destroy(*p);
  *p = new_value;
}

/* optax: count_inc = count + 1; bias_correction = 1 - decay ** count_inc */
static corrections corrections_at(int64_t count) {
  const float t1 = (float)(count + 1);
  corrections c = {1.0f - powf(0.9f, t1), 1.0f - powf(0.999f, t1), NULL, NULL};
  return c;
}

/* One step with global ops, each run as it is called. */
static spmd_status eager_step(seed_ops_trainer *t, spmd_array *x, spmd_array *y, float *loss,
                              seed_temps *tm, const char *fn) {
  spmd_array *l = NULL, *g[N_PARAMS];
  spmd_status st = gradients(t->p, x, y, tm, &l, g, fn);
  if (st != SPMD_OK) return st;
  TRY(read_loss(l, loss, fn));
  const corrections c = corrections_at(t->count);
  for (int i = 0; i < N_PARAMS; ++i) {
    spmd_array *p = NULL, *mu = NULL, *nu = NULL;
    st = adam(t->learning_rate, t->p[i], t->mu[i], t->nu[i], g[i], &c, tm, &p, &mu, &nu, fn);
    replace(&t->p[i], p);
    replace(&t->mu[i], mu);
    replace(&t->nu[i], nu);
    if (st != SPMD_OK) return st;
  }
  t->count++;
  return SPMD_OK;
}

/* Records the step as a program (spmd/experimental/program.h) for x and
 * y laid out as these are: inputs x, y, the parameters, the moments (both
 * donated) and the two corrections; outputs the loss and the new
 * parameters and moments. The same functions as the eager step record it. */
static spmd_status record_step(seed_ops_trainer *t, spmd_array *x, spmd_array *y, const char *fn) {
  spmd_x_program *prog = NULL;
  TRY(spmd_x_program_create(t->runtime, &prog));
  seed_temps tm = {{NULL}, 0};
  spmd_status st = SPMD_OK;
  /* The inputs, in the order of step_inputs below. */
  spmd_array *in[3 * N_PARAMS + 4] = {NULL};
  const spmd_array *like[3 * N_PARAMS + 4] = {x, y};
  for (int i = 0; i < N_PARAMS; ++i) {
    like[2 + i] = t->p[i];
    like[2 + N_PARAMS + i] = t->mu[i];
    like[2 + 2 * N_PARAMS + i] = t->nu[i];
  }
  const int n_in = 3 * N_PARAMS + 4;
  for (int k = 0; k < n_in && st == SPMD_OK; ++k) {
    spmd_sharding *s = NULL;
    spmd_dtype dt = SPMD_F32;
    int64_t shape[2] = {0, 0};
    size_t nd = 0;
    if (k < n_in - 2) {
      st = spmd_array_sharding(like[k], &s);
      if (st == SPMD_OK) st = spmd_array_shape(like[k], 2, shape, &nd);
    }
    if (st == SPMD_OK)
      st = spmd_x_program_input(prog, s ? s : t->replicated, dt, nd, shape, &in[k]);
    spmd_sharding_destroy(s);
  }
  spmd_array *loss = NULL, *g[N_PARAMS];
  if (st == SPMD_OK) st = gradients(&in[2], in[0], in[1], &tm, &loss, g, fn);
  if (st == SPMD_OK) st = spmd_x_program_output(prog, loss, NULL);
  const corrections c = {0, 0, in[n_in - 2], in[n_in - 1]};
  spmd_array *out[3 * N_PARAMS] = {NULL};
  for (int i = 0; i < N_PARAMS && st == SPMD_OK; ++i)
    st = adam(t->learning_rate, in[2 + i], in[2 + N_PARAMS + i], in[2 + 2 * N_PARAMS + i], g[i], &c,
              &tm, &out[i], &out[N_PARAMS + i], &out[2 * N_PARAMS + i], fn);
  for (int k = 0; k < 3 * N_PARAMS && st == SPMD_OK; ++k) st = spmd_x_program_output(prog, out[k], NULL);
  /* The parameters and moments are donated (jax.jit's donate_argnums): each
   * step's update writes the new ones into the old ones' memory. */
  for (int k = 2; k < 2 + 3 * N_PARAMS && st == SPMD_OK; ++k) st = spmd_x_program_donate(prog, (size_t)k);
  if (st == SPMD_OK) st = spmd_x_program_compile(prog);
  for (int k = 0; k < 3 * N_PARAMS; ++k) spmd_array_destroy(out[k]);
  for (int k = 0; k < n_in; ++k) spmd_array_destroy(in[k]);
  seed_temps_free(&tm);
  if (st != SPMD_OK) {
    spmd_x_program_destroy(prog);
    return seed_lib_fail(st, fn, "recording the step");
  }
  t->program = prog;
  return SPMD_OK;
}

/* One step as the recorded program. */
static spmd_status recorded_step(seed_ops_trainer *t, spmd_array *x, spmd_array *y, float *loss,
                                 const char *fn) {
  if (t->program == NULL) {
    const spmd_status st = record_step(t, x, y, fn);
    if (st != SPMD_OK) return st;
  }
  const corrections c = corrections_at(t->count);
  spmd_array *bc[2] = {NULL, NULL};
  spmd_status st = spmd_array_full(t->replicated, SPMD_F32, 0, NULL, c.bc1, &bc[0]);
  if (st == SPMD_OK) st = spmd_array_full(t->replicated, SPMD_F32, 0, NULL, c.bc2, &bc[1]);
  const spmd_array *in[3 * N_PARAMS + 4] = {x, y};
  for (int i = 0; i < N_PARAMS; ++i) {
    in[2 + i] = t->p[i];
    in[2 + N_PARAMS + i] = t->mu[i];
    in[2 + 2 * N_PARAMS + i] = t->nu[i];
  }
  in[3 * N_PARAMS + 2] = bc[0];
  in[3 * N_PARAMS + 3] = bc[1];
  spmd_array *out[3 * N_PARAMS + 1] = {NULL};
  if (st == SPMD_OK) st = spmd_x_program_run(t->program, 3 * N_PARAMS + 4, in, 3 * N_PARAMS + 1, out);
  spmd_array_destroy(bc[0]);
  spmd_array_destroy(bc[1]);
  /* A failed run may have consumed donated parameters: the trainer is
   * done then. */
  if (st != SPMD_OK) return seed_lib_fail(st, fn, "spmd_x_program_run");
  for (int i = 0; i < N_PARAMS; ++i) {
    replace(&t->p[i], out[1 + i]);
    replace(&t->mu[i], out[1 + N_PARAMS + i]);
    replace(&t->nu[i], out[1 + 2 * N_PARAMS + i]);
  }
  st = read_loss(out[0], loss, fn);
  spmd_array_destroy(out[0]);
  if (st != SPMD_OK) return st;
  t->count++;
  return SPMD_OK;
}

spmd_status seed_ops_trainer_step(seed_ops_trainer *t, spmd_array *x, spmd_array *y, float *loss) {
  const char *fn = __func__;
  if (t == NULL || loss == NULL) return seed_fail(SPMD_ERR_INVALID_ARGUMENT, fn, "NULL argument");
  if (t->runtime) return recorded_step(t, x, y, loss, fn);
  seed_temps tm = {{NULL}, 0};
  const spmd_status st = eager_step(t, x, y, loss, &tm, fn);
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
