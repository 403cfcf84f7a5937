// Batched products (kernels/gemm.hpp) on the GPU. Floats go to cuBLAS:
// row-major C = A B is column-major C^T = B^T A^T, so the operands swap
// places; f32 accumulates in f32 (TF32 tensor cores only when the platform
// allows them), f16 and bf16 in f32 and round once to the type, f64 in
// f64. Integers and bool multiply exactly, wrapping, one thread per
// element of the result (kernels/device/small.hpp's body).
#include <cublas_v2.h>

#include <climits>

#include "backend/cuda/launch.hpp"
#include "base/dtype.hpp"
#include "kernels/device/small.hpp"

namespace spmd::cuda {

namespace {

__global__ void int_gemm_kernel(spmd::gemm::Params p, const unsigned char *a,
                                const unsigned char *b, unsigned char *c, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total; i += step)
    dev::small::int_product(p, a, b, c, i);
}

void check_blas(cublasStatus_t s, const KernelEnv &env) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  fail(s == CUBLAS_STATUS_ALLOC_FAILED ? SPMD_ERR_OUT_OF_MEMORY : SPMD_ERR_INTERNAL,
       env.device_label, ": cuBLAS gemm: ", cublasGetStatusString(s));
}

void blas(const spmd::gemm::Params &p, const void *a, const void *b, void *c, const KernelEnv &env) {
  if (env.blas == nullptr) fail(SPMD_ERR_INTERNAL, env.device_label, ": gemm kernel without a cuBLAS handle");
  cudaDataType type = CUDA_R_32F;
  cublasComputeType_t compute = env.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (p.dtype == SPMD_F64) {
    type = CUDA_R_64F;
    compute = CUBLAS_COMPUTE_64F;
  } else if (p.dtype == SPMD_F16 || p.dtype == SPMD_BF16) {
    type = p.dtype == SPMD_F16 ? CUDA_R_16F : CUDA_R_16BF;
    compute = CUBLAS_COMPUTE_32F;
  }
  const float one = 1.0f, zero = 0.0f;
  const double one64 = 1.0, zero64 = 0.0;
  const void *alpha = p.dtype == SPMD_F64 ? static_cast<const void *>(&one64) : &one;
  const void *beta = p.dtype == SPMD_F64 ? static_cast<const void *>(&zero64) : &zero;
  // cuBLAS's A is our b (n x k columns), its B our a.
  const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t ldb = p.trans_b ? p.k : p.n, lda = p.trans_a ? p.m : p.k, ldc = p.n;
  const long long sb = p.k * p.n, sa = p.m * p.k, sc = p.m * p.n;
  const bool fits = p.m <= INT_MAX && p.n <= INT_MAX && p.k <= INT_MAX && p.batch <= INT_MAX;
  if (fits)
    check_blas(cublasGemmStridedBatchedEx(
                   env.blas, op_b, op_a, static_cast<int>(p.n), static_cast<int>(p.m),
                   static_cast<int>(p.k), alpha, b, type, static_cast<int>(ldb), sb, a, type,
                   static_cast<int>(lda), sa, beta, c, type, static_cast<int>(ldc), sc,
                   static_cast<int>(p.batch), compute, CUBLAS_GEMM_DEFAULT),
               env);
  else
    check_blas(cublasGemmStridedBatchedEx_64(env.blas, op_b, op_a, p.n, p.m, p.k, alpha, b, type,
                                             ldb, sb, a, type, lda, sa, beta, c, type, ldc, sc,
                                             p.batch, compute, CUBLAS_GEMM_DEFAULT),
               env);
}

}  // namespace

void launch_gemm(const Kernel &k, const KernelEnv &env) {
  const spmd::gemm::Params &p = k.gemm;
  const int64_t total = p.batch * p.m * p.n;
  if (total == 0) return;
  unsigned char *c = device_ptr(k.out);
  const auto *a = device_ptr<const unsigned char>(k.in0);
  const auto *b = device_ptr<const unsigned char>(k.in1);
  switch (p.dtype) {
    case SPMD_F32:
    case SPMD_F64:
    case SPMD_F16:
    case SPMD_BF16:
      if (p.k == 0) break;
      return blas(p, a, b, c, env);
    case SPMD_I8: case SPMD_I16: case SPMD_I32: case SPMD_I64:
    case SPMD_U8: case SPMD_U16: case SPMD_U32: case SPMD_BOOL:
      if (p.k == 0) break;
      int_gemm_kernel<<<grid_for(total, kBlockThreads, env), kBlockThreads, 0, env.stream>>>(
          p, a, b, c, total);
      return check_launch(env.device_label, "gemm kernel");
    default:
      fail(SPMD_ERR_INTERNAL, env.device_label, ": gemm kernel: dtype ", static_cast<int>(p.dtype));
  }
  // An empty sum: zeros.
  check_call(cudaMemsetAsync(c, 0, static_cast<size_t>(total) * dtype_size(p.dtype), env.stream),
             env.device_label, "gemm kernel (k = 0)");
}

}  // namespace spmd::cuda
