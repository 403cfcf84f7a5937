// The per-element bodies the CUDA platform's kernels run
// (src/kernels/device/), compiled here by the host compiler and held to the
// CPU kernels over many inputs: every dtype, NaN, infinities, -0,
// subnormals and the values next to the smallest normal, integer extremes,
// empty and uneven shapes, broadcast, transposed and scalar operands.
// Bit for bit wherever the CPU's result is exact or correctly rounded; the
// transcendental functions within the ulp bounds of kernel_checks.hpp;
// float sums within the rounding of a sum in another order. The loops run as the GPU's
// threads run them (each thread's share, the reduction's lanes and their
// pairwise combination, the copies' tiles), so the GPU computes the very
// bits checked here, except for what the device's math library gives.
//
// Needs no GPU (and no CUDA): it runs wherever the library builds.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backend/host/copy.hpp"
#include "backend/host/kernels.hpp"
#include "backend/kernel.hpp"
#include "base/dtype.hpp"
#include "kernels/device/box_copy.hpp"
#include "kernels/device/elementwise.hpp"
#include "kernels/device/random.hpp"
#include "kernels/device/reduce.hpp"
#include "kernels/device/small.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "kernels/random.hpp"
#include "kernels/reduce_axes.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

#include "kernel_checks.hpp"

using namespace spmd;
using namespace kernel_checks;

namespace {

// ---- fill, arange, convert, scale, first difference ----

void fill_matches_the_cpu(void **) {
  Rng r{1};
  Mismatches bad;
  for (spmd_dtype d : kAll)
    for (size_t count : {0, 1, 2, 3, 7, 8, 15, 16, 17, 33, 100, 257}) {
      const size_t es = dtype_size(d);
      for (size_t shift : {size_t{0}, es, size_t{1}}) {
        unsigned char pattern[8];
        random_element(d, r, pattern);
        const Kernel k = Kernel::fill(Place::host(nullptr), d, count, pattern);
        Bytes want(count * es + 64, 0xab), got(want);
        const void *none[3] = {nullptr, nullptr, nullptr};
        host::run_kernel(k, want.data() + shift, none);
        const dev::small::Fill f = dev::small::make_fill(got.data() + shift, k.pattern, k.pattern_bytes, count);
        for (int t = 0; t < 5; ++t) dev::small::fill(f, got.data() + shift, t, 5);
        if (want != got) bad.note("fill " + std::string(dtype_name(d)) + " count " + std::to_string(count));
      }
    }
  bad.check("fill");
}

void arange_matches_the_cpu(void **) {
  Rng r{2};
  Mismatches bad;
  const double starts[] = {0, 1.5, -3, 1e20, 0.1, -0.0, 65504, 2147483600.0};
  const double steps[] = {1, 0.5, -2.25, 1e-40, 3e38, 0.1, 1e15, -0.0};
  for (spmd_dtype d : kAll)
    for (int trial = 0; trial < 24; ++trial) {
      const int nd = static_cast<int>(r.below(4));
      Shape global(static_cast<size_t>(nd));
      Box box{Shape(static_cast<size_t>(nd)), Shape(static_cast<size_t>(nd))};
      for (int i = 0; i < nd; ++i) {
        global[static_cast<size_t>(i)] = r.below(6);
        box.start[static_cast<size_t>(i)] = r.below(global[static_cast<size_t>(i)] + 1);
        box.stop[static_cast<size_t>(i)] = box.start[static_cast<size_t>(i)] +
                                           r.below(global[static_cast<size_t>(i)] - box.start[static_cast<size_t>(i)] + 1);
      }
      const double start = starts[r.below(8)], step = steps[r.below(8)];
      const Kernel k = Kernel::arange(Place::host(nullptr), d, global, box, start, step);
      const size_t n = static_cast<size_t>(std::max<int64_t>(box.elements(), 0));
      Bytes want(n * dtype_size(d) + 8, 0xcd), got(want);
      const void *none[3] = {nullptr, nullptr, nullptr};
      host::run_kernel(k, want.data(), none);
      const dev::rng::Where w = dev::rng::make_where(global, box);
      for (int t = 0; t < 3; ++t) dev::small::arange(d, start, step, w, got.data(), t, 3);
      if (want != got)
        bad.note("arange " + std::string(dtype_name(d)) + " " + shape_text(global) + " start " +
                 std::to_string(start) + " step " + std::to_string(step));
    }
  bad.check("arange");
}

void convert_matches_the_cpu_for_every_pair_of_dtypes(void **) {
  Rng r{3};
  Mismatches bad;
  for (spmd_dtype from : kAll)
    for (spmd_dtype to : kAll) {
      const size_t n = 2000;
      const Bytes in = random_elements(from, n, r);
      Bytes want(n * dtype_size(to)), got(want);
      const Kernel k = Kernel::convert(Place::host(nullptr), to, Place::host(nullptr), from, n);
      const void *ins[3] = {in.data(), nullptr, nullptr};
      host::run_kernel(k, want.data(), ins);
      dev::small::convert(from, to, in.data(), got.data(), static_cast<int64_t>(n), 0, 1);
      for (size_t i = 0; i < n; ++i)
        if (std::memcmp(want.data() + i * dtype_size(to), got.data() + i * dtype_size(to), dtype_size(to)))
          bad.note(std::string("convert ") + dtype_name(from) + " " + hex(in.data() + i * dtype_size(from), dtype_size(from)) +
                   " to " + dtype_name(to) + ": cpu " + hex(want.data() + i * dtype_size(to), dtype_size(to)) +
                   ", body " + hex(got.data() + i * dtype_size(to), dtype_size(to)));
    }
  bad.check("convert");
}

void scale_by_reciprocal_matches_the_cpu(void **) {
  Rng r{4};
  Mismatches bad;
  for (spmd_dtype d : {SPMD_F32, SPMD_F64, SPMD_F16, SPMD_BF16})
    for (double n : {1.0, 2.0, 3.0, 7.0, 8.0, 10.0, 1000.0, 1048577.0, 3e9, 1e-3}) {
      const size_t count = 3000;
      const Bytes in = random_elements(d, count, r);
      Bytes want(in.size()), got(in.size());
      const Kernel k = Kernel::scale_by_reciprocal(Place::host(nullptr), Place::host(nullptr), d, count, n);
      const void *ins[3] = {in.data(), nullptr, nullptr};
      host::run_kernel(k, want.data(), ins);
      const dev::small::Scale s = dev::small::make_scale(d, n);
      for (size_t i = 0; i < count; ++i) dev::small::scale_one(s, in.data(), got.data(), static_cast<int64_t>(i));
      const size_t es = dtype_size(d);
      for (size_t i = 0; i < count; ++i)
        if (std::memcmp(want.data() + i * es, got.data() + i * es, es))
          bad.note(std::string("scale ") + dtype_name(d) + " by 1/" + std::to_string(n) + ": x " +
                   hex(in.data() + i * es, es) + " cpu " + hex(want.data() + i * es, es) + " body " +
                   hex(got.data() + i * es, es));
      // In place, as mean's kernels run.
      Bytes inplace = in;
      for (size_t i = 0; i < count; ++i) dev::small::scale_one(s, inplace.data(), inplace.data(), static_cast<int64_t>(i));
      if (std::memcmp(inplace.data(), want.data(), count * es)) bad.note("scale in place");
    }
  bad.check("scale_by_reciprocal");
}

void first_difference_matches_the_cpu(void **) {
  Rng r{5};
  Mismatches bad;
  for (spmd_dtype d : kAll)
    for (size_t count : {0, 1, 5, 64, 1000}) {
      const size_t es = dtype_size(d);
      const Bytes a = random_elements(d, count, r);
      for (int trial = 0; trial < 6; ++trial) {
        Bytes b = a;
        if (count && trial) b[static_cast<size_t>(r.below(static_cast<int64_t>(count * es)))] ^= static_cast<unsigned char>(1u << r.below(8));
        int64_t want = 0;
        const Kernel k = Kernel::first_difference(Place::host(nullptr), Place::host(nullptr), Place::host(nullptr), d, count, 0);
        const void *ins[3] = {a.data(), b.data(), nullptr};
        host::run_kernel(k, &want, ins);
        int64_t got = -1;
        for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
          if (dev::small::differs(a.data(), b.data(), static_cast<int>(es), i)) {
            got = i;
            break;
          }
        if (want != got) bad.note("first_difference " + std::string(dtype_name(d)));
      }
    }
  bad.check("first_difference");
}

// ---- elementwise ----

// Cases that took the 16-byte word loop (which the long runs must reach).
int worded = 0;

// Runs one case through the CPU kernel and through the body, as a single
// thread and as several (and in 16-byte words where the GPU would), and
// compares.
void check_case(const EwCase &c, Mismatches &bad) {
  const ew::Params &p = c.p;
  const int64_t n = shape_elements(p.shape);
  const Bytes want = cpu_elementwise(c);
  const dev::ew::Plan plan = dev::ew::make_plan(p);
  const unsigned char *din[3] = {c.in[0].data(), c.in[1].data(), c.in[2].data()};
  const auto body = [&](auto tag) {
    using T = decltype(tag);
    Bytes got(want.size(), 0x5a);
    if (n > 0) dev::ew::run_strided<T>(plan, got.data(), din, 0, 1);
    compare_elementwise(c, want, got, "body", bad);
    Bytes threads(want.size(), 0x5a);
    if (n > 0)
      for (int t = 0; t < 7; ++t) dev::ew::run_strided<T>(plan, threads.data(), din, t, 7);
    compare_elementwise(c, want, threads, "body (7 threads)", bad);
    if (n > 0 && dev::ew::wordable(plan, got.data(), din)) {
      Bytes words(want.size(), 0x5a);
      for (int t = 0; t < 3; ++t) dev::ew::run_words<T>(plan, words.data(), din, t, 3);
      compare_elementwise(c, want, words, "body (16-byte words)", bad);
      ++worded;
    }
  };
  switch (p.compute) {
    case SPMD_F32: body(float{}); break;
    case SPMD_F64: body(double{}); break;
    default: body(int64_t{}); break;
  }
}

void run_ops(const Op *ops, size_t nops, uint64_t seed, int trials, Mismatches &bad) {
  Rng r{seed};
  for (spmd_dtype compute : {SPMD_F32, SPMD_F64, SPMD_I64})
    for (size_t o = 0; o < nops; ++o) {
      const Op op = ops[o];
      if (!dev::ew::takes(op, compute)) continue;
      const auto ins = inputs_of(compute);
      for (spmd_dtype out : outputs_of(compute, op))
        for (int t = 0; t < trials; ++t) {
          spmd_dtype dt[3];
          for (auto &d : dt) d = ins[static_cast<size_t>(r.below(static_cast<int64_t>(ins.size())))];
          if (t % 2 == 0) dt[0] = dt[1] = dt[2] = compute == SPMD_I64 ? SPMD_I64 : compute;
          check_case(make_case(op, compute, out, dt, r), bad);
        }
    }
}

void elementwise_unary_ops_match_the_cpu(void **) {
  Mismatches bad;
  run_ops(kUnary, sizeof kUnary / sizeof kUnary[0], 6, 6, bad);
  bad.check("elementwise unary");
}

void elementwise_binary_ops_match_the_cpu(void **) {
  Mismatches bad;
  run_ops(kBinary, sizeof kBinary / sizeof kBinary[0], 7, 6, bad);
  bad.check("elementwise binary");
}

void elementwise_select_matches_the_cpu(void **) {
  Rng r{8};
  Mismatches bad;
  for (spmd_dtype compute : {SPMD_F32, SPMD_F64, SPMD_I64})
    for (spmd_dtype out : outputs_of(compute, Op::Add))
      for (int t = 0; t < 12; ++t) {
        const auto ins = inputs_of(compute);
        spmd_dtype dt[3] = {t % 3 ? SPMD_BOOL : ins[static_cast<size_t>(r.below(static_cast<int64_t>(ins.size())))],
                            out == SPMD_BOOL ? SPMD_BOOL : ins[static_cast<size_t>(r.below(static_cast<int64_t>(ins.size())))],
                            ins[static_cast<size_t>(r.below(static_cast<int64_t>(ins.size())))]};
        check_case(make_case(Op::Select, compute, out, dt, r), bad);
      }
  bad.check("elementwise select");
}

// Long contiguous runs of special values: the 16-byte word loop of the
// ops it takes, and the per-element one of the rest.
void elementwise_long_runs_match_the_cpu(void **) {
  Rng r{9};
  Mismatches bad;
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min, Op::Sqrt, Op::Rsqrt, Op::Neg,
                Op::Abs, Op::Relu, Op::Copy, Op::Exp, Op::Lt, Op::Eq})
    for (spmd_dtype compute : {SPMD_F32, SPMD_F64}) {
      EwCase c;
      ew::Params &p = c.p;
      p.op = op;
      p.compute = compute;
      p.out = ew::is_comparison(op) ? SPMD_BOOL : compute;
      p.nin = ew::arity(op);
      p.shape = {4099};
      c.in.resize(3);
      for (int i = 0; i < p.nin; ++i) {
        p.in[i].dtype = compute;
        p.in[i].strides = {1};
        c.in[static_cast<size_t>(i)] = random_elements(compute, 4099, r);
      }
      check_case(c, bad);
    }
  if (worded == 0) bad.note("no case took the 16-byte word loop");
  bad.check("elementwise long runs");
}

// A fused chain (kernels/device/elementwise_chain.hpp) gives the bits of
// its steps run one by one, each value rounded to its step's type: as a
// single thread and as several, short and long, with types changing along
// the chain.
void elementwise_chains_equal_their_steps(void **) {
  Rng r{10};
  Mismatches bad;
  for (int t = 0; t < 400; ++t) {
    const int64_t n = t % 50 == 0 ? 5000 : r.below(40);
    const ChainCase c = random_chain(r, n, dev::ew::kMaxChainSteps);
    const Bytes want = chain_by_steps(c);
    const dev::ew::ChainPlan plan = dev::ew::make_chain_plan(c.chain, c.n);
    const unsigned char *in[3] = {c.in[0].data(), c.in[1].data(), c.in[2].data()};
    for (int threads : {1, 7}) {
      Bytes got(want.size(), 0x5a);
      for (int first = 0; first < threads; ++first) dev::ew::run_chain(plan, got.data(), in, first, threads);
      if (got != want) bad.note("chain of " + chain_text(c) + ", " + std::to_string(threads) + " threads");
    }
  }
  bad.check("elementwise chains");
}

// Products and quotients next to the smallest normal, where x86 flushes
// what rounds to it from below (tiny before the subnormal grid's rounding).
void flushing_boundaries_match_the_cpu(void **) {
  Rng r{17};
  Mismatches bad;
  for (spmd_dtype t : {SPMD_F32, SPMD_F64, SPMD_BF16})
    for (Op op : {Op::Mul, Op::Div, Op::Add, Op::Sub, Op::Rsqrt, Op::Copy}) {
      const spmd_dtype compute = t == SPMD_F64 ? SPMD_F64 : SPMD_F32;
      const bool f64 = compute == SPMD_F64;
      const int64_t n = 6000;
      EwCase c;
      ew::Params &p = c.p;
      p.op = op;
      p.compute = compute;
      p.out = t;
      p.nin = ew::arity(op);
      p.shape = {n};
      c.in.assign(3, Bytes());
      for (int i = 0; i < p.nin; ++i) {
        p.in[i].dtype = op == Op::Copy ? SPMD_F64 : t;  // Copy: f64 narrowed next to the f32 boundary
        p.in[i].strides = {1};
        c.in[static_cast<size_t>(i)].resize(static_cast<size_t>(n) * 8 + 16);
      }
      for (int64_t k = 0; k < n; ++k) {
        // A random x in [1, 2) and an operand making the exact result
        // min * (1 + t), |t| a few ulps: both sides of the smallest normal,
        // and the tiny results that round up to it on the subnormal grid.
        const double eps = f64 ? 0x1p-52 : 0x1p-23;
        const double mn = f64 ? 0x1p-1022 : 0x1p-126;
        const double x = 1.0 + static_cast<double>(r.next() >> 12) * 0x1p-52;
        const double t = (r.unit() * 4 - 2) * eps;
        const double scale = std::ldexp(1.0, static_cast<int>(r.below(21)) - 10);
        double a, b;
        if (op == Op::Div) {
          a = mn * (1 + t) * x * scale;
          b = x * scale;
        } else if (op == Op::Mul || r.below(2)) {
          a = x * scale;
          b = mn * (1 + t) / x / scale;
        } else {  // sums, differences, rsqrt: values around the smallest normal
          a = mn * (1 + static_cast<double>(r.below(9) - 4) * eps) * (1 + r.below(2));
          b = mn * (1 + static_cast<double>(r.below(9) - 4) * eps);
        }
        if (op == Op::Copy) a = 0x1p-126 * (1.0 + static_cast<double>(r.below(17) - 8) * 0x1p-27);
        if (r.below(2)) a = -a;
        const double v[2] = {a, b};
        for (int i = 0; i < p.nin; ++i)
          store_from_double(p.in[i].dtype, v[i], c.in[static_cast<size_t>(i)].data() + k * static_cast<int64_t>(dtype_size(p.in[i].dtype)));
      }
      check_case(c, bad);
    }
  bad.check("flushing boundaries");
}

// ---- reductions ----

void reductions_match_the_cpu(void **) {
  Rng r{10};
  Mismatches bad;
  for (red::Op op : {red::Op::Sum, red::Op::Max, red::Op::Min, red::Op::ArgMax, red::Op::ArgMin})
    for (spmd_dtype in : kAll)
      for (int trial = 0; trial < 30; ++trial) {
        red::Params p;
        if (!random_reduction(op, in, trial, r, p)) continue;
        const Bytes x = reduction_input(p, r);
        Bytes want(static_cast<size_t>(red::out_elements(p)) * dtype_size(p.out) + 8, 0x77);
        red::run(p, want.data(), x.data());
        const dev::red::Plan plan = dev::red::make_plan(p);
        // The GPU's split, and others (lanes, and parts of the reduced
        // elements): the order may change a float sum's rounding and
        // nothing else.
        const dev::red::Teams gpu = dev::red::teams(plan);
        const BodySplit splits[] = {{gpu.lanes, gpu.parts, gpu.part_len}, {1, 1}, {4, 1}, {32, 1}, {256, 1},
                                    {1, 3}, {4, 2}, {32, 7}, {256, 5}};
        for (const BodySplit &split : splits) {
          if (split.parts > 1 && split.parts > plan.reduced) continue;
          Bytes got(want.size(), 0x77);
          run_reduce_body(plan, x.data(), split, got.data());
          compare_reduction(p, x, want, got,
                            "lanes " + std::to_string(split.lanes) + ", parts " + std::to_string(split.parts), bad);
        }
      }
  bad.check("reductions");
}

// A sum, max or min over one value is that value, subnormals included, as
// XLA copies it; over two, the subnormals are flushed. The bodies give the
// CPU kernel's bits in every split (the comparison above allows a float
// sum a rounding's difference, which would hide a flushed subnormal).
void one_value_reductions_copy_it(void **) {
  Mismatches bad;
  const double values[] = {1e-40, -1e-40, -0.0, 0.0, 1.5, -2.25, 1e-310, -3e-310};
  struct Case {
    std::vector<int64_t> shape;
    std::vector<bool> reduced;
  };
  const Case cases[] = {{{8, 1}, {false, true}}, {{1, 8, 1}, {true, false, true}}, {{1}, {true}},
                        {{4, 2}, {false, true}}};
  for (red::Op op : {red::Op::Sum, red::Op::Max, red::Op::Min})
    for (spmd_dtype in : {SPMD_F32, SPMD_F64, SPMD_BF16})
      for (const Case &c : cases) {
        red::Params p;
        p.op = op;
        p.in = in;
        p.out = in;
        p.shape = c.shape;
        p.reduced = c.reduced;
        const auto n = static_cast<size_t>(shape_elements(p.shape));
        Bytes x(n * dtype_size(in));
        for (size_t i = 0; i < n; ++i) store_from_double(in, values[i % 8], x.data() + i * dtype_size(in));
        Bytes want(static_cast<size_t>(red::out_elements(p)) * dtype_size(p.out), 0x77);
        red::run(p, want.data(), x.data());
        const dev::red::Plan plan = dev::red::make_plan(p);
        // One value each: the CPU kernel's result is the input itself.
        if (plan.reduced == 1 && want != x) bad.note(std::string(red::op_name(op)) + " of one " + dtype_name(in) + " value is not a copy");
        const dev::red::Teams gpu = dev::red::teams(plan);
        for (const BodySplit &split : {BodySplit{gpu.lanes, gpu.parts, gpu.part_len}, BodySplit{1, 1},
                                       BodySplit{4, 1}, BodySplit{32, 1}}) {
          Bytes got(want.size(), 0x77);
          run_reduce_body(plan, x.data(), split, got.data());
          if (got != want)
            bad.note(std::string(red::op_name(op)) + " of " + dtype_name(in) + " " + shape_text(p.shape) +
                     ", lanes " + std::to_string(split.lanes) + ": the body differs from the CPU kernel");
        }
      }
  bad.check("reductions of one value");
}

// The running sum's scan body gives the CPU kernel's bits: the same order,
// the GPU's emulated DAZ and FTZ additions against the CPU's own.
void cumsums_match_the_cpu(void **) {
  Rng r{12};
  Mismatches bad;
  for (spmd_dtype in : kAll)
    for (int trial = 0; trial < 12; ++trial) {
      const red::Params p = random_cumsum(in, r);
      const Bytes x = random_elements(p.in, static_cast<size_t>(shape_elements(p.shape)), r);
      const size_t out_bytes = static_cast<size_t>(shape_elements(p.shape)) * dtype_size(p.out);
      Bytes want(out_bytes + 8, 0x77), got(out_bytes + 8, 0x77);
      red::run(p, want.data(), x.data());
      run_cumsum_body(p, x.data(), got.data());
      compare_cumsum(p, want, got, "body", bad);
      if (std::memcmp(want.data() + out_bytes, got.data() + out_bytes, 8) != 0)
        bad.note(std::string("cumsum of ") + dtype_name(in) + ": the body wrote past its output");
    }
  bad.check("cumsums");
}

// scatter_add's per-element body, adding each element's updates in update
// order, gives the CPU kernel's bits, which apply the updates one at a time.
void scatter_adds_match_the_cpu(void **) {
  Rng r{13};
  Mismatches bad;
  for (spmd_dtype d : kAll) {
    if (d == SPMD_BOOL) continue;  // JAX adds no bools
    for (int trial = 0; trial < 40; ++trial) {
      const ScatterCase c = random_scatter_add(d, r);
      const size_t out_bytes = static_cast<size_t>(scatter_add::out_elements(c.p)) * dtype_size(d);
      Bytes want(out_bytes + 8, 0x77), got(out_bytes + 8, 0x77);
      scatter_add::run(c.p, want.data(), c.x.data(), c.indices.data(), c.updates.data());
      run_scatter_add_body(c, got.data());
      compare_scatter_add(c, want, got, "body", bad);
      if (std::memcmp(want.data() + out_bytes, got.data() + out_bytes, 8) != 0)
        bad.note(std::string("scatter_add of ") + dtype_name(d) + ": the body wrote past its output");
    }
  }
  bad.check("scatter_adds");
}

// Few outputs of many elements are cut into parts that cover each output's
// elements once, within the scratch the CUDA platform keeps for them.
void large_reductions_are_cut_into_parts(void **) {
  const struct {
    Shape shape;
    std::vector<bool> reduced;
    int parts;
  } cases[] = {{{1 << 22}, {true}, 16},
               {{3, (1 << 20) + 77}, {false, true}, 4},
               {{(1 << 20) + 5, 2}, {true, false}, 4},
               {{1 << 19}, {true}, 2},
               {{(1 << 19) - 1}, {true}, 1},
               {{2048, 2049}, {false, true}, 1},
               {{1 << 30}, {true}, dev::red::kMaxParts},
               {{64, 1 << 26}, {false, true}, static_cast<int>(dev::red::kMaxPartials / 64)}};
  for (const auto &c : cases) {
    red::Params p;
    p.op = red::Op::Sum;
    p.shape = c.shape;
    p.reduced = c.reduced;
    const dev::red::Plan plan = dev::red::make_plan(p);
    const dev::red::Teams t = dev::red::teams(plan);
    assert_int_equal(t.parts, c.parts);
    assert_true(t.part_len * t.parts >= plan.reduced);
    assert_true(t.part_len * (t.parts - 1) < plan.reduced);
    assert_true(plan.outputs * t.parts <= dev::red::kMaxPartials);
    if (t.parts > 1) assert_int_equal(t.lanes, dev::red::kThreads);
  }
}

// ---- random ----

void random_bits_and_floats_match_the_cpu_bit_for_bit(void **) {
  Rng r{11};
  Mismatches bad;
  using D = spmd::rng::Distribution;
  struct Want { D dist; spmd_dtype dtype; double lo, hi; };
  const Want cases[] = {
      {D::Bits, SPMD_U8, 0, 1},          {D::Bits, SPMD_I32, 0, 1},
      {D::Bits, SPMD_U16, 0, 1},         {D::Bits, SPMD_U32, 0, 1},
      {D::Bits, SPMD_I64, 0, 1},         {D::Uniform, SPMD_F32, 0, 1},
      {D::Uniform, SPMD_F32, -3, 7.5},   {D::Uniform, SPMD_F32, 1e-30, 1e30},
      {D::Uniform, SPMD_F64, 0, 1},      {D::Uniform, SPMD_F64, -2.5, 1e10},
      {D::Uniform, SPMD_F16, 0, 1},      {D::Uniform, SPMD_F16, -100, 3},
      {D::Uniform, SPMD_BF16, 0, 1},     {D::Uniform, SPMD_BF16, -1e30, 1e30},
      {D::Normal, SPMD_F32, 0, 1},       {D::Normal, SPMD_F16, 0, 1},
      {D::Normal, SPMD_BF16, 0, 1},      {D::TruncatedNormal, SPMD_F32, -2, 2},
      {D::TruncatedNormal, SPMD_F32, 0, 1}, {D::TruncatedNormal, SPMD_F32, -1e-3, 5},
      {D::TruncatedNormal, SPMD_F32, 3.5, 10}, {D::TruncatedNormal, SPMD_F16, -2, 2},
      {D::TruncatedNormal, SPMD_F16, 0, 3}, {D::TruncatedNormal, SPMD_BF16, -1, 0},
      {D::TruncatedNormal, SPMD_BF16, -3, 0.25},
  };
  for (const Want &c : cases)
    for (int trial = 0; trial < 6; ++trial) {
      spmd::rng::Request q;
      q.distribution = c.dist;
      q.dtype = c.dtype;
      q.key = spmd::rng::key_from_seed(r.next());
      q.minval = c.lo;
      q.maxval = c.hi;
      const size_t nd = static_cast<size_t>(r.below(4));
      Shape global(nd);
      Box box{Shape(nd), Shape(nd)};
      for (size_t d = 0; d < nd; ++d) {
        global[d] = r.below(trial == 0 ? 300 : 40);
        box.start[d] = r.below(global[d] + 1);
        box.stop[d] = box.start[d] + r.below(global[d] - box.start[d] + 1);
      }
      const size_t n = static_cast<size_t>(std::max<int64_t>(box.elements(), 0));
      const size_t es = dtype_size(c.dtype);
      Bytes want(n * es + 8, 0x11), got(want);
      spmd::rng::generate_box(q, global, box, want.data());
      const dev::rng::Draw draw = dev::rng::make_draw(q);
      const dev::rng::Where w = dev::rng::make_where(global, box);
      for (int t = 0; t < 4; ++t) dev::rng::run(draw, w, got.data(), t, 4);
      if (want != got) {
        size_t i = 0;
        while (!std::memcmp(want.data() + i * es, got.data() + i * es, es)) ++i;
        bad.note(std::string("random ") + dtype_name(c.dtype) + " distribution " + std::to_string(static_cast<int>(c.dist)) +
                 " element " + std::to_string(i) + ": cpu " + hex(want.data() + i * es, es) + " body " + hex(got.data() + i * es, es));
      }
    }
  bad.check("random");
}

// float64 normals: kernels/random.cpp takes log(1 - x^2) from the C
// library where the body computes it correctly rounded; every other step
// is the same, so the draws agree except where the C library's log is not
// correctly rounded, and there they stay within a few ulps.
void random_f64_normals_differ_only_where_the_c_library_log_does(void **) {
  Rng r{12};
  Mismatches bad;
  using D = spmd::rng::Distribution;
  int64_t draws = 0, differing = 0;
  for (D dist : {D::Normal, D::TruncatedNormal})
    for (int trial = 0; trial < 4; ++trial) {
      spmd::rng::Request q;
      q.distribution = dist;
      q.dtype = SPMD_F64;
      q.key = spmd::rng::key_from_seed(r.next());
      q.minval = dist == D::Normal ? 0.0 : -2.5 + trial;
      q.maxval = dist == D::Normal ? 1.0 : 3.0 + trial;
      const Shape global{20000};
      const Box box{{0}, {20000}};
      Bytes want(20000 * 8), got(want.size());
      spmd::rng::generate_box(q, global, box, want.data());
      const dev::rng::Draw draw = dev::rng::make_draw(q);
      dev::rng::run(draw, dev::rng::make_where(global, box), got.data(), 0, 1);
      for (uint64_t i = 0; i < 20000; ++i) {
        ++draws;
        const double a = dev::load_as<double>(want.data() + i * 8), b = dev::load_as<double>(got.data() + i * 8);
        if (dev::bits_of(a) == dev::bits_of(b)) continue;
        ++differing;
        uint32_t x0 = static_cast<uint32_t>(i >> 32), x1 = static_cast<uint32_t>(i);
        dev::rng::threefry2x32(draw.key0, draw.key1, x0, x1);
        const double u = dev::rng::uniform_f64(draw, x0, x1);
        const double one_minus = -(u * u) + 1.0;
        const bool log_path = std::fabs(-(u * u)) >= dev::rng::kLog1pThreshold;
        if (!log_path || std::log(one_minus) == dev::rng::log_f64(one_minus) ||
            std::fabs(a - b) > 8 * ulp_of(SPMD_F64, a))
          bad.note("f64 normal element " + std::to_string(i) + ": cpu " + hex(want.data() + i * 8, 8) +
                   " body " + hex(got.data() + i * 8, 8));
      }
    }
  if (differing * 1000 > draws) bad.note("f64 normals: " + std::to_string(differing) + " of " + std::to_string(draws) + " differ");
  bad.check("random f64 normals");
}

// The body's log against the C library's: never more than one ulp apart,
// and the same in all but a few in ten thousand.
void f64_log_is_within_an_ulp_of_the_c_library(void **) {
  Rng r{13};
  int64_t differ = 0;
  const int64_t n = 400000;
  for (int64_t i = 0; i < n; ++i) {
    const double x = i % 2 ? r.unit() * 0.59 : std::ldexp(0.5 + r.unit() * 0.5, static_cast<int>(r.below(2000)) - 1000);
    if (x <= 0) continue;
    const double a = std::log(x), b = dev::rng::log_f64(x);
    if (a == b) continue;
    ++differ;
    if (std::fabs(a - b) > ulp_of(SPMD_F64, a)) fail_msg("log(%a): C library %a, body %a", x, a, b);
  }
  if (differ * 1000 > n) fail_msg("log: %lld of %lld differ from the C library", static_cast<long long>(differ), static_cast<long long>(n));
  // Correctly rounded: equal to the x87 logl (64-bit significand) rounded
  // to double wherever that rounding is unambiguous.
  for (int64_t i = 0; i < n; ++i) {
    const double x = i % 2 ? r.unit() * 0.59 : std::ldexp(0.5 + r.unit() * 0.5, static_cast<int>(r.below(2000)) - 1000);
    if (x <= 0) continue;
    const long double l = logl(static_cast<long double>(x));
    const double d = static_cast<double>(l);
    const double other = std::nextafter(d, l > d ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
    const long double mid = (static_cast<long double>(d) + other) / 2;
    if (fabsl(l - mid) <= fabsl(l) * 0x1p-60L) continue;  // too close to call with logl
    if (dev::rng::log_f64(x) != d) fail_msg("log(%a): %a, correctly rounded %a", x, dev::rng::log_f64(x), d);
  }
  for (double x : {0.0, -1.0, std::numeric_limits<double>::infinity(), 1.0, 0x1p-1074, 0x1p-1022})
    if (!(std::log(x) == dev::rng::log_f64(x) || (std::isnan(std::log(x)) && std::isnan(dev::rng::log_f64(x)))))
      fail_msg("log(%a): C library %a, body %a", x, std::log(x), dev::rng::log_f64(x));
}

// The 16-bit conversions the bodies carry against base/dtype.cpp's.
void sixteen_bit_conversions_match_base(void **) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<uint16_t>(h);
    if (dev::bits_of(dev::f16_bits_to_f32(b)) != dev::bits_of(f16_bits_to_f32(b))) fail_msg("f16 %04x", h);
    if (dev::bits_of(dev::bf16_bits_to_f32(b)) != dev::bits_of(bf16_bits_to_f32(b))) fail_msg("bf16 %04x", h);
  }
  Rng r{14};
  for (uint64_t i = 0; i < (uint64_t{1} << 22); ++i) {
    // Every exponent, and the rounding boundaries of both formats.
    const uint32_t u = i < (uint64_t{1} << 21) ? static_cast<uint32_t>(i << 11) ^ static_cast<uint32_t>(r.below(2048))
                                               : static_cast<uint32_t>(r.next());
    const float f = dev::f32_of(u);
    if (dev::f32_to_f16_bits(f) != f32_to_f16_bits(f)) fail_msg("f32 %08x to f16", u);
    if (dev::f32_to_bf16_bits(f) != f32_to_bf16_bits(f)) fail_msg("f32 %08x to bf16", u);
  }
}

// ---- integer products ----

void integer_products_match_the_cpu(void **) {
  Rng r{15};
  Mismatches bad;
  for (spmd_dtype d : {SPMD_I8, SPMD_I16, SPMD_I32, SPMD_I64, SPMD_U8, SPMD_U16, SPMD_U32, SPMD_BOOL})
    for (int trial = 0; trial < 40; ++trial) {
      gemm::Params p;
      p.dtype = d;
      p.batch = 1 + r.below(3);
      p.m = r.below(7);
      p.n = r.below(7);
      p.k = trial % 8 == 0 ? 0 : r.below(9);
      p.trans_a = r.below(2);
      p.trans_b = r.below(2);
      const size_t es = dtype_size(d);
      const Bytes a = random_elements(d, static_cast<size_t>(p.batch * p.m * p.k), r);
      const Bytes b = random_elements(d, static_cast<size_t>(p.batch * p.k * p.n), r);
      const size_t nc = static_cast<size_t>(p.batch * p.m * p.n);
      Bytes want(nc * es + 8, 0x33), got(want);
      gemm::run(p, want.data(), a.data(), b.data());
      for (int64_t i = 0; i < static_cast<int64_t>(nc); ++i) dev::small::int_product(p, a.data(), b.data(), got.data(), i);
      if (want != got)
        bad.note(std::string("gemm ") + dtype_name(d) + " " + std::to_string(p.batch) + "x" + std::to_string(p.m) + "x" +
                 std::to_string(p.k) + "x" + std::to_string(p.n) + (p.trans_a ? " A^T" : "") + (p.trans_b ? " B^T" : ""));
    }
  bad.check("integer products");
}

// ---- box copies ----

void box_copies_match_the_host_copy(void **) {
  Rng r{16};
  Mismatches bad;
  for (int trial = 0; trial < 600; ++trial) {
    const size_t nd = static_cast<size_t>(r.below(9));
    const size_t es = static_cast<size_t>(1 + r.below(8));
    Shape src_shape(nd), dst_shape(nd), src_off(nd), dst_off(nd), extent(nd);
    int64_t budget = 1;
    for (size_t d = 0; d < nd; ++d) {
      const int64_t hi = budget > 20000 ? 2 : (trial % 4 == 0 && d + 1 == nd ? 700 : 6);
      extent[d] = r.below(hi);
      if (trial % 9 == 0) extent[d] = std::max<int64_t>(extent[d], 1);
      src_shape[d] = extent[d] + r.below(3);
      dst_shape[d] = extent[d] + r.below(3);
      src_off[d] = r.below(src_shape[d] - extent[d] + 1);
      dst_off[d] = r.below(dst_shape[d] - extent[d] + 1);
      budget *= std::max<int64_t>(src_shape[d], 1) * std::max<int64_t>(dst_shape[d], 1);
    }
    const size_t src_n = static_cast<size_t>(shape_elements(src_shape)) * es;
    const size_t dst_n = static_cast<size_t>(shape_elements(dst_shape)) * es;
    const size_t shift_s = static_cast<size_t>(r.below(3) == 0 ? r.below(16) : 0);
    const size_t shift_d = static_cast<size_t>(r.below(3) == 0 ? r.below(16) : 0);
    Bytes src(src_n + 32), want(dst_n + 32), got;
    for (auto &c : src) c = static_cast<unsigned char>(r.next());
    for (auto &c : want) c = static_cast<unsigned char>(r.next());
    got = want;
    host::copy_box(src.data() + shift_s, src_shape, src_off, want.data() + shift_d, dst_shape, dst_off, extent, es);
    dev::copy::Box box;
    if (!dev::copy::make_box(src.data() + shift_s, src_shape, src_off, got.data() + shift_d, dst_shape, dst_off, extent, es, box)) {
      bad.note("box copy of rank " + std::to_string(nd) + " not planned");
      continue;
    }
    // Every word the tiles move is aligned to its width on both sides.
    uint64_t addresses = reinterpret_cast<uintptr_t>(box.src) | reinterpret_cast<uintptr_t>(box.dst) |
                         static_cast<uint64_t>(box.words * box.width);
    for (int d = 0; d < box.nouter; ++d)
      addresses |= static_cast<uint64_t>(box.src_stride[d]) | static_cast<uint64_t>(box.dst_stride[d]);
    if (box.tiles && addresses % static_cast<uint64_t>(box.width)) bad.note("box copy words unaligned");
    for (int64_t tile = 0; tile < box.tiles; ++tile)
      for (int t = 0; t < dev::copy::kThreads; ++t) dev::copy::copy_tile(box, tile, t);
    if (want != got)
      bad.note("box copy " + shape_text(extent) + " of " + std::to_string(es) + "-byte elements from " +
               shape_text(src_shape) + " at " + shape_text(src_off) + " to " + shape_text(dst_shape) + " at " +
               shape_text(dst_off) + " (width " + std::to_string(box.width) + ")");
  }
  bad.check("box copies");
}

// The collectives' copies between strided views (a transposed source, a
// destination with gaps), planned by make_strided_box.
void strided_boxes_match_the_host_strided_copy(void **) {
  Rng r{17};
  Mismatches bad;
  for (int trial = 0; trial < 400; ++trial) {
    const size_t nd = static_cast<size_t>(1 + r.below(5));
    const size_t es = size_t{1} << r.below(4);
    Shape ext(nd), src_dims(nd), dst_gap(nd);
    for (size_t d = 0; d < nd; ++d) {
      ext[d] = 1 + r.below(trial % 5 == 0 && d + 1 == nd ? 600 : 7);
      dst_gap[d] = r.below(2) == 0 ? 0 : r.below(3);
    }
    // The source: a dense buffer of ext's dimensions in a random order.
    std::vector<size_t> order(nd);
    for (size_t d = 0; d < nd; ++d) order[d] = d;
    for (size_t d = nd; d-- > 1;) std::swap(order[d], order[static_cast<size_t>(r.below(static_cast<int64_t>(d) + 1))]);
    Shape src_strides(nd), dst_strides(nd);
    int64_t stride = 1;
    for (size_t k = nd; k-- > 0;) {
      src_strides[order[k]] = stride;
      stride *= ext[order[k]];
    }
    const int64_t src_elems = stride;
    stride = 1;
    for (size_t d = nd; d-- > 0;) {
      dst_strides[d] = stride;
      stride *= ext[d] + dst_gap[d];
    }
    const int64_t dst_elems = stride;
    const size_t shift = static_cast<size_t>(r.below(2) == 0 ? 0 : r.below(16));
    Bytes src(static_cast<size_t>(src_elems) * es + 32), want(static_cast<size_t>(dst_elems) * es + 32), got;
    for (auto &c : src) c = static_cast<unsigned char>(r.next());
    for (auto &c : want) c = static_cast<unsigned char>(r.next());
    got = want;
    host::strided_copy(ext, reinterpret_cast<const char *>(src.data()) + shift, src_strides,
                       reinterpret_cast<char *>(want.data()) + shift, dst_strides, es);
    dev::copy::Box box;
    if (!dev::copy::make_strided_box(src.data() + shift, src_strides, got.data() + shift, dst_strides, ext, es, box)) {
      bad.note("strided box of rank " + std::to_string(nd) + " not planned");
      continue;
    }
    for (int64_t tile = 0; tile < box.tiles; ++tile)
      for (int t = 0; t < dev::copy::kThreads; ++t) dev::copy::copy_tile(box, tile, t);
    if (want != got)
      bad.note("strided box " + shape_text(ext) + " of " + std::to_string(es) + "-byte elements, source strides " +
               shape_text(src_strides) + ", destination strides " + shape_text(dst_strides) + " (width " +
               std::to_string(box.width) + ")");
  }
  bad.check("strided boxes");
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sixteen_bit_conversions_match_base),
      cmocka_unit_test(fill_matches_the_cpu),
      cmocka_unit_test(arange_matches_the_cpu),
      cmocka_unit_test(convert_matches_the_cpu_for_every_pair_of_dtypes),
      cmocka_unit_test(scale_by_reciprocal_matches_the_cpu),
      cmocka_unit_test(first_difference_matches_the_cpu),
      cmocka_unit_test(elementwise_unary_ops_match_the_cpu),
      cmocka_unit_test(elementwise_binary_ops_match_the_cpu),
      cmocka_unit_test(elementwise_select_matches_the_cpu),
      cmocka_unit_test(elementwise_long_runs_match_the_cpu),
      cmocka_unit_test(elementwise_chains_equal_their_steps),
      cmocka_unit_test(flushing_boundaries_match_the_cpu),
      cmocka_unit_test(reductions_match_the_cpu),
      cmocka_unit_test(one_value_reductions_copy_it),
      cmocka_unit_test(large_reductions_are_cut_into_parts),
      cmocka_unit_test(cumsums_match_the_cpu),
      cmocka_unit_test(scatter_adds_match_the_cpu),
      cmocka_unit_test(random_bits_and_floats_match_the_cpu_bit_for_bit),
      cmocka_unit_test(random_f64_normals_differ_only_where_the_c_library_log_does),
      cmocka_unit_test(f64_log_is_within_an_ulp_of_the_c_library),
      cmocka_unit_test(integer_products_match_the_cpu),
      cmocka_unit_test(box_copies_match_the_host_copy),
      cmocka_unit_test(strided_boxes_match_the_host_strided_copy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
