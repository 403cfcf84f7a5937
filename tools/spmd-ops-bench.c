/* spmd-ops-bench: the speed of libspmd's global ops on the default CPU
 * mesh, each beside a reference timed in the same run (a memcpy of the
 * same bytes, the fastest single sgemm of the same global size this
 * machine has: OpenBLAS's and, where built with it, oneDNN's, each printed).
 * Prints one line per figure: name, median time, rate, reference rate and
 * the ratio.
 * Programs (spmd/experimental/program.h) are timed beside the eager ops
 * doing the same work.
 * tools/ops-bench-vs-jax.sh runs the same work in JAX beside it. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#ifdef SPMD_BENCH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#define CHECK_DNNL(call)                           \
  do {                                             \
    if ((call) != dnnl_success) {                  \
      fprintf(stderr, "%s failed\n", #call);       \
      exit(1);                                     \
    }                                              \
  } while (0)
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SPMD_EXPERIMENTAL
#include "spmd/experimental/program.h"
#include "spmd/spmd.h"

#include "bench_common.h"
#ifdef SPMD_BENCH_MODELS
#include "seed_layer.h"
#include "seed_train.h"
#include "seed_train_ops.h"
#endif

static spmd_runtime *rt;
static spmd_mesh *mesh;

static spmd_array *filled(const char *spec, size_t ndim, const int64_t *shape, float scale) {
  spmd_sharding *s = NULL;
  CHECK(spmd_sharding_named_text(mesh, spec, &s));
  int64_t n = 1;
  for (size_t i = 0; i < ndim; ++i) n *= shape[i];
  float *h = malloc((size_t)n * sizeof *h);
  for (int64_t i = 0; i < n; ++i) h[i] = scale * (float)((i * 7) % 13 - 6);
  spmd_array *a = NULL;
  CHECK(spmd_array_from_host(s, SPMD_F32, ndim, shape, h, (size_t)n * sizeof *h, &a));
  free(h);
  spmd_sharding_destroy(s);
  return a;
}

/* A program of one input recorded by `record` (which gets the abstract
 * input and returns the output), compiled. */
static spmd_x_program *recorded(const char *spec, size_t ndim, const int64_t *shape,
                                void (*record)(spmd_array *x, spmd_array **y, void *ctx), void *ctx) {
  spmd_x_program *p = NULL;
  spmd_sharding *s = NULL;
  spmd_array *x = NULL, *y = NULL;
  CHECK(spmd_x_program_create(rt, &p));
  CHECK(spmd_sharding_named_text(mesh, spec, &s));
  CHECK(spmd_x_program_input(p, s, SPMD_F32, ndim, shape, &x));
  record(x, &y, ctx);
  CHECK(spmd_x_program_output(p, y, NULL));
  CHECK(spmd_x_program_compile(p));
  spmd_array_destroy(x);
  spmd_array_destroy(y);
  spmd_sharding_destroy(s);
  return p;
}

/* Times one run of program p on x (with a wait for its output). */
static double run_once(const spmd_x_program *p, spmd_array *x) {
  spmd_array *y = NULL;
  const double t0 = now();
  CHECK(spmd_x_program_run(p, 1, (const spmd_array *const *)&x, 1, &y));
  CHECK(spmd_array_block_until_ready(y));
  const double t = now() - t0;
  spmd_array_destroy(y);
  return t;
}

/* 2 * sin(x) + 1, eagerly or recorded. */
static void sin_chain(spmd_array *x, spmd_array **y, void *ctx) {
  (void)ctx;
  spmd_array *s = NULL, *m = NULL;
  CHECK(spmd_unary(SPMD_UNARY_SIN, x, NULL, &s));
  CHECK(spmd_scalar_binary(SPMD_BINARY_MUL, 2.0, s, NULL, &m));
  CHECK(spmd_binary_scalar(SPMD_BINARY_ADD, m, 1.0, NULL, y));
  spmd_array_destroy(s);
  spmd_array_destroy(m);
}

/* Ops that cannot fuse: transposes of an (8, 2) array split over 'x',
 * there and back, kDispatchOps of them. */
enum { kDispatchOps = 64 };
static void transposes(spmd_array *x, spmd_array **y, void *ctx) {
  (void)ctx;
  const int64_t perm[2] = {1, 0};
  spmd_array *cur = x;
  for (int k = 0; k < kDispatchOps; ++k) {
    spmd_array *next = NULL;
    CHECK(spmd_transpose(cur, 2, perm, NULL, &next));
    if (cur != x) spmd_array_destroy(cur);
    cur = next;
  }
  *y = cur;
}

/* A shard_map step whose body hands its block on: what a step costs
 * beyond its body (waking each device's thread and placing the call). */
static spmd_status pass_block(spmd_ctx *c, void *ud) {
  (void)ud;
  spmd_block in = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(c, 0, &in);
  return st != SPMD_OK ? st : spmd_ctx_set_output(c, 0, &in);
}
enum { kShardMapSteps = 16 };
static void shard_map_steps(spmd_array *x, spmd_array **y, void *ctx) {
  (void)ctx;
  const char *spec = "x";
  spmd_array *cur = x;
  for (int k = 0; k < kShardMapSteps; ++k) {
    spmd_array *next = NULL;
    CHECK(spmd_shard_map_text(mesh, pass_block, NULL, 1, &cur, &spec, 1, &spec, NULL, &next));
    if (cur != x) spmd_array_destroy(cur);
    cur = next;
  }
  *y = cur;
}

/* Each of `count` chained calls timed as a recorded program and eagerly
 * (`record` on x): the medians of `reps` runs, divided by count. */
static void per_call(const char *program_name, const char *eager_name, const char *unit,
                     void (*record)(spmd_array *x, spmd_array **y, void *ctx), int count,
                     spmd_array *x, const int64_t *shape, double *tt, int reps) {
  spmd_x_program *p = recorded("x", 2, shape, record, NULL);
  for (int v = 0; v < 2; ++v) {
    for (int i = -20; i < reps; ++i) {
      double ti;
      if (v == 0) {
        ti = run_once(p, x);
      } else {
        spmd_array *r = NULL;
        const double t0 = now();
        record(x, &r, NULL);
        CHECK(spmd_array_block_until_ready(r));
        ti = now() - t0;
        spmd_array_destroy(r);
      }
      if (i >= 0) tt[i] = ti;
    }
    printf("%-34s %10.2f us (median of %d runs of %d %s)\n", v == 0 ? program_name : eager_name,
           1e6 * median(tt, reps) / count, reps, count, unit);
  }
  spmd_x_program_destroy(p);
}

static void report(const char *name, double t, double rate, const char *unit, double ref,
                   const char *ref_name) {
  if (ref > 0)
    printf("%-34s %10.3f ms %10.2f %-8s | %-18s %10.2f  ratio %.2f\n", name, 1e3 * t, rate, unit,
           ref_name, ref, rate / ref);
  else
    printf("%-34s %10.3f ms %10.2f %-8s\n", name, 1e3 * t, rate, unit);
}

#ifdef SPMD_BENCH_MODELS
/* The Layer program's products alone, as OpenBLAS (or, with `onednn`,
 * oneDNN's sgemm) runs them one at a time on all its threads: the four
 * devices' blocks of the 2x2 mesh, 128 rows each (batch 2 over 'data'), the weights split
 * over 'model': q, k, v (1024 x 512 each), the 8 heads' scores and
 * weighted values (128 x 64 x 128 and back), the output projection
 * (512 x 1024) and the MLP (1024 x 2048, 2048 x 1024). What the Layer
 * costs this machine's BLAS before any other op. */
static double layer_products_alone(double *t, int iters, int onednn) {
  enum { SHAPES = 8 };
  static const int shape[SHAPES][4] = {  /* m, n, k, batch */
      {128, 512, 1024, 1}, {128, 512, 1024, 1}, {128, 512, 1024, 1}, {128, 128, 64, 8},
      {128, 64, 128, 8},   {128, 1024, 512, 1}, {128, 2048, 1024, 1}, {128, 1024, 2048, 1}};
  float *a[4][SHAPES], *b[4][SHAPES], *c[4][SHAPES];
  for (int d = 0; d < 4; ++d)
    for (int s = 0; s < SHAPES; ++s) {
      const int m = shape[s][0], n = shape[s][1], k = shape[s][2], bt = shape[s][3];
      a[d][s] = malloc((size_t)bt * m * k * sizeof(float));
      b[d][s] = malloc((size_t)bt * k * n * sizeof(float));
      c[d][s] = malloc((size_t)bt * m * n * sizeof(float));
      for (size_t i = 0; i < (size_t)bt * m * k; ++i) a[d][s][i] = (float)(i % 7) * 0.1f;
      for (size_t i = 0; i < (size_t)bt * k * n; ++i) b[d][s][i] = (float)(i % 5) * 0.1f;
    }
  for (int it = -1; it < iters; ++it) {
    const double t0 = now();
    for (int d = 0; d < 4; ++d)
      for (int s = 0; s < SHAPES; ++s) {
        const int m = shape[s][0], n = shape[s][1], k = shape[s][2];
        for (int j = 0; j < shape[s][3]; ++j) {
          const float *aj = a[d][s] + (size_t)j * m * k, *bj = b[d][s] + (size_t)j * k * n;
          float *cj = c[d][s] + (size_t)j * m * n;
#ifdef SPMD_BENCH_ONEDNN
          if (onednn) {
            CHECK_DNNL(dnnl_sgemm('N', 'N', m, n, k, 1.0f, aj, k, bj, n, 0.0f, cj, n));
            continue;
          }
#endif
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, aj, k, bj, n, 0.0f, cj, n);
        }
      }
    if (it >= 0) t[it] = now() - t0;
  }
  for (int d = 0; d < 4; ++d)
    for (int s = 0; s < SHAPES; ++s) {
      free(a[d][s]);
      free(b[d][s]);
      free(c[d][s]);
    }
  return median(t, iters);
}

/* The seed models: the Attention+MLP Layer at the notebook's size on the
 * 2x2 ('data', 'model') mesh, and one data-parallel training step on 8
 * devices, each as one shard_map and as global ops. */
static void models(double *t, int iters) {
  const int64_t m22[2] = {2, 2};
  const char *dm[2] = {"data", "model"};
  spmd_mesh *mesh22 = NULL;
  CHECK(spmd_mesh_create(rt, 2, m22, dm, NULL, &mesh22));
  spmd_sharding *rows = NULL;
  CHECK(spmd_sharding_named_text(mesh22, "data, None", &rows));
  spmd_key key;
  CHECK(spmd_random_key(0, &key));
  const int64_t shape[3] = {2, 128, 1024};
  spmd_array *x = NULL;
  CHECK(spmd_random_normal(rows, &key, SPMD_F32, 3, shape, &x));
  seed_layer layer;
  CHECK(seed_layer_init(mesh22, 1024, 16, &layer));
  for (int v = 0; v < 2; ++v) {
    for (int i = -1; i < iters; ++i) {
      spmd_array *y = NULL;
      double t0 = now();
      CHECK(v == 0 ? seed_layer_apply(mesh22, &layer, x, &y)
                   : seed_layer_apply_auto(mesh22, &layer, x, &y));
      CHECK(spmd_array_block_until_ready(y));
      if (i >= 0) t[i] = now() - t0;
      spmd_array_destroy(y);
    }
    printf("%-34s %10.3f ms (median of %d)\n",
           v == 0 ? "Layer (2,128,1024) shard_map" : "Layer (2,128,1024) global ops",
           1e3 * median(t, iters), iters);
  }
  /* The global-ops Layer recorded once (its weights constants), then run. */
  {
    spmd_x_program *p = NULL;
    spmd_array *xa = NULL, *ya = NULL;
    spmd_sharding *rows_in = NULL;
    CHECK(spmd_x_program_create(rt, &p));
    CHECK(spmd_array_sharding(x, &rows_in));
    CHECK(spmd_x_program_input(p, rows_in, SPMD_F32, 3, shape, &xa));
    CHECK(seed_layer_apply_auto(mesh22, &layer, xa, &ya));
    CHECK(spmd_x_program_output(p, ya, NULL));
    CHECK(spmd_x_program_compile(p));
    for (int i = -1; i < iters; ++i) {
      const double ti = run_once(p, x);
      if (i >= 0) t[i] = ti;
    }
    const double program = median(t, iters);
    printf("%-34s %10.3f ms (median of %d)\n", "Layer (2,128,1024) program", 1e3 * program, iters);
    const double products = layer_products_alone(t, iters, 0);
    printf("%-34s %10.3f ms (median of %d) | program / products %.2f\n", "Layer products alone (OpenBLAS)",
           1e3 * products, iters, program / products);
#ifdef SPMD_BENCH_ONEDNN
    const double dnnl = layer_products_alone(t, iters, 1);
    printf("%-34s %10.3f ms (median of %d) | program / products %.2f\n", "Layer products alone (oneDNN)",
           1e3 * dnnl, iters, program / dnnl);
#endif
    spmd_array_destroy(xa);
    spmd_array_destroy(ya);
    spmd_sharding_destroy(rows_in);
    spmd_x_program_destroy(p);
  }
  seed_layer_destroy(&layer);
  spmd_array_destroy(x);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(mesh22);

  /* One training step, batch 32 of (x, sin x) split over 8 devices. */
  spmd_sharding *batch = NULL;
  CHECK(spmd_sharding_named_text(mesh, "x", &batch));
  const int64_t bs[2] = {32, SEED_MLP_IN};
  spmd_array *xb = NULL, *yb = NULL;
  CHECK(spmd_random_normal(batch, &key, SPMD_F32, 2, bs, &xb));
  CHECK(spmd_unary(SPMD_UNARY_SIN, xb, NULL, &yb));
  float params[SEED_MLP_PARAMS];
  CHECK(seed_mlp_init(mesh, &key, params));
  seed_trainer *tr = NULL;
  seed_ops_trainer *ops = NULL, *recorded = NULL;
  CHECK(seed_trainer_create(mesh, "x", params, 3e-4, &tr));
  CHECK(seed_ops_trainer_create(mesh, params, 3e-4, &ops));
  CHECK(seed_ops_trainer_create_recorded(rt, mesh, params, 3e-4, &recorded));
  const int steps = 200;
  double *ts = malloc(steps * sizeof *ts);
  static const char *const kinds[3] = {"training step shard_map", "training step global ops",
                                       "training step program"};
  for (int v = 0; v < 3; ++v) {
    for (int i = -10; i < steps; ++i) {
      float loss;
      double t0 = now();
      CHECK(v == 0   ? seed_trainer_step(tr, xb, yb, &loss)
            : v == 1 ? seed_ops_trainer_step(ops, xb, yb, &loss)
                     : seed_ops_trainer_step(recorded, xb, yb, &loss));
      if (i >= 0) ts[i] = now() - t0;
    }
    printf("%-34s %10.3f ms (median of %d)\n", kinds[v], 1e3 * median(ts, steps), steps);
  }
  seed_ops_trainer_destroy(recorded);
  free(ts);
  seed_trainer_destroy(tr);
  seed_ops_trainer_destroy(ops);
  spmd_array_destroy(xb);
  spmd_array_destroy(yb);
  spmd_sharding_destroy(batch);
}
#endif

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 10;
  if (iters < 3) iters = 3;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.cpu_device_count = 8;
  CHECK(spmd_runtime_create(&o, &rt));
  const int64_t m8[1] = {8};
  const char *names[1] = {"x"};
  CHECK(spmd_mesh_create(rt, 1, m8, names, NULL, &mesh));
  double *t = malloc((size_t)iters * sizeof *t);

  /* Elementwise add of two 64 MiB f32 arrays, 8 devices. */
  const int64_t big[1] = {16 << 20};
  spmd_array *a = filled("x", 1, big, 1.0f), *b = filled("x", 1, big, 0.5f);
  const double bytes = 3.0 * 64 * 1024 * 1024;
  char *src = malloc(64u << 20), *dst = malloc(64u << 20);
  memset(src, 1, 64u << 20);
  memset(dst, 0, 64u << 20);
  for (int i = 0; i < iters; ++i) {
    double t0 = now();
    memcpy(dst, src, 64u << 20);
    t[i] = now() - t0;
  }
  const double memcpy_gbs = 2.0 * 64 * 1024 * 1024 / median(t, iters) / 1e9;
  for (int i = -2; i < iters; ++i) {
    spmd_array *c = NULL;
    double t0 = now();
    CHECK(spmd_binary(SPMD_BINARY_ADD, a, b, NULL, &c));
    CHECK(spmd_array_block_until_ready(c));
    if (i >= 0) t[i] = now() - t0;
    spmd_array_destroy(c);
  }
  double tm = median(t, iters);
  report("add f32 64 MiB (read+write)", tm, bytes / tm / 1e9, "GB/s", memcpy_gbs, "memcpy 1 thread");

  /* 2 * sin(x) + 1: three ops. */
  for (int i = -2; i < iters; ++i) {
    spmd_array *s = NULL, *m = NULL, *r = NULL;
    double t0 = now();
    CHECK(spmd_unary(SPMD_UNARY_SIN, a, NULL, &s));
    CHECK(spmd_scalar_binary(SPMD_BINARY_MUL, 2.0, s, NULL, &m));
    CHECK(spmd_binary_scalar(SPMD_BINARY_ADD, m, 1.0, NULL, &r));
    CHECK(spmd_array_block_until_ready(r));
    if (i >= 0) t[i] = now() - t0;
    spmd_array_destroy(s);
    spmd_array_destroy(m);
    spmd_array_destroy(r);
  }
  tm = median(t, iters);
  report("2*sin(x)+1 f32 16 M elements", tm, (double)big[0] / tm / 1e9, "G elem/s", 0, "");
  /* The same as one fused program: its bytes (read x, write the result)
   * beside memcpy's. */
  spmd_x_program *chain = recorded("x", 1, big, sin_chain, NULL);
  for (int i = -2; i < iters; ++i) {
    const double ti = run_once(chain, a);
    if (i >= 0) t[i] = ti;
  }
  tm = median(t, iters);
  report("2*sin(x)+1 program (one pass)", tm, 2.0 * 64 * 1024 * 1024 / tm / 1e9, "GB/s", memcpy_gbs,
         "memcpy 1 thread");
  spmd_x_program_destroy(chain);
  /* jax.random.normal of the same 16 M floats, split over the 8 devices:
   * the bytes it writes against the same-run memcpy's. */
  {
    spmd_sharding *split = NULL;
    spmd_key key;
    CHECK(spmd_sharding_named_text(mesh, "x", &split));
    CHECK(spmd_random_key(0, &key));
    for (int i = -1; i < iters; ++i) {
      spmd_array *r = NULL;
      const double t0 = now();
      CHECK(spmd_random_normal(split, &key, SPMD_F32, 1, big, &r));
      CHECK(spmd_array_block_until_ready(r));
      if (i >= 0) t[i] = now() - t0;
      spmd_array_destroy(r);
    }
    tm = median(t, iters);
    report("random normal f32 16 M elements", tm, 64.0 * 1024 * 1024 / tm / 1e9, "GB/s", memcpy_gbs,
           "memcpy 1 thread");
    spmd_sharding_destroy(split);
  }
  spmd_array_destroy(a);
  spmd_array_destroy(b);
  free(src);
  free(dst);

  /* Dispatch of a tiny op on 8 devices. */
  spmd_array *x = filled("x", 1, m8, 1.0f), *y = filled("x", 1, m8, 2.0f);
  const int tiny = 2000;
  double *tt = malloc(tiny * sizeof *tt);
  for (int i = -100; i < tiny; ++i) {
    spmd_array *c = NULL;
    double t0 = now();
    CHECK(spmd_binary(SPMD_BINARY_ADD, x, y, NULL, &c));
    CHECK(spmd_array_block_until_ready(c));
    spmd_array_destroy(c);
    if (i >= 0) tt[i] = now() - t0;
  }
  printf("%-34s %10.2f us (median of %d)\n", "tiny add, 8 devices", 1e6 * median(tt, tiny), tiny);
  /* Dispatch per recorded op: a program of ops that cannot fuse, its run
   * time divided by their number, beside the same ops run eagerly; and the
   * same for trivial shard_map steps. */
  const int64_t small[2] = {8, 2};
  spmd_array *z = filled("x", 2, small, 1.0f);
  const int reps = 200;
  per_call("per op, program of transposes", "per op, the same ops eagerly", "ops", transposes, kDispatchOps, z,
           small, tt, reps);
  per_call("per step, program of shard_maps", "per step, shard_maps eagerly", "steps", shard_map_steps,
           kShardMapSteps, z, small, tt, reps);
  spmd_array_destroy(z);
  free(tt);
  spmd_array_destroy(x);
  spmd_array_destroy(y);

  /* Matmul 2048^3 f32, batch-sharded and contraction-sharded, beside the
   * fastest single sgemm of the same global size. */
  const int64_t n = 2048, sq[2] = {n, n};
  float *ha = malloc((size_t)(n * n) * sizeof *ha), *hb = malloc((size_t)(n * n) * sizeof *hb),
        *hc = malloc((size_t)(n * n) * sizeof *hc);
  for (int64_t i = 0; i < n * n; ++i) ha[i] = hb[i] = (float)((i % 17) - 8) / 8.0f;
  const double flop = 2.0 * (double)n * n * n;
  for (int i = -1; i < iters; ++i) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, ha, (int)n,
                hb, (int)n, 0.0f, hc, (int)n);
    if (i >= 0) t[i] = now() - t0;
  }
  double sgemm = flop / median(t, iters) / 1e9;
  const char *best = "OpenBLAS sgemm";
  printf("%-34s %10.3f ms %10.2f GFLOP/s\n", "OpenBLAS sgemm 2048^3 (all threads)", 1e3 * median(t, iters), sgemm);
#ifdef SPMD_BENCH_ONEDNN
  for (int i = -1; i < iters; ++i) {
    double t0 = now();
    CHECK_DNNL(dnnl_sgemm('N', 'N', n, n, n, 1.0f, ha, n, hb, n, 0.0f, hc, n));
    if (i >= 0) t[i] = now() - t0;
  }
  const double dnnl = flop / median(t, iters) / 1e9;
  printf("%-34s %10.3f ms %10.2f GFLOP/s\n", "oneDNN sgemm 2048^3 (all threads)", 1e3 * median(t, iters), dnnl);
  if (dnnl > sgemm) {
    sgemm = dnnl;
    best = "oneDNN sgemm";
  }
#endif
  static const char *const cases[][3] = {
      {"matmul 2048^3 batch-sharded", "x, None", ""},
      {"matmul 2048^3 contraction-sharded", "None, x", "x, None"},
  };
  for (int c = 0; c < 2; ++c) {
    spmd_array *ma = filled(cases[c][1], 2, sq, 0.125f), *mb = filled(cases[c][2], 2, sq, 0.125f);
    for (int i = -1; i < iters; ++i) {
      spmd_array *r = NULL;
      double t0 = now();
      CHECK(spmd_matmul(ma, mb, NULL, &r));
      CHECK(spmd_array_block_until_ready(r));
      if (i >= 0) t[i] = now() - t0;
      spmd_array_destroy(r);
    }
    tm = median(t, iters);
    report(cases[c][0], tm, flop / tm / 1e9, "GFLOP/s", sgemm, best);
    spmd_array_destroy(ma);
    spmd_array_destroy(mb);
  }
  free(ha);
  free(hb);
  free(hc);
#ifdef SPMD_BENCH_MODELS
  models(t, iters);
#endif
  free(t);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  return 0;
}
