/* What the benchmark programs share: failing loudly on a libspmd error, a
 * monotonic clock, and medians (the figure every benchmark reports, the
 * machines being noisy). */
#ifndef SPMD_BENCH_COMMON_H
#define SPMD_BENCH_COMMON_H

#include <spmd/spmd.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    spmd_status st_ = (call);                                                          \
    if (st_ != SPMD_OK) {                                                              \
      fprintf(stderr, "%s: %s: %s\n", #call, spmd_status_string(st_), spmd_last_error()); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v. */
static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif /* SPMD_BENCH_COMMON_H */
