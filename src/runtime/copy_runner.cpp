#include "runtime/copy_runner.hpp"

#include <algorithm>

namespace spmd {

namespace {
// Slabs smaller than this are not worth a separate task.
constexpr int64_t kSlabBytes = int64_t{1} << 20;

void split_into(const BoxCopy &c, std::vector<BoxCopy> &out, int64_t want_pieces) {
  int64_t bytes = static_cast<int64_t>(c.elem_size);
  for (int64_t e : c.extent) bytes *= e;
  size_t dim = 0;
  while (dim < c.extent.size() && c.extent[dim] == 1) ++dim;
  int64_t pieces = std::min<int64_t>(want_pieces, bytes / kSlabBytes);
  if (dim == c.extent.size() || pieces <= 1) {
    out.push_back(c);
    return;
  }
  pieces = std::min(pieces, c.extent[dim]);
  const int64_t step = (c.extent[dim] + pieces - 1) / pieces;
  for (int64_t s = 0; s < c.extent[dim]; s += step) {
    BoxCopy piece = c;
    piece.extent[dim] = std::min(step, c.extent[dim] - s);
    piece.src.offset[dim] += s;
    piece.dst.offset[dim] += s;
    out.push_back(std::move(piece));
  }
}
}  // namespace

void run_box_copies(Backend &backend, WorkerPool &pool, std::vector<BoxCopy> copies) {
  if (copies.empty()) return;
  // Aim for a few tasks per worker so uneven blocks still balance.
  const int64_t target = static_cast<int64_t>(pool.size()) * 4;
  std::vector<BoxCopy> tasks;
  if (static_cast<int64_t>(copies.size()) >= target || pool.size() == 1) {
    tasks = std::move(copies);
  } else {
    const int64_t per_copy = (target + static_cast<int64_t>(copies.size()) - 1) /
                             static_cast<int64_t>(copies.size());
    for (const auto &c : copies) split_into(c, tasks, per_copy);
  }
  pool.parallel_for(tasks.size(), [&](size_t i) { backend.copy_box(tasks[i]); });
}

}  // namespace spmd
