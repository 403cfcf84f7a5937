/* spmd-bench: bandwidth and latency of libspmd's collectives, in the style
 * of nccl-tests. Each collective is planned once (spmd_collective_create)
 * and executed into a preallocated output; results are checked; a memcpy of
 * the same bytes by the same number of threads is timed in the same run for
 * comparison. Run with -h for the options and the definitions. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spmd/spmd.h"

static void usage(FILE *f) {
  fprintf(f,
"usage: spmd-bench [options]\n"
"\n"
"  -o OPS     collectives, comma separated: all_gather, all_reduce,\n"
"             reduce_scatter, all_to_all, ppermute, or all (default all)\n"
"  -b SIZE    smallest size in bytes (default 8); K, M, G suffixes\n"
"  -e SIZE    largest size in bytes (default 64M)\n"
"  -f FACTOR  size multiplication factor (default 2)\n"
"  -n ITERS   timed iterations per size (default 20)\n"
"  -w ITERS   warm-up iterations per size (default 5)\n"
"  -g N       devices of the runtime (default 8); SPMD_PLATFORM picks the\n"
"             platform (cpu, or sim to check results on the sim platform)\n"
"  -m SHAPE   mesh shape, e.g. 8 or 2x4 (default: one axis of all devices)\n"
"             axes are named x, y, z, w in order\n"
"  -a AXES    mesh axes the collective runs over: x or (x,y) (default all)\n"
"  -d TYPE    float, double, half, bfloat16, int32, int64, uint8, bool\n"
"             (default float)\n"
"  -c 0|1     check results (default 1)\n"
"  -t MS      rendezvous timeout in ms (default 60000)\n"
"  -s 0|1     1: run each collective inside spmd_shard_map (a thread per\n"
"             device, rendezvous by barriers) instead of a persistent\n"
"             spmd_collective on the worker pool (default 0)\n"
"  -T N       worker threads of the runtime, which run the collectives,\n"
"             and threads of the memcpy reference (default: the cores)\n"
"  -h         this help\n"
"\n"
"Exit status: 0, or 1 when any result had wrong elements.\n"
"\n"
"Columns (per collective, n = number of devices in one group over AXES):\n"
"  size     bytes, as nccl-tests counts them: all_reduce and ppermute, one\n"
"           device's buffer; all_gather, the gathered result; reduce_scatter,\n"
"           one device's input; all_to_all, one device's buffer.\n"
"  count    elements in size.\n"
"  time     mean wall time of one call, over the timed iterations, in us;\n"
"           median alongside (the latency figure for small sizes).\n"
"  algbw    size / time.\n"
"  busbw    algbw times the bytes each device must move relative to size,\n"
"           the nccl-tests definition: all_reduce 2(n-1)/n; all_gather,\n"
"           reduce_scatter and all_to_all (n-1)/n; ppermute 1. It is\n"
"           comparable with the bandwidth of the medium.\n"
"  #wrong   elements of the result that differ from the expected values.\n"
"  memcpy   GB/s of a memcpy by as many threads as run the collective (the\n"
"           runtime's worker threads, -T; with -s 1 one per device), moving\n"
"           in total what the collective moved (busbw * time on each\n"
"           device); its rounds alternate with the collective's calls in\n"
"           the same run, so both see the same machine. Median round.\n"
"  ratio    collective bytes per second (all devices together, busbw *\n"
"           devices) over that memcpy rate, from the medians: 1.0 means\n"
"           the collective moves data as fast as plain copies by the same\n"
"           number of threads.\n");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_size(const char *s, size_t *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0) return -1;
  switch (*end) {
    case 'k': case 'K': v *= 1024; ++end; break;
    case 'm': case 'M': v *= 1024 * 1024; ++end; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return -1;
  *out = (size_t)v;
  return 0;
}

static int parse_dtype(const char *s, spmd_dtype *out) {
  static const struct { const char *name; spmd_dtype t; } names[] = {
      {"float", SPMD_F32}, {"f32", SPMD_F32}, {"float32", SPMD_F32},
      {"double", SPMD_F64}, {"f64", SPMD_F64}, {"float64", SPMD_F64},
      {"half", SPMD_F16}, {"f16", SPMD_F16}, {"float16", SPMD_F16},
      {"bfloat16", SPMD_BF16}, {"bf16", SPMD_BF16},
      {"int32", SPMD_I32}, {"i32", SPMD_I32}, {"int64", SPMD_I64}, {"i64", SPMD_I64},
      {"uint8", SPMD_U8}, {"u8", SPMD_U8}, {"bool", SPMD_BOOL}};
  for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
    if (strcmp(s, names[i].name) == 0) {
      *out = names[i].t;
      return 0;
    }
  return -1;
}

/* ---- typed values ---- */

static float f16_to_float(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  float v = exp == 0 ? ldexpf((float)man, -24) : ldexpf((float)(man | 0x400), exp - 25);
  return (h >> 15) ? -v : v;
}
static uint16_t small_int_to_f16(int v) { /* 0 <= v < 2048 */
  if (v == 0) return 0;
  int e = 0;
  while ((1 << (e + 1)) <= v) ++e;
  return (uint16_t)(((e + 15) << 10) | ((v << (10 - e)) & 0x3ff));
}
static double get(spmd_dtype t, const void *p, size_t i) {
  switch (t) {
    case SPMD_F32: return ((const float *)p)[i];
    case SPMD_F64: return ((const double *)p)[i];
    case SPMD_F16: return f16_to_float(((const uint16_t *)p)[i]);
    case SPMD_BF16: {
      uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
      float f;
      memcpy(&f, &u, 4);
      return f;
    }
    case SPMD_I32: return ((const int32_t *)p)[i];
    case SPMD_I64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
  }
}
static void put(spmd_dtype t, void *p, size_t i, int v) {
  switch (t) {
    case SPMD_F32: ((float *)p)[i] = (float)v; break;
    case SPMD_F64: ((double *)p)[i] = v; break;
    case SPMD_F16: ((uint16_t *)p)[i] = small_int_to_f16(v); break;
    case SPMD_BF16: {
      float f = (float)v;
      uint32_t u;
      memcpy(&u, &f, 4);
      ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
      break;
    }
    case SPMD_I32: ((int32_t *)p)[i] = v; break;
    case SPMD_I64: ((int64_t *)p)[i] = v; break;
    case SPMD_BOOL: ((uint8_t *)p)[i] = (uint8_t)(v != 0); break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break;
  }
}
static int value_at(spmd_dtype t, size_t i) { return t == SPMD_BOOL ? (int)(i % 3 == 0) : (int)(i % 13); }

/* ---- the memcpy reference: T threads, one barrier-synchronised copy each ---- */

typedef struct copier copier;

typedef struct {
  copier *c;
  int index;
} copier_arg;

struct copier {
  pthread_barrier_t start, done;
  int threads;
  size_t bytes; /* per thread */
  char **src, **dst;
  pthread_t *tid;
  copier_arg *args;
  volatile int stop;
};

static void *copy_loop(void *p) {
  copier_arg *a = p;
  copier *c = a->c;
  for (;;) {
    pthread_barrier_wait(&c->start);
    if (c->stop) return NULL;
    memcpy(c->dst[a->index], c->src[a->index], c->bytes);
    pthread_barrier_wait(&c->done);
  }
}

static copier *copier_start(int threads, size_t total) {
  copier *c = calloc(1, sizeof *c);
  c->threads = threads;
  c->bytes = total / (size_t)threads;
  if (c->bytes == 0) c->bytes = 1;
  c->src = calloc((size_t)threads, sizeof(char *));
  c->dst = calloc((size_t)threads, sizeof(char *));
  for (int i = 0; i < threads; ++i) {
    c->src[i] = malloc(c->bytes);
    c->dst[i] = malloc(c->bytes);
    memset(c->src[i], i + 1, c->bytes);
    memset(c->dst[i], 0, c->bytes);
  }
  pthread_barrier_init(&c->start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&c->done, NULL, (unsigned)threads + 1);
  c->tid = calloc((size_t)threads, sizeof(pthread_t));
  c->args = calloc((size_t)threads, sizeof(copier_arg));
  for (int i = 0; i < threads; ++i) {
    c->args[i].c = c;
    c->args[i].index = i;
    pthread_create(&c->tid[i], NULL, copy_loop, &c->args[i]);
  }
  return c;
}

/* Seconds of one copy by all threads at once. */
static double copier_round(copier *c) {
  const double t0 = now_s();
  pthread_barrier_wait(&c->start);
  pthread_barrier_wait(&c->done);
  return now_s() - t0;
}

static void copier_stop(copier *c) {
  c->stop = 1;
  pthread_barrier_wait(&c->start);
  for (int i = 0; i < c->threads; ++i) {
    pthread_join(c->tid[i], NULL);
    free(c->src[i]);
    free(c->dst[i]);
  }
  pthread_barrier_destroy(&c->start);
  pthread_barrier_destroy(&c->done);
  free(c->tid);
  free(c->args);
  free(c->src);
  free(c->dst);
  free(c);
}

/* ---- one collective at one size ---- */

enum { AG, AR, RS, A2A, PERM, NOPS };
static const char *const op_names[NOPS] = {"all_gather", "all_reduce", "reduce_scatter",
                                           "all_to_all", "ppermute"};

typedef struct {
  spmd_mesh *mesh;
  const char *axes;
  const char *axes_spec; /* "(x,y)" as a spec dimension */
  int64_t n;             /* devices per group */
  int devices;           /* devices in the mesh */
  int threads;           /* worker threads, and memcpy threads */
  spmd_dtype dtype;
  int iters, warmups, check;
  int64_t timeout_ms;
  int shard_map;
} bench;

/* The collective as a shard_map callback. */
typedef struct {
  int op;
  const char *axes;
  const int64_t *ring;
  int64_t n;
} smap_op;

static spmd_status smap_fn(spmd_ctx *ctx, void *ud) {
  const smap_op *o = ud;
  spmd_block x = SPMD_BLOCK_INIT, y = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &x);
  if (st) return st;
  switch (o->op) {
    case AG: st = spmd_ctx_all_gather(ctx, &x, o->axes, 0, 1, &y); break;
    case AR: st = spmd_ctx_psum(ctx, &x, o->axes, &y); break;
    case RS: st = spmd_ctx_psum_scatter(ctx, &x, o->axes, 0, 1, &y); break;
    case A2A: st = spmd_ctx_all_to_all(ctx, &x, o->axes, 0, 0, 1, &y); break;
    default: st = spmd_ctx_ppermute(ctx, &x, o->axes, (size_t)o->n, o->ring, &y); break;
  }
  return st ? st : spmd_ctx_set_output(ctx, 0, &y);
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define CHECK(call)                                                                      \
  do {                                                                                   \
    spmd_status st_ = (call);                                                            \
    if (st_ != SPMD_OK) {                                                                \
      fprintf(stderr, "spmd-bench: %s: %s\n", #call, spmd_last_error());                 \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static long long total_wrong = 0;

static void run_one(const bench *b, int op, size_t size) {
  const size_t es = spmd_dtype_size(b->dtype);
  const int64_t n = b->n;
  int64_t count = (int64_t)(size / es), c; /* c: elements per device chunk */
  if (op == AR || op == PERM) {
    c = count;
  } else {
    c = count / n;
    count = c * n;
  }
  if (c <= 0) return;
  /* psum of bool is int32 (not a bandwidth test); psum_scatter refuses bool. */
  if ((op == AR || op == RS) && b->dtype == SPMD_BOOL) return;
  /* Global input: dimension 0 split over the axes; local blocks of `local`. */
  const int64_t local = (op == AR || op == AG || op == PERM) ? c : n * c;
  const int64_t global = n * local;
  const size_t gbytes = (size_t)global * es;
  void *host = malloc(gbytes);
  for (int64_t i = 0; i < global; ++i) put(b->dtype, host, (size_t)i, value_at(b->dtype, (size_t)i));
  spmd_sharding *in_s = NULL;
  CHECK(spmd_sharding_named_text(b->mesh, b->axes_spec, &in_s));
  spmd_array *in = NULL;
  CHECK(spmd_array_from_host(in_s, b->dtype, 1, &global, host, gbytes, &in));
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.tiled = 1;
  o.timeout_ms = b->timeout_ms;
  int64_t *ring = NULL;
  spmd_collective_kind kind = SPMD_COLLECTIVE_PSUM;
  double factor = 1;
  switch (op) {
    case AG: kind = SPMD_COLLECTIVE_ALL_GATHER; factor = (double)(n - 1) / n; break;
    case AR: kind = SPMD_COLLECTIVE_PSUM; factor = 2.0 * (n - 1) / n; break;
    case RS: kind = SPMD_COLLECTIVE_PSUM_SCATTER; factor = (double)(n - 1) / n; break;
    case A2A: kind = SPMD_COLLECTIVE_ALL_TO_ALL; factor = (double)(n - 1) / n; break;
    case PERM:
      kind = SPMD_COLLECTIVE_PPERMUTE;
      ring = malloc(2 * (size_t)n * sizeof(int64_t));
      for (int64_t i = 0; i < n; ++i) {
        ring[2 * i] = i;
        ring[2 * i + 1] = (i + 1) % n;
      }
      o.npairs = (size_t)n;
      o.pairs = ring;
      factor = 1;
      break;
  }
  spmd_collective *coll = NULL;
  CHECK(spmd_collective_create(in_s, kind, b->axes, b->dtype, 1, &global, &o, &coll));
  spmd_sharding *out_s = NULL;
  spmd_dtype out_t;
  int64_t out_shape[1];
  CHECK(spmd_collective_output_sharding(coll, &out_s));
  CHECK(spmd_collective_output_dtype(coll, &out_t));
  CHECK(spmd_collective_output_shape(coll, sizeof out_shape / sizeof out_shape[0], out_shape, NULL));
  spmd_array *out = NULL;
  CHECK(spmd_array_zeros(out_s, out_t, 1, out_shape, &out));

  spmd_spec *in_spec = NULL, *out_spec = NULL;
  CHECK(spmd_sharding_spec(in_s, &in_spec));
  CHECK(spmd_sharding_spec(out_s, &out_spec));
  const smap_op so = {op, b->axes, ring, n};
  spmd_shard_map_options smo = SPMD_SHARD_MAP_OPTIONS_INIT;
  smo.timeout_ms = b->timeout_ms;
  /* The memcpy reference moves, over all its threads, what the collective
   * moved over all devices (busbw bytes on each); its rounds alternate with
   * the collective's, so both see the same machine. */
  const double reported = (double)count * (double)es;
  const double moved = reported * factor * b->devices;
  copier *cp = moved >= 1 ? copier_start(b->shard_map ? b->devices : b->threads, (size_t)moved)
                          : NULL;
  double *times = malloc((size_t)b->iters * sizeof(double));
  double *mtimes = malloc((size_t)b->iters * sizeof(double));
  double total = 0;
  for (int i = 0; i < b->warmups + b->iters; ++i) {
    const double t0 = now_s();
    if (b->shard_map) {
      spmd_array *res = NULL;
      CHECK(spmd_shard_map(b->mesh, smap_fn, (void *)&so, 1, &in,
                           (const spmd_spec *const *)&in_spec, 1,
                           (const spmd_spec *const *)&out_spec, &smo, &res));
      CHECK(spmd_array_block_until_ready(res));
      spmd_array_destroy(out);
      out = res;
    } else {
      CHECK(spmd_collective_execute_into(coll, in, out));
      CHECK(spmd_array_block_until_ready(out));
    }
    const double t = now_s() - t0;
    const double tm = cp ? copier_round(cp) : 0;
    if (i < b->warmups) continue;
    times[i - b->warmups] = t;
    mtimes[i - b->warmups] = tm;
    total += t;
  }
  if (cp) copier_stop(cp);
  spmd_spec_destroy(in_spec);
  spmd_spec_destroy(out_spec);
  qsort(times, (size_t)b->iters, sizeof(double), cmp_double);
  qsort(mtimes, (size_t)b->iters, sizeof(double), cmp_double);
  const double mean = total / b->iters, median = times[b->iters / 2];
  const double mmedian = mtimes[b->iters / 2];

  /* Check against values computed here. */
  long long wrong = -1;
  if (b->check) {
    wrong = 0;
    const size_t obytes = (size_t)out_shape[0] * spmd_dtype_size(out_t);
    void *res = malloc(obytes ? obytes : 1);
    CHECK(spmd_array_to_host(out, res, obytes));
    for (int64_t k = 0; k < out_shape[0]; ++k) {
      double want = 0;
      switch (op) {
        case AG: want = get(b->dtype, host, (size_t)k); break;
        case AR:
          for (int64_t r = 0; r < n; ++r) want += value_at(b->dtype, (size_t)(r * c + k));
          break;
        case RS: {
          for (int64_t s = 0; s < n; ++s) want += value_at(b->dtype, (size_t)(s * n * c + k));
          break;
        }
        case A2A: {
          const int64_t r = k / (n * c), j = (k / c) % n, t = k % c;
          want = get(b->dtype, host, (size_t)(j * n * c + r * c + t));
          break;
        }
        case PERM: {
          const int64_t r = k / c, t = k % c;
          want = get(b->dtype, host, (size_t)(((r + n - 1) % n) * c + t));
          break;
        }
      }
      if (b->dtype == SPMD_U8 && (op == AR || op == RS)) want = fmod(want, 256);
      if (get(out_t, res, (size_t)k) != want) ++wrong;
    }
    free(res);
  }

  const double algbw = reported / mean / 1e9, busbw = algbw * factor;
  /* Rates from the medians of the alternating rounds. */
  double mc = 0, ratio = 0;
  if (moved >= 1 && mmedian > 0) {
    mc = moved / mmedian / 1e9;
    ratio = mmedian / median;
  }
  if (wrong > 0) total_wrong += wrong;
  char wrong_s[32];
  if (wrong < 0) snprintf(wrong_s, sizeof wrong_s, "N/A");
  else snprintf(wrong_s, sizeof wrong_s, "%lld", wrong);
  printf("%14zu %13lld %9s %15s %11.1f %11.1f %9.2f %9.2f %7s %10.2f %7.2f\n", (size_t)reported,
         (long long)count, spmd_dtype_name(b->dtype), op_names[op], mean * 1e6, median * 1e6,
         algbw, busbw, wrong_s, mc, ratio);
  fflush(stdout);

  free(times);
  free(mtimes);
  free(ring);
  free(host);
  spmd_array_destroy(out);
  spmd_array_destroy(in);
  spmd_sharding_destroy(out_s);
  spmd_sharding_destroy(in_s);
  spmd_collective_destroy(coll);
}

int main(int argc, char **argv) {
  size_t minb = 8, maxb = 64u << 20;
  double factor = 2;
  int iters = 20, warmups = 5, devices = 8, check = 1;
  int threads = (int)sysconf(_SC_NPROCESSORS_ONLN), use_shard_map = 0;
  int64_t timeout_ms = 0;
  const char *ops = "all", *mesh_text = NULL, *axes = NULL;
  spmd_dtype dtype = SPMD_F32;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (a[0] != '-' || a[1] == '\0' || a[2] != '\0' || i + 1 >= argc) {
      fprintf(stderr, "spmd-bench: bad argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
    const char *v = argv[++i];
    int bad = 0;
    switch (a[1]) {
      case 'b': bad = parse_size(v, &minb); break;
      case 'e': bad = parse_size(v, &maxb); break;
      case 'f': factor = atof(v); bad = factor <= 1; break;
      case 'n': iters = atoi(v); bad = iters < 1; break;
      case 'w': warmups = atoi(v); bad = warmups < 0; break;
      case 'g': devices = atoi(v); bad = devices < 1; break;
      case 'm': mesh_text = v; break;
      case 'a': axes = v; break;
      case 'd': bad = parse_dtype(v, &dtype); break;
      case 'c': check = atoi(v); break;
      case 't': timeout_ms = atoll(v); bad = timeout_ms < 0; break;
      case 'o': ops = v; break;
      case 'T': threads = atoi(v); bad = threads < 1; break;
      case 's': use_shard_map = atoi(v); break;
      default: bad = 1;
    }
    if (bad) {
      fprintf(stderr, "spmd-bench: bad value '%s' for %s\n", v, a);
      return 2;
    }
  }
  /* The mesh: "2x4" -> axes x, y. */
  int64_t shape[4];
  size_t ndim = 0;
  int64_t mesh_devices = 1;
  if (mesh_text == NULL) {
    shape[ndim++] = devices;
  } else {
    const char *p = mesh_text;
    while (*p && ndim < 4) {
      char *end;
      shape[ndim++] = strtoll(p, &end, 10);
      p = *end == 'x' || *end == ',' ? end + 1 : end;
      if (end == p && *p) break;
    }
  }
  for (size_t i = 0; i < ndim; ++i) mesh_devices *= shape[i];
  if (mesh_devices > devices) devices = (int)mesh_devices;
  static const char *const names[4] = {"x", "y", "z", "w"};
  char all_axes[32] = "(";
  for (size_t i = 0; i < ndim; ++i) {
    strcat(all_axes, names[i]);
    strcat(all_axes, i + 1 < ndim ? "," : ")");
  }
  if (axes == NULL) axes = all_axes;

  spmd_runtime_options ro = SPMD_RUNTIME_OPTIONS_INIT;
  ro.platform = SPMD_PLATFORM_DEFAULT; /* SPMD_PLATFORM=sim checks the sim platform */
  ro.cpu_device_count = devices;
  ro.worker_threads = threads;
  spmd_runtime *rt = NULL;
  CHECK(spmd_runtime_create(&ro, &rt));
  spmd_mesh *mesh = NULL;
  CHECK(spmd_mesh_create(rt, ndim, shape, names, NULL, &mesh));

  /* Group size: product of the sizes of the named axes. */
  int64_t n = 1;
  char axes_spec[64];
  snprintf(axes_spec, sizeof axes_spec, "(%s)", axes);
  for (const char *p = axes; *p; ++p)
    for (size_t i = 0; i < ndim; ++i)
      if (*p == names[i][0]) n *= shape[i];
  /* strip doubled parentheses: "((x,y))" is still one tuple */
  if (axes[0] == '(') snprintf(axes_spec, sizeof axes_spec, "%s", axes);

  bench b = {mesh, axes, axes_spec, n, (int)mesh_devices, threads, dtype, iters, warmups, check,
             timeout_ms, use_shard_map};
  char *mesh_str = NULL;
  CHECK(spmd_mesh_to_string(mesh, &mesh_str));
  spmd_device_info info = SPMD_DEVICE_INFO_INIT;
  CHECK(spmd_runtime_device_info(rt, 0, &info));
  printf("# spmd-bench: %s of %s devices, collectives over %s (%lld devices per group), %s, "
         "%d iterations, %d warm-ups\n", mesh_str, info.platform_name, axes, (long long)n,
         spmd_dtype_name(dtype), iters, warmups);
  if (use_shard_map)
    printf("# collectives run inside spmd_shard_map, one thread per device (%d); memcpy "
           "reference: %d threads, same bytes, same run\n#\n", (int)mesh_devices,
           (int)mesh_devices);
  else
    printf("# persistent collectives run on %d worker threads; memcpy reference: %d threads, "
           "same bytes, same run\n#\n", threads, threads);
  printf("# %12s %13s %9s %15s %11s %11s %9s %9s %7s %10s %7s\n", "size(B)", "count", "type",
         "collective", "time(us)", "median(us)", "algbw", "busbw", "#wrong", "memcpy", "ratio");
  printf("# %12s %13s %9s %15s %11s %11s %9s %9s %7s %10s %7s\n", "", "(elements)", "", "", "",
         "", "(GB/s)", "(GB/s)", "", "(GB/s)", "");
  spmd_string_free(mesh_str);

  for (int op = 0; op < NOPS; ++op) {
    if (strcmp(ops, "all") != 0) {
      const char *hit = strstr(ops, op_names[op]);
      if (!hit) continue;
    }
    for (double s = (double)minb; s <= (double)maxb * 1.0000001; s *= factor) {
      run_one(&b, op, (size_t)s);
      if (factor <= 1) break;
    }
  }
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  if (total_wrong > 0) {
    fprintf(stderr, "spmd-bench: %lld wrong elements\n", total_wrong);
    return 1;
  }
  return 0;
}
