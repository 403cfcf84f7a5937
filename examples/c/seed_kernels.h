/* Local compute for the seed programs: plain C on one device's row-major
 * float32 blocks. libspmd hands each device its blocks and moves data
 * between devices; what a device computes on its own blocks is the
 * program's business, and these are the few kernels the seeds need. */
#ifndef SPMD_SEED_KERNELS_H
#define SPMD_SEED_KERNELS_H

#include <stdint.h>

/* c = a @ b for a (m, k), b (k, n), c (m, n). */
void seed_matmul(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n);

/* c = a @ b^T for a (m, k), b (n, k), c (m, n). */
void seed_matmul_bt(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n);

/* c = a^T @ b for a (k, m), b (k, n), c (m, n). */
void seed_matmul_at(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n);

/* Row-wise softmax of x (rows, cols), in place, as jax.nn.softmax: each row
 * less its maximum, exponentiated, divided by its sum. */
void seed_softmax_rows(float *x, int64_t rows, int64_t cols);

#endif /* SPMD_SEED_KERNELS_H */
