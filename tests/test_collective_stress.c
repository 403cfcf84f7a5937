/* Stress of shard_map collectives and persistent collectives: seeded random
 * programs of mixed collectives (every kind, sizes on both sides of the
 * small all-reduce threshold, tiled and not, over single axes and tuples)
 * on 2x4, 2x2x2, 8 and 4x2 meshes and on meshes over a subset or a
 * permutation of the devices, with group members delayed by 0-500 us at
 * seeded steps so groups run at different speeds. Every result is checked
 * exactly against values computed from the formula that made the inputs.
 * Results never depend on timing: only which thread waits changes. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "collective_test_util.h"

/* ---- a small deterministic generator ---- */

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

typedef struct {
  uint64_t s;
} rng_t;

static uint32_t rng_next(rng_t *r) { return (uint32_t)(mix64(r->s++) >> 32); }
static uint32_t rng_below(rng_t *r, uint32_t n) { return rng_next(r) % n; }

/* Input element i of the block at mesh position `pos` in step `step`:
 * small integers (exact in f32 and in sums of 8), distinct per step so a
 * result from another step or peer shows. */
static int32_t value(uint64_t seed, int pos, int step, int64_t i) {
  return (int32_t)(step * 4096 +
                   (int32_t)(mix64(seed ^ ((uint64_t)pos << 40) ^ ((uint64_t)step << 20) ^
                                   (uint64_t)i) % 4096));
}

/* ---- meshes ---- */

typedef struct {
  const char *label;
  size_t ndim;
  int64_t shape[3];
  int devices[8]; /* device ids in mesh order; devices[0] < 0: 0, 1, ... */
  const char *out_spec; /* every axis: one block per device */
  const char *const *axes;  /* axes arguments to draw from */
  size_t naxes;
} mesh_desc;

static const char *const axes2[] = {"x", "y", "(x, y)", "(y, x)"};
static const char *const axes3[] = {"x", "y", "z", "(x, y)", "(z, x)", "(y, z, x)", "(x, y, z)"};
static const char *const axes1[] = {"x"};

static const mesh_desc meshes[] = {
    {"2x4", 2, {2, 4, 1}, {-1}, "(x, y)", axes2, 4},
    {"2x2x2", 3, {2, 2, 2}, {-1}, "(x, y, z)", axes3, 7},
    {"8", 1, {8, 1, 1}, {-1}, "x", axes1, 1},
    {"4x2", 2, {4, 2, 1}, {-1}, "(x, y)", axes2, 4},
    {"2x2 on devices 5,2,7,0", 2, {2, 2, 1}, {5, 2, 7, 0}, "(x, y)", axes2, 4},
    {"2x4 permuted", 2, {2, 4, 1}, {3, 6, 0, 5, 7, 1, 4, 2}, "(x, y)", axes2, 4},
    {"2x2x2 permuted", 3, {2, 2, 2}, {7, 6, 5, 4, 3, 2, 1, 0}, "(x, y, z)", axes3, 7},
};
enum { NMESHES = sizeof meshes / sizeof meshes[0] };

static spmd_runtime *rt;
static spmd_mesh *mesh_handles[NMESHES];

static int setup(void **state) {
  (void)state;
  rt = test_runtime(8);
  static const char *const names[] = {"x", "y", "z"};
  for (size_t k = 0; k < NMESHES; ++k)
    assert_ok(spmd_mesh_create(rt, meshes[k].ndim, meshes[k].shape, names,
                               meshes[k].devices[0] < 0 ? NULL : meshes[k].devices,
                               &mesh_handles[k]));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (size_t k = 0; k < NMESHES; ++k) spmd_mesh_destroy(mesh_handles[k]);
  spmd_runtime_destroy(rt);
  return 0;
}

/* ---- programs ---- */

enum { MAX_STEPS = 48 };

typedef struct {
  int kind;       /* OP_* */
  int axes;       /* index into the mesh's axes */
  int dtype_f32;  /* all-reduces: f32 instead of i32 */
  int64_t rows, cols;
  int variant;    /* kind-specific layout choice */
  int64_t shift;  /* ppermute: ring shift; pairs with dropped % 3 == 1 left out */
  int fail_pos;   /* error programs: the mesh position that misbehaves here, -1 none */
  int fail_how;
} step_t;

typedef struct {
  const mesh_desc *mesh;
  uint64_t seed;
  int nsteps;
  step_t steps[MAX_STEPS];
  int delay_percent; /* chance of a delay per member and step */
} program_t;

/* Block sizes: both sides of the 32 KiB small all-reduce threshold (8192
 * four-byte elements), uneven ones included. */
static const int64_t sizes[][2] = {{1, 1},  {1, 7},   {3, 5},    {8, 8},    {2, 500},
                                   {16, 512}, {8, 1024}, {8, 1025}, {24, 600}, {7, 2000}};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static void make_program(program_t *p, const mesh_desc *m, uint64_t seed, int nsteps) {
  memset(p, 0, sizeof *p);
  p->mesh = m;
  p->seed = seed;
  p->nsteps = nsteps;
  p->delay_percent = 25;
  rng_t r = {seed * 0x100000001b3ull + 1};
  for (int s = 0; s < nsteps; ++s) {
    step_t *t = &p->steps[s];
    t->kind = (int)rng_below(&r, 8);
    t->axes = (int)rng_below(&r, (uint32_t)m->naxes);
    t->dtype_f32 = (int)rng_below(&r, 2);
    const int64_t *sz = sizes[rng_below(&r, NSIZES)];
    t->rows = sz[0];
    t->cols = sz[1];
    t->variant = (int)rng_below(&r, 4);
    t->shift = 1 + (int64_t)rng_below(&r, 7);
    t->fail_pos = -1;
  }
}

/* The group of a device for an axes argument: its rank and the mesh
 * positions of its members in rank order. */
typedef struct {
  int n, rank;
  int pos[8];
} group_t;

static int axis_id(char c) { return c - 'x'; }

static void group_of(const mesh_desc *m, const int64_t *coords, const char *axes, group_t *g) {
  int ax[3], na = 0;
  for (const char *c = axes; *c; ++c)
    if (*c >= 'x' && *c <= 'z') ax[na++] = axis_id(*c);
  g->n = 1;
  g->rank = 0;
  for (int k = 0; k < na; ++k) {
    g->n *= (int)m->shape[ax[k]];
    g->rank = g->rank * (int)m->shape[ax[k]] + (int)coords[ax[k]];
  }
  for (int r = 0; r < g->n; ++r) {
    int64_t c[3] = {coords[0], coords[1], coords[2]};
    int rest = r;
    for (int k = na; k-- > 0;) {
      c[ax[k]] = rest % m->shape[ax[k]];
      rest /= (int)m->shape[ax[k]];
    }
    int pos = 0;
    for (size_t d = 0; d < m->ndim; ++d) pos = pos * (int)m->shape[d] + (int)c[d];
    g->pos[r] = pos;
  }
}

/* Which member a ppermute with this shift sends to `dst` from, -1 none. */
static int permute_source(const step_t *t, int n, int dst) {
  const int src = (int)(((int64_t)dst - t->shift % n + n) % n);
  return src % 3 == 1 && n > 2 ? -1 : src;
}

static double block_value(const program_t *p, int pos, int step, int64_t i) {
  return value(p->seed, pos, step, i);
}

/* Runs one step on this device and returns how many result elements
 * differ from the expected ones; -1 if the collective failed. */
static int64_t run_step(spmd_ctx *ctx, const program_t *p, int s, int pos, const int64_t *coords) {
  const step_t *t = &p->steps[s];
  const mesh_desc *m = p->mesh;
  const char *axes = m->axes[t->axes];
  group_t g;
  group_of(m, coords, axes, &g);
  const int n = g.n, me = g.rank;
  int64_t R = t->rows, C = t->cols;
  /* Shapes the non-tiled and scatter variants need. */
  if ((t->kind == OP_PSUM_SCATTER || t->kind == OP_ALL_TO_ALL) && !(t->variant & 1)) R = n;
  const int reduce = t->kind <= OP_PMIN;
  const spmd_dtype dt = reduce && t->dtype_f32 ? SPMD_F32 : SPMD_I32;
  const int64_t shape[2] = {R, C};
  spmd_block in = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  if (spmd_ctx_alloc(ctx, dt, 2, shape, &in)) return -1;
  for (int64_t i = 0; i < R * C; ++i) set_elem(dt, in.data, (size_t)i, block_value(p, pos, s, i));
  const int tiled = (t->variant & 1) != 0;
  spmd_status st;
  int64_t pairs[16];
  size_t npairs = 0;
  switch (t->kind) {
    case OP_PSUM: st = spmd_ctx_psum(ctx, &in, axes, &out); break;
    case OP_PMEAN: st = spmd_ctx_pmean(ctx, &in, axes, &out); break;
    case OP_PMAX: st = spmd_ctx_pmax(ctx, &in, axes, &out); break;
    case OP_PMIN: st = spmd_ctx_pmin(ctx, &in, axes, &out); break;
    case OP_ALL_GATHER:
      st = spmd_ctx_all_gather(ctx, &in, axes, (t->variant >> 1) & 1, t->variant & 1, &out);
      break;
    case OP_PSUM_SCATTER:
      st = spmd_ctx_psum_scatter(ctx, &in, axes, tiled ? (t->variant >> 1) & 1 : 0, tiled, &out);
      break;
    case OP_ALL_TO_ALL:
      st = spmd_ctx_all_to_all(ctx, &in, axes, 0, (t->variant >> 1) & 1, tiled, &out);
      break;
    default:
      for (int d = 0; d < n; ++d) {
        const int src = permute_source(t, n, d);
        if (src < 0) continue;
        pairs[2 * npairs] = src;
        pairs[2 * npairs + 1] = d;
        ++npairs;
      }
      st = spmd_ctx_ppermute(ctx, &in, axes, npairs, pairs, &out);
      break;
  }
  if (st != SPMD_OK) return -1;

  /* Expected values, element by element of the result. */
  int64_t wrong = 0, count = 1;
  for (size_t d = 0; d < out.ndim; ++d) count *= out.shape[d];
#define X(peer, r, c) block_value(p, g.pos[(peer)], s, (int64_t)(r) * C + (c))
  switch (t->kind) {
    case OP_PSUM:
    case OP_PMEAN:
    case OP_PMAX:
    case OP_PMIN: {
      const spmd_dtype odt = t->kind == OP_PMEAN ? SPMD_F32 : dt;
      if (out.dtype != odt || count != R * C) return R * C + 1;
      for (int64_t i = 0; i < R * C; ++i) {
        int64_t acc = t->kind == OP_PSUM || t->kind == OP_PMEAN ? 0 : (int64_t)X(0, 0, i);
        for (int q = 0; q < n; ++q) {
          const int64_t v = (int64_t)X(q, 0, i);
          if (t->kind == OP_PSUM || t->kind == OP_PMEAN) acc += v;
          else if (t->kind == OP_PMAX) acc = v > acc ? v : acc;
          else acc = v < acc ? v : acc;
        }
        const double want = t->kind == OP_PMEAN ? (double)((float)acc / (float)n) : (double)acc;
        wrong += elem(odt, out.data, (size_t)i) != want;
      }
      break;
    }
    case OP_ALL_GATHER: {
      /* Tiled or not, the flat layout is the same: along axis 0 peer-major,
       * along axis 1 row-major with peers inside a row. */
      if (count != n * R * C) return n * R * C + 1;
      const int axis1 = (t->variant >> 1) & 1;
      for (int q = 0; q < n; ++q)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < C; ++c) {
            const int64_t o = axis1 ? (r * n + q) * C + c : (q * R + r) * C + c;
            wrong += elem(SPMD_I32, out.data, (size_t)o) != X(q, r, c);
          }
      break;
    }
    case OP_PSUM_SCATTER: {
      const int dim1 = tiled && ((t->variant >> 1) & 1);
      const int64_t D = dim1 ? C : R, chunk = tiled ? (D + n - 1) / n : 1;
      const int64_t lo = me * chunk < D ? me * chunk : D;
      const int64_t len = (lo + chunk < D ? lo + chunk : D) - lo;
      const int64_t rows = dim1 ? R : len, cols = dim1 ? len : C;
      if (count != rows * cols) return rows * cols + 1;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          double want = 0;
          for (int q = 0; q < n; ++q) want += dim1 ? X(q, r, lo + c) : X(q, lo + r, c);
          wrong += elem(SPMD_I32, out.data, (size_t)(r * cols + c)) != want;
        }
      break;
    }
    case OP_ALL_TO_ALL: {
      const int concat1 = (t->variant >> 1) & 1;
      const int64_t chunk = tiled ? (R + n - 1) / n : 1;
      const int64_t lo = me * chunk < R ? me * chunk : R;
      const int64_t len = (lo + chunk < R ? lo + chunk : R) - lo;
      if (count != n * len * C) return n * len * C + 1;
      for (int q = 0; q < n; ++q)
        for (int64_t r = 0; r < len; ++r)
          for (int64_t c = 0; c < C; ++c) {
            int64_t o;
            if (tiled) o = concat1 ? r * n * C + q * C + c : (q * len + r) * C + c;
            else o = concat1 ? c * n + q : q * C + c; /* [C, n] or [n, C] */
            wrong += elem(SPMD_I32, out.data, (size_t)o) != X(q, lo + r, c);
          }
      break;
    }
    default: {
      if (count != R * C) return R * C + 1;
      const int src = permute_source(t, n, me);
      for (int64_t i = 0; i < R * C; ++i)
        wrong += elem(SPMD_I32, out.data, (size_t)i) != (src < 0 ? 0.0 : X(src, 0, i));
      break;
    }
  }
#undef X
  return wrong;
}

static void coords_of(spmd_ctx *ctx, const mesh_desc *m, int64_t *coords, int *pos) {
  static const char *const names[] = {"x", "y", "z"};
  coords[0] = coords[1] = coords[2] = 0;
  *pos = 0;
  for (size_t d = 0; d < m->ndim; ++d) {
    spmd_ctx_axis_index(ctx, names[d], &coords[d]);
    *pos = *pos * (int)m->shape[d] + (int)coords[d];
  }
}

/* Seeded delay of member `pos` before step `s`: 0-500 us, or none. */
static void maybe_delay(const program_t *p, int s, int pos) {
  const uint64_t h = mix64(p->seed * 31 + (uint64_t)s * 8 + (uint64_t)pos + 0x5eed);
  if ((int)(h % 100) < p->delay_percent) usleep((useconds_t)((h >> 8) % 501));
}

/* Output 0: per device, the number of wrong elements (i32, one per device).
 * Output 1: their psum over every axis, replicated (checked by check_rep). */
static spmd_status program_fn(spmd_ctx *ctx, void *ud) {
  const program_t *p = ud;
  const mesh_desc *m = p->mesh;
  int64_t coords[3];
  int pos;
  coords_of(ctx, m, coords, &pos);
  int64_t wrong = 0;
  for (int s = 0; s < p->nsteps; ++s) {
    maybe_delay(p, s, pos);
    const int64_t w = run_step(ctx, p, s, pos, coords);
    if (w < 0) {
      char why[512];
      snprintf(why, sizeof why, "seed %llu, step %d: %s", (unsigned long long)p->seed, s,
               spmd_last_error());
      return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, why);
    }
    wrong += w;
  }
  const int64_t one[1] = {1};
  spmd_block b = SPMD_BLOCK_INIT, total = SPMD_BLOCK_INIT;
  if (spmd_ctx_alloc(ctx, SPMD_I32, 1, one, &b)) return 1;
  *(int32_t *)b.data = (int32_t)wrong;
  if (spmd_ctx_set_output(ctx, 0, &b)) return 1;
  spmd_block scalar = b;
  scalar.ndim = 0;
  const char *all = m->ndim == 1 ? "x" : m->ndim == 2 ? "(x, y)" : "(x, y, z)";
  if (spmd_ctx_psum(ctx, &scalar, all, &total)) return 1;
  return spmd_ctx_set_output(ctx, 1, &total);
}

/* Runs a program and checks that no device saw a wrong element; returns
 * the status of the shard_map. */
static spmd_status run_program(spmd_mesh *mesh, program_t *p, int64_t timeout_ms) {
  const char *out_specs[2] = {p->mesh->out_spec, ""};
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = 1;
  o.timeout_ms = timeout_ms;
  spmd_array *out[2] = {NULL, NULL};
  const spmd_status st =
      spmd_shard_map_text(mesh, program_fn, p, 0, NULL, NULL, 2, out_specs, &o, out);
  if (st != SPMD_OK) return st;
  int32_t wrong[8] = {0}, total = -1;
  size_t n = 1;
  for (size_t d = 0; d < p->mesh->ndim; ++d) n *= (size_t)p->mesh->shape[d];
  assert_ok(spmd_array_to_host(out[0], wrong, n * sizeof(int32_t)));
  assert_ok(spmd_array_to_host(out[1], &total, sizeof total));
  for (size_t d = 0; d < n; ++d)
    if (wrong[d] != 0)
      fail_msg("mesh %s, seed %llu: position %zu found %d wrong elements", p->mesh->label,
               (unsigned long long)p->seed, d, wrong[d]);
  assert_int_equal(total, 0);
  spmd_array_destroy(out[0]);
  spmd_array_destroy(out[1]);
  return SPMD_OK;
}

/* ---- tests ---- */

/* Back-to-back shard_maps on one runtime: several seeded programs on every
 * mesh, the meshes taking turns. */
static void random_programs_on_every_mesh(void **state) {
  (void)state;
  static program_t p;
  for (int round = 0; round < 3; ++round)
    for (size_t k = 0; k < NMESHES; ++k) {
      make_program(&p, &meshes[k], 1000 + (uint64_t)round * 100 + k, 32);
      assert_ok(run_program(mesh_handles[k], &p, 0));
    }
}

/* Long runs of small all-reduces (the staged path, no final barrier) and
 * large ones, over overlapping groups, with heavy skew: the shape that
 * found the last bug, at every mesh. */
static void all_reduce_runs_under_heavy_skew(void **state) {
  (void)state;
  static program_t p;
  for (size_t k = 0; k < NMESHES; ++k) {
    make_program(&p, &meshes[k], 7000 + k, MAX_STEPS);
    p.delay_percent = 40;
    rng_t r = {k + 99};
    for (int s = 0; s < p.nsteps; ++s) {
      step_t *t = &p.steps[s];
      t->kind = (int)rng_below(&r, 4); /* psum, pmean, pmax, pmin */
      const int64_t *sz = sizes[rng_below(&r, 3) == 0 ? 7 + rng_below(&r, 3) : rng_below(&r, 7)];
      t->rows = sz[0];
      t->cols = sz[1];
    }
    assert_ok(run_program(mesh_handles[k], &p, 0));
  }
}

typedef struct {
  int first_mesh;
  uint64_t seed;
  int rounds;
  spmd_status status;
} thread_arg;

static void *caller_thread(void *v) {
  thread_arg *a = v;
  program_t *p = malloc(sizeof *p);
  a->status = SPMD_OK;
  for (int i = 0; i < a->rounds && a->status == SPMD_OK; ++i) {
    const size_t k = (size_t)(a->first_mesh + i) % NMESHES;
    make_program(p, &meshes[k], a->seed + (uint64_t)i, 16);
    a->status = run_program(mesh_handles[k], p, 0);
  }
  free(p);
  return NULL;
}

/* Two threads call shard_map on one runtime at once, on different meshes
 * (and the same one): the calls are serialised and each gets its own
 * results. */
static void two_threads_share_one_runtime(void **state) {
  (void)state;
  thread_arg a[2] = {{0, 20000, 8, SPMD_OK}, {3, 30000, 8, SPMD_OK}};
  pthread_t t[2];
  for (int i = 0; i < 2; ++i) assert_int_equal(pthread_create(&t[i], NULL, caller_thread, &a[i]), 0);
  for (int i = 0; i < 2; ++i) assert_int_equal(pthread_join(t[i], NULL), 0);
  for (int i = 0; i < 2; ++i) assert_int_equal(a[i].status, SPMD_OK);
}

/* ---- persistent collectives ---- */

typedef struct {
  spmd_collective_kind kind;
  const char *in_spec, *axes;
  int64_t shape[2];
  int tiled;
  int64_t axis, concat;
} pc_desc;

/* Global value of element (i, j) in execution e. */
static int32_t pc_value(int e, int64_t i, int64_t j) {
  return (int32_t)(e * 4096 + (int32_t)(mix64(((uint64_t)e << 40) ^ ((uint64_t)i << 20) ^
                                              (uint64_t)j) % 4096));
}

/* The result a persistent collective on the 2x4 mesh must give, computed
 * from the global input through the blocks of its input spec. Only the
 * layouts used below: in_spec "(x, y)" or "y" or "x" on dimension 0. */
static void pc_expected(const pc_desc *d, int e, int32_t *want, int64_t *wshape) {
  const int64_t R = d->shape[0], C = d->shape[1];
  /* Blocks along dimension 0; the group is over d->axes. */
  const int both = strcmp(d->in_spec, "(x, y)") == 0;
  const int split_y = both || strcmp(d->in_spec, "y") == 0;
  const int nblocks = both ? 8 : split_y ? 4 : 2;
  const int64_t br = R / nblocks;
  /* All collectives below run over 'y' (n = 4) with the x-blocks (if any)
   * independent; results are laid out over dimension 0 as the output spec
   * says, so the global result is a stack of per-x-row results. */
  const int n = 4, xrows = both ? 2 : 1;
  const int64_t rows_per_x = R / xrows;
  int64_t orow = 0;
  for (int x = 0; x < xrows; ++x) {
    const int64_t base = x * rows_per_x; /* block (x, y) starts at base + y*br */
    switch (d->kind) {
      case SPMD_COLLECTIVE_PSUM:
      case SPMD_COLLECTIVE_PMAX:
        /* replicated over y: one block of br rows */
        for (int64_t r = 0; r < br; ++r)
          for (int64_t c = 0; c < C; ++c) {
            int64_t acc = d->kind == SPMD_COLLECTIVE_PSUM ? 0 : INT32_MIN;
            for (int q = 0; q < n; ++q) {
              const int64_t v = pc_value(e, base + q * br + r, c);
              acc = d->kind == SPMD_COLLECTIVE_PSUM ? acc + v : (v > acc ? v : acc);
            }
            want[(orow + r) * C + c] = (int32_t)acc;
          }
        orow += br;
        break;
      case SPMD_COLLECTIVE_ALL_GATHER: /* tiled on dim 0: the x-row itself */
        for (int64_t r = 0; r < rows_per_x; ++r)
          for (int64_t c = 0; c < C; ++c) want[(orow + r) * C + c] = pc_value(e, base + r, c);
        orow += rows_per_x;
        break;
      case SPMD_COLLECTIVE_PSUM_SCATTER: /* tiled dim 0: sum of blocks, chunk y at y */
        for (int64_t r = 0; r < br; ++r)
          for (int64_t c = 0; c < C; ++c) {
            int64_t acc = 0;
            for (int q = 0; q < n; ++q) acc += pc_value(e, base + q * br + r, c);
            want[(orow + r) * C + c] = (int32_t)acc;
          }
        orow += br;
        break;
      case SPMD_COLLECTIVE_ALL_TO_ALL: { /* tiled split 0 concat 0 */
        const int64_t len = br / n;
        for (int y = 0; y < n; ++y)     /* the result block of member y */
          for (int q = 0; q < n; ++q)   /* chunk y of member q */
            for (int64_t r = 0; r < len; ++r)
              for (int64_t c = 0; c < C; ++c)
                want[(orow + y * br + q * len + r) * C + c] =
                    pc_value(e, base + q * br + y * len + r, c);
        orow += n * br;
        break;
      }
      default: /* ppermute: block y gets block y-1 */
        for (int y = 0; y < n; ++y)
          for (int64_t r = 0; r < br; ++r)
            for (int64_t c = 0; c < C; ++c)
              want[(orow + y * br + r) * C + c] = pc_value(e, base + ((y + 3) % 4) * br + r, c);
        orow += n * br;
        break;
    }
  }
  wshape[0] = orow;
  wshape[1] = C;
}

static const int64_t ring4[8] = {0, 1, 1, 2, 2, 3, 3, 0};

static const pc_desc pcs[] = {
    {SPMD_COLLECTIVE_PSUM, "(x, y)", "y", {16, 8}, 0, 0, 0},     /* small, inline */
    {SPMD_COLLECTIVE_PSUM, "(x, y)", "y", {64, 1024}, 0, 0, 0},  /* large, pool */
    {SPMD_COLLECTIVE_PMAX, "(x, y)", "y", {8, 3000}, 0, 0, 0},
    {SPMD_COLLECTIVE_ALL_GATHER, "(x, y)", "y", {32, 1500}, 1, 0, 0},
    {SPMD_COLLECTIVE_PSUM_SCATTER, "(x, y)", "y", {64, 600}, 1, 0, 0},
    {SPMD_COLLECTIVE_ALL_TO_ALL, "(x, y)", "y", {64, 700}, 1, 0, 0},
    {SPMD_COLLECTIVE_PPERMUTE, "(x, y)", "y", {16, 2100}, 0, 0, 0},
    {SPMD_COLLECTIVE_PSUM, "(x, y)", "y", {8, 4}, 0, 0, 0},
};
enum { NPCS = sizeof pcs / sizeof pcs[0] };

static spmd_array *pc_input(const pc_desc *d, int e) {
  const int64_t n = d->shape[0] * d->shape[1];
  int32_t *h = malloc((size_t)n * sizeof *h);
  for (int64_t i = 0; i < d->shape[0]; ++i)
    for (int64_t j = 0; j < d->shape[1]; ++j) h[i * d->shape[1] + j] = pc_value(e, i, j);
  spmd_array *a = test_put(mesh_handles[0], d->in_spec, SPMD_I32, 2, d->shape, h);
  free(h);
  return a;
}

static void pc_check(const pc_desc *d, int e, const spmd_array *out) {
  int64_t n = d->shape[0] * d->shape[1] * 8, wshape[2];
  int32_t *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
  pc_expected(d, e, want, wshape);
  const size_t bytes = (size_t)(wshape[0] * wshape[1]) * sizeof(int32_t);
  assert_ok(spmd_array_to_host(out, got, bytes));
  for (int64_t i = 0; i < wshape[0] * wshape[1]; ++i)
    if (got[i] != want[i])
      fail_msg("persistent kind %d, execution %d: element %lld is %d, expected %d", d->kind, e,
               (long long)i, got[i], want[i]);
  free(want);
  free(got);
}

/* Every persistent collective executed many times in a row (into one
 * output and into new ones) on fresh inputs, interleaved with shard_map
 * programs on the same runtime; once on the worker pool and once on the
 * device threads (SPMD_COLLECTIVE_THREADS=device). */
static void persistent_runs(int device_threads) {
  if (device_threads) setenv("SPMD_COLLECTIVE_THREADS", "device", 1);
  static program_t p;
  spmd_collective *c[NPCS];
  spmd_array *into[NPCS];
  enum { NIN = 3 };
  spmd_array *ins[NPCS][NIN];
  for (int k = 0; k < NPCS; ++k) {
    spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
    o.tiled = pcs[k].tiled;
    o.axis = pcs[k].axis;
    o.concat_axis = pcs[k].concat;
    if (pcs[k].kind == SPMD_COLLECTIVE_PPERMUTE) {
      o.npairs = 4;
      o.pairs = ring4;
    }
    spmd_sharding *s = test_sharding(mesh_handles[0], pcs[k].in_spec);
    assert_ok(spmd_collective_create(s, pcs[k].kind, pcs[k].axes, SPMD_I32, 2, pcs[k].shape, &o,
                                     &c[k]));
    spmd_sharding_destroy(s);
    for (int e = 0; e < NIN; ++e) ins[k][e] = pc_input(&pcs[k], e);
    assert_ok(spmd_collective_execute(c[k], ins[k][0], &into[k]));
  }
  for (int round = 0; round < 12; ++round) {
    for (int k = 0; k < NPCS; ++k) {
      /* Several executions in a row, each checked. */
      for (int rep = 0; rep < 3; ++rep) {
        const int e = (round + rep + k) % NIN;
        if (rep == 1) {
          spmd_array *o = NULL;
          assert_ok(spmd_collective_execute(c[k], ins[k][e], &o));
          pc_check(&pcs[k], e, o);
          spmd_array_destroy(o);
        } else {
          assert_ok(spmd_collective_execute_into(c[k], ins[k][e], into[k]));
          pc_check(&pcs[k], e, into[k]);
        }
      }
    }
    if (round % 3 == 0) {
      const size_t m = (size_t)round / 3 % NMESHES;
      make_program(&p, &meshes[m], 40000 + (uint64_t)round + 50 * (uint64_t)device_threads, 12);
      assert_ok(run_program(mesh_handles[m], &p, 0));
    }
  }
  for (int k = 0; k < NPCS; ++k) {
    for (int e = 0; e < NIN; ++e) spmd_array_destroy(ins[k][e]);
    spmd_array_destroy(into[k]);
    spmd_collective_destroy(c[k]);
  }
  if (device_threads) unsetenv("SPMD_COLLECTIVE_THREADS");
}

static void persistent_on_the_pool_interleaved_with_shard_maps(void **state) {
  (void)state;
  persistent_runs(0);
}

static void persistent_on_device_threads_interleaved_with_shard_maps(void **state) {
  (void)state;
  persistent_runs(1);
}

/* ---- failures followed by correct calls ---- */

enum { FAIL_RETURN_EARLY, FAIL_CALLBACK_ERROR, FAIL_WRONG_SHAPE, FAIL_NEVER_ARRIVES, FAIL_KINDS };

/* Like program_fn, but the member at fail_pos misbehaves at step fail_step. */
typedef struct {
  program_t prog;
  int fail_step, fail_pos, fail_how;
} failing_t;

static spmd_status failing_fn(spmd_ctx *ctx, void *ud) {
  const failing_t *f = ud;
  const program_t *p = &f->prog;
  int64_t coords[3];
  int pos;
  coords_of(ctx, p->mesh, coords, &pos);
  for (int s = 0; s < p->nsteps; ++s) {
    maybe_delay(p, s, pos);
    if (s == f->fail_step && pos == f->fail_pos) {
      switch (f->fail_how) {
        case FAIL_RETURN_EARLY: return SPMD_OK;
        case FAIL_CALLBACK_ERROR: return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "planned failure");
        case FAIL_WRONG_SHAPE: {
          /* A psum of a block no peer has: every member gets the mismatch. */
          const int64_t shape[1] = {3};
          spmd_block b = SPMD_BLOCK_INIT, o = SPMD_BLOCK_INIT;
          if (spmd_ctx_alloc(ctx, SPMD_I32, 1, shape, &b)) return 1;
          spmd_ctx_psum(ctx, &b, p->mesh->axes[p->steps[s].axes], &o);
          return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "after the mismatch");
        }
        default: /* waits past the timeout, then leaves */
          usleep(30000);
          return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "late");
      }
    }
    if (run_step(ctx, p, s, pos, coords) < 0)
      return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "a collective failed");
  }
  return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "no failure happened");
}

/* A failure of every kind, at a seeded step and device, in a shard_map;
 * then a correct program on the same mesh gives correct results. */
static void failures_then_correct_calls(void **state) {
  (void)state;
  static failing_t f;
  static program_t p;
  rng_t r = {4242};
  for (int i = 0; i < 2 * FAIL_KINDS; ++i) {
    const size_t k = (size_t)i % NMESHES;
    const mesh_desc *m = &meshes[k];
    make_program(&f.prog, m, 50000 + (uint64_t)i, 10);
    int n = 1;
    for (size_t d = 0; d < m->ndim; ++d) n *= (int)m->shape[d];
    f.fail_how = i % FAIL_KINDS;
    f.fail_step = (int)rng_below(&r, 10);
    f.fail_pos = (int)rng_below(&r, (uint32_t)n);
    if (f.fail_how == FAIL_WRONG_SHAPE) f.prog.steps[f.fail_step].kind = OP_PSUM;
    const char *out_specs[1] = {m->out_spec};
    spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
    o.timeout_ms = f.fail_how == FAIL_NEVER_ARRIVES ? 5 : 0;
    spmd_array *out = NULL;
    const spmd_status st =
        spmd_shard_map_text(mesh_handles[k], failing_fn, &f, 0, NULL, NULL, 1, out_specs, &o, &out);
    if (st == SPMD_OK) fail_msg("failure kind %d on mesh %s succeeded", f.fail_how, m->label);
    assert_null(out);
    if (f.fail_how == FAIL_WRONG_SHAPE && st != SPMD_ERR_INVALID_ARGUMENT &&
        st != SPMD_ERR_CALLBACK)
      fail_msg("mismatch gave %s: %s", spmd_status_string(st), spmd_last_error());
    make_program(&p, m, 60000 + (uint64_t)i, 16);
    assert_ok(run_program(mesh_handles[k], &p, 0));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_programs_on_every_mesh),
      cmocka_unit_test(all_reduce_runs_under_heavy_skew),
      cmocka_unit_test(two_threads_share_one_runtime),
      cmocka_unit_test(persistent_on_the_pool_interleaved_with_shard_maps),
      cmocka_unit_test(persistent_on_device_threads_interleaved_with_shard_maps),
      cmocka_unit_test(failures_then_correct_calls),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
