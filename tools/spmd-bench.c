/* spmd-bench: bandwidth and latency of libspmd's collectives, in the style
 * of nccl-tests. Each collective is planned once (spmd_collective_create)
 * and executed into a preallocated output; results are checked; a memcpy of
 * the same bytes by the same number of threads is timed in the same run for
 * comparison. Under mpirun it runs over a runtime that spans the processes
 * (SPMD_DISTRIBUTED=mpi) and, built with MPI, times MPI's own collective on
 * the same bytes beside ours (-M). Run with -h for the options and the
 * definitions. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spmd/spmd.h"

#ifdef SPMD_BENCH_MPI
#include <mpi.h>
#endif

static void usage(FILE *f) {
  fprintf(f,
"usage: spmd-bench [options]\n"
"       mpirun -np P [-x SPMD_DISTRIBUTED=mpi] spmd-bench [options]\n"
"\n"
"  -o OPS     collectives, comma separated: all_gather, all_reduce,\n"
"             reduce_scatter, all_to_all, ppermute, or all (default all)\n"
"  -b SIZE    smallest size in bytes (default 8); K, M, G suffixes\n"
"  -e SIZE    largest size in bytes (default 64M)\n"
"  -f FACTOR  size multiplication factor (default 2)\n"
"  -n ITERS   timed iterations per size (default 20)\n"
"  -w ITERS   warm-up iterations per size (default 5)\n"
"  -g N       devices of this process's runtime (default: 8, or what -m\n"
"             needs; over several processes, -m's devices / processes,\n"
"             else $SPMD_CPU_DEVICES, else 8); SPMD_PLATFORM picks the\n"
"             platform (cpu, or sim to check results on the sim platform)\n"
"  -m SHAPE   mesh shape, e.g. 8 or 2x4 (default: one axis of all devices,\n"
"             every process's); axes are named x, y, z, w in order\n"
"  -a AXES    mesh axes the collective runs over: x or (x,y) (default all)\n"
"  -d TYPE    float, double, half, bfloat16, int32, int64, uint8, bool\n"
"             (default float)\n"
"  -c 0|1     check results (default 1); over several processes each\n"
"             checks the shards of its own devices\n"
"  -r 0|1     time the memcpy reference (default 1)\n"
"  -t MS      rendezvous timeout in ms (default 60000)\n"
"  -s 0|1     1: run each collective inside spmd_shard_map (a thread per\n"
"             device, rendezvous by barriers) instead of a persistent\n"
"             spmd_collective on the worker pool (default 0)\n"
"  -T N       worker threads of the runtime, which run the collectives,\n"
"             and threads of the memcpy reference (default: the cores)\n"
"  -M [MODE]  MPI's own collective over MPI_COMM_WORLD on the same bytes:\n"
"             1 (or no value): beside ours, interleaved call by call;\n"
"             only: MPI's alone, no libspmd runtime (flat MPI: one rank\n"
"             per device); 0: not (default). Needs a build with MPI.\n"
"  -A HOW     over several processes, each call's time is the slowest\n"
"             process's (max, default), the processes' mean (avg), or\n"
"             process 0's (0)\n"
"  -h         this help\n"
"\n"
"Exit status: 0, or 1 when any result had wrong elements.\n"
"\n"
"Processes. Under mpirun with SPMD_DISTRIBUTED=mpi every process makes one\n"
"runtime over all processes (-g devices each), the mesh covers all of them,\n"
"every process times the same calls, each after a barrier (MPI_Barrier when\n"
"built with MPI, else a small collective of libspmd), and process 0 prints.\n"
"Under mpirun without it every rank runs a runtime of its own, and only the\n"
"MPI column spans the ranks.\n"
"\n"
"Columns (per collective, n = number of devices in one group over AXES):\n"
"  size     bytes, as nccl-tests counts them: all_reduce and ppermute, one\n"
"           device's buffer; all_gather, the gathered result; reduce_scatter,\n"
"           one device's input; all_to_all, one device's buffer.\n"
"  count    elements in size.\n"
"  time     mean wall time of one call, over the timed iterations, in us;\n"
"           median alongside (the latency figure for small sizes). Over\n"
"           several processes, per call as -A says.\n"
"  algbw    size / time.\n"
"  busbw    algbw times the bytes each device must move relative to size,\n"
"           the nccl-tests definition: all_reduce 2(n-1)/n; all_gather,\n"
"           reduce_scatter and all_to_all (n-1)/n; ppermute 1. It is\n"
"           comparable with the bandwidth of the medium.\n"
"  #wrong   elements of the result that differ from the expected values\n"
"           (summed over the processes; process 0's in a build without MPI,\n"
"           whose times are process 0's too).\n"
"  memcpy   GB/s of a memcpy by as many threads as run the collective (the\n"
"           runtime's worker threads, -T; with -s 1 one per device), moving\n"
"           in total what the collective moved on this process's devices\n"
"           (busbw * time on each); its rounds alternate with the\n"
"           collective's calls in the same run, so both see the same\n"
"           machine. Median round, process 0's.\n"
"  ratio    collective bytes per second (this process's devices together,\n"
"           busbw * devices) over that memcpy rate, from the medians: 1.0\n"
"           means the collective moves data as fast as plain copies by the\n"
"           same number of threads.\n"
"With -M, MPI's collective on the same bytes (MPI_Allreduce, MPI_Allgather,\n"
"MPI_Reduce_scatter_block, MPI_Alltoall, a ring shift by MPI_Sendrecv),\n"
"the same dtype (half and bfloat16 as 16-bit words, summed by a user op),\n"
"n = the ranks of MPI_COMM_WORLD, sizes counted as above; its calls\n"
"alternate with ours, each after a barrier:\n"
"  mpi      mean and median time (us), busbw (GB/s, from the mean).\n"
"  ours/mpi ratio of the median times: below 1.0 libspmd is faster.\n"
"With -M only the columns are those of size to busbw, for MPI's call.\n");
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


/* ---- processes: who prints, barriers, and times over processes ---- */

enum { MPI_NONE, MPI_BESIDE, MPI_ONLY };
enum { AGG_MAX, AGG_AVG, AGG_RANK0 };

static int g_rank = 0;       /* MPI_COMM_WORLD rank, else the runtime's process index */
static int g_nranks = 1;     /* ranks of MPI_COMM_WORLD, else the runtime's processes */
static int g_mpi_started = 0; /* this program called MPI_Init */

static void die(void) {
#ifdef SPMD_BENCH_MPI
  if (g_mpi_started && g_nranks > 1) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  exit(1);
}

#define CHECK(call)                                                                      \
  do {                                                                                   \
    spmd_status st_ = (call);                                                            \
    if (st_ != SPMD_OK) {                                                                \
      fprintf(stderr, "spmd-bench (process %d): %s: %s\n", g_rank, #call,               \
              spmd_last_error());                                                        \
      die();                                                                             \
    }                                                                                    \
  } while (0)

#ifdef SPMD_BENCH_MPI
#define MPI_CHECK(call)                                                                  \
  do {                                                                                   \
    int rc_ = (call);                                                                    \
    if (rc_ != MPI_SUCCESS) {                                                            \
      char msg_[MPI_MAX_ERROR_STRING];                                                   \
      int len_ = 0;                                                                      \
      MPI_Error_string(rc_, msg_, &len_);                                                \
      fprintf(stderr, "spmd-bench (rank %d): %s: %s\n", g_rank, #call, msg_);           \
      die();                                                                             \
    }                                                                                    \
  } while (0)
#endif

/* A barrier among the runtime's processes when the bench has no MPI: a
 * psum of one element per device over every device. */
typedef struct {
  spmd_collective *coll;
  spmd_array *in, *out;
} spmd_barrier;

static spmd_barrier *g_spmd_barrier = NULL;

static void sync_processes(void) {
#ifdef SPMD_BENCH_MPI
  if (g_mpi_started) {
    if (g_nranks > 1) MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    return;
  }
#endif
  if (g_spmd_barrier) {
    CHECK(spmd_collective_execute_into(g_spmd_barrier->coll, g_spmd_barrier->in,
                                       g_spmd_barrier->out));
    CHECK(spmd_array_block_until_ready(g_spmd_barrier->out));
  }
}

/* Each call's time over the processes, in place (every process calls it). */
static void combine_times(double *t, int n, int how) {
#ifdef SPMD_BENCH_MPI
  if (g_mpi_started && g_nranks > 1 && how != AGG_RANK0) {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, t, n, MPI_DOUBLE, how == AGG_MAX ? MPI_MAX : MPI_SUM,
                            MPI_COMM_WORLD));
    if (how == AGG_AVG)
      for (int i = 0; i < n; ++i) t[i] /= g_nranks;
  }
#else
  (void)t, (void)n, (void)how;
#endif
}

static long long sum_over_processes(long long v) {
#ifdef SPMD_BENCH_MPI
  if (g_mpi_started && g_nranks > 1)
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
#endif
  return v;
}

/* ---- MPI's own collectives ---- */

#ifdef SPMD_BENCH_MPI
static uint16_t float_to_f16(float f) { /* round to nearest even */
  uint32_t x;
  memcpy(&x, &f, 4);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  const int fexp = (int)((x >> 23) & 0xff);
  uint32_t m = x & 0x7fffff;
  if (fexp == 0xff) return (uint16_t)(sign | 0x7c00 | (m ? 0x200 : 0));
  const int e = fexp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return sign;
    m |= 0x800000;
    const int shift = 14 - e;
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (m >> 13);
  const uint32_t rem = m & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return (uint16_t)(sign | h);
}
static void sum_f16(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  const uint16_t *a = in;
  uint16_t *b = inout;
  for (int i = 0; i < *len; ++i) b[i] = float_to_f16(f16_to_float(a[i]) + f16_to_float(b[i]));
}
static void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  const uint16_t *a = in;
  uint16_t *b = inout;
  for (int i = 0; i < *len; ++i) {
    uint32_t ua = (uint32_t)a[i] << 16, ub = (uint32_t)b[i] << 16, u;
    float fa, fb;
    memcpy(&fa, &ua, 4);
    memcpy(&fb, &ub, 4);
    const float s = fa + fb;
    memcpy(&u, &s, 4);
    b[i] = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  }
}

typedef struct {
  MPI_Datatype type;
  MPI_Op sum;
  int own_op; /* sum is a user op to free */
} mpi_dtype;

static mpi_dtype mpi_dtype_of(spmd_dtype t) {
  mpi_dtype d = {MPI_BYTE, MPI_SUM, 0};
  switch (t) {
    case SPMD_F32: d.type = MPI_FLOAT; break;
    case SPMD_F64: d.type = MPI_DOUBLE; break;
    case SPMD_I32: d.type = MPI_INT32_T; break;
    case SPMD_I64: d.type = MPI_INT64_T; break;
    case SPMD_U8: d.type = MPI_UINT8_T; break;
    case SPMD_BOOL: d.type = MPI_C_BOOL; break;
    case SPMD_F16:
    case SPMD_BF16:
      d.type = MPI_UINT16_T;
      MPI_CHECK(MPI_Op_create(t == SPMD_F16 ? sum_f16 : sum_bf16, 1, &d.sum));
      d.own_op = 1;
      break;
    default: break;
  }
  return d;
}
#endif

/* ---- one collective at one size ---- */

enum { AG, AR, RS, A2A, PERM, NOPS };
static const char *const op_names[NOPS] = {"all_gather", "all_reduce", "reduce_scatter",
                                           "all_to_all", "ppermute"};

typedef struct {
  spmd_runtime *rt;      /* NULL with -M only */
  spmd_mesh *mesh;
  const char *axes;
  const char *axes_spec; /* "(x,y)" as a spec dimension */
  int64_t n;             /* devices per group */
  int devices;           /* devices in the mesh */
  int local_devices;     /* of them, this process's */
  int process;           /* the runtime's process index */
  int threads;           /* worker threads, and memcpy threads */
  spmd_dtype dtype;
  int iters, warmups, check, memcpy_ref;
  int64_t timeout_ms;
  int shard_map;
  int mpi;               /* MPI_NONE, MPI_BESIDE, MPI_ONLY */
  int agg;               /* AGG_* */
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

static long long total_wrong = 0;

/* Elements per device chunk (c) and counted elements (count) of `op` at
 * `size` bytes over groups of n: 0 when the size holds no chunk. */
static int64_t chunk_of(int op, size_t size, size_t es, int64_t n, int64_t *count) {
  int64_t cnt = (int64_t)(size / es), c;
  if (op == AR || op == PERM) {
    c = cnt;
  } else {
    c = cnt / n;
    cnt = c * n;
  }
  *count = cnt;
  return c;
}

static double busbw_factor(int op, int64_t n) {
  switch (op) {
    case AR: return 2.0 * (double)(n - 1) / (double)n;
    case PERM: return 1;
    default: return (double)(n - 1) / (double)n;
  }
}

/* MPI's side of one size: buffers, and one call. */
typedef struct {
  int active;
  int64_t n, c, count;
  void *send, *recv;
#ifdef SPMD_BENCH_MPI
  mpi_dtype dt;
#endif
} mpi_side;

static void mpi_prepare(const bench *b, int op, size_t size, mpi_side *m) {
  memset(m, 0, sizeof *m);
#ifdef SPMD_BENCH_MPI
  const size_t es = spmd_dtype_size(b->dtype);
  m->n = g_nranks;
  m->c = chunk_of(op, size, es, m->n, &m->count);
  if (b->mpi == MPI_NONE || m->c <= 0 || m->count > INT_MAX) return;
  if ((op == AR || op == RS) && b->dtype == SPMD_BOOL) return;
  const size_t in_elems = (size_t)((op == AG) ? m->c : m->count);
  const size_t out_elems = (size_t)((op == RS) ? m->c : m->count);
  m->send = malloc(in_elems * es);
  m->recv = malloc(out_elems * es);
  for (size_t i = 0; i < in_elems; ++i)
    put(b->dtype, m->send, i, value_at(b->dtype, (size_t)g_rank * in_elems + i));
  memset(m->recv, 0, out_elems * es);
  m->dt = mpi_dtype_of(b->dtype);
  m->active = 1;
#else
  (void)b, (void)op, (void)size;
#endif
}

static void mpi_call(int op, mpi_side *m) {
#ifdef SPMD_BENCH_MPI
  const MPI_Comm w = MPI_COMM_WORLD;
  const int c = (int)m->c, count = (int)m->count, n = (int)m->n;
  switch (op) {
    case AG: MPI_CHECK(MPI_Allgather(m->send, c, m->dt.type, m->recv, c, m->dt.type, w)); break;
    case AR:
      MPI_CHECK(MPI_Allreduce(m->send, m->recv, count, m->dt.type, m->dt.sum, w));
      break;
    case RS:
      MPI_CHECK(MPI_Reduce_scatter_block(m->send, m->recv, c, m->dt.type, m->dt.sum, w));
      break;
    case A2A: MPI_CHECK(MPI_Alltoall(m->send, c, m->dt.type, m->recv, c, m->dt.type, w)); break;
    default:
      MPI_CHECK(MPI_Sendrecv(m->send, count, m->dt.type, (g_rank + 1) % n, 17, m->recv, count,
                             m->dt.type, (g_rank + n - 1) % n, 17, w, MPI_STATUS_IGNORE));
      break;
  }
#else
  (void)op, (void)m;
#endif
}

static void mpi_release(mpi_side *m) {
#ifdef SPMD_BENCH_MPI
  if (m->active && m->dt.own_op) MPI_Op_free(&m->dt.sum);
#endif
  free(m->send);
  free(m->recv);
  memset(m, 0, sizeof *m);
}

/* Wrong elements in this process's shards of `out` (1-D), against the
 * values the collective must produce. */
static long long check_local_shards(const bench *b, int op, const spmd_array *out,
                                    spmd_dtype out_t, const void *host, int64_t n, int64_t c) {
  long long wrong = 0;
  size_t shards = 0;
  CHECK(spmd_array_shard_count(out, &shards));
  const size_t oes = spmd_dtype_size(out_t);
  for (size_t s = 0; s < shards; ++s) {
    spmd_shard_info si = SPMD_SHARD_INFO_INIT;
    CHECK(spmd_array_shard_info(out, s, &si));
    spmd_device_info di = SPMD_DEVICE_INFO_INIT;
    CHECK(spmd_runtime_device_info(b->rt, si.device, &di));
    if (di.process_index != b->process) continue;
    const size_t bytes = (size_t)si.local_shape[0] * oes;
    void *res = malloc(bytes ? bytes : 1);
    CHECK(spmd_array_shard_read(out, s, res, bytes));
    for (int64_t k = si.start[0]; k < si.stop[0]; ++k) {
      double want = 0;
      switch (op) {
        case AG: want = get(b->dtype, host, (size_t)k); break;
        case AR:
          for (int64_t r = 0; r < n; ++r) want += value_at(b->dtype, (size_t)(r * c + k));
          break;
        case RS:
          for (int64_t q = 0; q < n; ++q) want += value_at(b->dtype, (size_t)(q * n * c + k));
          break;
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
      if (get(out_t, res, (size_t)(k - si.start[0])) != want) ++wrong;
    }
    free(res);
  }
  return wrong;
}

static void stats(double *t, int iters, double *mean, double *median) {
  double total = 0;
  for (int i = 0; i < iters; ++i) total += t[i];
  qsort(t, (size_t)iters, sizeof(double), cmp_double);
  *mean = total / iters;
  *median = t[iters / 2];
}

static void run_one(const bench *b, int op, size_t size) {
  const size_t es = spmd_dtype_size(b->dtype);
  const int ours = b->mpi != MPI_ONLY;
  const int64_t n = b->n;
  int64_t count = 0, c = 0;
  if (ours) {
    c = chunk_of(op, size, es, n, &count);
    if (c <= 0) return;
    /* psum of bool is int32 (not a bandwidth test); psum_scatter refuses bool. */
    if ((op == AR || op == RS) && b->dtype == SPMD_BOOL) return;
  }
  mpi_side m;
  mpi_prepare(b, op, size, &m);
  if (!ours && !m.active) return;

  /* Ours: global input, dimension 0 split over the axes; local blocks of `local`. */
  void *host = NULL;
  spmd_sharding *in_s = NULL, *out_s = NULL;
  spmd_array *in = NULL, *out = NULL;
  spmd_collective *coll = NULL;
  spmd_spec *in_spec = NULL, *out_spec = NULL;
  spmd_dtype out_t = b->dtype;
  int64_t *ring = NULL;
  double factor = 1, reported = 0, moved = 0;
  smap_op so = {op, b->axes, NULL, n};
  spmd_shard_map_options smo = SPMD_SHARD_MAP_OPTIONS_INIT;
  if (ours) {
    const int64_t local = (op == AR || op == AG || op == PERM) ? c : n * c;
    const int64_t global = n * local;
    const size_t gbytes = (size_t)global * es;
    host = malloc(gbytes);
    for (int64_t i = 0; i < global; ++i)
      put(b->dtype, host, (size_t)i, value_at(b->dtype, (size_t)i));
    CHECK(spmd_sharding_named_text(b->mesh, b->axes_spec, &in_s));
    CHECK(spmd_array_from_host(in_s, b->dtype, 1, &global, host, gbytes, &in));
    spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
    o.tiled = 1;
    o.timeout_ms = b->timeout_ms;
    spmd_collective_kind kind = SPMD_COLLECTIVE_PSUM;
    switch (op) {
      case AG: kind = SPMD_COLLECTIVE_ALL_GATHER; break;
      case AR: kind = SPMD_COLLECTIVE_PSUM; break;
      case RS: kind = SPMD_COLLECTIVE_PSUM_SCATTER; break;
      case A2A: kind = SPMD_COLLECTIVE_ALL_TO_ALL; break;
      case PERM:
        kind = SPMD_COLLECTIVE_PPERMUTE;
        ring = malloc(2 * (size_t)n * sizeof(int64_t));
        for (int64_t i = 0; i < n; ++i) {
          ring[2 * i] = i;
          ring[2 * i + 1] = (i + 1) % n;
        }
        o.npairs = (size_t)n;
        o.pairs = ring;
        break;
    }
    factor = busbw_factor(op, n);
    so.ring = ring;
    CHECK(spmd_collective_create(in_s, kind, b->axes, b->dtype, 1, &global, &o, &coll));
    int64_t out_shape[1];
    CHECK(spmd_collective_output_sharding(coll, &out_s));
    CHECK(spmd_collective_output_dtype(coll, &out_t));
    CHECK(spmd_collective_output_shape(coll, 1, out_shape, NULL));
    CHECK(spmd_array_zeros(out_s, out_t, 1, out_shape, &out));
    CHECK(spmd_sharding_spec(in_s, &in_spec));
    CHECK(spmd_sharding_spec(out_s, &out_spec));
    smo.timeout_ms = b->timeout_ms;
    /* The memcpy reference moves, over all its threads, what the collective
     * moved over this process's devices (busbw bytes on each); its rounds
     * alternate with the collective's, so both see the same machine. */
    reported = (double)count * (double)es;
    moved = b->memcpy_ref ? reported * factor * b->local_devices : 0;
  }
  copier *cp = moved >= 1 ? copier_start(b->shard_map ? b->local_devices : b->threads,
                                         (size_t)moved)
                          : NULL;
  double *times = calloc((size_t)b->iters, sizeof(double));
  double *mtimes = calloc((size_t)b->iters, sizeof(double));
  double *ptimes = calloc((size_t)b->iters, sizeof(double));
  for (int i = 0; i < b->warmups + b->iters; ++i) {
    const int k = i - b->warmups;
    if (ours) {
      sync_processes();
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
      if (k >= 0) {
        times[k] = t;
        mtimes[k] = tm;
      }
    }
    if (m.active) {
      sync_processes();
      const double t0 = now_s();
      mpi_call(op, &m);
      const double t = now_s() - t0;
      if (k >= 0) ptimes[k] = t;
    }
  }
  if (cp) copier_stop(cp);
  spmd_spec_destroy(in_spec);
  spmd_spec_destroy(out_spec);

  /* Every process takes part in these, in the same order. */
  if (ours) combine_times(times, b->iters, b->agg);
  if (m.active) combine_times(ptimes, b->iters, b->agg);
  long long wrong = -1;
  if (ours && b->check) {
    wrong = sum_over_processes(check_local_shards(b, op, out, out_t, host, n, c));
    if (wrong > 0) total_wrong += wrong;
  }

  double mean = 0, median = 0, mmean = 0, mmedian = 0, pmean = 0, pmedian = 0;
  stats(times, b->iters, &mean, &median);
  stats(mtimes, b->iters, &mmean, &mmedian);
  stats(ptimes, b->iters, &pmean, &pmedian);
  const double preported = (double)m.count * (double)es;
  const double pfactor = m.active ? busbw_factor(op, m.n) : 0;
  if (g_rank == 0) {
    if (!ours) {
      const double algbw = preported / pmean / 1e9;
      printf("%14zu %13lld %9s %15s %11.1f %11.1f %9.2f %9.2f\n", (size_t)preported,
             (long long)m.count, spmd_dtype_name(b->dtype), op_names[op], pmean * 1e6,
             pmedian * 1e6, algbw, algbw * pfactor);
    } else {
      const double algbw = reported / mean / 1e9, busbw = algbw * factor;
      /* Rates from the medians of the alternating rounds. */
      double mc = 0, ratio = 0;
      if (moved >= 1 && mmedian > 0) {
        mc = moved / mmedian / 1e9;
        ratio = mmedian / median;
      }
      char wrong_s[32];
      if (wrong < 0) snprintf(wrong_s, sizeof wrong_s, "N/A");
      else snprintf(wrong_s, sizeof wrong_s, "%lld", wrong);
      printf("%14zu %13lld %9s %15s %11.1f %11.1f %9.2f %9.2f %7s %10.2f %7.2f", (size_t)reported,
             (long long)count, spmd_dtype_name(b->dtype), op_names[op], mean * 1e6, median * 1e6,
             algbw, busbw, wrong_s, mc, ratio);
      if (b->mpi == MPI_BESIDE) {
        if (m.active)
          printf(" %11.1f %11.1f %9.2f %8.2f", pmean * 1e6, pmedian * 1e6,
                 preported / pmean / 1e9 * pfactor, median / pmedian);
        else
          printf(" %11s %11s %9s %8s", "-", "-", "-", "-");
      }
      printf("\n");
    }
    fflush(stdout);
  }

  free(times);
  free(mtimes);
  free(ptimes);
  free(ring);
  free(host);
  mpi_release(&m);
  spmd_array_destroy(out);
  spmd_array_destroy(in);
  spmd_sharding_destroy(out_s);
  spmd_sharding_destroy(in_s);
  spmd_collective_destroy(coll);
}

static int launched_by_mpirun(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; ++i)
    if (getenv(vars[i]) && *getenv(vars[i])) return 1;
  return 0;
}

int main(int argc, char **argv) {
  size_t minb = 8, maxb = 64u << 20;
  double factor = 2;
  int iters = 20, warmups = 5, devices = 0, check = 1, memcpy_ref = 1;
  int threads = (int)sysconf(_SC_NPROCESSORS_ONLN), use_shard_map = 0;
  int mpi_mode = MPI_NONE, agg = AGG_MAX;
  int64_t timeout_ms = 0;
  const char *ops = "all", *mesh_text = NULL, *axes = NULL;
  spmd_dtype dtype = SPMD_F32;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "-M") == 0) { /* its value is optional */
      const char *v = i + 1 < argc ? argv[i + 1] : "";
      if (strcmp(v, "only") == 0) mpi_mode = MPI_ONLY, ++i;
      else if (strcmp(v, "1") == 0 || strcmp(v, "both") == 0) mpi_mode = MPI_BESIDE, ++i;
      else if (strcmp(v, "0") == 0) mpi_mode = MPI_NONE, ++i;
      else mpi_mode = MPI_BESIDE;
      continue;
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
      case 'r': memcpy_ref = atoi(v); break;
      case 't': timeout_ms = atoll(v); bad = timeout_ms < 0; break;
      case 'o': ops = v; break;
      case 'T': threads = atoi(v); bad = threads < 1; break;
      case 's': use_shard_map = atoi(v); break;
      case 'A':
        if (strcmp(v, "max") == 0) agg = AGG_MAX;
        else if (strcmp(v, "avg") == 0) agg = AGG_AVG;
        else if (strcmp(v, "0") == 0) agg = AGG_RANK0;
        else bad = 1;
        break;
      default: bad = 1;
    }
    if (bad) {
      fprintf(stderr, "spmd-bench: bad value '%s' for %s\n", v, a);
      return 2;
    }
  }

  /* MPI: started here (so its barrier and reductions serve the bench, and
   * libspmd's plugin finds it started) under a launcher, or for -M. */
  const char *dist_env = getenv("SPMD_DISTRIBUTED");
  const int want_dist = dist_env && strcmp(dist_env, "mpi") == 0 && mpi_mode != MPI_ONLY;
#ifdef SPMD_BENCH_MPI
  if (launched_by_mpirun() || mpi_mode != MPI_NONE) {
    int level = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level) != MPI_SUCCESS) {
      fprintf(stderr, "spmd-bench: MPI_Init_thread failed\n");
      return 1;
    }
    g_mpi_started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  }
#else
  if (mpi_mode != MPI_NONE) {
    fprintf(stderr, "spmd-bench: -M needs a build with MPI (SPMD_WITH_MPI)\n");
    return 2;
  }
  (void)launched_by_mpirun;
#endif

  /* The mesh: "2x4" -> axes x, y. */
  int64_t shape[4];
  size_t ndim = 0;
  int64_t mesh_devices = 0;
  static const char *const names[4] = {"x", "y", "z", "w"};
  if (mesh_text != NULL) {
    const char *p = mesh_text;
    while (*p && ndim < 4) {
      char *end;
      shape[ndim++] = strtoll(p, &end, 10);
      p = *end == 'x' || *end == ',' ? end + 1 : end;
      if (end == p && *p) break;
    }
    mesh_devices = 1;
    for (size_t i = 0; i < ndim; ++i) mesh_devices *= shape[i];
  }

  spmd_runtime *rt = NULL;
  spmd_mesh *mesh = NULL;
  int64_t n = 1;
  char axes_spec[64] = "", all_axes[32] = "(";
  int processes = 1, process = 0, local = 0, total = 0;
  if (mpi_mode != MPI_ONLY) {
    spmd_runtime_options ro = SPMD_RUNTIME_OPTIONS_INIT;
    ro.platform = SPMD_PLATFORM_DEFAULT; /* SPMD_PLATFORM=sim checks the sim platform */
    ro.worker_threads = threads;
    if (devices > 0) {
      /* one process: as before, at least the mesh's devices */
      ro.cpu_device_count = !want_dist && mesh_devices > devices ? (int)mesh_devices : devices;
    } else if (!want_dist) {
      /* one process: 8, or as many as the mesh needs */
      ro.cpu_device_count = mesh_devices > 8 ? (int)mesh_devices : 8;
    } else if (mesh_devices > 0 && g_nranks > 1 && mesh_devices % g_nranks == 0) {
      ro.cpu_device_count = (int)(mesh_devices / g_nranks);
    } /* else 0: $SPMD_CPU_DEVICES, else 8, in every process */
    CHECK(spmd_runtime_create(&ro, &rt));
    CHECK(spmd_runtime_process_count(rt, &processes));
    CHECK(spmd_runtime_process_index(rt, &process));
    CHECK(spmd_runtime_local_device_count(rt, &local));
    CHECK(spmd_runtime_device_count(rt, &total));
    if (!g_mpi_started) {
      g_rank = process;
      g_nranks = processes;
    }
    if (mesh_text == NULL) {
      shape[ndim++] = total;
      mesh_devices = total;
    }
    if (processes > 1 && mesh_devices != total) {
      if (g_rank == 0)
        fprintf(stderr,
                "spmd-bench: the mesh %s has %lld devices, but the runtime over %d processes "
                "has %d (%d each): over several processes the mesh must cover every device "
                "(set -g or SPMD_CPU_DEVICES)\n",
                mesh_text, (long long)mesh_devices, processes, total, local);
      die();
    }
    for (size_t i = 0; i < ndim; ++i) {
      strcat(all_axes, names[i]);
      strcat(all_axes, i + 1 < ndim ? "," : ")");
    }
    if (axes == NULL) axes = all_axes;
    CHECK(spmd_mesh_create(rt, ndim, shape, names, NULL, &mesh));
    /* Group size: product of the sizes of the named axes. */
    snprintf(axes_spec, sizeof axes_spec, "(%s)", axes);
    for (const char *p = axes; *p; ++p)
      for (size_t i = 0; i < ndim; ++i)
        if (*p == names[i][0]) n *= shape[i];
    /* strip doubled parentheses: "((x,y))" is still one tuple */
    if (axes[0] == '(') snprintf(axes_spec, sizeof axes_spec, "%s", axes);
#ifdef SPMD_BENCH_MPI
    if (g_mpi_started && processes > 1 && processes != g_nranks) {
      if (g_rank == 0)
        fprintf(stderr, "spmd-bench: the runtime spans %d processes of the %d ranks\n",
                processes, g_nranks);
      die();
    }
#endif
    /* Without MPI of our own: a barrier out of libspmd over all devices. */
    if (!g_mpi_started && processes > 1) {
      static spmd_barrier sb;
      spmd_sharding *s = NULL;
      CHECK(spmd_sharding_named_text(mesh, all_axes, &s));
      const int64_t len = total;
      float *ones = calloc((size_t)total, sizeof(float));
      CHECK(spmd_array_from_host(s, SPMD_F32, 1, &len, ones, (size_t)total * sizeof(float),
                                 &sb.in));
      free(ones);
      spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
      o.tiled = 1;
      CHECK(spmd_collective_create(s, SPMD_COLLECTIVE_PSUM, all_axes, SPMD_F32, 1, &len, &o,
                                   &sb.coll));
      spmd_sharding *os = NULL;
      int64_t oshape[1];
      CHECK(spmd_collective_output_sharding(sb.coll, &os));
      CHECK(spmd_collective_output_shape(sb.coll, 1, oshape, NULL));
      CHECK(spmd_array_zeros(os, SPMD_F32, 1, oshape, &sb.out));
      spmd_sharding_destroy(os);
      spmd_sharding_destroy(s);
      g_spmd_barrier = &sb;
    }
  }
  const int local_mesh_devices = processes > 1 ? (int)(mesh_devices / processes)
                                               : (int)mesh_devices;

  bench b = {rt, mesh, axes, axes_spec, n, (int)mesh_devices, local_mesh_devices, process,
             threads, dtype, iters, warmups, check, memcpy_ref, timeout_ms, use_shard_map,
             mpi_mode, agg};
  static const char *const agg_names[] = {"the slowest process's", "the processes' mean",
                                          "process 0's"};
  if (g_rank == 0) {
    if (mpi_mode != MPI_ONLY) {
      char *mesh_str = NULL;
      CHECK(spmd_mesh_to_string(mesh, &mesh_str));
      spmd_device_info info = SPMD_DEVICE_INFO_INIT;
      CHECK(spmd_runtime_device_info(rt, 0, &info));
      printf("# spmd-bench: %s of %s devices (%d process%s x %d devices), collectives over %s "
             "(%lld devices per group), %s, %d iterations, %d warm-ups\n",
             mesh_str, info.platform_name, processes, processes > 1 ? "es" : "", local, axes,
             (long long)n, spmd_dtype_name(dtype), iters, warmups);
      spmd_string_free(mesh_str);
      if (processes > 1 || g_nranks > 1)
        printf("# %s: each call after a barrier (%s); time of a call: %s\n",
               processes > 1 ? "distributed runtime" : "a runtime per rank",
               g_mpi_started ? "MPI_Barrier" : "a libspmd psum",
               g_mpi_started ? agg_names[agg] : "process 0's (no MPI in this build)");
      if (use_shard_map)
        printf("# collectives run inside spmd_shard_map, one thread per device (%d per "
               "process)", local_mesh_devices);
      else
        printf("# persistent collectives run on %d worker threads per process", threads);
      if (memcpy_ref)
        printf("; memcpy reference: %d threads per process, same bytes, same run\n",
               use_shard_map ? local_mesh_devices : threads);
      else
        printf("; no memcpy reference (-r 0)\n");
    } else {
      printf("# spmd-bench -M only: MPI's collectives alone, %s, %d iterations, %d warm-ups\n",
             spmd_dtype_name(dtype), iters, warmups);
    }
#ifdef SPMD_BENCH_MPI
    if (mpi_mode != MPI_NONE) {
      char lib[MPI_MAX_LIBRARY_VERSION_STRING];
      int len = 0;
      MPI_Get_library_version(lib, &len);
      lib[strcspn(lib, ",\n")] = '\0';
      const char *yield = getenv("OMPI_MCA_mpi_yield_when_idle");
      printf("# MPI: %s, %d rank%s of MPI_COMM_WORLD (n = %d), each call after MPI_Barrier, "
             "time of a call: %s; OMPI_MCA_mpi_yield_when_idle=%s\n",
             lib, g_nranks, g_nranks > 1 ? "s" : "", g_nranks, agg_names[agg],
             yield ? yield : "(unset)");
    }
#endif
    printf("#\n");
    if (mpi_mode == MPI_ONLY) {
      printf("# %12s %13s %9s %15s %11s %11s %9s %9s\n", "size(B)", "count", "type",
             "collective", "time(us)", "median(us)", "algbw", "busbw");
      printf("# %12s %13s %9s %15s %11s %11s %9s %9s\n", "", "(elements)", "", "(MPI)", "", "",
             "(GB/s)", "(GB/s)");
    } else {
      printf("# %12s %13s %9s %15s %11s %11s %9s %9s %7s %10s %7s", "size(B)", "count", "type",
             "collective", "time(us)", "median(us)", "algbw", "busbw", "#wrong", "memcpy",
             "ratio");
      if (mpi_mode == MPI_BESIDE)
        printf(" %11s %11s %9s %8s", "mpi(us)", "mpimed(us)", "mpibusbw", "ours/mpi");
      printf("\n# %12s %13s %9s %15s %11s %11s %9s %9s %7s %10s %7s", "", "(elements)", "", "",
             "", "", "(GB/s)", "(GB/s)", "", "(GB/s)", "");
      if (mpi_mode == MPI_BESIDE) printf(" %11s %11s %9s %8s", "", "", "(GB/s)", "(median)");
      printf("\n");
    }
    fflush(stdout);
  }

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
  if (g_spmd_barrier) {
    spmd_array_destroy(g_spmd_barrier->in);
    spmd_array_destroy(g_spmd_barrier->out);
    spmd_collective_destroy(g_spmd_barrier->coll);
    g_spmd_barrier = NULL;
  }
  if (mesh) spmd_mesh_destroy(mesh);
  if (rt) spmd_runtime_destroy(rt);
#ifdef SPMD_BENCH_MPI
  if (g_mpi_started) MPI_Finalize();
#endif
  if (total_wrong > 0) {
    if (g_rank == 0) fprintf(stderr, "spmd-bench: %lld wrong elements\n", total_wrong);
    return 1;
  }
  return 0;
}
