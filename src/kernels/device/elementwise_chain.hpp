// A fused chain of elementwise passes (kernels/elementwise_chain.hpp) one
// element at a time: each step is the elementwise body of
// kernels/device/elementwise.hpp, its result stored in its own type in a
// slot of the thread's, so every value rounds as the unfused ops round it
// and a fused pass gives the bits its ops give one by one on the same
// device. The chain's inputs and its output are dense blocks of one shape,
// so element i of each sits at i times its size.
#pragma once

#include "kernels/device/elementwise.hpp"
#include "kernels/elementwise_chain.hpp"

namespace spmd::dev::ew {

// The most steps a device chain holds: the plan travels as a kernel
// parameter, and each step keeps an 8-byte slot per thread.
constexpr int kMaxChainSteps = 16;

// One step: the fields compute<T> reads, and where its operands come from
// (spmd::ew::ChainStep::from).
struct ChainStepPlan {
  Op op = Op::Copy;
  spmd_dtype out = SPMD_F32;
  spmd_dtype compute = SPMD_F32;
  int nin = 1;
  spmd_dtype in[3] = {SPMD_F32, SPMD_F32, SPMD_F32};
  bool scalar[3] = {false, false, false};
  double value[3] = {0, 0, 0};
  int from[3] = {0, 0, 0};
};

struct ChainPlan {
  int nsteps = 0;
  int nin = 0;
  spmd_dtype in[3] = {SPMD_F32, SPMD_F32, SPMD_F32};
  int64_t count = 0;  // elements of each input and of the output
  ChainStepPlan steps[kMaxChainSteps];
};

// The plan of a chain over `count` elements. Host only; the caller has
// checked that the chain fits (kMaxChainSteps).
inline ChainPlan make_chain_plan(const spmd::ew::Chain &chain, int64_t count) {
  ChainPlan c;
  c.nsteps = static_cast<int>(chain.steps.size());
  c.nin = chain.nin;
  c.count = count;
  for (int k = 0; k < 3; ++k)
    if (k < chain.nin) c.in[k] = chain.in_dtype[k];
  for (int s = 0; s < c.nsteps && s < kMaxChainSteps; ++s) {
    const spmd::ew::ChainStep &from = chain.steps[static_cast<size_t>(s)];
    ChainStepPlan &st = c.steps[s];
    st.op = from.params.op;
    st.out = from.params.out;
    st.compute = from.params.compute;
    st.nin = from.params.nin;
    for (int k = 0; k < 3 && k < st.nin; ++k) {
      st.in[k] = from.params.in[k].dtype;
      st.scalar[k] = from.params.in[k].scalar;
      st.value[k] = from.params.in[k].value;
      st.from[k] = from.from[k];
    }
  }
  return c;
}

// Element i of the chain's result, written to out.
SPMD_HD void chain_element(const ChainPlan &c, int64_t i, unsigned char *out,
                           const unsigned char *const in[3]) {
  uint64_t slot[kMaxChainSteps];  // each step's result in its own type
  for (int s = 0; s < c.nsteps; ++s) {
    const ChainStepPlan &st = c.steps[s];
    const unsigned char *at[3] = {nullptr, nullptr, nullptr};
    for (int k = 0; k < st.nin; ++k) {
      if (st.scalar[k]) continue;
      const int f = st.from[k];
      at[k] = f >= 0 ? in[f] + i * dtype_bytes(c.in[f])
                     : reinterpret_cast<const unsigned char *>(&slot[-f - 1]);
    }
    unsigned char *dst = s + 1 == c.nsteps ? out + i * dtype_bytes(st.out)
                                           : reinterpret_cast<unsigned char *>(&slot[s]);
    switch (st.compute) {  // as the elementwise kernel: f32, f64, everything else in int64
      case SPMD_F32: compute<float>(st, dst, at); break;
      case SPMD_F64: compute<double>(st, dst, at); break;
      default: compute<int64_t>(st, dst, at); break;
    }
  }
}

// The loop a thread runs: `first` its index, `step` the thread count.
SPMD_HD void run_chain(const ChainPlan &c, unsigned char *out, const unsigned char *const in[3],
                       int64_t first, int64_t step) {
  for (int64_t i = first; i < c.count; i += step) chain_element(c, i, out, in);
}

}  // namespace spmd::dev::ew
