/* spmd-transfer-bench: throughput of device_put, to_host and reshard for a
 * sharded f32 array, printed beside a memcpy of the same bytes measured in
 * the same run (the reference every figure is a ratio of).
 *
 *   spmd-transfer-bench [-n MiB] [-i iterations] [-d devices] [-t threads]
 *
 * Each figure is the median over the iterations. Bytes moved are the array's
 * bytes for device_put, to_host and reshard alike. */
#include <spmd/spmd.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

/* memcpy of the same bytes split over `threads` threads, as the library's
 * worker pool splits its copies. */
typedef struct slice {
  char *dst;
  const char *src;
  size_t bytes;
} slice;

static void *copy_slice(void *arg) {
  slice *s = arg;
  memcpy(s->dst, s->src, s->bytes);
  return NULL;
}

static void threaded_memcpy(void *dst, const void *src, size_t bytes, int threads) {
  pthread_t tid[64];
  slice parts[64];
  const size_t chunk = (bytes / (size_t)threads + 63) & ~(size_t)63;
  int started = 0;
  for (int t = 0; t < threads; ++t) {
    const size_t off = (size_t)t * chunk;
    if (off >= bytes) break;
    parts[t].dst = (char *)dst + off;
    parts[t].src = (const char *)src + off;
    parts[t].bytes = off + chunk > bytes ? bytes - off : chunk;
    if (t == 0) continue;
    pthread_create(&tid[t], NULL, copy_slice, &parts[t]);
    started = t;
  }
  copy_slice(&parts[0]);
  for (int t = 1; t <= started; ++t) pthread_join(tid[t], NULL);
}

static void report(const char *what, size_t bytes, double seconds, double ref_seconds) {
  const double gbs = (double)bytes / seconds / 1e9;
  printf("%-34s %10.3f ms %9.2f GB/s %8.2f x memcpy\n", what, seconds * 1e3, gbs,
         ref_seconds / seconds);
}

int main(int argc, char **argv) {
  int mib = 64, iters = 20, devices = 8, threads = (int)sysconf(_SC_NPROCESSORS_ONLN), opt;
  while ((opt = getopt(argc, argv, "n:i:d:t:h")) != -1) {
    switch (opt) {
      case 'n': mib = atoi(optarg); break;
      case 'i': iters = atoi(optarg); break;
      case 'd': devices = atoi(optarg); break;
      case 't': threads = atoi(optarg); break;
      default:
        fprintf(stderr,
                "usage: %s [-n MiB (64)] [-i iterations (20)] [-d devices (8)] "
                "[-t worker threads (cores)]\n",
                argv[0]);
        return opt == 'h' ? 0 : 2;
    }
  }
  if (mib < 1 || iters < 1 || devices < 1 || threads < 1 || threads > 64) {
    fprintf(stderr, "%s: -n, -i and -d must be positive, -t from 1 to 64\n", argv[0]);
    return 2;
  }
  /* A square-ish f32 matrix of the requested size, rows divisible by devices. */
  const size_t bytes = (size_t)mib << 20;
  const int64_t cols = 1024;
  const int64_t rows = (int64_t)(bytes / sizeof(float)) / cols;
  int64_t shape[2] = {rows, cols};

  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.cpu_device_count = devices;
  o.worker_threads = threads;
  spmd_runtime *rt;
  CHECK(spmd_runtime_create(&o, &rt));
  int64_t ms[1] = {devices};
  const char *names[1] = {"x"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 1, ms, names, NULL, &mesh));
  spmd_sharding *rows_sh, *cols_sh;
  CHECK(spmd_sharding_named_text(mesh, "P('x', None)", &rows_sh));
  CHECK(spmd_sharding_named_text(mesh, "P(None, 'x')", &cols_sh));

  float *host = malloc(bytes), *dst = malloc(bytes);
  if (!host || !dst) {
    fprintf(stderr, "cannot allocate 2 x %d MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < bytes / sizeof(float); ++i) host[i] = (float)(i % 1000);
  memset(dst, 0, bytes);

  double *t = malloc(sizeof(double) * (size_t)iters);
  printf("spmd-transfer-bench: %d MiB f32 (%lld x %lld) over %d CPU devices, %d worker "
         "threads, %d iterations, medians; ratios against one memcpy\n",
         mib, (long long)rows, (long long)cols, devices, threads, iters);

  /* Reference: one memcpy of the same bytes between warm buffers. */
  for (int i = 0; i < iters; ++i) {
    const double t0 = now();
    memcpy(dst, host, bytes);
    t[i] = now() - t0;
  }
  const double ref = median(t, iters);
  report("memcpy (reference)", bytes, ref, ref);
  for (int i = 0; i < iters; ++i) {
    const double t0 = now();
    threaded_memcpy(dst, host, bytes, threads);
    t[i] = now() - t0;
  }
  char label[64];
  snprintf(label, sizeof label, "memcpy on %d threads", threads);
  report(label, bytes, median(t, iters), ref);

  spmd_array *a = NULL;
  for (int i = 0; i < iters + 1; ++i) {
    spmd_array_destroy(a);
    const double t0 = now();
    CHECK(spmd_array_from_host(rows_sh, SPMD_F32, 2, shape, host, bytes, &a));
    CHECK(spmd_array_block_until_ready(a));
    if (i > 0) t[i - 1] = now() - t0; /* the first call warms the allocator */
  }
  report("device_put P('x', None)", bytes, median(t, iters), ref);

  for (int i = 0; i < iters; ++i) {
    const double t0 = now();
    CHECK(spmd_array_to_host(a, dst, bytes));
    t[i] = now() - t0;
  }
  report("to_host P('x', None)", bytes, median(t, iters), ref);

  spmd_array *b = NULL;
  for (int i = 0; i < iters + 1; ++i) {
    spmd_array_destroy(b);
    const double t0 = now();
    CHECK(spmd_array_reshard(a, cols_sh, &b));
    CHECK(spmd_array_block_until_ready(b));
    if (i > 0) t[i - 1] = now() - t0;
  }
  report("reshard P('x',None)->P(None,'x')", bytes, median(t, iters), ref);

  /* The result must be the same array. */
  CHECK(spmd_array_to_host(b, dst, bytes));
  const int ok = memcmp(dst, host, bytes) == 0;
  printf("reshard result %s\n", ok ? "matches the host array" : "DIFFERS from the host array");

  spmd_array_destroy(a);
  spmd_array_destroy(b);
  spmd_sharding_destroy(rows_sh);
  spmd_sharding_destroy(cols_sh);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  free(host);
  free(dst);
  free(t);
  return ok ? 0 : 1;
}
