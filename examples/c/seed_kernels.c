/* The seed programs' local kernels; see seed_kernels.h. Loops are ordered so
 * the innermost one runs over contiguous memory with no dependence between
 * iterations, which compilers turn into vector code. */
#include "seed_kernels.h"

#include <math.h>
#include <string.h>

/* Rows of c are computed a block of k at a time so the rows of b in use
 * stay in cache while each row of a sweeps them. */
enum { K_BLOCK = 256 };

void seed_matmul(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n) {
  memset(c, 0, (size_t)(m * n) * sizeof *c);
  for (int64_t t0 = 0; t0 < k; t0 += K_BLOCK) {
    const int64_t t1 = t0 + K_BLOCK < k ? t0 + K_BLOCK : k;
    for (int64_t i = 0; i < m; ++i) {
      float *restrict row = c + i * n;
      for (int64_t t = t0; t < t1; ++t) {
        const float ait = a[i * k + t];
        const float *restrict brow = b + t * n;
        for (int64_t j = 0; j < n; ++j) row[j] += ait * brow[j];
      }
    }
  }
}

void seed_matmul_bt(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    const float *restrict arow = a + i * k;
    for (int64_t j = 0; j < n; ++j) {
      const float *restrict brow = b + j * k;
      float acc = 0.0f;
      for (int64_t t = 0; t < k; ++t) acc += arow[t] * brow[t];
      c[i * n + j] = acc;
    }
  }
}

void seed_matmul_at(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n) {
  memset(c, 0, (size_t)(m * n) * sizeof *c);
  for (int64_t t = 0; t < k; ++t) {
    const float *restrict brow = b + t * n;
    for (int64_t i = 0; i < m; ++i) {
      const float ati = a[t * m + i];
      float *restrict row = c + i * n;
      for (int64_t j = 0; j < n; ++j) row[j] += ati * brow[j];
    }
  }
}

void seed_softmax_rows(float *x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = x + r * cols;
    float max = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) max = row[j] > max ? row[j] : max;
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      row[j] = expf(row[j] - max);
      sum += row[j];
    }
    for (int64_t j = 0; j < cols; ++j) row[j] /= sum;
  }
}
