#include "kernels/scatter_add.hpp"

#include <cstring>

#include "kernels/device/scatter_add.hpp"

namespace spmd::scatter_add {

namespace {

// XLA's CPU order: update after update, each read-modify-write of one
// result element through the body's addition.
template <typename A>
void run_as(const Params &p, unsigned char *out, const unsigned char *indices,
            const unsigned char *updates) {
  const int es = dev::dtype_bytes(p.dtype);
  const dev::scan::Plus<A> plus{p.dtype};
  for (int64_t r = 0; r < p.pre; ++r)
    for (int64_t j = 0; j < p.count; ++j) {
      const int64_t i = dev::scatter_add::target(p, indices, j);
      if (i < 0) continue;
      for (int64_t q = 0; q < p.post; ++q) {
        unsigned char *o = out + ((r * p.len + i) * p.post + q) * es;
        const A u = dev::red::load<A>(p.dtype, updates + ((r * p.count + j) * p.post + q) * es);
        dev::red::store<A>(p.dtype, plus(dev::red::load<A>(p.dtype, o), u), o);
      }
    }
}

}  // namespace

int64_t out_elements(const Params &p) { return p.pre * p.len * p.post; }

void run(const Params &p, void *out, const void *x, const void *indices, const void *updates) {
  const size_t bytes = static_cast<size_t>(out_elements(p)) * dev::dtype_bytes(p.dtype);
  if (bytes == 0) return;
  if (out != x) std::memcpy(out, x, bytes);
  auto *o = static_cast<unsigned char *>(out);
  const auto *i = static_cast<const unsigned char *>(indices);
  const auto *u = static_cast<const unsigned char *>(updates);
  switch (p.dtype) {
    case SPMD_F64: return run_as<double>(p, o, i, u);
    case SPMD_F32:
    case SPMD_F16:
    case SPMD_BF16: return run_as<float>(p, o, i, u);
    default: return run_as<int64_t>(p, o, i, u);
  }
}

}  // namespace spmd::scatter_add
