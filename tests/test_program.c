/* Programs (spmd/experimental/program.h): a function of arrays written
 * with the ops is recorded once over abstract inputs and run; every output
 * must equal, bit for bit and in layout and name, what the same function
 * gives eagerly. Then fusion, constants, constraints, output shardings,
 * the text, and every misuse. */
#define SPMD_EXPERIMENTAL
#include "spmd_test.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "spmd/dlpack.h"
#include "spmd/experimental/program.h"

/* ---- a function of arrays, run eagerly or recorded ---- */

/* The handles a function makes, destroyed together. */
typedef struct {
  spmd_array *made[64];
  size_t n;
} arena;

static spmd_array *keep(arena *a, spmd_array *x) {
  assert_true(a->n < 64);
  a->made[a->n++] = x;
  return x;
}

static void arena_free(arena *a) {
  for (size_t k = 0; k < a->n; ++k) spmd_array_destroy(a->made[k]);
  a->n = 0;
}

static spmd_array *unary(arena *a, spmd_unary_op op, spmd_array *x) {
  spmd_array *r = NULL;
  assert_ok(spmd_unary(op, x, NULL, &r));
  return keep(a, r);
}

static spmd_array *binary(arena *a, spmd_binary_op op, spmd_array *x, spmd_array *y) {
  spmd_array *r = NULL;
  assert_ok(spmd_binary(op, x, y, NULL, &r));
  return keep(a, r);
}

static spmd_array *scalar(arena *a, spmd_binary_op op, spmd_array *x, double s) {
  spmd_array *r = NULL;
  assert_ok(spmd_binary_scalar(op, x, s, NULL, &r));
  return keep(a, r);
}

/* A function of `nin` inputs writing `nout` outputs (handles in the arena). */
typedef void (*function)(arena *a, spmd_array **in, spmd_array **out);

typedef struct {
  const char *name;
  function f;
  size_t nin, nout;
  const char *specs[3];
  spmd_dtype dtypes[3];
  size_t ndim[3];
  int64_t shapes[3][3];
} case_def;

static spmd_mesh *mesh42(void) {
  const int64_t ms[2] = {4, 2};
  return test_mesh(suite_rt, 2, ms);
}

/* Deterministic values of any dtype the cases use. */
static void *values_for(spmd_dtype dt, int64_t n, int seed) {
  void *p = malloc((size_t)n * spmd_dtype_size(dt) + 1);
  for (int64_t i = 0; i < n; ++i) {
    const double v = sin((double)(i * 7 + seed * 13)) * 3.0;
    if (dt == SPMD_F32) ((float *)p)[i] = (float)v;
    else if (dt == SPMD_I32) ((int32_t *)p)[i] = (int32_t)((i * 5 + seed) % 7);
    else fail_msg("values_for: dtype %d", (int)dt);
  }
  return p;
}

static int64_t elements(size_t ndim, const int64_t *shape) {
  int64_t n = 1;
  for (size_t d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

/* Output k of the program and of the eager function agree in dtype,
 * shape, layout, the layout's name, and every bit. */
static void assert_same_array(spmd_array *got, spmd_array *want, const char *what) {
  spmd_dtype dg, dw;
  assert_ok(spmd_array_dtype(got, &dg));
  assert_ok(spmd_array_dtype(want, &dw));
  assert_int_equal(dg, dw);
  int64_t sg[8], sw[8];
  size_t ng = 0, nw = 0;
  assert_ok(spmd_array_shape(got, 8, sg, &ng));
  assert_ok(spmd_array_shape(want, 8, sw, &nw));
  assert_int_equal(ng, nw);
  assert_memory_equal(sg, sw, ng * sizeof(int64_t));
  spmd_sharding *hg = NULL, *hw = NULL;
  assert_ok(spmd_array_sharding(got, &hg));
  assert_ok(spmd_array_sharding(want, &hw));
  char *tg = NULL, *tw = NULL;
  assert_ok(spmd_sharding_to_string(hg, &tg));
  assert_ok(spmd_sharding_to_string(hw, &tw));
  if (strcmp(tg, tw) != 0) fail_msg("%s: program gives %s, eager %s", what, tg, tw);
  spmd_string_free(tg);
  spmd_string_free(tw);
  spmd_sharding_destroy(hg);
  spmd_sharding_destroy(hw);
  size_t bytes = 0;
  assert_ok(spmd_array_nbytes(got, &bytes));
  unsigned char *bg = malloc(bytes + 1), *bw = malloc(bytes + 1);
  assert_ok(spmd_array_to_host(got, bg, bytes));
  assert_ok(spmd_array_to_host(want, bw, bytes));
  if (memcmp(bg, bw, bytes) != 0) fail_msg("%s: values differ", what);
  free(bg);
  free(bw);
}

/* Records c.f, runs it on two sets of inputs, and compares with eager runs. */
static spmd_x_program *check_case(const case_def *c, spmd_mesh *mesh) {
  spmd_x_program *p = NULL;
  assert_ok(spmd_x_program_create(suite_rt, &p));
  spmd_array *abstract_in[3] = {NULL}, *abstract_out[4] = {NULL};
  arena rec = {{0}, 0};
  for (size_t k = 0; k < c->nin; ++k) {
    spmd_sharding *s = test_sharding(mesh, c->specs[k]);
    assert_ok(spmd_x_program_input(p, s, c->dtypes[k], c->ndim[k], c->shapes[k], &abstract_in[k]));
    spmd_sharding_destroy(s);
  }
  c->f(&rec, abstract_in, abstract_out);
  for (size_t k = 0; k < c->nout; ++k) assert_ok(spmd_x_program_output(p, abstract_out[k], NULL));
  assert_ok(spmd_x_program_compile(p));
  arena_free(&rec);
  for (size_t k = 0; k < c->nin; ++k) spmd_array_destroy(abstract_in[k]);

  for (int seed = 1; seed <= 2; ++seed) {
    spmd_array *in[3] = {NULL}, *want[4] = {NULL}, *got[4] = {NULL};
    for (size_t k = 0; k < c->nin; ++k) {
      void *v = values_for(c->dtypes[k], elements(c->ndim[k], c->shapes[k]), seed + (int)k);
      in[k] = test_put(mesh, c->specs[k], c->dtypes[k], c->ndim[k], c->shapes[k], v);
      free(v);
    }
    arena eager = {{0}, 0};
    c->f(&eager, in, want);
    assert_ok(spmd_x_program_run(p, c->nin, (const spmd_array *const *)in, c->nout, got));
    for (size_t k = 0; k < c->nout; ++k) {
      char what[96];
      snprintf(what, sizeof what, "%s, output %zu, run %d", c->name, k, seed);
      assert_same_array(got[k], want[k], what);
      spmd_array_destroy(got[k]);
    }
    arena_free(&eager);
    for (size_t k = 0; k < c->nin; ++k) spmd_array_destroy(in[k]);
  }
  return p;
}

static void assert_text_has(const spmd_x_program *p, const char *needle) {
  char *t = NULL;
  assert_ok(spmd_x_program_text(p, &t));
  if (strstr(t, needle) == NULL) fail_msg("program text lacks \"%s\":\n%s", needle, t);
  spmd_string_free(t);
}

static void assert_text_lacks(const spmd_x_program *p, const char *needle) {
  char *t = NULL;
  assert_ok(spmd_x_program_text(p, &t));
  if (strstr(t, needle) != NULL) fail_msg("program text has \"%s\":\n%s", needle, t);
  spmd_string_free(t);
}

/* ---- the functions ---- */

/* 2 * sin(x) + 1: one pass. */
static void f_sin_chain(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *s = unary(a, SPMD_UNARY_SIN, in[0]);
  spmd_array *m = scalar(a, SPMD_BINARY_MUL, s, 2.0);
  out[0] = scalar(a, SPMD_BINARY_ADD, m, 1.0);
}

/* sin(x) * cos(x) + y: two branches meeting, two inputs: one pass. */
static void f_diamond(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *s = unary(a, SPMD_UNARY_SIN, in[0]);
  spmd_array *c = unary(a, SPMD_UNARY_COS, in[0]);
  spmd_array *m = binary(a, SPMD_BINARY_MUL, s, c);
  out[0] = binary(a, SPMD_BINARY_ADD, m, in[1]);
}

/* An intermediate that is also an output is not fused away. */
static void f_intermediate_output(arena *a, spmd_array **in, spmd_array **out) {
  out[0] = unary(a, SPMD_UNARY_EXP, in[0]);
  out[1] = unary(a, SPMD_UNARY_TANH, out[0]);
}

/* The layer's shape: matmul with a split contraction (a psum), gelu and a
 * sum over the rows, a softmax, a transpose and a reshape. */
static void f_layer(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *h = NULL, *g, *r = NULL, *sm = NULL, *t = NULL, *rs = NULL;
  assert_ok(spmd_matmul(in[0], in[1], NULL, &h));
  keep(a, h);
  g = unary(a, SPMD_UNARY_GELU_TANH, h);
  const int64_t axis1 = 1;
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, g, 1, &axis1, 0, NULL, &r));
  out[0] = keep(a, r);
  assert_ok(spmd_softmax(g, -1, 0, NULL, &sm));
  keep(a, sm);
  const int64_t perm[2] = {1, 0};
  assert_ok(spmd_transpose(sm, 2, perm, NULL, &t));
  keep(a, t);
  const int64_t shape[3] = {4, 2, 8};
  assert_ok(spmd_reshape(t, 3, shape, NULL, &rs));
  out[1] = keep(a, rs);
}

/* Reductions over a split dimension, each its local kernels and a
 * planned collective: a sum, a mean (whose division writes the psum's
 * result in place), a max. */
static void f_split_reductions(arena *a, spmd_array **in, spmd_array **out) {
  const int64_t axis1 = 1;
  const spmd_reduce_op ops[3] = {SPMD_REDUCE_SUM, SPMD_REDUCE_MEAN, SPMD_REDUCE_MAX};
  for (int k = 0; k < 3; ++k) {
    spmd_array *r = NULL;
    assert_ok(spmd_reduce(ops[k], in[0], 1, &axis1, 0, NULL, &r));
    out[k] = keep(a, r);
  }
}

/* Mixed dtypes: an int32 input taken from, one_hot, where, promotion. */
static void f_indexing(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *t = NULL, *oh = NULL, *w = NULL;
  assert_ok(spmd_take(in[0], in[1], 0, NULL, &t));
  keep(a, t);
  assert_ok(spmd_one_hot(in[1], 8, -1, SPMD_F32, NULL, &oh));
  keep(a, oh);
  spmd_array *pos = scalar(a, SPMD_BINARY_GT, in[0], 0.0);
  assert_ok(spmd_where(pos, in[0], in[1], NULL, &w));
  keep(a, w);
  out[0] = t;
  out[1] = binary(a, SPMD_BINARY_ADD, oh, scalar(a, SPMD_BINARY_MUL, in[1], 0.5));
  out[2] = w;
}

/* Concatenations: copies of their parts into one array, one of them
 * converted first (int32 to float32), along a sharded dimension and along
 * one that is not. */
static spmd_array *concatenated(arena *a, size_t n, spmd_array **xs, int64_t axis) {
  spmd_array *r = NULL;
  assert_ok(spmd_concatenate(n, (const spmd_array *const *)xs, axis, NULL, &r));
  return keep(a, r);
}
static void f_concatenate(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *rows[3] = {unary(a, SPMD_UNARY_SIN, in[0]), in[0], in[1]};
  out[0] = concatenated(a, 3, rows, 0);
  spmd_array *cols[2] = {in[0], scalar(a, SPMD_BINARY_MUL, in[0], 2.0)};
  out[1] = concatenated(a, 2, cols, 1);
}

/* A layout constraint inside the program (with_sharding_constraint). */
static void f_constraint(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *s = unary(a, SPMD_UNARY_SIN, in[0]);
  spmd_array *r = NULL;
  spmd_sharding *rows = NULL;
  assert_ok(spmd_array_sharding(in[0], &rows));
  spmd_sharding *cols = NULL;
  spmd_mesh *m = NULL;
  assert_ok(spmd_sharding_mesh(rows, &m));
  assert_ok(spmd_sharding_named_text(m, "None, x", &cols));
  assert_ok(spmd_array_reshard(s, cols, &r));
  keep(a, r);
  out[0] = scalar(a, SPMD_BINARY_ADD, r, 1.0);
  spmd_sharding_destroy(cols);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(m);
}

/* Blocks handed from a value's last use to a later result: sin(x)'s go to
 * a later transpose once nothing reads them; the input's, which the caller
 * holds, and the transpose's, which the constrained output may share, go
 * to none. */
static spmd_array *transpose2(arena *a, spmd_array *x) {
  const int64_t perm[2] = {1, 0};
  spmd_array *t = NULL;
  assert_ok(spmd_transpose(x, 2, perm, NULL, &t));
  return keep(a, t);
}
static void f_spare_blocks(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *t = transpose2(a, in[0]);
  spmd_sharding *cols = NULL, *rows = NULL;
  spmd_mesh *m = NULL;
  assert_ok(spmd_array_sharding(in[0], &cols));
  assert_ok(spmd_sharding_mesh(cols, &m));
  assert_ok(spmd_sharding_named_text(m, "x", &rows));
  spmd_sharding_destroy(cols);
  spmd_array *v = NULL;
  assert_ok(spmd_array_reshard(t, rows, &v));
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(m);
  out[0] = keep(a, v);
  spmd_array *s = unary(a, SPMD_UNARY_SIN, in[0]);
  spmd_array *u = transpose2(a, s);
  spmd_array *w = transpose2(a, u);
  out[1] = transpose2(a, scalar(a, SPMD_BINARY_MUL, w, 3.0));
}

/* A fused pass over an intermediate read for the last time writes over
 * it, unless a view shares its blocks: t is also reshaped (an output), u is
 * not. */
static void f_in_place(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *t = transpose2(a, in[0]), *v = NULL;
  const int64_t shape[3] = {4, 2, 8};
  assert_ok(spmd_reshape(t, 3, shape, NULL, &v));
  out[0] = keep(a, v);
  out[1] = scalar(a, SPMD_BINARY_MUL, t, 3.0);
  out[2] = scalar(a, SPMD_BINARY_ADD, transpose2(a, in[0]), 1.0);
}

/* An op naming an array with values: a constant of the program. */
static spmd_array *g_constant;
static void f_constant(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *m = binary(a, SPMD_BINARY_MUL, in[0], g_constant);
  out[0] = unary(a, SPMD_UNARY_TANH, m);
}

/* A shard_map step between global ops: sin before it; in its body a psum
 * over 'y' and the block scaled by its x index; after it, * 2 + 1. */
static spmd_mesh *g_mesh;
static spmd_status sum_and_scale(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_status st;
  spmd_block in = SPMD_BLOCK_INIT, sum = SPMD_BLOCK_INIT, scaled = SPMD_BLOCK_INIT;
  int64_t xi = 0;
  if ((st = spmd_ctx_input(ctx, 0, &in))) return st;
  if ((st = spmd_ctx_psum(ctx, &in, "y", &sum))) return st;
  if ((st = spmd_ctx_axis_index(ctx, "x", &xi))) return st;
  if ((st = spmd_ctx_alloc(ctx, SPMD_F32, in.ndim, in.shape, &scaled))) return st;
  const float *x = in.data;
  float *y = scaled.data;
  for (int64_t i = 0; i < in.shape[0] * in.shape[1]; ++i) y[i] = x[i] * (float)(xi + 1);
  if ((st = spmd_ctx_set_output(ctx, 0, &sum))) return st;
  return spmd_ctx_set_output(ctx, 1, &scaled);
}
static void f_shard_map(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *s = unary(a, SPMD_UNARY_SIN, in[0]);
  const char *in_spec = "x, y", *out_specs[2] = {"x", "x, y"};
  spmd_array *r[2] = {NULL, NULL};
  assert_ok(spmd_shard_map_text(g_mesh, sum_and_scale, NULL, 1, &s, &in_spec, 2, out_specs, NULL, r));
  keep(a, r[0]);
  keep(a, r[1]);
  out[0] = scalar(a, SPMD_BINARY_ADD, scalar(a, SPMD_BINARY_MUL, r[0], 2.0), 1.0);
  out[1] = r[1];
}

static const case_def k_sin_chain = {"sin_chain", f_sin_chain, 1, 1, {"x, y"}, {SPMD_F32}, {2}, {{8, 16}}};
static const case_def k_diamond = {"diamond", f_diamond, 2, 1, {"x", "x"}, {SPMD_F32, SPMD_F32}, {2, 2},
                                   {{8, 6}, {8, 6}}};
static const case_def k_intermediate = {"intermediate_output", f_intermediate_output, 1, 2, {"y"},
                                        {SPMD_F32}, {1}, {{10}}};
static const case_def k_layer = {"layer", f_layer, 2, 2, {"x, y", "y"}, {SPMD_F32, SPMD_F32}, {2, 2},
                                 {{8, 6}, {6, 8}}};
static const case_def k_split_reductions = {"split_reductions", f_split_reductions, 1, 3, {"x, y"},
                                            {SPMD_F32}, {2}, {{8, 12}}};
static const case_def k_indexing = {"indexing", f_indexing, 2, 3, {"x", "x"}, {SPMD_F32, SPMD_I32},
                                    {1, 1}, {{8}, {8}}};
static const case_def k_concatenate = {"concatenate", f_concatenate, 2, 2, {"x, y", "x, y"},
                                       {SPMD_F32, SPMD_I32}, {2, 2}, {{8, 4}, {8, 4}}};
static const case_def k_constraint = {"constraint", f_constraint, 1, 1, {"x"}, {SPMD_F32}, {2}, {{8, 8}}};
static const case_def k_spare_blocks = {"spare_blocks", f_spare_blocks, 1, 2, {"None, x"}, {SPMD_F32}, {2},
                                       {{8, 8}}};
static const case_def k_in_place = {"in_place", f_in_place, 1, 3, {"x, y"}, {SPMD_F32}, {2}, {{8, 8}}};
static const case_def k_constant = {"constant", f_constant, 1, 1, {"x, y"}, {SPMD_F32}, {2}, {{8, 4}}};

/* ---- the tests ---- */

static void chain_runs_as_one_pass(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = check_case(&k_sin_chain, mesh);
  assert_text_has(p, "3 ops (3 fused into 1 pass)");
  assert_text_has(p, "sin, mul, add in one pass per shard, reading 512 B and writing 512 B");
  assert_text_has(p, "%1 = sin(%0)");
  assert_text_has(p, "%2 = mul(%1, 2)");
  assert_text_has(p, "float32[8,16]");
  assert_text_has(p, "PartitionSpec('x', 'y')");
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

static void branches_meeting_fuse(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = check_case(&k_diamond, mesh);
  assert_text_has(p, "4 ops (4 fused into 1 pass)");
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

/* A chain longer than a kernel of the platform takes (16 steps on cuda,
 * and on sim, which keeps that limit) is cut into passes; on cpu it is one. */
static void f_long_chain(arena *a, spmd_array **in, spmd_array **out) {
  spmd_array *x = in[0];
  for (int k = 0; k < 20; ++k) x = scalar(a, k % 2 ? SPMD_BINARY_ADD : SPMD_BINARY_MUL, x, k % 2 ? 0.5 : 1.25);
  out[0] = x;
}
static const case_def k_long_chain = {"long_chain", f_long_chain, 1, 1, {"x"}, {SPMD_F32}, {2}, {{8, 4}}};

static void a_long_chain_is_cut_where_the_platform_limits_it(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = check_case(&k_long_chain, mesh);
  assert_text_has(p, test_platform_is("cpu") ? "20 ops (20 fused into 1 pass)" : "20 ops (20 fused into 2 passes)");
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

static void an_output_is_never_fused_away(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = check_case(&k_intermediate, mesh);
  assert_text_lacks(p, "fused");
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

static const case_def k_shard_map = {"shard_map", f_shard_map, 1, 2, {"x"}, {SPMD_F32}, {2}, {{8, 8}}};

static void a_shard_map_is_a_step_of_a_program(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  g_mesh = mesh;
  spmd_x_program *p = check_case(&k_shard_map, mesh);
  assert_text_has(p, "= shard_map(%");
  assert_text_has(p, "= shard_map output 1");
  spmd_x_program_destroy(p);
  g_mesh = NULL;
  spmd_mesh_destroy(mesh);
}

/* The body's outputs must keep the types recording learnt; the program
 * keeps its own mesh handle, so the caller's may go. */
static int g_rows_out; /* rows of the body's output: a misbehaving body */
static spmd_status rows_from_global(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_status st;
  spmd_block in = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  if ((st = spmd_ctx_input(ctx, 0, &in))) return st;
  const spmd_mesh *m = NULL;
  if ((st = spmd_ctx_mesh(ctx, &m))) return st;
  int64_t shape[2] = {g_rows_out, in.shape[1]};
  if ((st = spmd_ctx_alloc(ctx, SPMD_F32, 2, shape, &out))) return st;
  memset(out.data, 0, (size_t)(shape[0] * shape[1]) * sizeof(float));
  return spmd_ctx_set_output(ctx, 0, &out);
}

static void a_recorded_shard_map_keeps_its_types(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = NULL;
  assert_ok(spmd_x_program_create(suite_rt, &p));
  spmd_sharding *s = test_sharding(mesh, "x");
  const int64_t shape[2] = {8, 4};
  spmd_array *x = NULL, *r = NULL;
  assert_ok(spmd_x_program_input(p, s, SPMD_F32, 2, shape, &x));
  const char *spec = "x";
  /* No output: nothing to record. */
  assert_fails(spmd_shard_map_text(mesh, rows_from_global, NULL, 1, &x, &spec, 0, NULL, NULL, NULL),
               SPMD_ERR_INVALID_ARGUMENT, "n_out: a shard_map recorded into a program needs at least one output");
  g_rows_out = 2;
  assert_ok(spmd_shard_map_text(mesh, rows_from_global, NULL, 1, &x, &spec, 1, &spec, NULL, &r));
  assert_ok(spmd_x_program_output(p, r, NULL));
  assert_ok(spmd_x_program_compile(p));
  spmd_array *late = NULL;
  assert_fails(spmd_shard_map_text(mesh, rows_from_global, NULL, 1, &x, &spec, 1, &spec, NULL, &late),
               SPMD_ERR_INVALID_ARGUMENT, "inputs: values of a compiled program");
  spmd_mesh_destroy(mesh); /* the program keeps a handle of its own */
  spmd_mesh *again = mesh42();
  float v[32] = {0};
  spmd_array *in = test_put(again, "x", SPMD_F32, 2, shape, v), *out = NULL;
  assert_ok(spmd_x_program_run(p, 1, (const spmd_array *const *)&in, 1, &out));
  spmd_array_destroy(out);
  g_rows_out = 1;
  assert_fails(spmd_x_program_run(p, 1, (const spmd_array *const *)&in, 1, &out), SPMD_ERR_INVALID_ARGUMENT,
               "shard_map: output 0 is float32[4,4]");
  spmd_array_destroy(in);
  spmd_array_destroy(r);
  spmd_array_destroy(x);
  spmd_sharding_destroy(s);
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(again);
}

/* Shard 0's memory on the cpu platform (through a DLPack view, let go at
 * once); NULL elsewhere. */
static const void *shard0_memory(spmd_array *a) {
  if (!test_platform_is("cpu")) return NULL;
  DLManagedTensor *t = NULL;
  assert_ok(spmd_array_shard_to_dlpack(a, 0, &t));
  const void *data = t->dl_tensor.data;
  t->deleter(t);
  return data;
}

/* A donated input is consumed by the run, and the op reading it last
 * writes its result into its buffers: a fused pass (2 * sin(x) + 1), and
 * an op that reads its other operand resharded (x + w). */
static void a_donated_input_gives_its_buffers(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  const int64_t shape[2] = {8, 16};
  for (int fused = 1; fused >= 0; --fused) {
    spmd_x_program *p = NULL;
    assert_ok(spmd_x_program_create(suite_rt, &p));
    spmd_sharding *s = test_sharding(mesh, "x, y"), *sw = test_sharding(mesh, "None, y");
    spmd_array *x = NULL, *w = NULL, *z = NULL;
    arena rec = {{0}, 0};
    assert_ok(spmd_x_program_input(p, s, SPMD_F32, 2, shape, &x));
    assert_ok(spmd_x_program_input(p, sw, SPMD_F32, 2, shape, &w));
    assert_fails(spmd_x_program_donate(p, 2), SPMD_ERR_INVALID_ARGUMENT, "input: 2 for a program of 2 inputs");
    assert_ok(spmd_x_program_donate(p, 0));
    z = fused ? scalar(&rec, SPMD_BINARY_ADD, scalar(&rec, SPMD_BINARY_MUL, unary(&rec, SPMD_UNARY_SIN, x), 2.0), 1.0)
              : binary(&rec, SPMD_BINARY_ADD, x, w);
    assert_ok(spmd_x_program_output(p, z, NULL));
    assert_ok(spmd_x_program_compile(p));
    assert_fails(spmd_x_program_donate(p, 0), SPMD_ERR_INVALID_ARGUMENT, "program: is compiled");
    assert_text_has(p, "into donated input 0");
    arena_free(&rec);
    float *v = values_for(SPMD_F32, 128, 3), *vw = values_for(SPMD_F32, 128, 4);
    spmd_array *in[2] = {test_put(mesh, "x, y", SPMD_F32, 2, shape, v), test_put(mesh, "None, y", SPMD_F32, 2, shape, vw)};
    spmd_array *copy = test_put(mesh, "x, y", SPMD_F32, 2, shape, v), *want = NULL, *got = NULL;
    arena eager = {{0}, 0};
    want = fused ? scalar(&eager, SPMD_BINARY_ADD, scalar(&eager, SPMD_BINARY_MUL, unary(&eager, SPMD_UNARY_SIN, copy), 2.0), 1.0)
                 : binary(&eager, SPMD_BINARY_ADD, copy, in[1]);
    /* Bound twice: refused, and nothing consumed. */
    spmd_array *twice[2] = {in[0], in[0]};
    assert_fails(spmd_x_program_run(p, 2, (const spmd_array *const *)twice, 1, &got), SPMD_ERR_INVALID_ARGUMENT,
                 "inputs[1]: the array bound to donated inputs[0] is also inputs[1]");
    const void *before = shard0_memory(in[0]);
    assert_ok(spmd_x_program_run(p, 2, (const spmd_array *const *)in, 1, &got));
    assert_same_array(got, want, fused ? "donated, fused" : "donated, replayed");
    if (before != NULL) assert_ptr_equal(shard0_memory(got), before);
    float out[128];
    assert_fails(spmd_array_to_host(in[0], out, sizeof out), SPMD_ERR_INVALID_ARGUMENT,
                 "was donated to spmd_x_program_run");
    assert_ok(spmd_array_to_host(in[1], out, sizeof out)); /* not donated */
    /* An input whose blocks a view shares (a reshape of it) is consumed all
     * the same, but computed into new blocks: the view keeps its values. */
    const int64_t s3[3] = {8, 2, 8};
    spmd_array *shared[2] = {test_put(mesh, "x, y", SPMD_F32, 2, shape, v), in[1]}, *view = NULL, *got2 = NULL;
    assert_ok(spmd_reshape(shared[0], 3, s3, NULL, &view));
    if (shard0_memory(view) != NULL) assert_ptr_equal(shard0_memory(view), shard0_memory(shared[0]));
    assert_ok(spmd_x_program_run(p, 2, (const spmd_array *const *)shared, 1, &got2));
    assert_same_array(got2, want, fused ? "donated with a view, fused" : "donated with a view, replayed");
    assert_fails(spmd_array_to_host(shared[0], out, sizeof out), SPMD_ERR_INVALID_ARGUMENT,
                 "was donated to spmd_x_program_run");
    assert_ok(spmd_array_to_host(view, out, sizeof out));
    for (int i = 0; i < 128; ++i) assert_true(out[i] == v[i]);
    spmd_array_destroy(got2);
    spmd_array_destroy(view);
    spmd_array_destroy(shared[0]);
    spmd_array_destroy(got);
    arena_free(&eager);
    for (int k = 0; k < 2; ++k) spmd_array_destroy(in[k]);
    spmd_array_destroy(copy);
    free(v);
    free(vw);
    spmd_array_destroy(x);
    spmd_array_destroy(w);
    spmd_sharding_destroy(s);
    spmd_sharding_destroy(sw);
    spmd_x_program_destroy(p);
  }
  spmd_mesh_destroy(mesh);
}

static void every_op_family_gives_the_eager_result(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = check_case(&k_layer, mesh);
  assert_text_has(p, "psum over 'y'");
  assert_text_has(p, "768 flops");
  assert_text_has(p, "= sum(%3)");
  /* The first run learnt which ops are one launch; the second ran those
   * kernels on its own buffers and still gave the eager result. */
  assert_text_has(p, "= transpose(%5)                 float32[8,8]     PartitionSpec(None, 'x')  one launch");
  /* The softmax along its unsplit axis is one launch (the five ops'
   * passes in one kernel a block): learnt too. */
  assert_text_has(p, "= softmax(%3)                   float32[8,8]     PartitionSpec('x',)  one launch");
  /* The product and its psum: the kernels and the planned collective,
   * run again on the run's own buffers. */
  assert_text_has(p, "psum over 'y' 512 B; 768 flops; one launch and one collective");
  spmd_x_program_destroy(p);
  p = check_case(&k_indexing, mesh);
  spmd_x_program_destroy(p);
  /* Each reduction's kernels and psum (pmax) learnt and run again; the
   * mean's division writes the psum's result in place, the result being
   * those buffers relabeled. */
  p = check_case(&k_split_reductions, mesh);
  assert_text_has(p, "= sum(%0)                       float32[8]       PartitionSpec('x',)  psum over 'y' 64 B; one launch and one collective");
  assert_text_has(p, "= mean(%0)                      float32[8]       PartitionSpec('x',)  psum over 'y' 64 B; 2 launches and one collective");
  assert_text_has(p, "= max(%0)                       float32[8]       PartitionSpec('x',)  pmax over 'y' 64 B; one launch and one collective");
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

/* A concatenation's copies all write one array: learnt, the first copy
 * making the array and the others writing into it; the second run, on
 * other values, gives the eager result. */
static void concatenations_are_learnt(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = check_case(&k_concatenate, mesh);
  assert_text_has(p, "= concatenate(%2, %0, %1)       float32[24,4]    PartitionSpec('x', 'y')  one launch and 3 copies");
  assert_text_has(p, "float32[8,8]     PartitionSpec('x', 'y')  2 copies");
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

static void a_constraint_is_recorded(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = check_case(&k_constraint, mesh);
  assert_text_has(p, "reshard(%1)");
  assert_text_lacks(p, "array_reshard");
  assert_text_has(p, "reshard to ");
  /* The reshard is its moves between shards, learnt and made again
   * between the run's own arrays. */
  assert_text_has(p, "one copy");
  /* sin(x) is computed in the constraint's layout, as jax.jit places it. */
  assert_text_has(p, "laid out for its uses");
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

static void values_hand_their_blocks_on(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = check_case(&k_spare_blocks, mesh);
  /* Runs after the first, which learns, take kept blocks: the caller's
   * input is left as it was. */
  const int64_t shape[2] = {8, 8};
  float before[64], after[64];
  for (int i = 0; i < 64; ++i) before[i] = (float)i / 4.0f - 3.0f;
  spmd_array *x = test_put(mesh, "None, x", SPMD_F32, 2, shape, before);
  for (int run = 0; run < 3; ++run) {
    spmd_array *out[2] = {NULL, NULL};
    assert_ok(spmd_x_program_run(p, 1, (const spmd_array *const *)&x, 2, out));
    assert_ok(spmd_array_to_host(x, after, sizeof after));
    assert_memory_equal(after, before, sizeof before);
    assert_ok(spmd_array_to_host(out[0], after, sizeof after));
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) assert_true(after[i * 8 + j] == before[j * 8 + i]);
    spmd_array_destroy(out[0]);
    spmd_array_destroy(out[1]);
  }
  spmd_array_destroy(x);
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

static void intermediates_read_last_are_written_over(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program_destroy(check_case(&k_in_place, mesh));
  spmd_mesh_destroy(mesh);
}

static void arrays_with_values_are_constants(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  const int64_t shape[2] = {8, 4};
  float w[32];
  for (int i = 0; i < 32; ++i) w[i] = (float)i / 8.0f;
  g_constant = test_put(mesh, "x, y", SPMD_F32, 2, shape, w);
  spmd_x_program *p = check_case(&k_constant, mesh);
  assert_text_has(p, "mul(%0, const float32[8,4])");
  /* The program keeps the constant alive. */
  spmd_array_destroy(g_constant);
  g_constant = NULL;
  spmd_array *x = test_put(mesh, "x, y", SPMD_F32, 2, shape, w), *y = NULL;
  assert_ok(spmd_x_program_run(p, 1, (const spmd_array *const *)&x, 1, &y));
  float out[32];
  assert_ok(spmd_array_to_host(y, out, sizeof out));
  for (int i = 0; i < 32; ++i) assert_float_equal(out[i], tanhf(w[i] * w[i]), 1e-6);
  spmd_array_destroy(y);
  spmd_array_destroy(x);
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

static void output_sharding_is_honoured(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = NULL;
  assert_ok(spmd_x_program_create(suite_rt, &p));
  spmd_sharding *rows = test_sharding(mesh, "x"), *repl = test_sharding(mesh, "");
  const int64_t shape[2] = {8, 2};
  spmd_array *x = NULL, *y = NULL;
  assert_ok(spmd_x_program_input(p, rows, SPMD_F32, 2, shape, &x));
  assert_ok(spmd_binary_scalar(SPMD_BINARY_MUL, x, 3.0, NULL, &y));
  assert_ok(spmd_x_program_output(p, y, repl));
  assert_ok(spmd_x_program_output(p, x, NULL));
  assert_ok(spmd_x_program_compile(p));
  assert_text_has(p, "output 0 = %1, resharded to PartitionSpec()");
  size_t n = 0;
  assert_ok(spmd_x_program_input_count(p, &n));
  assert_int_equal(n, 1);
  assert_ok(spmd_x_program_output_count(p, &n));
  assert_int_equal(n, 2);
  float v[16], got[16];
  for (int i = 0; i < 16; ++i) v[i] = (float)i;
  spmd_array *in = test_put(mesh, "x", SPMD_F32, 2, shape, v), *out[2] = {NULL, NULL};
  assert_ok(spmd_x_program_run(p, 1, (const spmd_array *const *)&in, 2, out));
  spmd_sharding *s = NULL;
  int eq = 0;
  assert_ok(spmd_array_sharding(out[0], &s));
  assert_ok(spmd_sharding_equal(s, repl, &eq));
  assert_true(eq);
  spmd_sharding_destroy(s);
  assert_ok(spmd_array_to_host(out[0], got, sizeof got));
  for (int i = 0; i < 16; ++i) assert_true(got[i] == 3.0f * v[i]);
  assert_ok(spmd_array_to_host(out[1], got, sizeof got));
  assert_memory_equal(got, v, sizeof v);
  spmd_array_destroy(out[0]);
  spmd_array_destroy(out[1]);
  spmd_array_destroy(in);
  spmd_array_destroy(x);
  spmd_array_destroy(y);
  spmd_sharding_destroy(rows);
  spmd_sharding_destroy(repl);
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

/* Several threads run one program at once, the first run among them. */
typedef struct {
  spmd_x_program *p;
  spmd_array *in;
  float out[128];
  size_t out_bytes;
  spmd_status st;
} runner;

static void *run_thread(void *arg) {
  runner *r = arg;
  for (int k = 0; k < 20 && r->st == SPMD_OK; ++k) {
    spmd_array *y = NULL;
    r->st = spmd_x_program_run(r->p, 1, (const spmd_array *const *)&r->in, 1, &y);
    if (r->st == SPMD_OK) r->st = spmd_array_to_host(y, r->out, r->out_bytes);
    spmd_array_destroy(y);
  }
  return NULL;
}

/* Four threads run p at once, runner k on the 8 x 16 float32 input laid
 * out "x, y" whose element i is value(i, k), reading out_bytes of the
 * result each time. Leaves each runner's last result and status. */
static void run_four_threads(spmd_x_program *p, spmd_mesh *mesh, float (*value)(int i, int k),
                             size_t out_bytes, runner r[4]) {
  const int64_t shape[2] = {8, 16};
  pthread_t th[4];
  for (int k = 0; k < 4; ++k) {
    float v[128];
    for (int i = 0; i < 128; ++i) v[i] = value(i, k);
    r[k].p = p;
    r[k].in = test_put(mesh, "x, y", SPMD_F32, 2, shape, v);
    r[k].out_bytes = out_bytes;
    r[k].st = SPMD_OK;
  }
  for (int k = 0; k < 4; ++k) assert_int_equal(pthread_create(&th[k], NULL, run_thread, &r[k]), 0);
  for (int k = 0; k < 4; ++k) pthread_join(th[k], NULL);
}

static float transposed_value(int i, int k) { return (float)(i + 1000 * k); }
static float summed_value(int i, int k) { return (float)(i % 16 + 100 * k); }

static void threads_share_a_program(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = NULL;
  assert_ok(spmd_x_program_create(suite_rt, &p));
  spmd_sharding *s = test_sharding(mesh, "x, y");
  const int64_t shape[2] = {8, 16}, perm[2] = {1, 0};
  spmd_array *x = NULL, *t = NULL, *y = NULL;
  assert_ok(spmd_x_program_input(p, s, SPMD_F32, 2, shape, &x));
  assert_ok(spmd_transpose(x, 2, perm, NULL, &t));
  assert_ok(spmd_binary_scalar(SPMD_BINARY_MUL, t, 2.0, NULL, &y));
  assert_ok(spmd_x_program_output(p, y, NULL));
  assert_ok(spmd_x_program_compile(p));
  runner r[4];
  run_four_threads(p, mesh, transposed_value, sizeof r[0].out, r);
  for (int k = 0; k < 4; ++k) {
    assert_int_equal(r[k].st, SPMD_OK);
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 16; ++j) assert_true(r[k].out[j * 8 + i] == 2.0f * (float)(i * 16 + j + 1000 * k));
    spmd_array_destroy(r[k].in);
  }
  spmd_array_destroy(x);
  spmd_array_destroy(t);
  spmd_array_destroy(y);
  spmd_sharding_destroy(s);
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

/* A sum over a split dimension ends in a psum the program plans once and
 * every run reuses: runs from several threads at once, each on its own
 * values, each get their own sums. */
static void threads_share_a_programs_collectives(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = NULL;
  assert_ok(spmd_x_program_create(suite_rt, &p));
  spmd_sharding *s = test_sharding(mesh, "x, y");
  const int64_t shape[2] = {8, 16}, axis1 = 1;
  spmd_array *x = NULL, *y = NULL;
  assert_ok(spmd_x_program_input(p, s, SPMD_F32, 2, shape, &x));
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, x, 1, &axis1, 0, NULL, &y));
  assert_ok(spmd_x_program_output(p, y, NULL));
  assert_ok(spmd_x_program_compile(p));
  assert_text_has(p, "psum over 'y'");
  runner r[4];
  run_four_threads(p, mesh, summed_value, 8 * sizeof(float), r);
  for (int k = 0; k < 4; ++k) {
    assert_int_equal(r[k].st, SPMD_OK);
    /* Row i: 0 + 1 + ... + 15 + 16 * 100k. */
    for (int i = 0; i < 8; ++i) assert_true(r[k].out[i] == (float)(120 + 1600 * k));
    spmd_array_destroy(r[k].in);
  }
  spmd_array_destroy(x);
  spmd_array_destroy(y);
  spmd_sharding_destroy(s);
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

/* ---- misuse ---- */

static void inputs_must_match_what_was_recorded(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = check_case(&k_sin_chain, mesh);
  const int64_t shape[2] = {8, 16}, other[2] = {8, 8};
  float v[128] = {0};
  int32_t iv[128] = {0};
  spmd_array *ok = test_put(mesh, "x, y", SPMD_F32, 2, shape, v);
  spmd_array *wrong_layout = test_put(mesh, "y, x", SPMD_F32, 2, shape, v);
  spmd_array *wrong_shape = test_put(mesh, "x, y", SPMD_F32, 2, other, v);
  spmd_array *wrong_dtype = test_put(mesh, "x, y", SPMD_I32, 2, shape, iv);
  spmd_array *out[2] = {NULL, NULL};
  assert_fails(spmd_x_program_run(p, 1, (const spmd_array *const *)&wrong_layout, 1, out),
               SPMD_ERR_INVALID_ARGUMENT, "inputs[0]: laid out as");
  assert_fails(spmd_x_program_run(p, 1, (const spmd_array *const *)&wrong_shape, 1, out),
               SPMD_ERR_INVALID_ARGUMENT, "inputs[0]: float32[8,8] where the program was recorded with float32[8,16]");
  assert_fails(spmd_x_program_run(p, 1, (const spmd_array *const *)&wrong_dtype, 1, out),
               SPMD_ERR_INVALID_ARGUMENT, "inputs[0]: int32[8,16]");
  spmd_array *two[2] = {ok, ok};
  assert_fails(spmd_x_program_run(p, 2, (const spmd_array *const *)two, 1, out),
               SPMD_ERR_INVALID_ARGUMENT, "n_inputs: 2 inputs for a program of 1");
  assert_fails(spmd_x_program_run(p, 1, (const spmd_array *const *)&ok, 2, out),
               SPMD_ERR_INVALID_ARGUMENT, "n_outputs: 2 for a program of 1 output");
  assert_fails(spmd_x_program_run(p, 1, NULL, 1, out), SPMD_ERR_INVALID_ARGUMENT, "inputs: NULL");
  assert_fails(spmd_x_program_run(p, 1, (const spmd_array *const *)&ok, 1, NULL),
               SPMD_ERR_INVALID_ARGUMENT, "outputs: NULL");
  assert_null(out[0]);
  spmd_array_destroy(ok);
  spmd_array_destroy(wrong_layout);
  spmd_array_destroy(wrong_shape);
  spmd_array_destroy(wrong_dtype);
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

static void values_have_no_values(void **state) {
  (void)state;
  spmd_mesh *mesh = mesh42();
  spmd_x_program *p = NULL, *q = NULL;
  assert_ok(spmd_x_program_create(suite_rt, &p));
  assert_ok(spmd_x_program_create(suite_rt, &q));
  spmd_sharding *s = test_sharding(mesh, "x");
  const int64_t shape[1] = {8};
  spmd_array *x = NULL, *z = NULL, *r = NULL;
  assert_ok(spmd_x_program_input(p, s, SPMD_F32, 1, shape, &x));
  assert_ok(spmd_x_program_input(q, s, SPMD_F32, 1, shape, &z));
  /* Type and layout answer; values do not. */
  size_t nd = 0;
  assert_ok(spmd_array_ndim(x, &nd));
  assert_int_equal(nd, 1);
  float buf[8];
  assert_fails(spmd_array_to_host(x, buf, sizeof buf), SPMD_ERR_INVALID_ARGUMENT,
               "array: a value of a program being recorded");
  assert_fails(spmd_array_block_until_ready(x), SPMD_ERR_INVALID_ARGUMENT, "no values");
  /* Two programs in one op. */
  assert_fails(spmd_binary(SPMD_BINARY_ADD, x, z, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "x and y: values of two different programs");
  /* A donated value is consumed, as an eager operand is. */
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.donate = 1;
  spmd_array *x2 = NULL, *d = NULL;
  assert_ok(spmd_unary(SPMD_UNARY_COS, x, NULL, &x2));
  assert_ok(spmd_unary(SPMD_UNARY_SIN, x2, &o, &d));
  assert_fails(spmd_unary(SPMD_UNARY_SIN, x2, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "x: was donated to spmd_unary");
  spmd_array_destroy(x2);
  spmd_array_destroy(d);
  /* Outputs: another program's value, an array with values. */
  float v[8] = {0};
  spmd_array *c = test_put(mesh, "x", SPMD_F32, 1, shape, v);
  assert_fails(spmd_x_program_output(p, z, NULL), SPMD_ERR_INVALID_ARGUMENT,
               "value: a value of another program");
  assert_fails(spmd_x_program_output(p, c, NULL), SPMD_ERR_INVALID_ARGUMENT,
               "value: an array with values");
  /* Compile: no output, then after. */
  assert_fails(spmd_x_program_compile(p), SPMD_ERR_INVALID_ARGUMENT, "has no output");
  assert_fails(spmd_x_program_run(p, 1, (const spmd_array *const *)&c, 0, &r),
               SPMD_ERR_INVALID_ARGUMENT, "is still recording");
  assert_ok(spmd_x_program_output(p, x, NULL));
  assert_fails(spmd_x_program_run(p, 1, (const spmd_array *const *)&c, 1, &r),
               SPMD_ERR_INVALID_ARGUMENT, "is still recording");
  assert_ok(spmd_x_program_compile(p));
  assert_fails(spmd_x_program_compile(p), SPMD_ERR_INVALID_ARGUMENT, "compiled already");
  assert_fails(spmd_unary(SPMD_UNARY_SIN, x, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "spmd_unary: its operands are values of a compiled program");
  assert_fails(spmd_x_program_input(p, s, SPMD_F32, 1, shape, &r), SPMD_ERR_INVALID_ARGUMENT,
               "program: is compiled");
  assert_fails(spmd_x_program_run(p, 1, (const spmd_array *const *)&x, 1, &r),
               SPMD_ERR_INVALID_ARGUMENT, "inputs[0]: a value of a program");
  /* Bad arguments. */
  assert_fails(spmd_x_program_create(NULL, &q), SPMD_ERR_INVALID_ARGUMENT, "runtime");
  assert_fails(spmd_x_program_input(q, NULL, SPMD_F32, 1, shape, &r), SPMD_ERR_INVALID_ARGUMENT,
               "sharding: NULL");
  assert_fails(spmd_x_program_input(q, s, (spmd_dtype)99, 1, shape, &r), SPMD_ERR_INVALID_ARGUMENT,
               "dtype");
  const int64_t two[2] = {8, 2};
  assert_fails(spmd_x_program_input(q, s, SPMD_F32, 0, two, &r), SPMD_ERR_INVALID_ARGUMENT,
               "sharding");
  (void)two;
  assert_fails(spmd_x_program_text(NULL, NULL), SPMD_ERR_INVALID_ARGUMENT, "program: NULL");
  /* A destroyed program's values. */
  spmd_x_program_destroy(q);
  assert_fails(spmd_unary(SPMD_UNARY_SIN, z, NULL, &r), SPMD_ERR_INVALID_ARGUMENT,
               "x: a value of a program that has been destroyed");
  spmd_array_destroy(c);
  spmd_array_destroy(x);
  spmd_array_destroy(z);
  spmd_sharding_destroy(s);
  spmd_x_program_destroy(p);
  spmd_mesh_destroy(mesh);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(chain_runs_as_one_pass),
      cmocka_unit_test(branches_meeting_fuse),
      cmocka_unit_test(a_long_chain_is_cut_where_the_platform_limits_it),
      cmocka_unit_test(an_output_is_never_fused_away),
      cmocka_unit_test(every_op_family_gives_the_eager_result),
      cmocka_unit_test(a_shard_map_is_a_step_of_a_program),
      cmocka_unit_test(a_donated_input_gives_its_buffers),
      cmocka_unit_test(a_recorded_shard_map_keeps_its_types),
      cmocka_unit_test(concatenations_are_learnt),
      cmocka_unit_test(a_constraint_is_recorded),
      cmocka_unit_test(values_hand_their_blocks_on),
      cmocka_unit_test(intermediates_read_last_are_written_over),
      cmocka_unit_test(arrays_with_values_are_constants),
      cmocka_unit_test(output_sharding_is_honoured),
      cmocka_unit_test(threads_share_a_program),
      cmocka_unit_test(threads_share_a_programs_collectives),
      cmocka_unit_test(inputs_must_match_what_was_recorded),
      cmocka_unit_test(values_have_no_values),
  };
  return cmocka_run_group_tests(tests, suite_setup, suite_teardown);
}
