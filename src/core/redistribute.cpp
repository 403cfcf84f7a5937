#include "core/redistribute.hpp"

#include <map>

namespace spmd {

std::vector<BlockMove> plan_redistribution(const std::vector<ShardLayout> &src,
                                           const std::vector<ShardLayout> &dst) {
  // Group source shards holding the same block: they are replicas.
  std::map<Shape, std::vector<size_t>> groups;
  for (size_t i = 0; i < src.size(); ++i)
    if (!src[i].box.empty()) groups[src[i].block].push_back(i);

  std::vector<int64_t> load(src.size(), 0);  // elements read from each source
  std::vector<BlockMove> moves;
  for (size_t j = 0; j < dst.size(); ++j) {
    if (dst[j].box.empty()) continue;
    for (const auto &[block, members] : groups) {
      Box overlap = intersect(src[members[0]].box, dst[j].box);
      if (overlap.empty()) continue;
      size_t chosen = members[0];
      bool local = false;
      for (size_t m : members)
        if (src[m].device == dst[j].device) {
          chosen = m;
          local = true;
          break;
        }
      if (!local)
        for (size_t m : members)
          if (load[m] < load[chosen]) chosen = m;
      load[chosen] += overlap.elements();
      moves.push_back({chosen, j, std::move(overlap)});
    }
  }
  return moves;
}

}  // namespace spmd
