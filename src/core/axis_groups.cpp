#include "core/axis_groups.hpp"

#include <algorithm>
#include <cctype>

#include "base/error.hpp"

namespace spmd {

std::vector<int> parse_axes(const Mesh &mesh, const char *text, const char *arg) {
  if (text == nullptr) invalid(arg, ": NULL axis name");
  std::vector<int> axes;
  std::string name;
  auto flush = [&] {
    if (name.empty()) return;
    const int a = mesh.axis_index(name);
    if (a < 0)
      invalid(arg, " '", text, "': mesh has no axis '", name, "' (axes: ", mesh.axes_list(), ")");
    if (std::find(axes.begin(), axes.end(), a) != axes.end())
      invalid(arg, " '", text, "': axis '", name, "' appears twice");
    axes.push_back(a);
    name.clear();
  };
  for (const char *p = text; *p; ++p) {
    const char ch = *p;
    if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') {
      name += ch;
    } else if (ch == ',' || ch == '(' || ch == ')' || ch == '\'' || ch == '"' ||
               std::isspace(static_cast<unsigned char>(ch))) {
      flush();
    } else {
      invalid(arg, " '", text, "': unexpected character '", ch,
              "'; write one axis (\"x\") or a tuple (\"(x, y)\")");
    }
  }
  flush();
  // "()" is the empty tuple (every device a group of one, as in JAX); any
  // other text naming no axis is a mistake.
  if (axes.empty()) {
    std::string bare;
    for (const char *p = text; *p; ++p)
      if (!std::isspace(static_cast<unsigned char>(*p))) bare += *p;
    if (bare != "()")
      invalid(arg, " '", text, "': names no mesh axis (axes: ", mesh.axes_list(),
              "); write \"()\" for the empty tuple");
  }
  return axes;
}

std::string axes_label(const Mesh &mesh, const std::vector<int> &axes) {
  if (axes.size() == 1) return cat("'", mesh.axis_names()[static_cast<size_t>(axes[0])], "'");
  std::string s = "(";
  for (size_t i = 0; i < axes.size(); ++i)
    s += cat(i ? ", " : "", "'", mesh.axis_names()[static_cast<size_t>(axes[i])], "'");
  return s + ")";
}

AxisGroups AxisGroups::of(const Mesh &m, const std::vector<int> &axes) {
  AxisGroups g;
  g.axes = axes;
  std::vector<bool> in_axes(m.ndim(), false);
  size_t n = 1;
  for (int a : axes) {
    in_axes[static_cast<size_t>(a)] = true;
    n *= static_cast<size_t>(m.shape()[static_cast<size_t>(a)]);
  }
  g.members.assign(m.size() / n, std::vector<int>(n, -1));
  g.group_of.resize(m.size());
  g.rank_of.resize(m.size());
  for (size_t p = 0; p < m.size(); ++p) {
    const Shape c = m.coords_of_position(p);
    size_t gid = 0, rank = 0;
    for (size_t a = 0; a < m.ndim(); ++a)
      if (!in_axes[a]) gid = gid * static_cast<size_t>(m.shape()[a]) + static_cast<size_t>(c[a]);
    for (int a : axes)
      rank = rank * static_cast<size_t>(m.shape()[static_cast<size_t>(a)]) +
             static_cast<size_t>(c[static_cast<size_t>(a)]);
    g.members[gid][rank] = m.devices()[p];
    g.group_of[p] = gid;
    g.rank_of[p] = rank;
  }
  return g;
}

}  // namespace spmd
