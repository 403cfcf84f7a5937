/* What the suites under mpirun compare: an array of a runtime over several
 * processes with the same array of a runtime of one process. */
#ifndef SPMD_MPI_COMPARE_H
#define SPMD_MPI_COMPARE_H

#include <math.h>
#include <stdlib.h>

#include "spmd_test.h"

/* The two arrays agree, with their shardings' text: byte for byte where
 * `exact` (SPMD_EXACT_REDUCTIONS=1) or the dtype is not float32; else
 * float32 values within the summation bound relative to the largest value
 * (sums across processes add partial results by process). The array over
 * processes is read with spmd_array_process_allgather: every process calls
 * this. */
static inline void assert_same_as_one_process(spmd_array *dist, spmd_array *single, int exact,
                                              const char *what) {
  size_t nd = 0, ns = 0;
  assert_ok(spmd_array_nbytes(dist, &nd));
  assert_ok(spmd_array_nbytes(single, &ns));
  if (nd != ns) fail_msg("%s: %zu bytes over processes, %zu in one", what, nd, ns);
  spmd_dtype td, ts;
  assert_ok(spmd_array_dtype(dist, &td));
  assert_ok(spmd_array_dtype(single, &ts));
  assert_int_equal(td, ts);
  unsigned char *a = malloc(nd + 1), *b = malloc(ns + 1);
  assert_ok(spmd_array_process_allgather(dist, a, nd));
  assert_ok(spmd_array_to_host(single, b, ns));
  if (exact || td != SPMD_F32) {
    for (size_t i = 0; i < nd; ++i)
      if (a[i] != b[i])
        fail_msg("%s: byte %zu differs (%u over processes, %u in one)", what, i, a[i], b[i]);
  } else {
    const float *x = (const float *)a, *y = (const float *)b;
    const size_t n = nd / sizeof(float);
    float scale = 1.0f;
    for (size_t i = 0; i < n; ++i) scale = fmaxf(scale, fabsf(y[i]));
    for (size_t i = 0; i < n; ++i)
      if (fabsf(x[i] - y[i]) > 1e-5f * scale)
        fail_msg("%s: element %zu differs beyond the bound (%g over processes, %g in one)", what, i,
                 (double)x[i], (double)y[i]);
  }
  free(a);
  free(b);
  spmd_sharding *sd = NULL, *ss = NULL;
  assert_ok(spmd_array_sharding(dist, &sd));
  assert_ok(spmd_array_sharding(single, &ss));
  char *textd = NULL, *texts = NULL;
  assert_ok(spmd_sharding_to_string(sd, &textd));
  assert_ok(spmd_sharding_to_string(ss, &texts));
  if (strcmp(textd, texts) != 0) fail_msg("%s: laid out by %s over processes, %s in one", what, textd, texts);
  spmd_string_free(textd);
  spmd_string_free(texts);
  spmd_sharding_destroy(sd);
  spmd_sharding_destroy(ss);
}

#endif /* SPMD_MPI_COMPARE_H */
