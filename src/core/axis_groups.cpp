#include "core/axis_groups.hpp"

#include <algorithm>
#include <cctype>

#include "base/error.hpp"

namespace spmd {

namespace {

// The grammar, Python's spelling of an axis or a tuple of axes:
//   axes  := list | '(' [list] ')'
//   list  := item (',' item)* [',']
//   item  := name | 'name' | "name"
// with spaces allowed between tokens. Anything else (")x(", "x y", "x,,y")
// is refused rather than guessed at.
class AxesParser {
 public:
  AxesParser(const Mesh &mesh, const char *text, const char *arg)
      : mesh_(mesh), text_(text), arg_(arg), p_(text) {}

  std::vector<int> parse() {
    skip_space();
    if (*p_ == '(') {
      ++p_;
      skip_space();
      if (*p_ != ')') list();
      expect(')', "a ')' closing the tuple");
    } else {
      if (*p_ == '\0')
        invalid(arg_, " '", text_, "': names no mesh axis (axes: ", mesh_.axes_list(),
                "); write \"()\" for the empty tuple");
      list();
    }
    skip_space();
    if (*p_ != '\0') unexpected("the end of the text");
    return axes_;
  }

 private:
  void list() {
    item();
    for (skip_space(); *p_ == ','; skip_space()) {
      ++p_;
      skip_space();
      if (*p_ == '\0' || *p_ == ')') break;  // a trailing comma, as in "(x,)"
      item();
    }
  }

  void item() {
    const char quote = (*p_ == '\'' || *p_ == '"') ? *p_ : '\0';
    if (quote) ++p_;
    std::string name;
    while (std::isalnum(static_cast<unsigned char>(*p_)) || *p_ == '_') name += *p_++;
    if (name.empty()) unexpected("an axis name");
    // The quotes hold the name alone: "'x '" is the string "x ", no axis.
    if (quote && *p_ != quote) unexpected("the closing quote");
    if (quote) ++p_;
    const int a = mesh_.axis_index(name);
    if (a < 0)
      invalid(arg_, " '", text_, "': mesh has no axis '", name, "' (axes: ", mesh_.axes_list(), ")");
    if (std::find(axes_.begin(), axes_.end(), a) != axes_.end())
      invalid(arg_, " '", text_, "': axis '", name, "' appears twice");
    axes_.push_back(a);
  }

  void expect(char ch, const char *what) {
    skip_space();
    if (*p_ != ch) unexpected(what);
    ++p_;
  }

  void skip_space() {
    while (std::isspace(static_cast<unsigned char>(*p_))) ++p_;
  }

  [[noreturn]] void unexpected(const char *wanted) {
    if (*p_ == '\0') refuse(cat("ends where ", wanted, " was expected"));
    refuse(cat("unexpected '", *p_, "' at offset ", p_ - text_, " where ", wanted,
               " was expected"));
  }

  [[noreturn]] void refuse(const std::string &why) {
    invalid(arg_, " '", text_, "': ", why, " (axes: ", mesh_.axes_list(),
            "); write one axis \"x\", a tuple \"(x, y)\" or \"()\"");
  }

  const Mesh &mesh_;
  const char *text_;
  const char *arg_;
  const char *p_;
  std::vector<int> axes_;
};

}  // namespace

std::vector<int> parse_axes(const Mesh &mesh, const char *text, const char *arg) {
  if (text == nullptr) invalid(arg, ": NULL axis name");
  return AxesParser(mesh, text, arg).parse();
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
