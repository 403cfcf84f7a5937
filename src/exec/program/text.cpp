// A program printed for people (exec/program/program.hpp).
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "exec/program/program.hpp"

namespace spmd {

namespace {

std::string layout_text(const Array &a) { return a.sharding()->spec().to_string(); }

std::string scalar_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string bytes_text(int64_t b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

// Pads s with spaces to `width` characters.
std::string padded(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string Program::source_text(const Source &s) const {
  if (s.value >= 0) return cat("%", s.value);
  return cat("const ", type_text(*s.constant));
}

std::string Program::text() const {
  std::string out;
  int64_t moved = 0, flops = 0, transfers = 0;
  // Passes of several ops, numbered in order.
  std::vector<int> pass(groups_.size(), -1);
  int passes = 0;
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].nodes.size() > 1) pass[g] = passes++;
  size_t fused_ops = 0, fused_groups = 0;
  for (const Group &g : groups_)
    if (g.nodes.size() > 1) {
      ++fused_groups;
      fused_ops += g.nodes.size();
    }
  const Array *first = inputs_.empty() ? nullptr : values_[static_cast<size_t>(inputs_[0])].abstract.get();
  out += cat("program: ", inputs_.size(), inputs_.size() == 1 ? " input, " : " inputs, ",
             outputs_.size(), outputs_.size() == 1 ? " output, " : " outputs, ", nodes_.size(),
             nodes_.size() == 1 ? " op" : " ops");
  if (fused_groups > 0) out += cat(" (", fused_ops, " fused into ", fused_groups, fused_groups == 1 ? " pass)" : " passes)");
  if (first) out += cat(" on ", first->sharding()->mesh()->to_string());
  out += compiled_ ? "\n" : ", recording\n";
  auto line = [&](const std::string &lhs, const Array &a, const std::string &tail) {
    out += cat("  ", padded(lhs, 34), " ", padded(type_text(a), 16), " ", layout_text(a));
    if (!tail.empty()) out += cat("  ", tail);
    out += "\n";
  };
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const int v = inputs_[k];
    line(cat("%", v, " = input ", k), *values_[static_cast<size_t>(v)].abstract, "");
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &n = nodes_[i];
    std::string args;
    // An op that is one pass prints that pass's operands and scalars; any
    // other (a concatenation converting one part) its own operands.
    if (fusable(n)) {
      const Step &s = n.steps[0];
      for (int k = 0; k < s.params.nin; ++k) {
        if (!args.empty()) args += ", ";
        args += s.params.in[k].scalar ? scalar_text(s.params.in[k].value)
                                      : source_text(n.operands[static_cast<size_t>(s.operand[k])]);
      }
    } else {
      for (const Source &s : n.operands) args += cat(args.empty() ? "" : ", ", source_text(s));
    }
    std::string tail;
    for (const Transfer &t : n.transfers) {
      tail += cat(tail.empty() ? "" : "; ", t.what, " ", bytes_text(t.bytes));
      moved += t.bytes;
      ++transfers;
    }
    if (n.flops > 0) {
      tail += cat(tail.empty() ? "" : "; ", n.flops, " flops");
      flops += n.flops;
    }
    if (learnt_.load(std::memory_order_acquire) && launches_[i]) {
      size_t kernels = 0, collectives = 0, copies = 0;
      for (const Launch::Step &step : launches_[i]->steps)
        ++(step.kind == WorkLog::Rerun::Copy ? copies : step.kind == WorkLog::Rerun::Collective ? collectives : kernels);
      const auto counted = [](size_t n, const char *one, const char *many) {
        return n == 1 ? cat("one ", one) : cat(n, " ", many);
      };
      std::vector<std::string> parts;
      if (kernels) parts.push_back(counted(kernels, "launch", "launches"));
      if (copies) parts.push_back(counted(copies, "copy", "copies"));
      if (collectives) parts.push_back(counted(collectives, "collective", "collectives"));
      std::string learnt;
      for (size_t k = 0; k < parts.size(); ++k)
        learnt += cat(k == 0 ? "" : k + 1 == parts.size() ? " and " : ", ", parts[k]);
      tail += cat(tail.empty() ? "" : "; ", learnt);
    }
    if (n.group >= 0 && pass[static_cast<size_t>(n.group)] >= 0)
      tail += cat(tail.empty() ? "" : "; ", "pass ", pass[static_cast<size_t>(n.group)]);
    if (values_[static_cast<size_t>(n.result)].placed_for_uses)
      tail += cat(tail.empty() ? "" : "; ", "laid out for its uses");
    if (compiled_ && donations_[i].input >= 0)
      tail += cat(tail.empty() ? "" : "; ", "into donated input ", donations_[i].input);
    line(cat("%", n.result, " = ", n.name, "(", args, ")"), *values_[static_cast<size_t>(n.result)].abstract,
         tail);
    for (size_t k = 0; k < n.more_results.size(); ++k)
      line(cat("%", n.more_results[k], " = ", n.name, " output ", k + 1), *values_[static_cast<size_t>(n.more_results[k])].abstract, "");
  }
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const Output &o = outputs_[k];
    const Array &v = *values_[static_cast<size_t>(o.value)].abstract;
    std::string tail;
    if (o.sharding && !o.sharding->equivalent(*v.sharding())) tail = cat("resharded to ", o.sharding->spec().to_string());
    out += cat("  output ", k, " = %", o.value, tail.empty() ? "" : cat(", ", tail), "\n");
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Group &group = groups_[g];
    if (group.nodes.size() < 2) continue;
    std::string names;
    for (int m : group.nodes) names += cat(names.empty() ? "" : ", ", nodes_[static_cast<size_t>(m)].name);
    int64_t bytes = 0;
    for (const Source &s : group.inputs)
      bytes += static_cast<int64_t>(s.value >= 0 ? values_[static_cast<size_t>(s.value)].abstract->nbytes()
                                                 : s.constant->nbytes());
    const Array &r = *values_[static_cast<size_t>(nodes_[static_cast<size_t>(group.nodes.back())].result)].abstract;
    out += cat("  pass ", pass[g], ": ", names, " in one pass per shard, reading ", bytes_text(bytes),
               " and writing ", bytes_text(static_cast<int64_t>(r.nbytes())), "\n");
  }
  out += cat("  cost: ", transfers, transfers == 1 ? " transfer" : " transfers", " moving ",
             bytes_text(moved), " between devices, ", flops, " flops\n");
  return out;
}

}  // namespace spmd
