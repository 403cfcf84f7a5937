// Batched matrix products of one device's blocks: out[b] = a[b] (m x k)
// times b[b] (k x n), each operand row-major or transposed in memory;
// float32 (and f16, bf16) through oneDNN's sgemm where the build has it,
// else CBLAS (OpenBLAS), float64 through CBLAS. f16 and bf16 multiply in f32 and round once, as
// XLA on CPU; integers and bool multiply exactly (wrapping) in int64.
#pragma once

#include <cstdint>

#include "spmd/dtype.h"

namespace spmd::gemm {

struct Params {
  spmd_dtype dtype = SPMD_F32;  // of both operands and the result
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false;  // a[b] is stored k x m
  bool trans_b = false;  // b[b] is stored n x k
};

void run(const Params &p, void *out, const void *a, const void *b);

// Whether each of the product's matrices is small enough that one thread
// runs it about as fast as a BLAS library's team (below 2^21
// multiply-adds). Such products are best run side by side, one a thread,
// under an OnCallingThread.
bool suits_one_thread(const Params &p);

// While one is held, products run on their calling thread alone: OpenBLAS's
// threads are set to one for the process (its count is process-wide; the
// last one released restores it) and this thread's OpenMP count, which
// oneDNN's team follows, to one (restored when this thread's last one is
// released; where no OpenMP runtime is found, oneDNN is left out). For
// threads that run their products side by side, as many as cores.
class OnCallingThread {
 public:
  OnCallingThread();
  ~OnCallingThread();
  OnCallingThread(const OnCallingThread &) = delete;
  OnCallingThread &operator=(const OnCallingThread &) = delete;
};

}  // namespace spmd::gemm
