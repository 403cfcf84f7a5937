#include "base/side_by_side.hpp"

namespace spmd::side_by_side {

namespace {
thread_local size_t t_threads = 0;
}

void set(size_t threads) { t_threads = threads; }

size_t threads() { return t_threads; }

}  // namespace spmd::side_by_side
