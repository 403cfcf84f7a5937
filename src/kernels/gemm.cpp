#include "kernels/gemm.hpp"

#include <cblas.h>
#ifdef SPMD_HAVE_ONEDNN
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "kernels/device/common.hpp"

namespace spmd::gemm {

namespace {

std::vector<float> widen(spmd_dtype d, const void *p, size_t n) {
  std::vector<float> v(n);
  const auto *h = static_cast<const uint16_t *>(p);
  for (size_t i = 0; i < n; ++i) v[i] = d == SPMD_F16 ? f16_bits_to_f32(h[i]) : bf16_bits_to_f32(h[i]);
  return v;
}

// Multiply-adds of one matrix product from which it is worth all cores'
// threads (oneDNN's team, where oneDNN is chosen, or OpenBLAS's).
constexpr int64_t kTeamMinWork = int64_t(1) << 21;

#ifdef SPMD_HAVE_ONEDNN

// Whether float32 products of some size go to oneDNN: where the CPU has
// AVX-512, where it was the faster library (2048^3: 213-220 GFLOP/s
// against OpenBLAS's 196-205). On an AVX2-only CPU (a 2-core AMD EPYC) its
// sgemm ran operands aligned to 64 bytes, as every array's buffers are, at
// 80 GFLOP/s against OpenBLAS's 140 (the same call on operands 16 bytes
// off that alignment: 117-155), so OpenBLAS takes them there.
// SPMD_CPU_GEMM=onednn|openblas forces one.
bool onednn_products() {
  static const bool chosen = [] {
    const char *forced = std::getenv("SPMD_CPU_GEMM");
    if (forced != nullptr && std::strcmp(forced, "onednn") == 0) return true;
    if (forced != nullptr && std::strcmp(forced, "openblas") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return chosen;
}
#endif

// OnCallingThread objects alive on this thread (a launch may hold one
// inside another's).
thread_local int t_on_calling_thread = 0;

#ifdef SPMD_HAVE_ONEDNN
// oneDNN's threads are an OpenMP runtime's (Debian's is built so), whose
// thread count is a per-thread setting: set to one on a thread holding an
// OnCallingThread, oneDNN runs that thread's products on it alone, as
// OpenBLAS does. Looked up among oneDNN's own dependencies (found even
// where libspmd was loaded into a local scope, as Julia loads it), so
// libspmd needs no OpenMP of its own; without it such threads leave oneDNN
// out.
struct OpenMpThreads {
  int (*get)() = nullptr;
  void (*set)(int) = nullptr;
};
const OpenMpThreads &openmp_threads() {
  static const OpenMpThreads found = [] {
    // oneDNN's library, already loaded: a handle to it searches its
    // dependencies too (never closed; it only counts a reference).
    void *scope = RTLD_DEFAULT;
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&dnnl_sgemm), &info) != 0 && info.dli_fname != nullptr)
      if (void *lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD); lib != nullptr) scope = lib;
    OpenMpThreads t;
    t.get = reinterpret_cast<int (*)()>(dlsym(scope, "omp_get_max_threads"));
    t.set = reinterpret_cast<void (*)(int)>(dlsym(scope, "omp_set_num_threads"));
    if (t.get == nullptr || t.set == nullptr) t = {};
    return t;
  }();
  return found;
}
// This thread's OpenMP count before its OnCallingThread, or 0 where oneDNN
// stays out of its products.
thread_local int t_saved_openmp_threads = 0;
#endif

template <typename T>
void blas(const Params &p, T *c, const T *a, const T *b) {
  const int64_t sa = p.m * p.k, sb = p.k * p.n, sc = p.m * p.n;
  const CBLAS_TRANSPOSE ta = p.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = p.trans_b ? CblasTrans : CblasNoTrans;
  const auto lda = static_cast<blasint>(p.trans_a ? p.m : p.k);
  const auto ldb = static_cast<blasint>(p.trans_b ? p.k : p.n);
  if (p.k == 0) {  // no terms: zeros (and no leading dimension of 0 for the libraries)
    std::fill(c, c + p.batch * sc, T(0));
    return;
  }
  for (int64_t i = 0; i < p.batch; ++i) {
#ifdef SPMD_HAVE_ONEDNN
    // oneDNN's sgemm (row-major, as CBLAS's call below): the faster one
    // here for products of some size on all cores, and for any on one
    // thread (single-threaded on a 2-core AVX-512 machine, 8 products of
    // 128x128x64: 69 us against OpenBLAS's 141; 8 of 4x64x64: 2.9 against
    // 3.8). Small ones on all cores stay with OpenBLAS, whose call starts
    // no team. Its status is refused arguments only, which checked shapes
    // never are.
    if constexpr (sizeof(T) == 4) {
      const bool alone = t_on_calling_thread > 0;
      if (onednn_products() && (alone ? t_saved_openmp_threads > 0 : p.m * p.n * p.k >= kTeamMinWork)) {
        const dnnl_status_t s = dnnl_sgemm(p.trans_a ? 'T' : 'N', p.trans_b ? 'T' : 'N', p.m, p.n, p.k, 1.0f,
                                           a + i * sa, lda, b + i * sb, ldb, 0.0f, c + i * sc, p.n);
        if (s != dnnl_success) fail(SPMD_ERR_INTERNAL, "gemm kernel: dnnl_sgemm status ", static_cast<int>(s));
        continue;
      }
    }
#endif
    if constexpr (sizeof(T) == 4)
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<blasint>(p.m), static_cast<blasint>(p.n),
                  static_cast<blasint>(p.k), 1.0f, a + i * sa, lda, b + i * sb, ldb, 0.0f,
                  c + i * sc, static_cast<blasint>(p.n));
    else
      cblas_dgemm(CblasRowMajor, ta, tb, static_cast<blasint>(p.m), static_cast<blasint>(p.n),
                  static_cast<blasint>(p.k), 1.0, a + i * sa, lda, b + i * sb, ldb, 0.0,
                  c + i * sc, static_cast<blasint>(p.n));
  }
}

int64_t load_int(spmd_dtype d, const char *p) {
  return dev::load_int(d, reinterpret_cast<const unsigned char *>(p));
}

void integers(const Params &p, char *c, const char *a, const char *b) {
  const size_t es = dtype_size(p.dtype);
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        uint64_t s = 0;
        for (int64_t l = 0; l < p.k; ++l) {
          const int64_t ai = bi * p.m * p.k + (p.trans_a ? l * p.m + i : i * p.k + l);
          const int64_t bj = bi * p.k * p.n + (p.trans_b ? j * p.k + l : l * p.n + j);
          s += static_cast<uint64_t>(load_int(p.dtype, a + ai * es)) *
               static_cast<uint64_t>(load_int(p.dtype, b + bj * es));
        }
        // Wrapped to the width, as XLA's integer dot (int8 @ int8 is int8).
        char *o = c + static_cast<size_t>((bi * p.m + i) * p.n + j) * es;
        dev::store_int(p.dtype, static_cast<int64_t>(s), reinterpret_cast<unsigned char *>(o));
      }
}

std::mutex g_threads_mu;
int g_holders = 0;       // OnCallingThread objects alive
int g_saved_threads = 0;  // OpenBLAS's count before the first

}  // namespace

OnCallingThread::OnCallingThread() {
#ifdef SPMD_HAVE_ONEDNN
  if (const OpenMpThreads &omp = openmp_threads(); t_on_calling_thread == 0 && omp.set != nullptr) {
    t_saved_openmp_threads = omp.get();
    omp.set(1);
  }
#endif
  ++t_on_calling_thread;
  std::lock_guard<std::mutex> lock(g_threads_mu);
  if (g_holders++ == 0) {
    g_saved_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
  }
}

OnCallingThread::~OnCallingThread() {
#ifdef SPMD_HAVE_ONEDNN
  if (t_on_calling_thread == 1 && t_saved_openmp_threads > 0) {
    openmp_threads().set(t_saved_openmp_threads);
    t_saved_openmp_threads = 0;
  }
#endif
  --t_on_calling_thread;
  std::lock_guard<std::mutex> lock(g_threads_mu);
  if (--g_holders == 0) openblas_set_num_threads(g_saved_threads);
}

bool suits_one_thread(const Params &p) { return p.m * p.n * p.k < kTeamMinWork; }

void run(const Params &p, void *out, const void *a, const void *b) {
  const int64_t nc = p.batch * p.m * p.n;
  if (nc == 0) return;
  switch (p.dtype) {
    case SPMD_F32:
      return blas(p, static_cast<float *>(out), static_cast<const float *>(a),
                  static_cast<const float *>(b));
    case SPMD_F64:
      return blas(p, static_cast<double *>(out), static_cast<const double *>(a),
                  static_cast<const double *>(b));
    case SPMD_F16:
    case SPMD_BF16: {
      const auto wa = widen(p.dtype, a, static_cast<size_t>(p.batch * p.m * p.k));
      const auto wb = widen(p.dtype, b, static_cast<size_t>(p.batch * p.k * p.n));
      std::vector<float> wc(static_cast<size_t>(nc));
      blas(p, wc.data(), wa.data(), wb.data());
      auto *h = static_cast<uint16_t *>(out);
      for (size_t i = 0; i < wc.size(); ++i)
        h[i] = p.dtype == SPMD_F16 ? f32_to_f16_bits(wc[i]) : f32_to_bf16_bits(wc[i]);
      return;
    }
    case SPMD_I8: case SPMD_I16: case SPMD_I32: case SPMD_I64:
    case SPMD_U8: case SPMD_U16: case SPMD_U32: case SPMD_BOOL:
      return integers(p, static_cast<char *>(out), static_cast<const char *>(a),
                      static_cast<const char *>(b));
    default:
      fail(SPMD_ERR_INTERNAL, "gemm kernel: dtype ", static_cast<int>(p.dtype));
  }
}

}  // namespace spmd::gemm
