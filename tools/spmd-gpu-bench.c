/* spmd-gpu-bench: libspmd on the cuda platform, one GPU split into logical
 * devices (8 by default), each figure beside a reference measured in the
 * same run: a device-to-device copy for the memory-bound figures, one
 * cuBLAS GEMM of the same global size for the matmul. Medians of several
 * repetitions after warm-ups, with min and max. Every figure is also
 * printed as a "RESULT key value unit" line, which tools/gpu-check.sh puts
 * beside tools/gpu_bench_jax.py's. A figure whose op fails says why and the
 * others still run. -h for the options and the definitions. */
#define _POSIX_C_SOURCE 200809L
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spmd/spmd.h"

#include "bench_common.h"

static void usage(FILE *f) {
  fprintf(f,
"usage: spmd-gpu-bench [options]\n"
"\n"
"  -o FIGURES  comma separated: copy, collectives, matmul, add, sum, dispatch,\n"
"              api, or all (default all; copy, the reference, is always\n"
"              measured)\n"
"  -n ITERS    timed repetitions of each figure (default 10)\n"
"  -w ITERS    warm-up repetitions (default 3)\n"
"  -g N        logical devices per GPU, the mesh's size (default 8)\n"
"  -b SIZE     the copy's bytes (default 1G); K, M, G suffixes\n"
"  -c SIZE     bytes of the collectives' global f32 array (default 256M)\n"
"  -a SIZE     bytes of each operand of the elementwise add (default 1G)\n"
"  -m N        matmul size: N x N by N x N bf16 (default 8192)\n"
"  -t OPS      tiny adds queued per repetition (default 1000)\n"
"  -h          this help\n"
"\n"
"The platform is cuda, whatever SPMD_PLATFORM says; SPMD_CUDA_COLLECTIVES\n"
"(auto, native, nccl) picks the collectives' path. The mesh is 1-D ('x')\n"
"over the first N devices: the logical devices of the first GPU.\n"
"\n"
"Figures (times are host wall clock around the call and a wait for its\n"
"result: spmd_array_block_until_ready, cudaStreamSynchronize):\n"
"  copy         cudaMemcpyAsync of SIZE bytes device to device on one\n"
"               stream; GB/s counting bytes read + written (2 * SIZE).\n"
"  collectives  persistent collectives (spmd_collective_execute_into) on a\n"
"               global f32 array sharded P('x'): all_gather, reduce_scatter\n"
"               (psum_scatter, tiled), all_reduce (psum), all_to_all (tiled).\n"
"               size as nccl-tests counts it: all_gather, the gathered\n"
"               result; the others, one device's buffer. algbw = size/time;\n"
"               busbw = algbw * (n-1)/n (all_gather, reduce_scatter,\n"
"               all_to_all) or 2(n-1)/n (all_reduce). All n devices share\n"
"               one GPU's memory, so the figure set beside the copy is\n"
"               n * busbw, the bytes all devices move per second, each read\n"
"               once and written once: ratio = 2 * n * busbw / copy rate.\n"
"               #wrong counts wrong elements of the first shard.\n"
"  matmul       spmd_matmul of bf16 arrays, the left sharded by rows over\n"
"               the mesh, the right replicated; TFLOP/s = 2 N^3 / time,\n"
"               beside one cublasGemmEx (bf16, f32 compute) of N^3.\n"
"  add          spmd_binary add of two f32 arrays sharded over the mesh; GB/s\n"
"               counting 2 reads + 1 write; ratio to the copy rate.\n"
"  sum          spmd_reduce sum of the add's first operand to one value (each\n"
"               device folds its shard, then the shards' sums combine); GB/s\n"
"               counting the bytes read; ratio to the copy rate.\n"
"  dispatch     host time per spmd_binary add of two 8 x 8 f32 arrays\n"
"               sharded over the mesh: OPS adds queued, then one\n"
"               spmd_array_block_until_ready, divided by OPS.\n"
"  api          host time per CUDA runtime call of the kinds an eager op\n"
"               makes per logical device (a small cudaMemsetAsync standing\n"
"               for a kernel launch, cudaEventRecord, cudaStreamWaitEvent on\n"
"               another stream's event, cudaMallocAsync with cudaFreeAsync,\n"
"               cudaEventQuery): the floor under dispatch's figure.\n");
}

static int parse_size(const char *s, size_t *out) {
  char *end = NULL;
  double v = strtod(s, &end);
  if (end == s || v <= 0) return -1;
  switch (*end) {
    case 'k': case 'K': v *= 1024; ++end; break;
    case 'm': case 'M': v *= 1024.0 * 1024; ++end; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return -1;
  *out = (size_t)v;
  return 0;
}

typedef struct {
  int iters, warmups, devices, tiny_ops;
  size_t copy_bytes, coll_bytes, add_bytes;
  int64_t matmul_n;
  const char *figures;
} options;

/* Min, median and max of n times (sorts them). */
typedef struct {
  double min, med, max;
} spread;

static spread spread_of(double *t, int n) {
  spread s;
  s.med = median(t, n); /* sorts */
  s.min = t[0];
  s.max = t[n - 1];
  return s;
}

/* "rate median (min .. max)" for a quantity of `work` units per repetition:
 * the fastest repetition gives the highest rate. */
static void print_rate(const char *name, double work, spread s, double scale, const char *unit) {
  printf("%-44s %10.3f ms %10.2f %-8s (%.2f .. %.2f)\n", name, 1e3 * s.med, work / s.med / scale,
         unit, work / s.max / scale, work / s.min / scale);
}

static int wanted(const options *o, const char *figure) {
  return strcmp(o->figures, "all") == 0 || strstr(o->figures, figure) != NULL;
}

/* Prints a failed libspmd call and leaves the figure. */
#define TRY(call)                                                                        \
  do {                                                                                   \
    spmd_status st_ = (call);                                                            \
    if (st_ != SPMD_OK) {                                                                \
      printf("  FAILED: %s: %s: %s\n", #call, spmd_status_string(st_), spmd_last_error()); \
      goto done;                                                                         \
    }                                                                                    \
  } while (0)

#define TRY_CUDA(call)                                                                   \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      printf("  FAILED: %s: %s\n", #call, cudaGetErrorString(e_));                       \
      goto done;                                                                         \
    }                                                                                    \
  } while (0)

#define TRY_CUBLAS(call)                                                                 \
  do {                                                                                   \
    cublasStatus_t s_ = (call);                                                          \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      printf("  FAILED: %s: cuBLAS status %d\n", #call, (int)s_);                        \
      goto done;                                                                         \
    }                                                                                    \
  } while (0)

/* ---- the reference: one device-to-device copy ---- */

/* GB/s counting bytes read + written, or 0 when it could not be measured. */
static double copy_rate(const options *o) {
  double rate = 0, *t = malloc((size_t)o->iters * sizeof *t);
  void *src = NULL, *dst = NULL;
  cudaStream_t stream = NULL;
  const size_t bytes = o->copy_bytes;
  printf("# reference: device-to-device copy on GPU 0\n");
  TRY_CUDA(cudaSetDevice(0));
  TRY_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  TRY_CUDA(cudaMalloc(&src, bytes));
  TRY_CUDA(cudaMalloc(&dst, bytes));
  TRY_CUDA(cudaMemsetAsync(src, 1, bytes, stream));
  TRY_CUDA(cudaMemsetAsync(dst, 0, bytes, stream));
  TRY_CUDA(cudaStreamSynchronize(stream));
  for (int i = -o->warmups; i < o->iters; ++i) {
    const double t0 = now();
    TRY_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    TRY_CUDA(cudaStreamSynchronize(stream));
    if (i >= 0) t[i] = now() - t0;
  }
  const spread s = spread_of(t, o->iters);
  char name[64];
  snprintf(name, sizeof name, "copy %zu MiB (read+write)", bytes >> 20);
  print_rate(name, 2.0 * (double)bytes, s, 1e9, "GB/s");
  rate = 2.0 * (double)bytes / s.med / 1e9;
  printf("RESULT copy_gbs %.2f GB/s\n", rate);
done:
  cudaFree(src);
  cudaFree(dst);
  if (stream) cudaStreamDestroy(stream);
  free(t);
  return rate;
}

/* ---- persistent collectives ---- */

static void collectives(const options *o, spmd_mesh *mesh, double copy_gbs) {
  enum { AG, RS, AR, A2A, NKINDS };
  static const char *const names[NKINDS] = {"all_gather", "reduce_scatter", "all_reduce",
                                            "all_to_all"};
  static const spmd_collective_kind kinds[NKINDS] = {
      SPMD_COLLECTIVE_ALL_GATHER, SPMD_COLLECTIVE_PSUM_SCATTER, SPMD_COLLECTIVE_PSUM,
      SPMD_COLLECTIVE_ALL_TO_ALL};
  const int n = o->devices;
  const int64_t global = (int64_t)(o->coll_bytes / sizeof(float) / (size_t)n) * n;
  const double gbytes = (double)global * sizeof(float);
  const char *path = getenv("SPMD_CUDA_COLLECTIVES");
  printf("# collectives over %d devices of one GPU, global f32 array of %.0f MiB sharded "
         "P('x'), path %s\n", n, gbytes / (1 << 20), path && *path ? path : "auto");
  printf("# %-15s %10s %10s %10s %10s %10s %10s %7s %7s\n", "collective", "size(MiB)",
         "median(ms)", "min(ms)", "max(ms)", "algbw", "busbw", "ratio", "#wrong");
  for (int k = 0; k < NKINDS; ++k) {
    spmd_sharding *in_s = NULL, *out_s = NULL;
    spmd_array *in = NULL, *out = NULL;
    spmd_collective *coll = NULL;
    double *t = malloc((size_t)o->iters * sizeof *t);
    float *shard = NULL;
    printf("  %-15s", names[k]);
    fflush(stdout);
    TRY(spmd_sharding_named_text(mesh, "x", &in_s));
    TRY(spmd_array_full(in_s, SPMD_F32, 1, &global, 1.0, &in));
    spmd_collective_options co = SPMD_COLLECTIVE_OPTIONS_INIT;
    co.tiled = 1;
    TRY(spmd_collective_create(in_s, kinds[k], "x", SPMD_F32, 1, &global, &co, &coll));
    spmd_dtype out_t;
    int64_t out_shape[1];
    TRY(spmd_collective_output_sharding(coll, &out_s));
    TRY(spmd_collective_output_dtype(coll, &out_t));
    TRY(spmd_collective_output_shape(coll, 1, out_shape, NULL));
    TRY(spmd_array_zeros(out_s, out_t, 1, out_shape, &out));
    for (int i = -o->warmups; i < o->iters; ++i) {
      const double t0 = now();
      TRY(spmd_collective_execute_into(coll, in, out));
      TRY(spmd_array_block_until_ready(out));
      if (i >= 0) t[i] = now() - t0;
    }
    /* Ones everywhere: sums are n, moved values stay 1. */
    spmd_shard_info info = SPMD_SHARD_INFO_INIT;
    TRY(spmd_array_shard_info(out, 0, &info));
    const size_t count = (size_t)info.local_shape[0];
    shard = malloc(count * sizeof *shard + 1);
    TRY(spmd_array_shard_read(out, 0, shard, count * sizeof *shard));
    const float want = k == RS || k == AR ? (float)n : 1.0f;
    long long wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += shard[i] != want;
    const double size = k == AG ? gbytes : gbytes / n;
    const double factor = k == AR ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
    const spread s = spread_of(t, o->iters);
    const double algbw = size / s.med / 1e9, busbw = algbw * factor;
    const double ratio = copy_gbs > 0 ? 2.0 * n * busbw / copy_gbs : 0;
    printf("%10.1f %10.3f %10.3f %10.3f %10.2f %10.2f %7.2f %7lld\n", size / (1 << 20),
           1e3 * s.med, 1e3 * s.min, 1e3 * s.max, algbw, busbw, ratio, wrong);
    printf("RESULT %s_busbw %.2f GB/s\nRESULT %s_ratio %.3f of copy\n", names[k], busbw,
           names[k], ratio);
  done:
    fflush(stdout);
    free(shard);
    free(t);
    spmd_collective_destroy(coll);
    spmd_array_destroy(out);
    spmd_array_destroy(in);
    spmd_sharding_destroy(out_s);
    spmd_sharding_destroy(in_s);
  }
}

/* ---- bf16 matmul beside one cuBLAS GEMM ---- */

/* Small bf16 values (multiples of 1/8 in [-1, 1]), the same on both sides. */
static uint16_t *bf16_pattern(int64_t count, int seed) {
  uint16_t *h = malloc((size_t)count * sizeof *h);
  if (h == NULL) return NULL;
  for (int64_t i = 0; i < count; ++i) {
    const float v = (float)((i * 7 + seed) % 17 - 8) / 8.0f;
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    h[i] = (uint16_t)(u >> 16); /* exact: at most 4 significant bits */
  }
  return h;
}

static double cublas_tflops(const options *o, const uint16_t *ha, const uint16_t *hb) {
  const int64_t n = o->matmul_n;
  const size_t bytes = (size_t)(n * n) * sizeof(uint16_t);
  double tflops = 0, *t = malloc((size_t)o->iters * sizeof *t);
  void *a = NULL, *b = NULL, *c = NULL;
  cudaStream_t stream = NULL;
  cublasHandle_t handle = NULL;
  TRY_CUDA(cudaSetDevice(0));
  TRY_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  TRY_CUDA(cudaMalloc(&a, bytes));
  TRY_CUDA(cudaMalloc(&b, bytes));
  TRY_CUDA(cudaMalloc(&c, bytes));
  TRY_CUDA(cudaMemcpy(a, ha, bytes, cudaMemcpyHostToDevice));
  TRY_CUDA(cudaMemcpy(b, hb, bytes, cudaMemcpyHostToDevice));
  TRY_CUBLAS(cublasCreate(&handle));
  TRY_CUBLAS(cublasSetStream(handle, stream));
  const float alpha = 1.0f, beta = 0.0f;
  for (int i = -o->warmups; i < o->iters; ++i) {
    const double t0 = now();
    /* Row-major C = A B is column-major C^T = B^T A^T. */
    TRY_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &alpha, b,
                            CUDA_R_16BF, (int)n, a, CUDA_R_16BF, (int)n, &beta, c, CUDA_R_16BF,
                            (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    TRY_CUDA(cudaStreamSynchronize(stream));
    if (i >= 0) t[i] = now() - t0;
  }
  const spread s = spread_of(t, o->iters);
  char name[64];
  snprintf(name, sizeof name, "cuBLAS GEMM bf16 %lld^3 (reference)", (long long)n);
  print_rate(name, 2.0 * (double)n * n * n, s, 1e12, "TFLOP/s");
  tflops = 2.0 * (double)n * n * n / s.med / 1e12;
  printf("RESULT cublas_tflops %.2f TFLOP/s\n", tflops);
done:
  if (handle) cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  if (stream) cudaStreamDestroy(stream);
  free(t);
  return tflops;
}

static void matmul(const options *o, spmd_mesh *mesh) {
  const int64_t n = o->matmul_n, shape[2] = {n, n};
  const size_t bytes = (size_t)(n * n) * sizeof(uint16_t);
  uint16_t *ha = bf16_pattern(n * n, 0), *hb = bf16_pattern(n * n, 5);
  double *t = malloc((size_t)o->iters * sizeof *t);
  spmd_sharding *rows = NULL, *replicated = NULL;
  spmd_array *a = NULL, *b = NULL;
  printf("# matmul bf16 %lld x %lld by %lld x %lld, left sharded by rows over %d devices\n",
         (long long)n, (long long)n, (long long)n, (long long)n, o->devices);
  if (ha == NULL || hb == NULL) {
    printf("  FAILED: no host memory for the operands\n");
    goto done;
  }
  const double gemm = cublas_tflops(o, ha, hb);
  TRY(spmd_sharding_named_text(mesh, "x, None", &rows));
  TRY(spmd_sharding_named_text(mesh, "", &replicated));
  TRY(spmd_array_from_host(rows, SPMD_BF16, 2, shape, ha, bytes, &a));
  TRY(spmd_array_from_host(replicated, SPMD_BF16, 2, shape, hb, bytes, &b));
  for (int i = -o->warmups; i < o->iters; ++i) {
    spmd_array *c = NULL;
    const double t0 = now();
    TRY(spmd_matmul(a, b, NULL, &c));
    const spmd_status st = spmd_array_block_until_ready(c);
    if (i >= 0) t[i] = now() - t0;
    spmd_array_destroy(c);
    TRY(st);
  }
  const spread s = spread_of(t, o->iters);
  char name[64];
  snprintf(name, sizeof name, "spmd_matmul bf16 %lld^3, rows sharded", (long long)n);
  print_rate(name, 2.0 * (double)n * n * n, s, 1e12, "TFLOP/s");
  const double tflops = 2.0 * (double)n * n * n / s.med / 1e12;
  printf("RESULT matmul_tflops %.2f TFLOP/s\n", tflops);
  if (gemm > 0) printf("RESULT matmul_ratio %.3f of cuBLAS\n", tflops / gemm);
done:
  fflush(stdout);
  spmd_array_destroy(a);
  spmd_array_destroy(b);
  spmd_sharding_destroy(rows);
  spmd_sharding_destroy(replicated);
  free(ha);
  free(hb);
  free(t);
}

/* ---- elementwise add, memory-bound ---- */

static void add(const options *o, spmd_mesh *mesh, double copy_gbs) {
  const int64_t count = (int64_t)(o->add_bytes / sizeof(float) / (size_t)o->devices) * o->devices;
  const double bytes = 3.0 * (double)count * sizeof(float);
  double *t = malloc((size_t)o->iters * sizeof *t);
  spmd_sharding *s_x = NULL;
  spmd_array *x = NULL, *y = NULL;
  float probe[4] = {0};
  printf("# add f32, two operands of %.0f MiB sharded over %d devices\n",
         (double)count * sizeof(float) / (1 << 20), o->devices);
  TRY(spmd_sharding_named_text(mesh, "x", &s_x));
  TRY(spmd_array_full(s_x, SPMD_F32, 1, &count, 1.0, &x));
  TRY(spmd_array_full(s_x, SPMD_F32, 1, &count, 2.0, &y));
  for (int i = -o->warmups; i < o->iters; ++i) {
    spmd_array *z = NULL;
    const double t0 = now();
    TRY(spmd_binary(SPMD_BINARY_ADD, x, y, NULL, &z));
    const spmd_status st = spmd_array_block_until_ready(z);
    if (i >= 0) t[i] = now() - t0;
    /* One look at the result, outside the timing. */
    if (st == SPMD_OK && i == o->iters - 1) {
      spmd_array *head = NULL;
      const int64_t start = 0, stop = 4;
      if (spmd_slice(z, 1, &start, &stop, NULL, &head) == SPMD_OK)
        spmd_array_to_host(head, probe, sizeof probe);
      spmd_array_destroy(head);
    }
    spmd_array_destroy(z);
    TRY(st);
  }
  if (probe[0] != 3.0f) printf("  WRONG: 1 + 2 gave %g\n", probe[0]);
  const spread s = spread_of(t, o->iters);
  print_rate("spmd_binary add f32 (2 reads + 1 write)", bytes, s, 1e9, "GB/s");
  const double gbs = bytes / s.med / 1e9;
  printf("RESULT add_gbs %.2f GB/s\n", gbs);
  if (copy_gbs > 0) printf("RESULT add_ratio %.3f of copy\n", gbs / copy_gbs);
done:
  fflush(stdout);
  spmd_array_destroy(x);
  spmd_array_destroy(y);
  spmd_sharding_destroy(s_x);
  free(t);
}

/* ---- a full reduction ---- */

static void sum(const options *o, spmd_mesh *mesh, double copy_gbs) {
  const int64_t count = (int64_t)(o->add_bytes / sizeof(float) / (size_t)o->devices) * o->devices;
  const double bytes = (double)count * sizeof(float);
  double *t = malloc((size_t)o->iters * sizeof *t);
  spmd_sharding *s_x = NULL;
  spmd_array *x = NULL;
  float total = 0;
  printf("# sum f32 of %.0f MiB sharded over %d devices to one value\n",
         (double)count * sizeof(float) / (1 << 20), o->devices);
  TRY(spmd_sharding_named_text(mesh, "x", &s_x));
  TRY(spmd_array_full(s_x, SPMD_F32, 1, &count, 0.5, &x));
  for (int i = -o->warmups; i < o->iters; ++i) {
    spmd_array *z = NULL;
    const double t0 = now();
    TRY(spmd_reduce(SPMD_REDUCE_SUM, x, 0, NULL, 0, NULL, &z));
    const spmd_status st = spmd_array_block_until_ready(z);
    if (i >= 0) t[i] = now() - t0;
    if (st == SPMD_OK && i == o->iters - 1) spmd_array_to_host(z, &total, sizeof total);
    spmd_array_destroy(z);
    TRY(st);
  }
  /* Halves add exactly while partial sums stay below 2^24. */
  if (total != 0.5f * (float)count) printf("  WRONG: sum %.1f, want %.1f\n", total, 0.5 * count);
  const spread s = spread_of(t, o->iters);
  print_rate("spmd_reduce sum f32 to one value (reads)", bytes, s, 1e9, "GB/s");
  const double gbs = bytes / s.med / 1e9;
  printf("RESULT sum_gbs %.2f GB/s\n", gbs);
  if (copy_gbs > 0) printf("RESULT sum_ratio %.3f of copy\n", gbs / copy_gbs);
done:
  fflush(stdout);
  spmd_array_destroy(x);
  spmd_sharding_destroy(s_x);
  free(t);
}

/* ---- dispatch of tiny ops ---- */

static void dispatch(const options *o, spmd_mesh *mesh) {
  const int64_t shape[2] = {8, 8};
  double *t = malloc((size_t)o->iters * sizeof *t);
  spmd_sharding *s_x = NULL;
  spmd_array *x = NULL, *y = NULL;
  printf("# dispatch: %d adds of 8 x 8 f32 sharded over %d devices, then one wait\n",
         o->tiny_ops, o->devices);
  TRY(spmd_sharding_named_text(mesh, "x", &s_x));
  TRY(spmd_array_full(s_x, SPMD_F32, 2, shape, 1.0, &x));
  TRY(spmd_array_full(s_x, SPMD_F32, 2, shape, 2.0, &y));
  TRY(spmd_array_block_until_ready(x));
  TRY(spmd_array_block_until_ready(y));
  for (int i = -o->warmups; i < o->iters; ++i) {
    spmd_array *last = NULL;
    spmd_status st = SPMD_OK;
    const double t0 = now();
    for (int k = 0; k < o->tiny_ops && st == SPMD_OK; ++k) {
      spmd_array *z = NULL;
      st = spmd_binary(SPMD_BINARY_ADD, x, y, NULL, &z);
      spmd_array_destroy(last); /* freed once its work is done */
      last = z;
    }
    if (st == SPMD_OK) st = spmd_array_block_until_ready(last);
    if (i >= 0) t[i] = (now() - t0) / o->tiny_ops;
    spmd_array_destroy(last);
    TRY(st);
  }
  const spread s = spread_of(t, o->iters);
  printf("%-44s %10.2f us per op (%.2f .. %.2f)\n", "tiny add, queued then one wait",
         1e6 * s.med, 1e6 * s.min, 1e6 * s.max);
  printf("RESULT tiny_add_us %.2f us\n", 1e6 * s.med);
done:
  fflush(stdout);
  spmd_array_destroy(x);
  spmd_array_destroy(y);
  spmd_sharding_destroy(s_x);
  free(t);
}

/* ---- the CUDA runtime's own cost per call ---- */

static void api_costs(const options *o) {
  enum { CALLS = 20000 };
  cudaStream_t s = NULL, other = NULL;
  cudaEvent_t ev = NULL, theirs = NULL;
  void *small = NULL;
  printf("# CUDA runtime calls, host time per call (%d calls each)\n", CALLS);
  TRY_CUDA(cudaSetDevice(0));
  TRY_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  TRY_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  TRY_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  TRY_CUDA(cudaEventCreateWithFlags(&theirs, cudaEventDisableTiming));
  TRY_CUDA(cudaMalloc(&small, 256));
  TRY_CUDA(cudaEventRecord(theirs, other));
  for (int k = 0; k < 5; ++k) {
    static const char *const names[5] = {"launch (cudaMemsetAsync 256 B)", "cudaEventRecord",
                                         "cudaStreamWaitEvent", "cudaMallocAsync + cudaFreeAsync",
                                         "cudaEventQuery"};
    static const char *const keys[5] = {"api_launch_us", "api_record_us", "api_wait_us",
                                        "api_alloc_free_us", "api_query_us"};
    double best = 1e30;
    for (int rep = 0; rep < (o->iters < 5 ? o->iters : 5); ++rep) {
      const double t0 = now();
      for (int i = 0; i < CALLS; ++i) {
        cudaError_t e = cudaSuccess;
        switch (k) {
          case 0: e = cudaMemsetAsync(small, 0, 256, s); break;
          case 1: e = cudaEventRecord(ev, s); break;
          case 2: e = cudaStreamWaitEvent(s, theirs, 0); break;
          case 3: {
            void *p = NULL;
            e = cudaMallocAsync(&p, 256, s);
            if (e == cudaSuccess) e = cudaFreeAsync(p, s);
            break;
          }
          default: e = cudaEventQuery(ev); if (e == cudaErrorNotReady) e = cudaSuccess; break;
        }
        TRY_CUDA(e);
      }
      const double per = (now() - t0) / CALLS;
      if (per < best) best = per;
      TRY_CUDA(cudaStreamSynchronize(s));
    }
    printf("%-44s %10.3f us per call (fastest of the repetitions)\n", names[k], 1e6 * best);
    printf("RESULT %s %.3f us\n", keys[k], 1e6 * best);
  }
done:
  fflush(stdout);
  if (s) cudaStreamSynchronize(s);
  cudaFree(small);
  if (ev) cudaEventDestroy(ev);
  if (theirs) cudaEventDestroy(theirs);
  if (s) cudaStreamDestroy(s);
  if (other) cudaStreamDestroy(other);
}

int main(int argc, char **argv) {
  options o = {10, 3, 8, 1000, (size_t)1 << 30, (size_t)256 << 20, (size_t)1 << 30, 8192, "all"};
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (a[0] != '-' || a[1] == '\0' || a[2] != '\0' || i + 1 >= argc) {
      fprintf(stderr, "spmd-gpu-bench: bad argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
    const char *v = argv[++i];
    int bad = 0;
    switch (a[1]) {
      case 'o': o.figures = v; break;
      case 'n': o.iters = atoi(v); bad = o.iters < 1; break;
      case 'w': o.warmups = atoi(v); bad = o.warmups < 0; break;
      case 'g': o.devices = atoi(v); bad = o.devices < 1 || o.devices > 64; break;
      case 'b': bad = parse_size(v, &o.copy_bytes); break;
      case 'c': bad = parse_size(v, &o.coll_bytes); break;
      case 'a': bad = parse_size(v, &o.add_bytes); break;
      case 'm': o.matmul_n = atoll(v); bad = o.matmul_n < 1 || o.matmul_n > 65536; break;
      case 't': o.tiny_ops = atoi(v); bad = o.tiny_ops < 1; break;
      default: bad = 1;
    }
    if (bad) {
      fprintf(stderr, "spmd-gpu-bench: bad value '%s' for %s\n", v, a);
      return 2;
    }
  }

  spmd_runtime_options ro = SPMD_RUNTIME_OPTIONS_INIT;
  ro.platform = SPMD_PLATFORM_CUDA;
  ro.devices_per_gpu = o.devices;
  spmd_runtime *rt = NULL;
  CHECK(spmd_runtime_create(&ro, &rt));
  spmd_device_info info = SPMD_DEVICE_INFO_INIT;
  CHECK(spmd_runtime_device_info(rt, 0, &info));
  int total = 0, driver = 0, runtime = 0;
  CHECK(spmd_runtime_device_count(rt, &total));
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  printf("# spmd-gpu-bench: libspmd %s on %s (%lld MiB, compute capability %d), %d logical "
         "devices per GPU, %d in all; CUDA driver %d, runtime %d; %d repetitions after %d "
         "warm-ups; medians, (slowest .. fastest)\n", spmd_version_string(), info.kind,
         (long long)(info.memory_bytes >> 20), info.compute_capability, o.devices, total, driver,
         runtime, o.iters, o.warmups);
  const int64_t mesh_shape[1] = {o.devices};
  const char *axes[1] = {"x"};
  spmd_mesh *mesh = NULL;
  CHECK(spmd_mesh_create(rt, 1, mesh_shape, axes, NULL, &mesh));
  fflush(stdout);

  const double copy_gbs = copy_rate(&o);
  if (wanted(&o, "collectives")) collectives(&o, mesh, copy_gbs);
  if (wanted(&o, "matmul")) matmul(&o, mesh);
  if (wanted(&o, "add")) add(&o, mesh, copy_gbs);
  if (wanted(&o, "sum")) sum(&o, mesh, copy_gbs);
  if (wanted(&o, "dispatch")) dispatch(&o, mesh);
  if (wanted(&o, "api")) api_costs(&o);

  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  return 0;
}
