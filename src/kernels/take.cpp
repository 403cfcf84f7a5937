#include "kernels/take.hpp"

#include "kernels/device/take.hpp"

namespace spmd::take {

int64_t out_elements(const Params &p) { return p.pre * p.count * p.post; }

void run(const Params &p, void *out, const void *a, const void *indices) {
  const int64_t n = out_elements(p);
  for (int64_t e = 0; e < n; ++e)
    dev::take::element(p, e, static_cast<unsigned char *>(out), static_cast<const unsigned char *>(a),
                       static_cast<const unsigned char *>(indices));
}

}  // namespace spmd::take
