// The CUDA platform's kernels on a GPU (backend/cuda/kernels.hpp), held to
// the CPU kernels by the rules of test_kernel_bodies (kernel_checks.hpp) and
// to their own bodies run on the host: the GPU must give the body's bits
// wherever no device math function is involved, float sums included (the
// reduction's order is the body's). Large cases run the grid-stride loops
// more than once, and the box copies go in batches of many boxes. Built
// wherever the CUDA platform is; run on a GPU (SPMD_TEST_CUDA), skipped
// (77) where none is visible. Prints the bandwidth of a few large kernels.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <xmmintrin.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/kernels.hpp"
#include "backend/host/copy.hpp"
#include "backend/host/kernels.hpp"
#include "backend/kernel.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "kernels/device/elementwise.hpp"
#include "kernels/device/random.hpp"
#include "kernels/device/reduce.hpp"
#include "kernels/device/small.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "kernels/random.hpp"
#include "kernels/reduce_axes.hpp"

extern "C" {
#include <cmocka.h>
}

#include "kernel_checks.hpp"

using namespace spmd;
using namespace kernel_checks;

namespace {

// ---- the GPU ----

cuda::KernelEnv g_env;
cublasHandle_t g_blas = nullptr;

void check_cuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess) fail_msg("%s: %s", what, cudaGetErrorString(e));
}

// Device memory holding `bytes` (at least 16), `shift` bytes past an
// aligned start.
struct DeviceBytes {
  unsigned char *base = nullptr;
  size_t shift = 0;
  // Everything on the kernels' stream, waited for: a copy on the legacy
  // stream may still be under way when a kernel on a non-blocking stream
  // starts.
  DeviceBytes(size_t bytes, size_t shift_ = 0) : shift(shift_) {
    check_cuda(cudaMalloc(&base, bytes + shift + 16), "cudaMalloc");
    check_cuda(cudaMemsetAsync(base, 0xa5, bytes + shift + 16, g_env.stream), "cudaMemset");
    check_cuda(cudaStreamSynchronize(g_env.stream), "cudaMemset");
  }
  ~DeviceBytes() { cudaFree(base); }
  DeviceBytes(const DeviceBytes &) = delete;
  DeviceBytes &operator=(const DeviceBytes &) = delete;
  unsigned char *ptr() const { return base + shift; }
  Place place() const { return {MemoryKind::Device, 0, {reinterpret_cast<uintptr_t>(ptr())}}; }
  void upload(const Bytes &b) const {
    check_cuda(cudaMemcpyAsync(ptr(), b.data(), b.size(), cudaMemcpyHostToDevice, g_env.stream), "upload");
    check_cuda(cudaStreamSynchronize(g_env.stream), "upload");
  }
  Bytes download(size_t n) const {
    Bytes b(n);
    check_cuda(cudaMemcpyAsync(b.data(), ptr(), n, cudaMemcpyDeviceToHost, g_env.stream), "download");
    check_cuda(cudaStreamSynchronize(g_env.stream), "download");
    return b;
  }
};

// Runs one kernel on the GPU and waits; a launch that throws fails the test.
void run(const Kernel &k) {
  try {
    cuda::launch_kernel(k, g_env);
  } catch (const spmd::Error &e) {
    fail_msg("%s kernel: %s", kernel_name(k.kind), e.what());
  }
  check_cuda(cudaStreamSynchronize(g_env.stream), kernel_name(k.kind));
}

double seconds_of(const std::function<void()> &f) {
  f();  // warm up
  check_cuda(cudaStreamSynchronize(g_env.stream), "warm-up");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) f();
  check_cuda(cudaStreamSynchronize(g_env.stream), "timing");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 5;
}

// ---- the bodies' arithmetic on the device against the host ----

constexpr int kOps = 10;

template <typename T>
__host__ __device__ T one_op(int op, T a, T b) {
  switch (op) {
    case 0: return dev::add(a, b);
    case 1: return dev::sub(a, b);
    case 2: return dev::mul(a, b);
    case 3: return dev::div(a, b);
    case 4: return dev::sqrt_of(a);
    case 5: return dev::ew::maximum(a, b);
    case 6: return dev::ew::apply(ew::Op::Rsqrt, a, b, b);
    case 7: return dev::daz(a);
    case 8: return dev::neg(a);
    default: return dev::ew::apply(ew::Op::Relu, a, b, b);
  }
}

template <typename T>
__global__ void ops_kernel(const T *a, const T *b, T *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n * kOps;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = one_op(static_cast<int>(i % kOps), a[i / kOps], b[i / kOps]);
}

// Conversions: f64 to f32 with and without FTZ, f32 to f64, f32 to f16 and bf16.
__global__ void conversions_kernel(const double *d, const float *f, uint32_t *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[5 * i] = dev::bits_of(dev::narrow(d[i]));
    out[5 * i + 1] = dev::bits_of(dev::narrow_ftz(d[i]));
    out[5 * i + 2] = static_cast<uint32_t>(dev::bits_of(dev::widen(f[i])) >> 29);
    out[5 * i + 3] = dev::f32_to_f16_bits(f[i]);
    out[5 * i + 4] = dev::f32_to_bf16_bits(f[i]) | (static_cast<uint32_t>(dev::f32_to_f16_bits(dev::f16_bits_to_f32(static_cast<uint16_t>(i)))) << 16);
  }
}

template <typename T>
void ops_match(spmd_dtype d, Rng &r, Mismatches &bad) {
  const int64_t n = 300000;
  const Bytes a = random_elements(d, static_cast<size_t>(n), r), b = random_elements(d, static_cast<size_t>(n), r);
  DeviceBytes da(a.size()), db(b.size()), dout(static_cast<size_t>(n) * kOps * sizeof(T));
  da.upload(a);
  db.upload(b);
  ops_kernel<T><<<264, 256, 0, g_env.stream>>>(reinterpret_cast<const T *>(da.ptr()), reinterpret_cast<const T *>(db.ptr()),
                                               reinterpret_cast<T *>(dout.ptr()), n);
  check_cuda(cudaStreamSynchronize(g_env.stream), "ops kernel");
  const Bytes got = dout.download(static_cast<size_t>(n) * kOps * sizeof(T));
  for (int64_t i = 0; i < n * kOps; ++i) {
    const T x = dev::load_as<T>(a.data() + (i / kOps) * sizeof(T)), y = dev::load_as<T>(b.data() + (i / kOps) * sizeof(T));
    const T want = one_op(static_cast<int>(i % kOps), x, y);
    const T g = dev::load_as<T>(got.data() + i * sizeof(T));
    if (dev::bits_of(want) != dev::bits_of(g)) {
      char msg[256];
      std::snprintf(msg, sizeof msg, "%s op %d of %a (%s) and %a (%s): host %a (%s), device %a (%s)", dtype_name(d),
                    static_cast<int>(i % kOps), static_cast<double>(x), hex(reinterpret_cast<const unsigned char *>(&x), sizeof(T)).c_str(),
                    static_cast<double>(y), hex(reinterpret_cast<const unsigned char *>(&y), sizeof(T)).c_str(), static_cast<double>(want),
                    hex(reinterpret_cast<const unsigned char *>(&want), sizeof(T)).c_str(), static_cast<double>(g),
                    hex(reinterpret_cast<const unsigned char *>(&g), sizeof(T)).c_str());
      bad.note(msg);
    }
  }
}

void arithmetic_on_the_device_equals_the_hosts(void **) {
  Rng r{100};
  Mismatches bad;
  ops_match<float>(SPMD_F32, r, bad);
  ops_match<double>(SPMD_F64, r, bad);
  const int64_t n = 1 << 20;
  const Bytes d = random_elements(SPMD_F64, static_cast<size_t>(n), r), f = random_elements(SPMD_F32, static_cast<size_t>(n), r);
  DeviceBytes dd(d.size()), df(f.size()), dout(static_cast<size_t>(n) * 5 * 4);
  dd.upload(d);
  df.upload(f);
  conversions_kernel<<<264, 256, 0, g_env.stream>>>(reinterpret_cast<const double *>(dd.ptr()),
                                                    reinterpret_cast<const float *>(df.ptr()),
                                                    reinterpret_cast<uint32_t *>(dout.ptr()), n);
  check_cuda(cudaStreamSynchronize(g_env.stream), "conversions kernel");
  const Bytes got = dout.download(static_cast<size_t>(n) * 5 * 4);
  for (int64_t i = 0; i < n; ++i) {
    const double x = dev::load_as<double>(d.data() + i * 8);
    const float y = dev::load_as<float>(f.data() + i * 4);
    const uint32_t want[5] = {dev::bits_of(dev::narrow(x)), dev::bits_of(dev::narrow_ftz(x)),
                              static_cast<uint32_t>(dev::bits_of(dev::widen(y)) >> 29), dev::f32_to_f16_bits(y),
                              dev::f32_to_bf16_bits(y) | (static_cast<uint32_t>(dev::f32_to_f16_bits(dev::f16_bits_to_f32(static_cast<uint16_t>(i)))) << 16)};
    for (int k = 0; k < 5; ++k)
      if (want[k] != dev::load_as<uint32_t>(got.data() + (5 * i + k) * 4)) {
        char msg[200];
        std::snprintf(msg, sizeof msg, "conversion %d of %a / %a: host %08x device %08x", k, x, static_cast<double>(y), want[k],
                      dev::load_as<uint32_t>(got.data() + (5 * i + k) * 4));
        bad.note(msg);
      }
  }
  bad.check("the bodies' arithmetic on the device");
}

// ---- fill, arange, convert, scale, first difference ----

void small_kinds_match_the_cpu(void **) {
  Rng r{101};
  Mismatches bad;
  const void *none[3] = {nullptr, nullptr, nullptr};
  for (spmd_dtype d : kAll) {
    const size_t es = dtype_size(d);
    for (size_t count : {size_t{0}, size_t{1}, size_t{17}, size_t{1000}, size_t{3} << 20})
      for (size_t shift : {size_t{0}, es, size_t{1}}) {
        unsigned char pattern[8];
        random_element(d, r, pattern);
        DeviceBytes out(count * es, shift);
        const Kernel k = Kernel::fill(out.place(), d, count, pattern);
        run(k);
        Bytes want(count * es + 16, 0xa5);
        host::run_kernel(k, want.data(), none);
        Bytes got = out.download(count * es + 16);
        if (want != got) bad.note("fill " + std::string(dtype_name(d)) + " count " + std::to_string(count));
      }
    for (int trial = 0; trial < 6; ++trial) {
      const Shape global = trial == 0 ? Shape{4096, 1500} : Shape{1 + r.below(9), 1 + r.below(40)};
      const Box box{{r.below(global[0])}, {global[0]}};
      Box b2{{box.start[0], r.below(global[1])}, {global[0], global[1]}};
      const double start = trial * 1.75 - 3, step = trial % 2 ? 0.1 : 3e-39;
      DeviceBytes out(static_cast<size_t>(b2.elements()) * es);
      const Kernel k = Kernel::arange(out.place(), d, global, b2, start, step);
      run(k);
      Bytes want(static_cast<size_t>(b2.elements()) * es);
      host::run_kernel(k, want.data(), none);
      if (want != out.download(want.size())) bad.note("arange " + std::string(dtype_name(d)));
    }
    for (spmd_dtype to : kAll) {
      const size_t n = 5000;
      const Bytes in = random_elements(d, n, r);
      DeviceBytes din(in.size()), dout(n * dtype_size(to));
      din.upload(in);
      const Kernel k = Kernel::convert(dout.place(), to, din.place(), d, n);
      run(k);
      Bytes want(n * dtype_size(to));
      const void *ins[3] = {in.data(), nullptr, nullptr};
      host::run_kernel(k, want.data(), ins);
      if (want != dout.download(want.size()))
        bad.note(std::string("convert ") + dtype_name(d) + " to " + dtype_name(to));
    }
    if (is_float(d))
      for (double n : {1.0, 3.0, 8.0, 1048577.0}) {
        const size_t count = 100000;
        const Bytes in = random_elements(d, count, r);
        DeviceBytes io(in.size());
        io.upload(in);
        const Kernel k = Kernel::scale_by_reciprocal(io.place(), io.place(), d, count, n);  // in place
        run(k);
        Bytes want(in.size());
        const void *ins[3] = {in.data(), nullptr, nullptr};
        host::run_kernel(k, want.data(), ins);
        const Bytes got = io.download(in.size());
        const dev::small::Scale sc = dev::small::make_scale(d, n);
        for (size_t i = 0, shown = 0; i < count && shown < 3; ++i) {
          if (!std::memcmp(want.data() + i * es, got.data() + i * es, es)) continue;
          unsigned char body[8];
          dev::small::scale_one(sc, in.data() + i * es, body, 0);
          bad.note(std::string("scale ") + dtype_name(d) + " by 1/" + std::to_string(n) + ": x " +
                   hex(in.data() + i * es, es) + " cpu " + hex(want.data() + i * es, es) + " gpu " +
                   hex(got.data() + i * es, es) + " body " + hex(body, es));
          ++shown;
        }
      }
    // The first difference, written to mapped host memory as the platform does.
    int64_t *mapped = nullptr;
    check_cuda(cudaHostAlloc(&mapped, sizeof(int64_t), cudaHostAllocMapped), "cudaHostAlloc");
    int64_t *mapped_dev = nullptr;
    check_cuda(cudaHostGetDevicePointer(&mapped_dev, mapped, 0), "cudaHostGetDevicePointer");
    for (size_t count : {size_t{0}, size_t{1}, size_t{77}, size_t{5} << 20})
      for (size_t shift : {size_t{0}, es})
        for (int trial = 0; trial < 4; ++trial) {
          const Bytes a = random_elements(d, count, r);
          Bytes b = a;
          if (count && trial) {
            const size_t at = trial == 1 ? count * es - 1 : static_cast<size_t>(r.below(static_cast<int64_t>(count * es)));
            b[at] ^= 0x10;
            if (trial == 3) b[at / 2] ^= 0x01;  // two differences: the first counts
          }
          DeviceBytes da(a.size(), shift), db(b.size(), shift);
          da.upload(a);
          db.upload(b);
          *mapped = 12345;
          const Place out{MemoryKind::Mapped, 0, {reinterpret_cast<uintptr_t>(mapped_dev)}};
          const Kernel k = Kernel::first_difference(out, da.place(), db.place(), d, count, 0);
          run(k);
          int64_t want = 0;
          const void *ins[3] = {a.data(), b.data(), nullptr};
          host::run_kernel(k, &want, ins);
          if (want != *mapped)
            bad.note("first_difference " + std::string(dtype_name(d)) + " count " + std::to_string(count) +
                     ": cpu " + std::to_string(want) + " gpu " + std::to_string(*mapped));
        }
    cudaFreeHost(mapped);
  }
  bad.check("small kinds");
}

// ---- elementwise ----

// The first n of `in` on the GPU, their places in places[0 .. n-1].
std::vector<std::unique_ptr<DeviceBytes>> uploaded(const std::vector<Bytes> &in, int n, Place (&places)[3]) {
  std::vector<std::unique_ptr<DeviceBytes>> on_gpu;
  for (int i = 0; i < n; ++i) {
    on_gpu.push_back(std::make_unique<DeviceBytes>(in[static_cast<size_t>(i)].size()));
    on_gpu.back()->upload(in[static_cast<size_t>(i)]);
    places[i] = on_gpu.back()->place();
  }
  return on_gpu;
}

// One case on the GPU: its result, and whether the GPU took the word loop.
Bytes gpu_elementwise(const EwCase &c, size_t out_bytes) {
  Place places[3];
  const auto ins = uploaded(c.in, c.p.nin, places);
  DeviceBytes out(out_bytes);
  run(Kernel::elementwise_op(out.place(), places, c.p, 0));
  return out.download(out_bytes);
}

// Holds the GPU to the CPU, and to the body bit for bit where no device
// math function is involved.
void check_on_gpu(const EwCase &c, Mismatches &bad) {
  const Bytes want = cpu_elementwise(c);
  const Bytes got = gpu_elementwise(c, want.size());
  compare_elementwise(c, want, got, "gpu", bad);
  if (transcendental(c.p.op) && c.p.compute != SPMD_I64) return;
  const dev::ew::Plan plan = dev::ew::make_plan(c.p);
  const unsigned char *din[3] = {c.in[0].data(), c.in[1].data(), c.in[2].data()};
  Bytes body(want.size(), 0x5a);
  const int64_t n = shape_elements(c.p.shape);
  if (n > 0) {
    switch (c.p.compute) {
      case SPMD_F32: dev::ew::run_strided<float>(plan, body.data(), din, 0, 1); break;
      case SPMD_F64: dev::ew::run_strided<double>(plan, body.data(), din, 0, 1); break;
      default: dev::ew::run_strided<int64_t>(plan, body.data(), din, 0, 1); break;
    }
  }
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(n, 0)) * dtype_size(c.p.out);
  if (std::memcmp(body.data(), got.data(), bytes))
    bad.note(std::string("elementwise ") + ew::op_name(c.p.op) + " " + dtype_name(c.p.compute) + " to " +
             dtype_name(c.p.out) + " " + shape_text(c.p.shape) + ": the GPU's bits are not the body's");
}

void elementwise_matches_the_cpu_and_the_body(void **) {
  Rng r{102};
  Mismatches bad;
  bad.shown = 40;
  for (spmd_dtype compute : {SPMD_F32, SPMD_F64, SPMD_I64}) {
    std::vector<Op> ops(std::begin(kUnary), std::end(kUnary));
    ops.insert(ops.end(), std::begin(kBinary), std::end(kBinary));
    ops.push_back(Op::Select);
    for (Op op : ops) {
      if (!dev::ew::takes(op, compute)) continue;
      const auto ins = inputs_of(compute);
      for (spmd_dtype out : outputs_of(compute, op))
        for (int t = 0; t < 4; ++t) {
          spmd_dtype dt[3];
          for (auto &d : dt) d = ins[static_cast<size_t>(r.below(static_cast<int64_t>(ins.size())))];
          if (t % 2 == 0) dt[0] = dt[1] = dt[2] = compute;
          if (op == Op::Select && t < 3) dt[0] = SPMD_BOOL;
          check_on_gpu(make_case(op, compute, out, dt, r), bad);
        }
      // Large: a contiguous run (the word loop where it applies) and a
      // broadcast over a long row (the strided one), many turns per thread.
      for (int big = 0; big < 2; ++big) {
        EwCase c;
        c.p.op = op;
        c.p.compute = compute;
        c.p.out = ew::is_comparison(op) ? SPMD_BOOL : compute;
        c.p.nin = ew::arity(op);
        c.p.shape = big ? Shape{1500, 3001} : Shape{(int64_t{1} << 22) + 3};
        c.in.resize(3);
        const int64_t n = shape_elements(c.p.shape);
        for (int i = 0; i < c.p.nin; ++i) {
          c.p.in[i].dtype = compute;
          c.p.in[i].strides = big && i == 1 ? Shape{0, 1} : (big ? Shape{3001, 1} : Shape{1});
          c.in[static_cast<size_t>(i)] = random_elements(compute, static_cast<size_t>(big && i == 1 ? 3001 : n), r);
        }
        check_on_gpu(c, bad);
      }
    }
  }
  bad.check("elementwise on the GPU");
}

// A fused chain on the GPU gives the bits of its steps run there one by
// one as elementwise kernels (the device's math functions on both sides).
void elementwise_chains_equal_their_steps_on_the_gpu(void **) {
  Rng r{103};
  Mismatches bad;
  for (int t = 0; t < 120; ++t) {
    const int64_t n = t % 20 == 0 ? (int64_t{1} << 20) + 5 : r.below(3000);
    const ChainCase c = random_chain(r, n, dev::ew::kMaxChainSteps);
    Place places[3];
    const auto ins = uploaded(c.in, c.chain.nin, places);
    // One by one: each step's result in its own buffer.
    std::vector<std::unique_ptr<DeviceBytes>> results;
    for (const ew::ChainStep &step : c.chain.steps) {
      const ew::Params &p = step.params;
      Place at[3];
      for (int k = 0; k < p.nin; ++k)
        if (!p.in[k].scalar)
          at[k] = step.from[k] >= 0 ? places[step.from[k]] : results[static_cast<size_t>(-step.from[k] - 1)]->place();
      results.push_back(std::make_unique<DeviceBytes>(static_cast<size_t>(std::max<int64_t>(n, 1)) * dtype_size(p.out)));
      run(Kernel::elementwise_op(results.back()->place(), at, p, 0));
    }
    const spmd_dtype out = c.chain.steps.back().params.out;
    const size_t bytes = static_cast<size_t>(n) * dtype_size(out);
    DeviceBytes fused(std::max<size_t>(bytes, 1));
    run(Kernel::elementwise_chain(fused.place(), places, std::make_shared<ew::Chain>(c.chain), out,
                                  static_cast<size_t>(n), 0));
    if (fused.download(bytes) != results.back()->download(bytes))
      bad.note("chain of " + chain_text(c) + ": fused and one by one differ on the GPU");
  }
  bad.check("elementwise chains on the GPU");
}

// ---- reductions ----

void check_reduction_on_gpu(const red::Params &p, const Bytes &x, Mismatches &bad) {
  const size_t out_bytes = static_cast<size_t>(red::out_elements(p)) * dtype_size(p.out);
  Bytes want(out_bytes + 8, 0x77);
  red::run(p, want.data(), x.data());
  DeviceBytes din(x.size()), dout(out_bytes);
  din.upload(x);
  run(Kernel::reduction(dout.place(), din.place(), p, 0));
  Bytes got = dout.download(out_bytes + 8);
  compare_reduction(p, x, want, got, "gpu", bad);
  const dev::red::Plan plan = dev::red::make_plan(p);
  Bytes body(out_bytes + 8, 0xa5);
  const dev::red::Teams teams = dev::red::teams(plan);
  run_reduce_body(plan, x.data(), {teams.lanes, teams.parts, teams.part_len}, body.data());
  const size_t os = dtype_size(p.out);
  for (size_t o = 0; o * os < out_bytes; ++o)
    if (std::memcmp(body.data() + o * os, got.data() + o * os, os)) {
      const dev::red::Teams t = dev::red::teams(plan);
      bad.note(std::string(red::op_name(p.op)) + " of " + dtype_name(p.in) + " " + shape_text(p.shape) +
               " output " + std::to_string(o) + " (lanes " + std::to_string(t.lanes) + ", parts " +
               std::to_string(t.parts) +
               (t.outputs_fastest ? ", outputs fastest" : "") + "): cpu " + hex(want.data() + o * os, os) +
               " gpu " + hex(got.data() + o * os, os) + " body " + hex(body.data() + o * os, os));
      break;
    }
}

// The running sum on the GPU: the CPU kernel's bits (and so the body's).
void cumsums_match_the_cpu(void **) {
  Rng r{107};
  Mismatches bad;
  for (spmd_dtype in : kAll)
    for (int trial = 0; trial < 8; ++trial) {
      red::Params p = random_cumsum(in, r);
      if (trial == 0) {  // one long line, and many short lines side by side
        p.shape = {(int64_t{1} << 20) + 3};
        p.reduced = {true};
      } else if (trial == 1) {
        p.shape = {300, 4096};
        p.reduced = {true, false};
      }
      const Bytes x = random_elements(p.in, static_cast<size_t>(shape_elements(p.shape)), r);
      const size_t out_bytes = static_cast<size_t>(shape_elements(p.shape)) * dtype_size(p.out);
      Bytes want(out_bytes + 8, 0x77);
      red::run(p, want.data(), x.data());
      DeviceBytes din(x.size()), dout(out_bytes);
      din.upload(x);
      run(Kernel::reduction(dout.place(), din.place(), p, 0));
      compare_cumsum(p, want, dout.download(out_bytes + 8), "gpu", bad);
    }
  bad.check("cumsums on the GPU");
}

// scatter_add on the GPU, a thread per element adding its updates in
// update order: the CPU kernel's bits. Besides the random cases, one large
// block whose every element takes many updates.
void scatter_adds_match_the_cpu(void **) {
  Rng r{109};
  Mismatches bad;
  for (spmd_dtype d : kAll) {
    if (d == SPMD_BOOL) continue;  // JAX adds no bools
    for (int trial = 0; trial < 24; ++trial) {
      ScatterCase c = random_scatter_add(d, r);
      if (trial == 0) {
        c.p.pre = 16;
        c.p.len = 100;
        c.p.post = 300;
        c.p.start = 7;
        c.p.axis_size = 120;
        c.p.count = 500;
        c.p.index_dtype = SPMD_I32;
        c.x = random_elements(d, static_cast<size_t>(scatter_add::out_elements(c.p)), r);
        c.updates = random_elements(d, static_cast<size_t>(c.p.pre * c.p.count * c.p.post), r);
        c.indices.assign(static_cast<size_t>(c.p.count) * 4, 0);
        for (int64_t j = 0; j < c.p.count; ++j)
          dev::store_as(c.indices.data() + 4 * j, static_cast<int32_t>(r.below(260) - 130));
      }
      const size_t out_bytes = static_cast<size_t>(scatter_add::out_elements(c.p)) * dtype_size(d);
      Bytes want(out_bytes + 8, 0x77);
      scatter_add::run(c.p, want.data(), c.x.data(), c.indices.data(), c.updates.data());
      DeviceBytes dx(c.x.size()), di(c.indices.size()), du(c.updates.size()), dout(out_bytes + 8);
      dx.upload(c.x);
      di.upload(c.indices);
      du.upload(c.updates);
      run(Kernel::scatter_added(dout.place(), dx.place(), di.place(), du.place(), c.p, 0));
      compare_scatter_add(c, want, dout.download(out_bytes + 8), "gpu", bad);
    }
  }
  bad.check("scatter_adds on the GPU");
}

void reductions_match_the_cpu_and_the_body(void **) {
  Rng r{103};
  Mismatches bad;
  for (red::Op op : {red::Op::Sum, red::Op::Max, red::Op::Min, red::Op::ArgMax, red::Op::ArgMin})
    for (spmd_dtype in : kAll) {
      for (int trial = 0; trial < 12; ++trial) {
        red::Params p;
        if (!random_reduction(op, in, trial, r, p)) continue;
        check_reduction_on_gpu(p, reduction_input(p, r), bad);
      }
      // Large: everything to one value, rows, columns, the middle axis.
      // Then few outputs of many elements, whose elements are cut into
      // parts (dev::red::Teams): a row each, two columns.
      const Shape shapes[] = {{1 << 22}, {2048, 2049}, {2049, 2048}, {64, 1000, 33},
                              {3, (1 << 20) + 77}, {(1 << 20) + 5, 2}};
      const std::vector<bool> axes[] = {{true},        {false, true}, {true, false},
                                        {false, true, false}, {false, true}, {true, false}};
      for (int s = 0; s < 6; ++s) {
        if (red::is_arg(op) && s == 0) continue;
        red::Params p;
        p.op = op;
        p.in = in;
        p.out = red::is_arg(op) ? SPMD_I32 : op == red::Op::Sum && (in == SPMD_BOOL || in == SPMD_U8) ? SPMD_I32 : in;
        p.shape = shapes[s];
        p.reduced = axes[s];
        check_reduction_on_gpu(p, reduction_input(p, r), bad);
      }
    }
  bad.check("reductions on the GPU");
}

// ---- random ----

void random_is_bit_identical(void **) {
  Rng r{104};
  Mismatches bad;
  using D = spmd::rng::Distribution;
  const std::pair<D, spmd_dtype> kinds[] = {
      {D::Bits, SPMD_U8}, {D::Bits, SPMD_I32}, {D::Bits, SPMD_I64}, {D::Uniform, SPMD_F32},
      {D::Uniform, SPMD_F64}, {D::Uniform, SPMD_F16}, {D::Uniform, SPMD_BF16}, {D::Normal, SPMD_F32},
      {D::Normal, SPMD_F64}, {D::Normal, SPMD_F16}, {D::Normal, SPMD_BF16},
      {D::TruncatedNormal, SPMD_F32}, {D::TruncatedNormal, SPMD_F64},
      {D::TruncatedNormal, SPMD_F16}, {D::TruncatedNormal, SPMD_BF16}};
  for (const auto &[dist, dtype] : kinds)
    for (int trial = 0; trial < 4; ++trial) {
      spmd::rng::Request q;
      q.distribution = dist;
      q.dtype = dtype;
      q.key = spmd::rng::key_from_seed(r.next());
      q.minval = dist == D::TruncatedNormal ? -2.0 + trial : -1.5;
      q.maxval = dist == D::TruncatedNormal ? 1.0 + trial : 4.0;
      const Shape global = trial == 0 ? Shape{2000, 1001} : Shape{7, 1 + r.below(50), 1 + r.below(9)};
      Box box{Shape(global.size()), global};
      for (size_t d = 0; d < global.size(); ++d) box.start[d] = r.below(global[d]);
      const size_t n = static_cast<size_t>(box.elements()), es = dtype_size(dtype);
      DeviceBytes out(n * es);
      run(Kernel::draw(out.place(), q, global, box));
      const Bytes got = out.download(n * es);
      Bytes want(n * es);
      spmd::rng::generate_box(q, global, box, want.data());
      Bytes body(n * es);
      dev::rng::run(dev::rng::make_draw(q), dev::rng::make_where(global, box), body.data(), 0, 1);
      if (got != body) bad.note(std::string("random ") + dtype_name(dtype) + ": the GPU's bits are not the body's");
      if (dtype == SPMD_F64 && (dist == D::Normal || dist == D::TruncatedNormal)) continue;  // log: see test_kernel_bodies
      if (got != want) bad.note(std::string("random ") + dtype_name(dtype) + " distribution " + std::to_string(static_cast<int>(dist)) + ": not the CPU's bits");
    }
  bad.check("random on the GPU");
}

// ---- products ----

void products_match_the_cpu(void **) {
  Rng r{105};
  Mismatches bad;
  for (bool tf32 : {false, true})
    for (spmd_dtype d : kAll)
      for (int trial = 0; trial < 10; ++trial) {
        if (tf32 && d != SPMD_F32) continue;
        gemm::Params p;
        p.dtype = d;
        p.batch = 1 + r.below(3);
        p.m = trial == 0 ? 300 : r.below(40);
        p.n = trial == 0 ? 257 : r.below(40);
        p.k = trial == 1 ? 0 : trial == 0 ? 513 : r.below(60);
        p.trans_a = r.below(2);
        p.trans_b = r.below(2);
        const size_t es = dtype_size(d);
        // Moderate values: products of specials would only test infinities.
        const auto operand = [&](size_t n) {
          Bytes b(n * es + 16);
          for (size_t i = 0; i < n; ++i)
            store_from_double(d, is_float(d) ? r.unit() * 4 - 2 : static_cast<double>(r.below(200) - 100),
                              b.data() + i * es);
          if (!is_float(d))
            for (size_t i = 0; i < n; ++i) random_element(d, r, b.data() + i * es);
          return b;
        };
        const Bytes a = operand(static_cast<size_t>(p.batch * p.m * p.k));
        const Bytes b = operand(static_cast<size_t>(p.batch * p.k * p.n));
        const size_t nc = static_cast<size_t>(p.batch * p.m * p.n);
        Bytes want(nc * es + 8);
        gemm::run(p, want.data(), a.data(), b.data());
        DeviceBytes da(a.size()), db(b.size()), dc(nc * es);
        da.upload(a);
        db.upload(b);
        g_env.allow_tf32 = tf32;
        run(Kernel::matmul(dc.place(), da.place(), db.place(), p, 0));
        g_env.allow_tf32 = false;
        const Bytes got = dc.download(nc * es);
        for (size_t i = 0; i < nc; ++i) {
          const unsigned char *w = want.data() + i * es, *g = got.data() + i * es;
          if (!std::memcmp(w, g, es)) continue;
          if (is_float(d)) {
            // Another order and, for 16-bit types, one rounding at the end:
            // k products of magnitude at most 4, each rounding at the
            // accumulator's epsilon (TF32's 2^-11 on its inputs).
            const double eps = d == SPMD_F64 ? 0x1p-53 : tf32 ? 0x1p-10 : 0x1p-24;
            double allowed = 4.0 * static_cast<double>(p.k + 1) * eps * 4.0;
            if (d == SPMD_F16 || d == SPMD_BF16) allowed += ulp_of(d, std::fabs(value_of(d, w)));
            if (std::fabs(value_of(d, w) - value_of(d, g)) <= allowed) continue;
          }
          bad.note(std::string("gemm ") + dtype_name(d) + (tf32 ? " (tf32)" : "") + " " + std::to_string(p.batch) + "x" +
                   std::to_string(p.m) + "x" + std::to_string(p.k) + "x" + std::to_string(p.n) + " element " +
                   std::to_string(i) + ": cpu " + hex(w, es) + " gpu " + hex(g, es));
          break;
        }
      }
  bad.check("products on the GPU");
}

// ---- box copies ----

void box_copies_match_the_host_copy(void **) {
  Rng r{106};
  Mismatches bad;
  for (int trial = 0; trial < 30; ++trial) {
    const size_t boxes = 1 + static_cast<size_t>(r.below(trial % 3 == 0 ? 40 : 5));
    std::vector<std::unique_ptr<DeviceBytes>> mem;
    std::vector<BoxCopy> copies;
    std::vector<Bytes> srcs, wants;
    for (size_t b = 0; b < boxes; ++b) {
      const size_t nd = static_cast<size_t>(r.below(9));
      const size_t es = static_cast<size_t>(1 + r.below(8));
      BoxCopy c;
      c.elem_size = es;
      c.extent.resize(nd);
      c.src.shape.resize(nd);
      c.dst.shape.resize(nd);
      c.src.offset.resize(nd);
      c.dst.offset.resize(nd);
      int64_t budget = 1;
      for (size_t d = 0; d < nd; ++d) {
        const int64_t hi = budget > 20000 ? 2 : (d + 1 == nd && trial % 4 == 0 ? 5000 : 7);
        c.extent[d] = r.below(hi);
        c.src.shape[d] = c.extent[d] + r.below(3);
        c.dst.shape[d] = c.extent[d] + r.below(3);
        c.src.offset[d] = r.below(c.src.shape[d] - c.extent[d] + 1);
        c.dst.offset[d] = r.below(c.dst.shape[d] - c.extent[d] + 1);
        budget *= std::max<int64_t>(c.src.shape[d], 1) * std::max<int64_t>(c.dst.shape[d], 1);
      }
      const size_t sn = static_cast<size_t>(shape_elements(c.src.shape)) * es;
      const size_t dn = static_cast<size_t>(shape_elements(c.dst.shape)) * es;
      Bytes src(sn + 16), dst(dn + 16);
      for (auto &v : src) v = static_cast<unsigned char>(r.next());
      for (auto &v : dst) v = static_cast<unsigned char>(r.next());
      mem.push_back(std::make_unique<DeviceBytes>(src.size(), static_cast<size_t>(r.below(2) ? r.below(16) : 0)));
      mem.back()->upload(src);
      c.src.place = mem.back()->place();
      mem.push_back(std::make_unique<DeviceBytes>(dst.size(), static_cast<size_t>(r.below(2) ? r.below(16) : 0)));
      mem.back()->upload(dst);
      c.dst.place = mem.back()->place();
      host::copy_box(src.data(), c.src.shape, c.src.offset, dst.data(), c.dst.shape, c.dst.offset, c.extent, es);
      copies.push_back(c);
      wants.push_back(dst);
    }
    try {
      cuda::launch_box_copies(copies.data(), copies.size(), g_env.stream);
    } catch (const spmd::Error &e) {
      fail_msg("box copies: %s", e.what());
    }
    check_cuda(cudaStreamSynchronize(g_env.stream), "box copies");
    for (size_t b = 0; b < boxes; ++b)
      if (mem[2 * b + 1]->download(wants[b].size()) != wants[b])
        bad.note("box copy " + std::to_string(b) + " of " + std::to_string(boxes) + ": " + shape_text(copies[b].extent) +
                 " of " + std::to_string(copies[b].elem_size) + "-byte elements");
  }
  bad.check("box copies on the GPU");
}

// ---- how fast (printed, never asserted) ----

void bandwidth_of_large_kernels(void **) {
  const int64_t n = int64_t{1} << 26;
  DeviceBytes a(static_cast<size_t>(n) * 4), b(static_cast<size_t>(n) * 4), c(static_cast<size_t>(n) * 4);
  const auto report = [](const char *what, double bytes, double s) {
    std::printf("  %-44s %8.3f ms %8.0f GB/s\n", what, s * 1e3, bytes / s / 1e9);
  };
  const auto ew = [&](Op op, Shape shape, Shape sb, int nin, spmd_dtype out) {
    ew::Params p;
    p.op = op;
    p.compute = SPMD_F32;
    p.out = out;
    p.nin = nin;
    p.shape = shape;
    Shape dense(shape.size(), 1);
    for (size_t d = shape.size() - 1; d > 0; --d) dense[d - 1] = dense[d] * shape[d];
    p.in[0] = {SPMD_F32, dense, false, 0};
    p.in[1] = {SPMD_F32, sb, false, 0};
    const Place places[3] = {a.place(), b.place(), {}};
    return Kernel::elementwise_op(c.place(), places, p, 0);
  };
  const auto time = [&](const Kernel &k) { return seconds_of([&] { cuda::launch_kernel(k, g_env); }); };
  std::printf("bandwidth (%d SMs):\n", g_env.sm_count);
  report("elementwise add f32, 2^26 (words)", 12.0 * n, time(ew(Op::Add, {n}, {1}, 2, SPMD_F32)));
  report("elementwise exp f32, 2^26", 8.0 * n, time(ew(Op::Exp, {n}, {1}, 1, SPMD_F32)));
  report("elementwise lt f32 to bool, 2^26", 9.0 * n, time(ew(Op::Lt, {n}, {1}, 2, SPMD_BOOL)));
  report("elementwise add f32, 8192 x 8192 + row", 8.0 * n, time(ew(Op::Add, {8192, 8192}, {0, 1}, 2, SPMD_F32)));
  report("elementwise copy f32, transpose 8192^2", 8.0 * n, time(ew(Op::Copy, {8192, 8192}, {1, 8192}, 1, SPMD_F32)));
  const auto reduce = [&](Shape shape, std::vector<bool> axes) {
    red::Params p;
    p.op = red::Op::Sum;
    p.in = p.out = SPMD_F32;
    p.shape = shape;
    p.reduced = axes;
    return Kernel::reduction(c.place(), a.place(), p, 0);
  };
  report("sum f32, 2^26 to one", 4.0 * n, time(reduce({n}, {true})));
  report("sum f32, 8192 x 8192 rows", 4.0 * n, time(reduce({8192, 8192}, {false, true})));
  report("sum f32, 8192 x 8192 columns", 4.0 * n, time(reduce({8192, 8192}, {true, false})));
  spmd::rng::Request q;
  q.distribution = spmd::rng::Distribution::Normal;
  q.dtype = SPMD_F32;
  q.key = spmd::rng::key_from_seed(7);
  report("random normal f32, 2^26", 4.0 * n, time(Kernel::draw(c.place(), q, {n}, Box{{0}, {n}})));
  const uint32_t zero = 0;
  report("fill f32, 2^26", 4.0 * n, time(Kernel::fill(c.place(), SPMD_F32, static_cast<size_t>(n), &zero)));
  BoxCopy box;
  box.elem_size = 4;
  box.src = {a.place(), {8192, 8192}, {0, 0}};
  box.dst = {c.place(), {8192, 8192}, {0, 0}};
  box.extent = {8192, 4096};
  report("box copy f32, 8192 x 4096 of 8192 x 8192", 8.0 * n / 2,
         seconds_of([&] { cuda::launch_box_copies(&box, 1, g_env.stream); }));
}

}  // namespace

int main(void) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::printf("test_cuda_kernels: no GPU here; the CUDA kernels' GPU checks need one\n");
    return 77;  // CTest's SKIP_RETURN_CODE
  }
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cublasCreate(&g_blas);
  cublasSetStream(g_blas, stream);
  cudaDeviceGetAttribute(&g_env.sm_count, cudaDevAttrMultiProcessorCount, 0);
  g_env.stream = stream;
  g_env.blas = g_blas;
  g_env.device_label = "GPU 0";
  cudaMalloc(&g_env.scratch, cuda::kKernelScratchBytes);
  g_env.scratch_bytes = cuda::kKernelScratchBytes;
  std::printf("host MXCSR %08x (flush bits 0x8040 should be clear)\n", _mm_getcsr());
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(arithmetic_on_the_device_equals_the_hosts),
      cmocka_unit_test(small_kinds_match_the_cpu),
      cmocka_unit_test(elementwise_matches_the_cpu_and_the_body),
      cmocka_unit_test(elementwise_chains_equal_their_steps_on_the_gpu),
      cmocka_unit_test(reductions_match_the_cpu_and_the_body),
      cmocka_unit_test(cumsums_match_the_cpu),
      cmocka_unit_test(scatter_adds_match_the_cpu),
      cmocka_unit_test(random_is_bit_identical),
      cmocka_unit_test(products_match_the_cpu),
      cmocka_unit_test(box_copies_match_the_host_copy),
      cmocka_unit_test(bandwidth_of_large_kernels),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  cublasDestroy(g_blas);
  cudaFree(g_env.scratch);
  cudaStreamDestroy(stream);
  return failed;
}
